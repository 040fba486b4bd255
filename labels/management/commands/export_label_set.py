"""Export campaigns' real agent runs as a label set for hand labelling (labels/labelset.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labels.labelset import LabelSetExportError, export_label_set
from runs.models import Campaign


class Command(BaseCommand):
    help = (
        "Write each valid scored run of the named campaigns as FOLDER/runs/<key>.json (the oracle's input and "
        "what a validator sees, no verdict). Label them in FOLDER/labels.json from the blind views "
        "(python -m oracles.labelset render FOLDER OUT), then score: python -m oracles.labelset score FOLDER."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path)
        parser.add_argument("campaigns", nargs="+", help="Campaign names.")

    def handle(self, *args: Any, **options: Any) -> None:
        names = options["campaigns"]
        campaigns = list(Campaign.objects.filter(name__in=names))
        if missing := sorted(set(names) - {c.name for c in campaigns}):
            raise CommandError(f"no campaign named {', '.join(missing)}")
        try:
            written, invalid = export_label_set(campaigns, options["folder"])
        except LabelSetExportError as exc:
            raise CommandError(str(exc)) from None
        folder = options["folder"] / "runs"
        self.stdout.write(f"{len(written)} valid runs written to {folder}; {invalid} invalid left out")
