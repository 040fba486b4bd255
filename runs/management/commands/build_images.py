"""Build the registry-free sandbox base image and, on request, agent image layers (idempotent); record digests."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from harness.sandbox import images
from harness.sandbox.images import agents as agent_images


def record_path() -> Path:
    return Path(settings.VAR_DIR) / "images.json"


class Command(BaseCommand):
    help = "Build the sandbox base image with debootstrap + docker import, unless it already exists."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
        parser.add_argument("--print-tag", action="store_true", help="print the tag the inputs hash to and exit")
        parser.add_argument(
            "--agents",
            metavar="NAME[,NAME]|all",
            help="also build these agent image layers FROM the base image"
            f" (layers: {', '.join(agent_images.layer_names())})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        layers = self._layers(options["agents"])
        if options["print_tag"]:
            self.stdout.write(images.image_tag())
            for name in layers:
                self.stdout.write(agent_images.image_tag(name))
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
        for name in layers:
            started = time.monotonic()
            try:
                layer = agent_images.build_layer(name, progress=self.stdout.write, force=options["force"])
            except RuntimeError as exc:
                raise CommandError(f"agent layer {name}: {exc}") from exc
            record.setdefault("agents", {})[name] = {
                "tag": layer.tag,
                "id": layer.image_id,
                "inputs": agent_images.inputs_hash(name),
                "at": time.time(),
            }
            path.write_text(json.dumps(record, indent=2) + "\n")
            verb = "built" if layer.built else "up to date"
            took = time.monotonic() - started
            self.stdout.write(self.style.SUCCESS(f"agent layer {verb}: {layer.tag} {layer.image_id} ({took:.1f} s)"))

    def _layers(self, value: str | None) -> list[str]:
        if not value:
            return []
        known = agent_images.layer_names()
        names = known if value.strip() == "all" else [n.strip() for n in value.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise CommandError(f"unknown agent layer(s) {unknown}; choose from {known} or 'all'")
        return names
