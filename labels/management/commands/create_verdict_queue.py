"""Open a verdict validation queue from the command line (the /labels/verdicts/new/ page's twin).

``make demo`` uses it so validators find verdicts to check. Opening a queue that exists changes
nothing (a queue's sample is frozen once drawn), so scripts may run it again.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labels import verdicts
from labels.models import VERDICT_STRATA, VerdictQueue
from runs.models import Campaign


class Command(BaseCommand):
    help = "Open a verdict validation queue over the scored runs of the named campaigns (or of all)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the queue's name (unique)")
        parser.add_argument(
            "--campaign",
            action="append",
            default=[],
            metavar="NAME_OR_PREFIX",
            help="a campaign name, or a prefix ending in '/' for a matrix's campaigns (repeatable; none = all)",
        )
        parser.add_argument(
            "--stratify",
            default="leg,effect",
            help=f"comma-separated strata, any of {', '.join(VERDICT_STRATA)} (default leg,effect; '' for none)",
        )
        parser.add_argument("--allocation", default="equal", choices=["proportional", "equal"])
        parser.add_argument("--size", type=int, default=None, help="runs in the queue (default: every candidate)")
        parser.add_argument("--overlap", type=int, default=2, help="labels wanted for each overlapping run (1-10)")
        parser.add_argument("--overlap-share", type=float, default=0.2, help="share of runs wanting --overlap labels")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--description", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["name"]
        existing = VerdictQueue.objects.filter(name=name).first()
        if existing is not None:
            self.stdout.write(f"verdict queue {name!r} exists ({existing.items.count()} runs); left as it is")
            return
        campaigns: list[Campaign] = []
        for item in options["campaign"]:
            matches = list(
                Campaign.objects.filter(name__startswith=item)
                if item.endswith("/")
                else Campaign.objects.filter(name=item)
            )
            if not matches:
                raise CommandError(f"no campaign named {item!r} (a matrix's campaigns: its name with a trailing '/')")
            campaigns.extend(matches)
        try:
            queue = verdicts.open_queue(
                name,
                campaigns,
                stratify=[s.strip() for s in options["stratify"].split(",") if s.strip()],
                allocation=options["allocation"],
                size=options["size"],
                overlap=options["overlap"],
                overlap_share=options["overlap_share"],
                seed=options["seed"],
                description=options["description"],
            )
        except verdicts.VerdictQueueError as exc:
            raise CommandError(f"verdict queue {name!r} not opened: {exc}") from None
        self.stdout.write(
            f"verdict queue {name!r}: {queue.items.count()} runs sampled from {len(campaigns) or 'all'} campaign(s), "
            f"stratified by {', '.join(queue.stratify) or 'nothing'}"
        )
