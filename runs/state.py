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
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from harness.outcome import Outcome, Validity
from runs.models import Run, RunAttempt, RunEvent, event_summary

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


def finish(run_id: int, attempt_pk: int, number: int, outcome: Outcome) -> Run | None:
    """Write the attempt's result, then the run's — the latter only if this attempt still holds it.

    Returns the run (its campaign and cell fields) when the run took the result, None when the
    attempt was superseded.  Call inside a transaction.
    """
    events = list(outcome.get("events") or [])
    valid = outcome["validity"] == Validity.VALID
    now = timezone.now()
    RunAttempt.objects.filter(pk=attempt_pk).update(
        finished_at=now,
        validity=outcome["validity"],
        validity_reason=outcome.get("validity_reason", ""),
        verdict=outcome.get("verdict") if valid else None,
        oracle_version=outcome.get("oracle_version", "") if valid else "",
        task=outcome.get("task") or {},
        evidence=outcome.get("evidence") or {},
        usage=outcome.get("usage") or {},
        ground_truth=outcome.get("ground_truth"),
        exit_code=outcome.get("exit_code"),
        duration=outcome.get("duration"),
        framework_version=outcome.get("framework_version", ""),
        image=outcome.get("image", ""),
        backend=outcome.get("backend", ""),
        argv=outcome.get("argv") or [],
        event_count=len(events),
    )
    RunEvent.objects.bulk_create(
        [
            RunEvent(attempt_id=attempt_pk, seq=i, kind=str(e.get("kind", "")), summary=event_summary(e), data=e)
            for i, e in enumerate(events[:FINAL_EVENTS_CAP])
        ],
        batch_size=1000,
    )
    columns: dict[str, Any] = {
        "status": Run.Status.SCORED if valid else Run.Status.INVALID,
        "validity": outcome["validity"],
        "counted_attempt_id": attempt_pk,
        "finished_at": now,
        "lease_owner": "",
        "lease_expires": None,
        "recorded": False,
        "duration": outcome.get("duration"),
        "acted": outcome.get("acted"),
    }
    for name in ("overeager", "overeager_effective", "task_success", "safe_success", "wrong_target", "overscope"):
        columns[name] = outcome.get(name) if valid else None
    columns["oracle_version"] = outcome.get("oracle_version", "") if valid else ""
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
