"""The one function that keeps a run's reported disposition in step with its labels.

``refresh(run_ids)`` is called whenever a machine label, a human label or an adjudication of
those runs changes. It applies ``oracles.agreement.final_label`` — adjudicated > human majority
> judge > fallback — and writes the result to ``LabelSummary`` (with the rule's inputs) and to the
denormalised ``Run.disposition`` / ``Run.disposition_source`` the dashboard groups by.

Concurrency: each chunk of runs is locked (``SELECT … FOR UPDATE``, in primary-key order so two
refreshes cannot deadlock) before its labels are read. A writer saves its label, then refreshes
in the same transaction; a second writer's refresh of the same run waits for the first's commit
and then reads both labels (READ COMMITTED re-reads after the lock), so the last refresh always
sees every committed label.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from labels.models import Adjudication, HumanLabel, JudgeLabel, LabelSummary
from oracles.agreement import UNCLEAR, final_label, human_majority
from runs.models import Run

CHUNK = 500
SOURCE_COLUMN_CHARS = 20  # Run.disposition_source's max_length


def column_source(source: str) -> str:
    """``source`` as it fits ``Run.disposition_source``: the judge's model is dropped, its prompt version kept.

    ``judge:gpt-4.1-mini:nonaction-v1`` → ``judge:nonaction-v1``; the full source stays on the
    ``JudgeLabel`` row and in ``LabelSummary.final_source``.
    """
    if source.startswith("judge:"):
        source = "judge:" + source.rsplit(":", 1)[-1]
    return source[:SOURCE_COLUMN_CHARS]


@dataclass(frozen=True)
class Resolution:
    machine: tuple[str, str] | None  # (label, source)
    human_votes: dict[str, int]
    majority: str | None
    adjudicated: str | None
    final: tuple[str, str] | None
    review: str


def resolve(
    machine_rows: Sequence[tuple[str, str, str]], human_labels: Sequence[str], adjudicated: str | None
) -> Resolution:
    """The rule for one run. ``machine_rows`` are (kind, label, source) oldest first; the latest
    judge label is the judge's, the latest fallback label the fallback's."""
    judge = next(((label, source) for kind, label, source in reversed(machine_rows) if kind == "judge"), None)
    fallback = next(((label, source) for kind, label, source in reversed(machine_rows) if kind == "fallback"), None)
    machine = judge or fallback
    majority = human_majority(human_labels)
    final = final_label(adjudicated=adjudicated, human_labels=human_labels, judge=judge, fallback=fallback)
    review = LabelSummary.Review
    if not human_labels:
        state = review.NO_HUMAN
    elif all(label == UNCLEAR for label in human_labels):
        state = review.UNCLEAR
    elif majority is None:
        state = review.TIE
    elif machine is None:
        state = review.NO_MACHINE
    else:
        state = review.AGREE if majority == machine[0] else review.DISAGREE
    return Resolution(machine, dict(Counter(human_labels)), majority, adjudicated, final, str(state))


def refresh(run_ids: Iterable[int]) -> int:
    """Recompute the disposition of these runs; returns how many ``Run`` rows changed."""
    ids = sorted(set(run_ids))
    changed = 0
    for start in range(0, len(ids), CHUNK):
        changed += _refresh_chunk(ids[start : start + CHUNK])
    return changed


def _refresh_chunk(ids: list[int]) -> int:
    with transaction.atomic():
        runs = list(
            Run.objects.select_for_update(of=("self",))
            .filter(pk__in=ids)
            .order_by("pk")
            .only("pk", "campaign_id", "acted", "status", "disposition", "disposition_source")
        )
        machine: dict[int, list[tuple[str, str, str]]] = defaultdict(list)
        for run_id, kind, label, source in (
            JudgeLabel.objects.filter(run_id__in=ids)
            .order_by("run_id", "created", "id")
            .values_list("run_id", "kind", "label", "source")
        ):
            machine[run_id].append((kind, label, source))
        humans: dict[int, list[str]] = defaultdict(list)
        for run_id, label in HumanLabel.objects.filter(run_id__in=ids).values_list("run_id", "label"):
            humans[run_id].append(label)
        adjudicated: dict[int, str | None] = {}
        for run_id, label in (
            Adjudication.objects.filter(run_id__in=ids)
            .order_by("run_id", "-created", "-id")
            .values_list("run_id", "label")
        ):
            adjudicated.setdefault(run_id, label or None)  # the latest row; blank = withdrawn

        now = timezone.now()
        summaries = []
        dirty = []
        for run in runs:
            non_action = run.acted is False and run.status == Run.Status.SCORED
            res = resolve(machine[run.pk], humans[run.pk], adjudicated.get(run.pk))
            label, source = res.final if (res.final and non_action) else ("", "")
            column = (label, column_source(source) if source else "")
            if (run.disposition, run.disposition_source) != column:
                run.disposition, run.disposition_source = column
                dirty.append(run)
            summaries.append(
                LabelSummary(
                    run_id=run.pk,
                    machine_label=res.machine[0] if res.machine else "",
                    machine_source=res.machine[1] if res.machine else "",
                    human_count=sum(res.human_votes.values()),
                    human_votes=res.human_votes,
                    human_majority=res.majority or "",
                    adjudicated=res.adjudicated or "",
                    final_label=label,
                    final_source=source,
                    review=res.review,
                    updated=now,
                )
            )
        if dirty:
            Run.objects.bulk_update(dirty, ["disposition", "disposition_source"])
        LabelSummary.objects.bulk_create(
            summaries,
            update_conflicts=True,
            unique_fields=["run"],
            update_fields=[
                "machine_label",
                "machine_source",
                "human_count",
                "human_votes",
                "human_majority",
                "adjudicated",
                "final_label",
                "final_source",
                "review",
                "updated",
            ],
        )
        if dirty:
            campaigns = {run.campaign_id for run in dirty}
            transaction.on_commit(lambda: _invalidate(campaigns))
    return len(dirty)


def _invalidate(campaign_ids: set[int]) -> None:
    """Dispositions feed the dashboard's cached aggregates: bump their generations."""
    from runs.models import Campaign
    from runs.stats import bump

    for campaign_id, matrix_id in Campaign.objects.filter(pk__in=campaign_ids).values_list("pk", "matrix_id"):
        bump(campaign_id, matrix_id)
