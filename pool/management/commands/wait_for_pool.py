"""Block until the pool a ``build_pool`` running elsewhere is making is complete (``make demo``).

Prints a line of the build's progress (:func:`pool.live.snapshot`) every ``--every`` seconds, so the
terminal says what the pools page shows; fails when the builder's process (``--pid``) exits first.
"""

from __future__ import annotations

import os
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pool import live
from pool.models import LibraryVersion, PoolVersion


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child that exited but was not reaped yet is a zombie: gone for our purpose.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


class Command(BaseCommand):
    help = "Wait until the pool of the current libraries with this seed and size is complete."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--size", type=int, required=True)
        parser.add_argument("--seed", type=int, default=20260527, help="pool seed (default: %(default)s)")
        parser.add_argument("--pid", type=int, help="the builder's process: fail if it exits before the pool is done")
        parser.add_argument("--every", type=float, default=30.0, help="seconds between progress lines")

    def handle(self, *args: Any, **options: Any) -> None:
        last_line = 0.0
        while True:
            pool = PoolVersion.objects.filter(
                library_digest=LibraryVersion.current_digest(),
                pool_seed=options["seed"],
                target_size=options["size"],
            ).first()
            if pool is not None and pool.status == PoolVersion.Status.COMPLETE:
                self.stdout.write(f"pool {pool.pk} is complete ({pool.report.get('retained', 0)} scenarios)")
                return
            if options["pid"] and not _alive(options["pid"]):
                raise CommandError(f"the pool builder (pid {options['pid']}) exited before the pool was complete")
            now = time.monotonic()
            if pool is not None and now - last_line >= options["every"]:
                s = live.snapshot(pool)
                counted = f" {s['done']:,}/{s['total']:,}" if s["total"] else ""
                self.stdout.write(
                    f"pool {pool.pk}: {s['stage']}{counted} · "
                    f"{s['checked']:,} of {s['candidates']:,} through the static checks · "
                    f"{s['verified']:,} verified · {s['cells_full']}/{s['cells']} cells have their {s['quota']}"
                )
                last_line = now
            time.sleep(1.0)
