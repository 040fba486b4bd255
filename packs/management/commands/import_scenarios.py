"""Import scenario packs: validate, build and check each scenario in the sandbox, record a version.

manage.py import_scenarios packs/examples [MORE_PACK_DIRS…] [--backend bwrap|docker]
manage.py import_scenarios --check-only packs/examples      # validate the files, run nothing
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from harness.sandbox.base import SandboxError
from packs.importing import import_packs
from packs.models import ScenarioPack
from packs.schema import Pack, PackInvalid, iter_variants, read_packs


class Command(BaseCommand):
    help = "Validate, build, verify and import scenario packs (all or nothing; a new version when the content changed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dirs", nargs="+", type=Path, help="pack directories (each with pack.yaml)")
        parser.add_argument("--backend", default=settings.SANDBOX_BACKEND, choices=["auto", "docker", "bwrap"])
        parser.add_argument("--check-only", action="store_true", help="validate the files only (no sandbox, no import)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["check_only"]:
                for pack in read_packs(options["dirs"]):
                    variants = sum(1 for _ in iter_variants(pack))
                    self.stdout.write(f"{pack.id}: {len(pack.scenarios)} scenarios, {variants} variants: valid")
                    self.stdout.write(f"  {since_import(pack)}")
                return
            results = import_packs(options["dirs"], backend=options["backend"], out=self.stdout.write)
        except PackInvalid as exc:
            raise CommandError(str(exc)) from None
        except SandboxError as exc:
            raise CommandError(f"no sandbox to verify the scenarios in: {exc}") from None
        for result in results:
            for line in result.lines:
                self.stdout.write(self.style.SUCCESS(line) if result.created else line)


def since_import(pack: Pack) -> str:
    """How the folder just read compares with the pack's newest imported version."""
    latest = ScenarioPack.objects.filter(slug=pack.id).order_by("-version").first()
    if latest is None:
        return "not imported yet"
    changed = latest.changed_files(pack)
    if not changed:
        return f"unchanged since {latest} was imported"
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    verdict = "an import records a new version" if pack.digest != latest.digest else "the content is the same"
    return f"files changed since {latest} was imported: {shown} ({verdict})"
