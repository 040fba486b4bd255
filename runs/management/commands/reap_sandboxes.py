"""Remove leftover sandboxes (dead owner or lifetime passed) of both backends."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from harness.sandbox import reaper


class Command(BaseCommand):
    help = "Remove labelled sandbox containers and bwrap state whose owner is gone or whose lifetime passed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run-prefix", default=None, help="only sandboxes whose run id starts with this")
        parser.add_argument(
            "--all", action="store_true", help="remove every matching sandbox, even ones whose owner is alive"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        report = reaper.reap(run_prefix=options["run_prefix"], force=options["all"])
        for cid in report.removed_containers:
            self.stdout.write(f"removed container {cid}")
        for name in report.removed_bwrap:
            self.stdout.write(f"removed bwrap sandbox {name}")
        for name in report.removed_docker_state:
            self.stdout.write(f"removed docker quota roots {name}")
        for name in report.removed_gateway_dirs:
            self.stdout.write(f"removed gateway socket directory {name}")
        for err in report.errors:
            self.stderr.write(f"warning: {err}")
        self.stdout.write(self.style.SUCCESS(f"{report.removed} removed, {report.kept} still in use"))
