from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from pool.loading import export_library


class Command(BaseCommand):
    help = "Write the library models back to canonical YAML (load → export → load is byte-stable)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", default=str(settings.LIBRARY_DIR), help="output directory (default: %(default)s)")

    def handle(self, *args: Any, **options: Any) -> None:
        written = export_library(Path(options["dir"]))
        self.stdout.write(self.style.SUCCESS(f"wrote {len(written)} files to {options['dir']}"))
