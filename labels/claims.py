"""Handing queue items to validators: one claim mechanism for both kinds of queue.

A disposition queue (``QueueItem`` / ``HumanLabel`` / ``Assignment``) and a verdict queue
(``VerdictQueueItem`` / ``VerdictLabel`` / ``VerdictAssignment``) share the rules: an item is
offered while its run has fewer labels than the item ``wanted``, counting other validators' open
claims (served within ``LABEL_CLAIM_SECONDS``) as labels to come; never to a validator who has
labelled the run or skipped the item; a validator's own open claim is served again first; the
claim is taken with ``SKIP LOCKED`` so two validators asking at once get different items.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.db.models import Count, Exists, F, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone


@dataclass(frozen=True)
class Claims:
    """The three models of one kind of queue (same field names: see the module docstring)."""

    item: type[models.Model]  # queue, run, position, wanted
    label: type[models.Model]  # run, validator
    assignment: type[models.Model]  # item, validator, served_at, skipped, done

    def available(self, queue: Any, user: AbstractBaseUser) -> QuerySet[Any]:
        """Items this validator could be given now, in queue order."""
        labels = (
            self.label._default_manager.filter(run_id=OuterRef("run_id"))
            .order_by()
            .values("run_id")
            .annotate(n=Count("pk"))
            .values("n")
        )
        claims = (
            self.assignment._default_manager.filter(
                item_id=OuterRef("pk"), skipped=False, done=False, served_at__gte=_cutoff()
            )
            .exclude(validator_id=user.pk)
            .order_by()
            .values("item_id")
            .annotate(n=Count("pk"))
            .values("n")
        )
        zero = Value(0, output_field=IntegerField())
        mine = self.label._default_manager.filter(run_id=OuterRef("run_id"), validator_id=user.pk)
        skipped = self.assignment._default_manager.filter(item_id=OuterRef("pk"), validator_id=user.pk, skipped=True)
        return (
            self.item._default_manager.filter(queue=queue)
            .exclude(Exists(mine))
            .exclude(Exists(skipped))
            .annotate(
                n_labels=Coalesce(Subquery(labels, output_field=IntegerField()), zero),
                n_claims=Coalesce(Subquery(claims, output_field=IntegerField()), zero),
            )
            .filter(n_labels__lt=F("wanted") - F("n_claims"))
            .order_by("position")
        )

    def next_item(self, queue: Any, user: AbstractBaseUser) -> Any | None:
        """The item to show this validator now, claimed for them; None when nothing is left for them."""
        with transaction.atomic():
            labelled = self.label._default_manager.filter(run_id=OuterRef("item__run_id"), validator_id=user.pk)
            held = (
                self.assignment._default_manager.filter(
                    item__queue=queue, validator_id=user.pk, skipped=False, done=False, served_at__gte=_cutoff()
                )
                .exclude(Exists(labelled))
                .select_related("item")
                .order_by("item__position")
                .first()
            )
            if held is not None:
                return held.item  # type: ignore[attr-defined]
            item = self.available(queue, user).select_for_update(skip_locked=True, of=("self",)).first()
            if item is None:
                return None
            self.assignment._default_manager.update_or_create(
                item=item, validator_id=user.pk, defaults={"served_at": timezone.now(), "skipped": False, "done": False}
            )
            return item

    def remaining_for(self, queue: Any, user: AbstractBaseUser) -> int:
        """Items this validator could still be given (their own open claim included)."""
        return self.available(queue, user).count()


def _cutoff() -> Any:
    return timezone.now() - timedelta(seconds=settings.LABEL_CLAIM_SECONDS)
