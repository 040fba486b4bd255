"""Export an adjudicated verdict disagreement as an oracle regression case (tests/oracles/corpus/verdicts/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labels.verdicts import CORPUS, VerdictQueueError, export_regression_case


class Command(BaseCommand):
    help = (
        "Write the oracle input of a run and the verdict its latest adjudication says it should get as a "
        "regression case that tests/oracles/test_verdict_regressions.py loads."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("runs", nargs="+", type=int, help="Run ids (each with a verdict adjudication).")
        parser.add_argument("--out", type=Path, default=CORPUS, help=f"Corpus folder (default {CORPUS}).")

    def handle(self, *args: Any, **options: Any) -> None:
        for run_id in options["runs"]:
            try:
                path = export_regression_case(run_id, options["out"])
            except VerdictQueueError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"run {run_id}: {path}")
