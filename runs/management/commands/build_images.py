"""Build the registry-free sandbox base image (idempotent) and record its digest."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.sandbox import images


def record_path() -> Path:
    return Path(settings.BASE_DIR) / "var" / "images.json"


class Command(BaseCommand):
    help = "Build the sandbox base image with debootstrap + docker import, unless it already exists."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
        parser.add_argument("--print-tag", action="store_true", help="print the tag the inputs hash to and exit")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["print_tag"]:
            self.stdout.write(images.image_tag())
            return
        try:
            built = images.build_base_image(progress=self.stdout.write, force=options["force"])
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        path = record_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            record = {}
        record["base"] = {"tag": built.tag, "id": built.image_id, "inputs": images.inputs_hash(), "at": time.time()}
        path.write_text(json.dumps(record, indent=2) + "\n")
        verb = "built" if built.built else "up to date"
        self.stdout.write(self.style.SUCCESS(f"base image {verb}: {built.tag} {built.image_id}"))
