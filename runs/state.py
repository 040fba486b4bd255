"""Every status change of a Run and its RunAttempts, in one place.

Each transition is one conditional ``UPDATE … WHERE status = <expected> [AND attempt = n]`` whose
row count says whether it happened, so workers, the watchdog and the coordinator can race over a
run and exactly one of them wins each step.  ``Run.attempt`` is the fencing token: a claim
increments it, and every later write of that attempt is guarded by it, so a worker that lost its
lease cannot overwrite the run's result.

    Run                                      function        who
    queued    → running   (attempt + 1)      claim           the run's rq job
    running   → running   (lease extended)   renew           the job's heartbeat
    running   → scored | invalid             finish          the job, with its outcome
    running   → queued                       give_back       a harness failure or an expired
    running   → invalid   (infra_error)      give_back         lease; invalid once the run has
                                                               failed RUN_MAX_INFRA_FAILURES times
    invalid   → queued    (slot_attempt)     retry           the allocator retries the slot
    invalid   → dropped                      drop            the allocator gives the slot up
    queued    → cancelled                    cancel_queued   the campaign stops or fails
    scored | invalid: recorded → True        mark_recorded   folded into the allocator's state

    Campaign                                 function
    running   → stopped  (cost cap)          stop_for_cost   the coordinator's cap guard (runs.costs)
    stopped (cost cap) → running             resume          a curator raised the cap

    RunAttempt                               function
    (new)     running                        claim
    running   → completed | superseded       finish          (superseded: the run was no longer held)
    running   → failed                       give_back       (the harness failed during the attempt)
    running   → abandoned                    give_back       (its worker stopped renewing the lease)

Follow-ups that are not state (enqueueing a job, advancing the campaign, pushing progress) are
the callers', on commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from harness.outcome import ATTEMPT_FIELDS, RUN_COLUMNS, VERDICT_COLUMNS, Outcome, Validity
from runs.models import Campaign, Run, RunAttempt, RunEvent, event_summary

FINAL_EVENTS_CAP = 20_000  # events stored per attempt; the rest are counted, not kept


def _lease_expiry() -> Any:
    return timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)


def claim(run_id: int, owner: str) -> tuple[Run, RunAttempt] | None:
    """queued → running: exactly one claimant wins; it gets the new attempt number."""
    now = timezone.now()
    with transaction.atomic():
        taken = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
            status=Run.Status.RUNNING,
            attempt=F("attempt") + 1,
            lease_owner=owner,
            lease_expires=_lease_expiry(),
            started_at=now,
        )
        if not taken:
            return None
        run = Run.objects.select_related("campaign__sut__framework", "campaign__sut__model", "scenario").get(pk=run_id)
        attempt = RunAttempt.objects.create(run=run, number=run.attempt, worker=owner, started_at=now)
    return run, attempt


def renew(run_id: int, number: int) -> bool:
    """Extend the lease of attempt ``number``; False once another attempt holds the run."""
    return bool(
        Run.objects.filter(pk=run_id, attempt=number, status=Run.Status.RUNNING).update(lease_expires=_lease_expiry())
    )


def finish(
    run_id: int,
    attempt_pk: int,
    number: int,
    outcome: Outcome,
    cost_usd: Decimal | None = None,
    agent_cost_usd: Decimal | None = None,
) -> Run | None:
    """Write the attempt's result, then the run's — the latter only if this attempt still holds it.

    Returns the run (its campaign and cell fields) when the run took the result, None when the
    attempt was superseded.  The attempt's cost is added to the run's whatever happens: a
    superseded attempt's tokens were paid for too.  Call inside a transaction.
    """
    events = list(outcome.get("events") or [])
    valid = outcome["validity"] == Validity.VALID
    now = timezone.now()
    attempt_fields: dict[str, Any] = {name: outcome.get(name) for name in ATTEMPT_FIELDS}
    for name, value in attempt_fields.items():
        field = RunAttempt._meta.get_field(name)
        # A partial result (a test's, an old bundle's) leaves a non-null column at its default.
        if value is None and isinstance(field, models.Field) and not field.null:
            attempt_fields[name] = field.get_default()
    if not valid:  # an invalid run is not scored: no verdict, whatever the result carried
        attempt_fields.update(verdict=None, oracle_version="")
    for name in ("prompt", "applied_mutations"):  # kept from the start when the result has none
        if not attempt_fields[name]:
            del attempt_fields[name]
    RunAttempt.objects.filter(pk=attempt_pk).update(
        **attempt_fields,
        finished_at=now,
        event_count=len(events),
        cost_usd=cost_usd,
        agent_cost_usd=agent_cost_usd,
    )
    if cost_usd is not None:
        Run.objects.filter(pk=run_id).update(cost_usd=Coalesce(F("cost_usd"), Decimal(0)) + cost_usd)
    RunEvent.objects.bulk_create(
        [
            RunEvent(attempt_id=attempt_pk, seq=i, kind=str(e.get("kind", "")), summary=event_summary(e), data=e)
            for i, e in enumerate(events[:FINAL_EVENTS_CAP])
        ],
        batch_size=1000,
    )
    columns: dict[str, Any] = {name: outcome.get(name) for name in RUN_COLUMNS}
    if not valid:
        columns.update(dict.fromkeys(VERDICT_COLUMNS), oracle_version="")
    columns.update(
        status=Run.Status.SCORED if valid else Run.Status.INVALID,
        counted_attempt_id=attempt_pk,
        finished_at=now,
        lease_owner="",
        lease_expires=None,
        recorded=False,
    )
    written = bool(Run.objects.filter(pk=run_id, attempt=number, status=Run.Status.RUNNING).update(**columns))
    RunAttempt.objects.filter(pk=attempt_pk).update(
        status=RunAttempt.Status.COMPLETED if written else RunAttempt.Status.SUPERSEDED
    )
    if not written:
        return None
    return Run.objects.only("campaign_id", "archetype", "consent", "family", "status", "overeager").get(pk=run_id)


class GiveBack(StrEnum):
    """What ``give_back`` did with the run."""

    REQUEUED = "requeued"
    INVALID = "invalid"


def give_back(run_id: int, number: int, *, attempt_status: str, error: str) -> GiveBack | None:
    """running → queued, or → invalid (infra_error) once the run failed too often in the harness.

    For an attempt that did not end with a result: the harness failed (``attempt_status`` failed)
    or its worker vanished (abandoned).  Guarded by the attempt number: if the worker renewed or
    finished in between, nothing happens and None is returned.  Call inside a transaction.
    """
    run = Run.objects.filter(pk=run_id).only("infra_failures").first()
    if run is None:
        return None
    requeue = run.infra_failures + 1 < settings.RUN_MAX_INFRA_FAILURES
    changes: dict[str, Any] = {"infra_failures": F("infra_failures") + 1, "lease_owner": "", "lease_expires": None}
    if requeue:
        changes.update(status=Run.Status.QUEUED, enqueued_at=timezone.now())
    else:
        changes.update(
            status=Run.Status.INVALID, validity=Validity.INFRA_ERROR, finished_at=timezone.now(), recorded=False
        )
    if not Run.objects.filter(pk=run_id, attempt=number, status=Run.Status.RUNNING).update(**changes):
        return None
    RunAttempt.objects.filter(run_id=run_id, number=number, status=RunAttempt.Status.RUNNING).update(
        status=attempt_status, finished_at=timezone.now(), validity=Validity.INFRA_ERROR, error=error
    )
    return GiveBack.REQUEUED if requeue else GiveBack.INVALID


def retry(run_id: int, slot_attempt: int) -> bool:
    """invalid → queued as the allocator's attempt ``slot_attempt`` of the same slot."""
    return bool(
        Run.objects.filter(pk=run_id, status=Run.Status.INVALID).update(
            status=Run.Status.QUEUED,
            slot_attempt=slot_attempt,
            recorded=False,
            infra_failures=0,
            enqueued_at=timezone.now(),
        )
    )


def drop(run_ids: Iterable[int]) -> int:
    """invalid → dropped: the allocator will not retry these slots."""
    return Run.objects.filter(pk__in=list(run_ids), status=Run.Status.INVALID).update(
        status=Run.Status.DROPPED, finished_at=timezone.now()
    )


def cancel_queued(campaign_id: int) -> int:
    """queued → cancelled for every queued run of the campaign (running ones finish and are kept)."""
    return Run.objects.filter(campaign_id=campaign_id, status=Run.Status.QUEUED).update(status=Run.Status.CANCELLED)


def mark_recorded(run_ids: Iterable[int]) -> int:
    """The allocator has folded these finished runs in (saved in the same transaction)."""
    return Run.objects.filter(pk__in=list(run_ids)).update(recorded=True)


COST_STOPS = (Campaign.StopReason.COST_CAP, Campaign.StopReason.MATRIX_COST_CAP)


def stop_for_cost(campaign_id: int, reason: str, message: str) -> bool:
    """running → stopped (a cost cap): no run is issued any more; queued and running ones finish.

    Queued runs are not cancelled, unlike a curator's stop: the guard let them be issued, the
    allocator holds them outstanding, and a resumed campaign must find them done, not gone.
    """
    if reason not in COST_STOPS:
        raise ValueError(f"{reason!r} is not a cost stop")
    return bool(
        Campaign.objects.filter(pk=campaign_id, status=Campaign.Status.RUNNING).update(
            status=Campaign.Status.STOPPED, stop_reason=reason, error=message, finished_at=timezone.now()
        )
    )


def resume(campaign_id: int) -> bool:
    """stopped (by a cost cap) → running; any other stop is final."""
    return bool(
        Campaign.objects.filter(
            pk=campaign_id, status=Campaign.Status.STOPPED, stop_reason__in=list(COST_STOPS)
        ).update(status=Campaign.Status.RUNNING, stop_reason="", error="", finished_at=None)
    )
