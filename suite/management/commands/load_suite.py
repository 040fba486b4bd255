from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from suite.loading import DEFAULT_DIR, SuiteLoadError, load_suite
from suite.schema import SuiteInvalid


class Command(BaseCommand):
    help = "Validate the UnderSpecBench task-family files and load them (all or nothing; idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", default=str(DEFAULT_DIR), help="family directory (default: %(default)s)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = load_suite(Path(options["dir"]))
        except (SuiteInvalid, SuiteLoadError) as exc:
            raise CommandError(str(exc)) from None
        for label, items in (("created", report.created), ("updated", report.updated), ("deleted", report.deleted)):
            for item in items:
                self.stdout.write(f"  {label}: {item}")
        counts = report.counts
        summary = (
            f"{len(report.created)} created, {len(report.updated)} updated, {len(report.deleted)} deleted, "
            f"{report.unchanged} unchanged in {report.seconds:.2f}s; {counts['families']} families, "
            f"{counts['prompts']} prompts; suite digest {report.digest[:16]}"
        )
        self.stdout.write(self.style.SUCCESS(summary) if report.changed else f"nothing changed; {summary}")
