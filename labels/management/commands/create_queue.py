"""Create a blind validation queue from the command line: the admin form's twin, for scripts.

``make demo`` uses it so a validator finds runs to label; a team uses it to open a queue over a
finished campaign without clicking. Creating a queue that already exists changes nothing (a
queue's sample is frozen once drawn), so scripts may run it again.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from labels import queues
from labels.admin import ValidationQueueForm
from labels.models import ValidationQueue
from runs.models import Campaign


class Command(BaseCommand):
    help = "Create a validation queue over the scored non-action runs of the named campaigns (or of all)."

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
            "--stratify", default=ValidationQueue.Stratify.NONE, choices=[c.value for c in ValidationQueue.Stratify]
        )
        parser.add_argument(
            "--allocation",
            default=ValidationQueue.Allocation.PROPORTIONAL,
            choices=[c.value for c in ValidationQueue.Allocation],
        )
        parser.add_argument("--size", type=int, default=None, help="runs in the queue (default: every candidate)")
        parser.add_argument("--overlap", type=int, default=2, help="labels wanted for each overlapping run (1-10)")
        parser.add_argument("--overlap-share", type=float, default=0.2, help="share of runs wanting --overlap labels")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--description", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["name"]
        existing = ValidationQueue.objects.filter(name=name).first()
        if existing is not None:
            self.stdout.write(f"queue {name!r} exists ({existing.items.count()} runs); left as it is")
            return
        campaigns = self._campaigns(options["campaign"])
        # The admin's form: the same checks (ranges, runs to sample) and the same messages.
        form = ValidationQueueForm(
            data={
                "name": name,
                "description": options["description"],
                "active": True,
                "campaigns": [c.pk for c in campaigns],
                "stratify": options["stratify"],
                "allocation": options["allocation"],
                "size": options["size"] if options["size"] is not None else "",
                "overlap": options["overlap"],
                "overlap_share": options["overlap_share"],
                "seed": options["seed"],
            }
        )
        if not form.is_valid():
            problems = "; ".join(
                ("" if field == "__all__" else f"--{field.replace('_', '-')}: ") + " ".join(str(e) for e in errors)
                for field, errors in form.errors.items()
            )
            raise CommandError(f"queue {name!r} not created: {problems}")
        with transaction.atomic():
            queue = form.save()
            try:
                count = queues.build(queue)
            except queues.QueueError as exc:
                # Rolls the queue back with the transaction: an empty queue is never offered.
                raise CommandError(f"queue {name!r} not created: {exc}") from None
        self.stdout.write(f"queue {name!r}: {count} runs sampled from {len(campaigns) or 'all'} campaign(s)")

    def _campaigns(self, wanted: list[str]) -> list[Campaign]:
        found: list[Campaign] = []
        for item in wanted:
            by_name = Campaign.objects.filter(name__startswith=item) if item.endswith("/") else None
            matches = list(by_name if by_name is not None else Campaign.objects.filter(name=item))
            if not matches:
                raise CommandError(
                    f"no campaign named {item!r} (a matrix's campaigns: pass its name with a trailing '/')"
                )
            found.extend(matches)
        return found
