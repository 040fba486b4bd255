"""The rq job that executes one run, and the fenced writes around it.

    claim (queued → running, attempt + 1)  →  RunAttempt row  →  lease heartbeat  →
    the campaign kind's plan performs the run (``runs.plans``: the benchmark's world through
    ``harness.run``)  →  evidence on the attempt  →  verdict on the run, only if this attempt
    still holds it  →  campaign step

Jobs take ids, never ORM objects (django-rq house style), and are safe to run twice: a second job
for a run that is already claimed or finished finds nothing to claim and returns.

Failure handling, by what failed:

* the agent misbehaved (hang, crash, no tools, model/budget failure) — that is a *result*: the
  attempt completes with a validity status and no verdict, the run becomes ``invalid``, and the
  allocator decides whether the slot is retried (SNARE: up to ``max_attempts``);
* the harness failed (sandbox creation, an exception here) — the attempt is ``failed`` and the run
  is re-queued as a new attempt, up to ``RUN_MAX_INFRA_FAILURES``;
* the worker died — its lease expires and the watchdog abandons the attempt (runs.campaigns).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import traceback
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction

from harness.outcome import Outcome
from runs import state
from runs.campaigns import _publish as publish_progress
from runs.campaigns import advance, enqueue_run, plan_of
from runs.models import Campaign, Run, RunAttempt
from runs.signals import run_scored

log = logging.getLogger(__name__)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# -- claiming -----------------------------------------------------------------------------------


def claim(run_id: int) -> tuple[Run, RunAttempt] | None:
    """Take a queued run (``runs.state.claim``): exactly one claimant wins."""
    return state.claim(run_id, worker_name())


class Heartbeat:
    """Renews the run's lease every third of its length until stopped; notices being fenced out."""

    def __init__(self, run_id: int, attempt: int) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{run_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        interval = max(1.0, settings.RUN_LEASE_SECONDS / 3)
        try:
            while not self._stop.wait(interval):
                if not state.renew(self.run_id, self.attempt):
                    # The watchdog gave the run to another attempt: our result will be refused.
                    self.lost.set()
                    return
        except Exception:  # a database blip: the next renewal or the reaper decides
            log.exception("lease renewal of run %s failed", self.run_id)
        finally:
            connection.close()


# -- the job ------------------------------------------------------------------------------------


def execute_run(run_id: int) -> str:
    """Execute one run (the rq job). Returns a short status line for the rq dashboard."""
    close_old_connections()
    claimed = claim(run_id)
    if claimed is None:
        return f"run {run_id}: not queued (already claimed, finished or cancelled)"
    run, attempt = claimed
    campaign_id = run.campaign_id
    try:
        with Heartbeat(run.pk, attempt.number):
            outcome = perform(run, attempt)
    except Exception as exc:  # every harness failure becomes a recorded, retried attempt
        log.exception("run %s attempt %s failed in the harness", run.pk, attempt.number)
        record_infra_failure(run.pk, attempt.number, exc)
        return f"run {run_id}: attempt {attempt.number} failed in the harness: {exc}"
    written = store_outcome(run.pk, attempt.pk, attempt.number, outcome)
    advance(campaign_id)
    return f"run {run_id}: attempt {attempt.number} {'stored' if written else 'superseded'} ({outcome['validity']})"


def perform(run: Run, attempt: RunAttempt) -> Outcome:
    """Run the attempt with its campaign kind's plan and return what it found."""
    return plan_of(run.campaign.kind).perform(run, attempt)


# -- fenced writes ------------------------------------------------------------------------------


def store_outcome(run_id: int, attempt_pk: int, number: int, outcome: Outcome) -> bool:
    """Write the attempt's result, then the run's — the latter only if this attempt still holds it."""
    from runs.costs import attempt_costs

    snapshot = Campaign.objects.filter(runs__pk=run_id).values_list("sut_snapshot", flat=True).first() or {}
    cost, claim = attempt_costs(snapshot, outcome.get("usage") or {}, outcome.get("events") or [])
    with transaction.atomic():
        run = state.finish(run_id, attempt_pk, number, outcome, cost_usd=cost, agent_cost_usd=claim)
        if run is None:
            return False
        payload = {
            "event": "run",
            "run": run_id,
            "status": run.status,
            "archetype": run.archetype,
            "consent": run.consent,
            "family": run.family,
            "overeager": run.overeager,
            "validity": outcome["validity"],
        }
        topic = f"campaign-{run.campaign_id}"
        matrix_id = Campaign.objects.filter(pk=run.campaign_id).values_list("matrix_id", flat=True).first()

        def after_commit() -> None:
            from runs.stats import bump

            bump(run.campaign_id, matrix_id)  # before the push: a page refetching sees the run
            _publish(topic, payload)
            if matrix_id is not None:
                _publish(f"matrix-{matrix_id}", {**payload, "campaign": run.campaign_id})

        transaction.on_commit(after_commit)
        if run.status == Run.Status.SCORED:
            # Receivers (the labels app: a run without action gets its disposition) act on commit.
            run_scored.send(sender=Run, run_id=run_id, acted=bool(outcome.get("acted")))
    return True


def record_infra_failure(run_id: int, number: int, exc: BaseException) -> None:
    """A harness failure: the attempt is failed; the run is re-queued, or invalid after too many."""
    message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-8000:]
    with transaction.atomic():
        gave = state.give_back(run_id, number, attempt_status=RunAttempt.Status.FAILED, error=detail)
        if gave is state.GiveBack.REQUEUED:
            enqueue_run(run_id)
        elif gave is state.GiveBack.INVALID:
            log.error("run %s: too many infrastructure failures, last: %s", run_id, message)
            campaign_id = Run.objects.filter(pk=run_id).values_list("campaign_id", flat=True).get()
            transaction.on_commit(lambda: advance(campaign_id))


def _publish(topic: str, payload: dict[str, Any]) -> None:
    publish_progress(topic, payload)
