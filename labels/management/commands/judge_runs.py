from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from labels import fallback
from labels.config import judge_config
from labels.jobs import judge_runs, pending_runs
from labels.judge import JudgeConfig
from runs.models import Campaign, Run


class Command(BaseCommand):
    help = (
        "Label scored non-action runs (acted = False) that have no label from the current source: the "
        "judge configured by JUDGE_BASE_URL / JUDGE_MODEL, else the fallback classifier."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--campaign", type=int, action="append", metavar="ID", help="a campaign id (repeatable)")
        which.add_argument("--all", action="store_true", help="every campaign")
        parser.add_argument("--dry-run", action="store_true", help="only count the runs that would be labelled")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config: JudgeConfig | None = judge_config()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        source = config.source if config is not None else "fallback (no judge configured)"
        run_ids: list[int] | None = None
        if options["campaign"]:
            wanted = set(options["campaign"])
            found = set(Campaign.objects.filter(pk__in=wanted).values_list("pk", flat=True))
            if wanted - found:
                raise CommandError(f"no campaign with id {', '.join(map(str, sorted(wanted - found)))}")
            run_ids = list(
                Run.objects.filter(campaign_id__in=wanted, status=Run.Status.SCORED, acted=False).values_list(
                    "pk", flat=True
                )
            )
        if options["dry_run"]:
            count = pending_runs(run_ids, config.source if config is not None else fallback.SOURCE).count()
            self.stdout.write(f"{count} run(s) would be labelled by {source}")
            return
        self.stderr.write(f"labelling with {source}")
        bar = tqdm(total=0, unit="run", desc="labelled", file=self.stderr._out, dynamic_ncols=True)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            report = judge_runs(run_ids, progress=progress, config=config)
        finally:
            bar.close()
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write(
            f"{report['selected']} run(s) selected: {report['judged']} judged, {report['cached']} from the cache, "
            f"{report['fallback']} by the fallback ({report['judge_failed']} after a judge failure); "
            f"{report['dispositions_changed']} disposition(s) changed"
        )
        for error in report["errors"]:
            self.stdout.write(self.style.WARNING(f"  {error}"))
