from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from pool.libschema import LibraryInvalid
from pool.loading import load_library
from pool.models import PoolVersion


class Command(BaseCommand):
    help = "Validate the YAML ingredient libraries and load them (all or nothing; idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", default=str(settings.LIBRARY_DIR), help="library directory (default: %(default)s)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = load_library(Path(options["dir"]))
        except LibraryInvalid as exc:
            raise CommandError(str(exc)) from None
        for label, items in (("created", report.created), ("updated", report.updated), ("deleted", report.deleted)):
            for item in items:
                self.stdout.write(f"  {label}: {item}")
        summary = (
            f"{len(report.created)} created, {len(report.updated)} updated, {len(report.deleted)} deleted, "
            f"{report.unchanged} unchanged in {report.seconds:.2f}s; library digest {report.digest[:16]}"
        )
        self.stdout.write(self.style.SUCCESS(summary) if report.changed else f"nothing changed; {summary}")
        for line in report.counts.get("short_of_benchmark", []):
            self.stdout.write(self.style.WARNING(f"short of the benchmark's needs: {line}"))
        if report.changed:
            for pool in PoolVersion.objects.builds().exclude(library_digest=report.digest):
                self.stdout.write(self.style.WARNING(pool.stale_warning()))
