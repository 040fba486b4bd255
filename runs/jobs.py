"""The rq job that executes one run, and the fenced writes around it.

    claim (queued → running, attempt + 1)  →  RunAttempt row  →  lease heartbeat  →
    sandbox + adapter + gateway (pool.execution.run_agent)  →  evidence on the attempt  →
    verdict on the run, only if this attempt still holds it  →  campaign step

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

import json
import logging
import os
import socket
import threading
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction

from harness.outcome import Outcome
from runs import state
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
    from runs.campaigns import advance

    advance(campaign_id)
    return f"run {run_id}: attempt {attempt.number} {'stored' if written else 'superseded'} ({outcome['validity']})"


def perform(run: Run, attempt: RunAttempt) -> Outcome:
    """Run the attempt with its campaign kind's plan and return what it found."""
    from runs.campaigns import plan_of

    return plan_of(run.campaign.kind).perform(run, attempt)


def evidence_dir(campaign: Campaign, run: Run, attempt: RunAttempt) -> Path:
    return Path(settings.EVIDENCE_DIR) / str(campaign.uuid) / str(run.pk) / str(attempt.number)


# -- SNARE runs ---------------------------------------------------------------------------------

_seed_cache: dict[tuple[str, str], dict[str, Any]] = {}


def seed_data(slug: str, digest: str) -> dict[str, Any]:
    from pool.models import FixtureSeed

    key = (slug, digest)
    if key not in _seed_cache:
        _seed_cache[key] = FixtureSeed.objects.prefetch_related("commits", "files").get(slug=slug).to_data()
    return _seed_cache[key]


def mutated_scenario(run: Run, campaign: Campaign, seed: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The run's scenario with its mutation plan applied (a fresh dict; the pool row is untouched)."""
    from oracles.scheduler import Mutations, apply_mutations
    from pool.materialize import seed_tree

    assert run.scenario is not None and run.scenario.scenario is not None
    scenario = json.loads(json.dumps(run.scenario.scenario))
    if not run.mutations or not run.mutations.get("operators"):
        return scenario, []
    mutated = apply_mutations(
        scenario["prompt"],
        scenario["files"],
        Mutations.from_dict(run.mutations),
        campaign.mutation_texts,
        # A pack scenario's files are made by its build.sh: the import recorded their paths.
        taken_paths=[f"workspace/{p}" for p in seed_tree(seed)] + list(scenario.get("built_paths") or []),
    )
    scenario["prompt"] = mutated.prompt
    scenario["files"] = mutated.files
    return scenario, mutated.applied


def adapter_for(run: Run) -> Any:
    """The run's adapter, configured with its framework's options (``AgentFramework.options``)."""
    from harness.agents.base import adapter_options, get_adapter
    from harness.agents.stochastic import StochasticAgent, SuiteStochasticAgent, propensities_from

    campaign = run.campaign
    framework = campaign.sut.framework
    # Checked for every adapter, simulated ones too: options no adapter applies are an error.
    options = adapter_options(framework.adapter, framework.options)
    if framework.adapter == "stochastic" and run.prompt_id is not None:
        sim = campaign.simulation or {}
        return SuiteStochasticAgent(
            sim.get("usb") or None,
            framework_effects=sim.get("framework_effects"),
            model_effects=sim.get("model_effects"),
            campaign_seed=f"{campaign.params.get('seed', 0)}:{campaign.sut.slug}",
            run_key=run.key,
        )
    if framework.adapter == "stochastic":
        return StochasticAgent(
            propensities_from(campaign.simulation),
            campaign_seed=f"{campaign.params.get('seed', 0)}:{campaign.sut.slug}",
            # Both members of a consent pair share the coin: the same agent on the same scenario,
            # differing only in the phrasing, so a discordant pair is the phrasing's doing.
            run_key=run.pair_key or run.key,
            latency_s=float(campaign.simulation.get("latency_s", 0.0)),
        )
    return get_adapter(framework.adapter, options.as_dict())


def perform_snare(run: Run, attempt: RunAttempt) -> Outcome:
    from pool.execution import EMPTY_SEED, run_agent
    from runs.worker import gateway_handle

    campaign = run.campaign
    sut = campaign.sut
    assert run.scenario is not None
    if run.scenario.seed:
        seed = seed_data(run.scenario.seed, (run.scenario.scenario or {}).get("seed_digest", ""))
    else:  # a scenario pack's: its build.sh makes the repository
        seed = EMPTY_SEED
    scenario, applied = mutated_scenario(run, campaign, seed)
    adapter = adapter_for(run)
    folder = evidence_dir(campaign, run, attempt)
    RunAttempt.objects.filter(pk=attempt.pk).update(
        prompt=scenario["prompt"], applied_mutations=applied, evidence_dir=str(folder), backend=campaign.backend
    )
    result = run_agent(
        scenario,
        seed,
        sut.runner_config(),
        backend=campaign.backend,
        run_id=str(run.pk),
        attempt=attempt.number,
        evidence_dir=folder,
        gateway=gateway_handle() if adapter.uses_gateway else None,
        adapter=adapter,
        **sut_limits(sut),
        seed_digest=scenario.get("seed_digest", ""),
    )
    return result.outcome()


def sut_limits(sut: Any) -> dict[str, Any]:
    """The SUT's per-run limits as ``run_agent`` / ``run_task`` take them."""
    from harness.gateway.registry import Budgets

    wall = float(sut.wall_limit_s)
    return {
        "wall_limit": wall,
        "budgets": Budgets(max_requests=sut.max_requests, max_tokens=sut.max_tokens, max_seconds=wall),
        "max_steps": sut.max_steps,
        "command_timeout": float(sut.command_timeout_s),
    }


# -- fenced writes ------------------------------------------------------------------------------


def store_outcome(run_id: int, attempt_pk: int, number: int, outcome: Outcome) -> bool:
    """Write the attempt's result, then the run's — the latter only if this attempt still holds it."""
    with transaction.atomic():
        run = state.finish(run_id, attempt_pk, number, outcome)
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
    from runs.campaigns import advance, enqueue_run

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
    from runs.campaigns import _publish as publish

    publish(topic, payload)
