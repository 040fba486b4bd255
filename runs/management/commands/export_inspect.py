"""Export finished campaigns (or a matrix) as Inspect eval logs: one ``.eval`` file per campaign.

    manage.py export_inspect --campaign demo-shell --out var/inspect
    manage.py export_inspect --matrix demo-matrix --out var/inspect
    inspect view start --log-dir var/inspect        # Inspect's viewer (pip install -r requirements-inspect.txt)

A campaign or matrix is named by id, uuid or name.  The mapping of campaigns, runs, events and
verdicts onto Inspect's log is in docs/bundles.md ("Inspect logs").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.inspect_export import ExportError, export, resolve


class Command(BaseCommand):
    help = "Export campaigns or a matrix as Inspect eval logs (inspect_ai, an optional extra)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", action="append", default=[], help="Campaign id, uuid or name (repeatable).")
        parser.add_argument("--matrix", help="Matrix id, uuid or name: all of its campaigns.")
        parser.add_argument("--out", required=True, type=Path, help="Directory for the .eval files (created).")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            campaigns = resolve(opts["campaign"], opts["matrix"])
            result = export(campaigns, opts["out"])
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        except ImportError as exc:
            raise CommandError(str(exc)) from None
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        for path in result.paths:
            self.stdout.write(str(path))
        self.stdout.write(
            self.style.SUCCESS(
                f"{len(result.paths)} Inspect log(s): {result.samples} samples, {result.scored} scored;"
                f" open them with `inspect view start --log-dir {opts['out']}`"
            )
        )
