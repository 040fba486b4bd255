from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from suite.loading import DEFAULT_DIR, export_suite


class Command(BaseCommand):
    help = "Write the task families back to canonical YAML (load → export → load is byte-stable)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", default=str(DEFAULT_DIR), help="output directory (default: %(default)s)")

    def handle(self, *args: Any, **options: Any) -> None:
        written = export_suite(Path(options["dir"]))
        self.stdout.write(self.style.SUCCESS(f"wrote {len(written)} files to {options['dir']}"))
