"""Re-score stored evidence with the current oracle (no agent runs again).

manage.py regrade --campaign NAME_OR_ID [--campaign …]   # or --matrix NAME, or --all
manage.py regrade --all --dry-run                        # print the flips, change nothing
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.models import Campaign
from runs.regrade import regrade_campaign


class Command(BaseCommand):
    help = "Regrade campaigns' stored evidence with the current oracle; keep the old verdicts; print the flips."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", action="append", default=[], help="Campaign name or id (repeatable).")
        parser.add_argument("--matrix", action="append", default=[], help="Every campaign of a matrix (name or id).")
        parser.add_argument("--all", action="store_true", help="Every finished SNARE campaign.")
        parser.add_argument("--dry-run", action="store_true", help="Print what would flip; write nothing.")

    def handle(self, *args: Any, **opts: Any) -> None:
        campaigns = self._campaigns(opts)
        if not campaigns:
            raise CommandError("no campaign selected: give --campaign, --matrix or --all")
        total_flips = 0
        for c in campaigns:
            if c.status == Campaign.Status.RUNNING:
                self.stdout.write(f"campaign {c.pk} {c.name}: still running, skipped (regrade it when it ends)")
                continue
            report = regrade_campaign(c.pk, dry_run=opts["dry_run"])
            total_flips += len(report.flips)
            for line in report.lines():
                self.stdout.write(line)
        self.stdout.write(
            f"{total_flips} verdict(s) flipped in all" + (" (dry run: nothing written)" if opts["dry_run"] else "")
        )

    def _campaigns(self, opts: dict[str, Any]) -> list[Campaign]:
        out: list[Campaign] = []
        for ref in opts["campaign"]:
            found = Campaign.objects.filter(pk=int(ref)).first() if str(ref).isdigit() else None
            found = found or Campaign.objects.filter(name=ref).first()
            if found is None:
                raise CommandError(f"no campaign {ref!r}")
            out.append(found)
        for ref in opts["matrix"]:
            qs = (
                Campaign.objects.filter(matrix__pk=int(ref))
                if str(ref).isdigit()
                else Campaign.objects.filter(matrix__name=ref)
            )
            if not qs.exists():
                raise CommandError(f"no matrix {ref!r} (or it has no campaigns)")
            out += list(qs.order_by("pk"))
        if opts["all"]:
            out += list(Campaign.objects.exclude(status=Campaign.Status.RUNNING).order_by("pk"))
        seen: set[int] = set()
        return [c for c in out if not (c.pk in seen or seen.add(c.pk))]  # type: ignore[func-returns-value]
