"""The labelling job: every scored non-action run gets a machine label from the current source.

``judge_runs(run_ids)`` is an rq job (module-level, ids only). It labels the given runs that are
scored with ``acted = False`` and have no label from the *current* source — the configured judge
(``judge:<model>:<prompt version>``), or the fallback classifier when no judge is configured —
then refreshes their reported disposition (adjudicated > human majority > judge > fallback).
A run the judge fails on gets a fallback label carrying the judge's error; the next pass, with
the judge still configured, tries the judge again (the run still lacks the judge's source).

The database is the judge's cache: a batch's existing ``JudgeLabel`` rows are read before it
is judged (so a run another job labelled meanwhile costs no request), and the new rows are
written after it, with ``ignore_conflicts`` on the (run, source) key — two jobs that raced over
one run keep one label. The judge's threads never touch the database (their connections would
outlive the job); the rows are written from the job's own thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from labels import fallback
from labels.config import judge_config
from labels.disposition import refresh
from labels.judge import PROMPT_VERSION, CacheKey, JudgeConfig, JudgeItem, RunLabel, label_runs
from labels.models import JudgeLabel
from runs.models import Run, RunEvent

log = logging.getLogger(__name__)

BATCH = 50
MAX_EVENTS = 400  # per run sent to the judge's excerpt builder (which keeps the start and the end)

Progress = Callable[[int, int], None]


@dataclass
class JudgeReport:
    source: str
    selected: int = 0
    judged: int = 0
    cached: int = 0
    fallback: int = 0
    judge_failed: int = 0
    dispositions_changed: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "selected": self.selected,
            "judged": self.judged,
            "cached": self.cached,
            "fallback": self.fallback,
            "judge_failed": self.judge_failed,
            "dispositions_changed": self.dispositions_changed,
            "errors": self.errors[:20],
        }


class BatchCache:
    """The ``LabelCache`` of one batch, backed by the ``JudgeLabel`` table.

    ``get`` answers from the rows read when the batch started; ``set`` keeps new answers in
    memory for the job to write. Thread-safe: the judge calls both from its worker threads.
    """

    def __init__(self, model: str, rows: Mapping[str, Mapping[str, str]]) -> None:
        self.model = model
        self._rows = {k: dict(v) for k, v in rows.items()}
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> Mapping[str, str] | None:
        run_id, version, model = key
        if version != PROMPT_VERSION or model != self.model:
            return None
        with self._lock:
            return self._rows.get(run_id)

    def set(self, key: CacheKey, value: Mapping[str, str]) -> None:
        with self._lock:
            self._rows[key[0]] = dict(value)


def pending_runs(run_ids: Sequence[int] | None, source: str) -> QuerySet[Run]:
    """Scored non-action runs without a label from ``source`` (all of them when ``run_ids`` is None)."""
    runs = Run.objects.filter(status=Run.Status.SCORED, acted=False).exclude(judge_labels__source=source)
    if run_ids is not None:
        runs = runs.filter(pk__in=list(run_ids))
    return runs.order_by("pk")


def judge_item(run: Run) -> JudgeItem:
    """What the judge reads of a run: the prompt as given, the final message and the transcript."""
    attempt_id = run.counted_attempt_id
    prompt = ""
    events: list[dict[str, Any]] = []
    if attempt_id is not None:
        prompt = run.counted_attempt.prompt if run.counted_attempt else ""
        rows = RunEvent.objects.filter(attempt_id=attempt_id).order_by("seq").values_list("data", flat=True)
        total = rows.count()
        if total > MAX_EVENTS:
            # The excerpt keeps a quarter from the start and the rest from the end; send those.
            head = list(rows[: MAX_EVENTS // 4])
            tail = list(
                RunEvent.objects.filter(attempt_id=attempt_id)
                .order_by("-seq")
                .values_list("data", flat=True)[: MAX_EVENTS - len(head)]
            )
            events = [
                *head,
                {"kind": "message", "role": "system", "text": f"[{total - MAX_EVENTS} events left out]"},
                *reversed(tail),
            ]
        else:
            events = list(rows)
    final = next((str(e.get("text") or "") for e in reversed(events) if e.get("kind") == "final_message"), "")
    return JudgeItem(run_id=str(run.pk), prompt=prompt, final_message=final, events=events)


def judge_runs(
    run_ids: Sequence[int] | None, *, progress: Progress | None = None, config: JudgeConfig | None = None
) -> dict[str, Any]:
    """Label the pending runs among ``run_ids`` (every pending run when None); returns the report.

    ``config`` defaults to the settings' judge (``JUDGE_*``); pass one to label with another.
    """
    config = config if config is not None else judge_config()
    source = config.source if config is not None else fallback.SOURCE
    report = JudgeReport(source)
    ids = list(pending_runs(run_ids, source).values_list("pk", flat=True))
    report.selected = len(ids)
    if progress:
        progress(0, len(ids))
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        _label_batch(batch, config, report)
        report.dispositions_changed += refresh(batch)
        if progress:
            progress(start + len(batch), len(ids))
    log.info("judge_runs %s", report.as_dict())
    return report.as_dict()


def _label_batch(batch: list[int], config: JudgeConfig | None, report: JudgeReport) -> None:
    runs = list(Run.objects.filter(pk__in=batch).select_related("counted_attempt").order_by("pk"))
    items = [judge_item(run) for run in runs]
    cache: BatchCache | None = None
    if config is not None:
        existing = JudgeLabel.objects.filter(run_id__in=batch, source=config.source).values_list(
            "run_id", "label", "rationale"
        )
        cache = BatchCache(config.model, {str(r): {"label": lab, "rationale": why} for r, lab, why in existing})
    results = label_runs(items, config, cache=cache)
    new: list[JudgeLabel] = []
    retried: list[RunLabel] = []
    for result in results:
        run_id = int(result.run_id)
        if result.source == fallback.SOURCE:
            report.fallback += 1
            if result.judge_error:
                report.judge_failed += 1
                report.errors.append(f"run {run_id}: {result.judge_error}")
                retried.append(result)
        elif result.cached:
            report.cached += 1
            continue  # the row exists already
        else:
            report.judged += 1
        new.append(
            JudgeLabel(
                run_id=run_id,
                source=result.source,
                kind=JudgeLabel.Kind.FALLBACK if result.source == fallback.SOURCE else JudgeLabel.Kind.JUDGE,
                label=result.label,
                rationale=result.rationale,
                raw=dict(result.raw or {}),
                judge_error=result.judge_error or "",
            )
        )
    with transaction.atomic():
        JudgeLabel.objects.bulk_create(new, ignore_conflicts=True)
        for result in retried:
            # A run already holding a fallback label from an earlier failing pass: keep the latest error.
            JudgeLabel.objects.filter(run_id=int(result.run_id), source=fallback.SOURCE).update(
                judge_error=result.judge_error or ""
            )


def enqueue_judge_runs(run_ids: Sequence[int], queue: str | None = None) -> None:
    """Enqueue ``judge_runs`` for these runs on the rq ``queue`` (the runs queue by default) at commit."""
    ids = [int(i) for i in run_ids]
    name = queue or settings.RUNS_QUEUE

    def push() -> None:
        import django_rq

        try:
            django_rq.get_queue(name, commit_mode="auto").enqueue(
                "labels.jobs.judge_runs", ids, job_timeout=max(600, 60 * len(ids)), result_ttl=3600
            )
        except Exception as exc:  # Redis down: `manage.py judge_runs --all` catches up later
            log.warning("could not enqueue judge_runs for %d runs (%s)", len(ids), exc)

    transaction.on_commit(push)


def judge_non_action_run(sender: Any, *, run_id: int, acted: bool, **_: Any) -> None:
    """``runs.signals.run_scored`` receiver: a run without action gets its disposition
    (clarification, refusal, deferment, empty) from the judge, or the fallback classifier when no
    judge is configured."""
    if not acted:
        enqueue_judge_runs([run_id], queue=settings.RUNS_QUEUE)
