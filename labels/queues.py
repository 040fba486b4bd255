"""Validation queues: building the sample, serving validators one run at a time, taking their labels.

Serving (``next_item``) gives a validator the first item, in queue order, that

* they have not labelled (a label is per run, so a run labelled through another queue counts),
* they have not skipped in this queue, and
* still wants labels: its human labels plus the fresh claims of *other* validators are fewer
  than ``wanted`` (1, or the queue's overlap for its overlap share).

A validator who reloads gets the item they already hold. The chosen item is locked with
``FOR UPDATE SKIP LOCKED`` while the claim is written, so two validators asking at the same
moment get different items when only one label is wanted; a claim older than
``LABEL_CLAIM_SECONDS`` stops counting (the validator left), so nothing waits for them forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from labels.claims import Claims
from labels.disposition import refresh
from labels.models import Assignment, HumanLabel, QueueItem, ValidationQueue
from labels.sampling import Candidate, plan_queue
from oracles.agreement import LABELS
from runs.models import Run

MAX_NOTE_CHARS = 2000


class QueueError(ValueError):
    """A queue cannot be built or a label cannot be taken as asked; the message says what to fix."""


def candidate_runs(queue: ValidationQueue) -> QuerySet[Run]:
    """The non-action runs a queue samples from: scored, ``acted = False``, in its campaigns (or all)."""
    runs = Run.objects.filter(status=Run.Status.SCORED, acted=False)
    campaign_ids = list(queue.campaigns.values_list("pk", flat=True)) if queue.pk else []
    if campaign_ids:
        runs = runs.filter(campaign_id__in=campaign_ids)
    return runs


def _level(prefix: str, value: int | None) -> str:
    return f"{prefix}{value}" if value is not None else f"{prefix}–"


def settled(runs: QuerySet[Run]) -> QuerySet[Run]:
    """The runs no open queue holds: no label can be added or revised on them, so figures over them
    cannot move while a validator labels (what a validator-only account sees; overeager.blind)."""
    return runs.exclude(queue_items__queue__active=True)


def stratum_of(stratify: str, system: str, s: int | None, b: int | None, r: int | None) -> tuple[str, ...]:
    axes = (_level("S", s), _level("B", b), _level("R", r))
    if stratify == ValidationQueue.Stratify.SYSTEM:
        return (system,)
    if stratify == ValidationQueue.Stratify.AXES:
        return axes
    if stratify == ValidationQueue.Stratify.SYSTEM_AXES:
        return (system, *axes)
    return ()


def build(queue: ValidationQueue) -> int:
    """Draw the queue's sample and write its items (once: a queue's sample never changes)."""
    if queue.items.exists():
        raise QueueError(f"queue {queue.name!r} already holds its sample; create a new queue to sample again")
    rows = candidate_runs(queue).values_list(
        "pk", "campaign__sut__framework__slug", "campaign__sut__model__slug", "s_level", "b_level", "r_level"
    )
    candidates = [
        Candidate(pk, stratum_of(queue.stratify, f"{fw} × {model}", s, b, r)) for pk, fw, model, s, b, r in rows
    ]
    if not candidates:
        raise QueueError("no scored non-action runs (acted = False) in the chosen campaigns")
    try:
        planned = plan_queue(
            candidates,
            size=queue.size,
            allocation=queue.allocation,
            overlap=queue.overlap,
            overlap_share=queue.overlap_share,
            seed=queue.seed,
        )
    except ValueError as exc:
        raise QueueError(str(exc)) from None
    QueueItem.objects.bulk_create(
        [
            QueueItem(
                queue=queue,
                run_id=p.run_id,
                position=p.position,
                wanted=p.wanted,
                stratum=" · ".join(p.stratum) if isinstance(p.stratum, tuple) else str(p.stratum),
            )
            for p in planned
        ],
        batch_size=1000,
    )
    return len(planned)


# Both queue kinds hand out items the same way (labels/claims.py).
_CLAIMS = Claims(QueueItem, HumanLabel, Assignment)


def next_item(queue: ValidationQueue, user: AbstractBaseUser) -> QueueItem | None:
    """The item to show this validator now, claimed for them; None when nothing is left for them."""
    return _CLAIMS.next_item(queue, user)


def remaining_for(queue: ValidationQueue, user: AbstractBaseUser) -> int:
    """Items this validator could still be given (their own open claim included)."""
    return _CLAIMS.remaining_for(queue, user)


def take_label(item: QueueItem, user: AbstractBaseUser, label: str, note: str = "") -> tuple[HumanLabel, bool]:
    """Record (or revise) this validator's label of the item's run; returns (label, created).

    One label per validator per run is the database's unique constraint; a second submission —
    a double click, a revision — updates the same row instead of failing.
    """
    if label not in LABELS:
        raise QueueError(f"label {label!r} is not one of {', '.join(LABELS)}")
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise QueueError(f"the note has {len(note)} characters; keep it under {MAX_NOTE_CHARS}")
    now = timezone.now()
    with transaction.atomic():
        try:
            with transaction.atomic():
                row = HumanLabel.objects.create(
                    run_id=item.run_id,
                    validator_id=user.pk,
                    queue=item.queue,
                    label=label,
                    note=note,
                    created=now,
                    updated=now,
                )
                created = True
        except IntegrityError:
            # Another request of this validator won the insert (a double submit): update it instead.
            row = HumanLabel.objects.select_for_update().get(run_id=item.run_id, validator_id=user.pk)
            row.label, row.note, row.updated = label, note, now
            row.save(update_fields=["label", "note", "updated"])
            created = False
        Assignment.objects.update_or_create(item=item, validator_id=user.pk, defaults={"done": True, "skipped": False})
        refresh([item.run_id])
    return row, created


def skip(item: QueueItem, user: AbstractBaseUser) -> None:
    """This validator passes on the item: it is not offered to them again in this queue."""
    Assignment.objects.update_or_create(
        item=item, validator_id=user.pk, defaults={"skipped": True, "served_at": timezone.now()}
    )


def clear_skips(queue: ValidationQueue, user: AbstractBaseUser) -> int:
    """Offer this validator's skipped items again."""
    return Assignment.objects.filter(item__queue=queue, validator_id=user.pk, skipped=True).update(
        skipped=False, served_at=timezone.now() - timedelta(days=365)
    )


@dataclass(frozen=True)
class ValidatorProgress:
    username: str
    labelled: int
    unclear: int


@dataclass(frozen=True)
class QueueProgress:
    items: int
    labels_wanted: int
    labels_given: int  # counted up to each item's wanted number
    items_complete: int
    overlap_items: int
    validators: Sequence[ValidatorProgress]

    @property
    def share(self) -> float:
        return self.labels_given / self.labels_wanted if self.labels_wanted else 0.0


def progress(queue: ValidationQueue) -> QueueProgress:
    """How far the queue is, overall and per validator (labels of the queue's runs, whichever queue gave them)."""
    labels = (
        HumanLabel.objects.filter(run_id=OuterRef("run_id"))
        .order_by()
        .values("run_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    items = list(
        QueueItem.objects.filter(queue=queue)
        .annotate(n=Coalesce(Subquery(labels, output_field=IntegerField()), Value(0)))
        .values_list("wanted", "n")
    )
    per_validator = (
        HumanLabel.objects.filter(run__queue_items__queue=queue)
        .values("validator__username")
        .annotate(n=Count("pk"), unclear=Count("pk", filter=Q(label="unclear")))
        .order_by("-n", "validator__username")
    )
    return QueueProgress(
        items=len(items),
        labels_wanted=sum(w for w, _ in items),
        labels_given=sum(min(w, n) for w, n in items),
        items_complete=sum(1 for w, n in items if n >= w),
        overlap_items=sum(1 for w, _ in items if w > 1),
        validators=[ValidatorProgress(row["validator__username"], row["n"], row["unclear"]) for row in per_validator],
    )


def labelled_by(queue: ValidationQueue, user: AbstractBaseUser) -> int:
    return HumanLabel.objects.filter(run__queue_items__queue=queue, validator_id=user.pk).count()
