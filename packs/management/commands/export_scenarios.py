"""Write an imported scenario pack back to files, byte for byte as imported.

manage.py export_scenarios examples                 # into the directory it was imported from
manage.py export_scenarios examples --out /tmp/x    # elsewhere (a directory per pack)
manage.py export_scenarios examples --pack-version 1
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from packs.importing import ExportError, export_pack
from packs.models import ScenarioPack


class Command(BaseCommand):
    help = "Export an imported scenario pack (its newest version unless --pack-version) to its files."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="pack id")
        parser.add_argument("--pack-version", type=int, dest="pack_version", help="pack version (default: the newest)")
        parser.add_argument("--out", type=Path, help="parent directory (default: where it was imported from)")

    def handle(self, *args: Any, **options: Any) -> None:
        packs = ScenarioPack.objects.filter(slug=options["slug"])
        if options["pack_version"]:
            packs = packs.filter(version=options["pack_version"])
        pack = packs.order_by("-version").first()
        if pack is None:
            raise CommandError(
                f"no imported pack {options['slug']!r}"
                + (f" version {options['pack_version']}" if options["pack_version"] else "")
            )
        target = options["out"] / pack.slug if options["out"] else Path(pack.source_dir)
        try:
            written = export_pack(pack, target)
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        for name in written:
            self.stdout.write(f"  wrote {name}")
        self.stdout.write(f"{pack} → {target}: {len(written)} file(s) written, the others already identical")
