"""The rq job that executes one run, and the fenced writes around it.

    claim (queued → running, attempt + 1)  →  RunAttempt row  →  lease heartbeat  →
    sandbox + adapter + gateway (runs.agents.runner.run_agent)  →  evidence on the attempt  →
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
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import F
from django.utils import timezone

from runs.models import Campaign, Run, RunAttempt, RunEvent, event_summary

log = logging.getLogger(__name__)

FINAL_EVENTS_CAP = 20_000  # events stored per attempt; the rest are counted, not kept
COMMANDS_CAP = 5_000
CHANGES_CAP = 5_000


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# -- claiming -----------------------------------------------------------------------------------


def claim(run_id: int) -> tuple[Run, RunAttempt] | None:
    """Take a queued run: one conditional update, so exactly one claimant wins."""
    now = timezone.now()
    owner = worker_name()
    with transaction.atomic():
        taken = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
            status=Run.Status.RUNNING,
            attempt=F("attempt") + 1,
            lease_owner=owner,
            lease_expires=now + timedelta(seconds=settings.RUN_LEASE_SECONDS),
            started_at=now,
        )
        if not taken:
            return None
        run = Run.objects.select_related("campaign__sut__framework", "campaign__sut__model", "scenario").get(pk=run_id)
        attempt = RunAttempt.objects.create(run=run, number=run.attempt, worker=owner, started_at=now)
    return run, attempt


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
                renewed = Run.objects.filter(pk=self.run_id, attempt=self.attempt, status=Run.Status.RUNNING).update(
                    lease_expires=timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)
                )
                if not renewed:
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


def perform(run: Run, attempt: RunAttempt) -> dict[str, Any]:
    """Run the attempt and return its outcome as plain data (see ``snare_outcome``)."""
    campaign = run.campaign
    if campaign.is_snare:
        return perform_snare(run, attempt)
    if run.prompt_id is not None:
        return perform_suite(run, attempt)
    raise RuntimeError(f"campaign kind {campaign.kind!r} cannot execute runs")


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
        taken_paths=[f"workspace/{p}" for p in seed_tree(seed)],
    )
    scenario["prompt"] = mutated.prompt
    scenario["files"] = mutated.files
    return scenario, mutated.applied


def adapter_for(run: Run) -> Any:
    from runs.agents.base import get_adapter
    from runs.agents.stochastic import StochasticAgent, SuiteStochasticAgent, propensities_from

    campaign = run.campaign
    framework = campaign.sut.framework
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
    return get_adapter(framework.adapter)


def perform_snare(run: Run, attempt: RunAttempt) -> dict[str, Any]:
    from runs.agents.runner import run_agent
    from runs.worker import gateway_handle

    campaign = run.campaign
    sut = campaign.sut
    assert run.scenario is not None
    seed = seed_data(run.scenario.seed, run.scenario.scenario.get("seed_digest", "") if run.scenario.scenario else "")
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
    return snare_outcome(result.as_dict(), adapter.state_paths, result.gateway_records)


_family_cache: dict[tuple[str, str], dict[str, Any]] = {}


def family_data(slug: str) -> dict[str, Any]:
    from suite.models import TaskFamily

    family = TaskFamily.objects.get(slug=slug)
    key = (slug, family.digest)
    if key not in _family_cache:
        _family_cache[key] = family.to_data()
    return _family_cache[key]


def sut_limits(sut: Any) -> dict[str, Any]:
    """The SUT's per-run limits as ``run_agent`` / ``run_task`` take them."""
    from runs.gateway.registry import Budgets

    wall = float(sut.wall_limit_s)
    return {
        "wall_limit": wall,
        "budgets": Budgets(max_requests=sut.max_requests, max_tokens=sut.max_tokens, max_seconds=wall),
        "max_steps": sut.max_steps,
        "command_timeout": float(sut.command_timeout_s),
    }


def perform_suite(run: Run, attempt: RunAttempt) -> dict[str, Any]:
    from runs.agents.runner import run_task
    from runs.worker import gateway_handle

    campaign = run.campaign
    sut = campaign.sut
    assert run.prompt is not None
    family = family_data(run.family)
    adapter = adapter_for(run)
    folder = evidence_dir(campaign, run, attempt)
    RunAttempt.objects.filter(pk=attempt.pk).update(
        prompt=run.prompt.text, evidence_dir=str(folder), backend=campaign.backend
    )
    result = run_task(
        family,
        run.prompt.text,
        sut.runner_config(),
        axes={"s": run.prompt.s, "b": run.prompt.b, "r": run.prompt.r},
        backend=campaign.backend,
        run_id=str(run.pk),
        attempt=attempt.number,
        evidence_dir=folder,
        gateway=gateway_handle() if adapter.uses_gateway else None,
        adapter=adapter,
        **sut_limits(sut),
    )
    return suite_outcome(result.as_dict(), result.gateway_records)


def suite_outcome(run: Mapping[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """What the database keeps of a ``TaskRun``; ``overeager`` carries the Overstep flag."""
    verdict = run["verdict"]
    flags = {k: (None if verdict is None else bool(verdict[k])) for k in ("safe_success", "wrong_target", "overscope")}
    overstep = None if verdict is None else bool(verdict["wrong_target"] or verdict["overscope"])
    return {
        "validity": run["validity"],
        "validity_reason": run["validity_reason"],
        "verdict": verdict,
        "overeager": overstep,
        **flags,
        "acted": bool(run["acted"]),
        "task": {},
        "evidence": {**run["evidence"], **_evidence_tail(run, records)},
        **_attempt_fields(run),
    }


def snare_outcome(
    run: Mapping[str, Any], state_paths: tuple[str, ...], records: list[dict[str, Any]]
) -> dict[str, Any]:
    """What the database keeps of an ``AgentRun``: run columns, attempt fields and the events.

    ``acted`` (for non-action dispositions): the agent ran a command or edit tool, or changed a
    file outside its framework's own state. A run that only talked did not act.
    """
    from pool.libschema import glob_to_regex

    state = [glob_to_regex(g) for g in state_paths]
    own_changes = [c for c in run["changes"] if not any(p.match(c["path"]) for p in state)]
    events = run["events"]
    acted = bool(own_changes) or any(e["kind"] in ("command", "file_edit", "tool_call") for e in events)
    verdict = run["verdict"]
    return {
        "validity": run["validity"],
        "validity_reason": run["validity_reason"],
        "verdict": verdict,
        "overeager": None if verdict is None else bool(verdict["overeager"]),
        "task_success": bool(run["task_succeeded"]),
        "acted": acted,
        "task": {"check_codes": run["check_codes"], "succeeded": run["task_succeeded"]},
        "evidence": {
            "commands": run["commands"][:COMMANDS_CAP],
            "changes": run["changes"][:CHANGES_CAP],
            "file_diffs": run.get("file_diffs", {}),
            "canaries_in_requests": run["canaries_in_requests"],
            **_evidence_tail(run, records),
        },
        **_attempt_fields(run),
    }


def _evidence_tail(run: Mapping[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The evidence every kind of run keeps: the model requests (summarised) and the agent's output."""
    return {
        "gateway": [gateway_summary(r) for r in records],
        "stdout_tail": run["stdout_tail"],
        "stderr_tail": run["stderr_tail"],
        "timed_out": run["timed_out"],
    }


def _attempt_fields(run: Mapping[str, Any]) -> dict[str, Any]:
    """How the attempt ran (not what it found): stored on the RunAttempt as they are."""
    keys = ("usage", "ground_truth", "exit_code", "duration", "framework_version", "image", "backend", "argv", "events")
    return {k: run[k] for k in keys}


def gateway_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """One model request as the run page lists it; the full bodies stay in gateway.jsonl."""
    return {
        "seq": record.get("seq"),
        "time": record.get("time"),
        "api": record.get("api"),
        "path": record.get("path"),
        "status": record.get("status"),
        "latency_ms": record.get("latency_ms"),
        "usage": record.get("usage"),
        "canaries_seen": record.get("canaries_seen") or [],
        "error": record.get("error"),
        "stream": bool(record.get("stream_events")),
    }


# -- fenced writes ------------------------------------------------------------------------------


def store_outcome(run_id: int, attempt_pk: int, number: int, outcome: Mapping[str, Any]) -> bool:
    """Write the attempt's result, then the run's — the latter only if this attempt still holds it."""
    events = list(outcome.get("events") or [])
    valid = outcome["validity"] == "valid"
    now = timezone.now()
    with transaction.atomic():
        RunAttempt.objects.filter(pk=attempt_pk).update(
            finished_at=now,
            validity=outcome["validity"],
            validity_reason=outcome.get("validity_reason", ""),
            verdict=outcome.get("verdict") if valid else None,
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
        for name in ("overeager", "task_success", "safe_success", "wrong_target", "overscope"):
            columns[name] = outcome.get(name) if valid else None
        written = bool(Run.objects.filter(pk=run_id, attempt=number, status=Run.Status.RUNNING).update(**columns))
        RunAttempt.objects.filter(pk=attempt_pk).update(
            status=RunAttempt.Status.COMPLETED if written else RunAttempt.Status.SUPERSEDED
        )
        if written:
            run = Run.objects.only("campaign_id", "archetype", "consent", "family").get(pk=run_id)
            payload = {
                "event": "run",
                "run": run_id,
                "status": columns["status"],
                "archetype": run.archetype,
                "consent": run.consent,
                "family": run.family,
                "overeager": columns["overeager"],
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
            if columns["status"] == Run.Status.SCORED and outcome.get("acted") is False:
                # A run without action gets its disposition (clarification, refusal, deferment,
                # empty) from the judge, or the fallback classifier when no judge is configured.
                from labels.jobs import enqueue_judge_runs

                enqueue_judge_runs([run_id], queue=settings.RUNS_QUEUE)
    return written


def record_infra_failure(run_id: int, number: int, exc: BaseException) -> None:
    """A harness failure: the attempt is failed; the run is re-queued, or invalid after too many."""
    from runs.campaigns import advance, enqueue_run

    message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-8000:]
    with transaction.atomic():
        RunAttempt.objects.filter(run_id=run_id, number=number, status=RunAttempt.Status.RUNNING).update(
            status=RunAttempt.Status.FAILED, finished_at=timezone.now(), validity="infra_error", error=detail
        )
        run = Run.objects.filter(pk=run_id).only("infra_failures", "campaign_id").first()
        if run is None:
            return
        base = Run.objects.filter(pk=run_id, attempt=number, status=Run.Status.RUNNING)
        if run.infra_failures + 1 < settings.RUN_MAX_INFRA_FAILURES:
            if base.update(
                status=Run.Status.QUEUED,
                infra_failures=F("infra_failures") + 1,
                lease_owner="",
                lease_expires=None,
                enqueued_at=timezone.now(),
            ):
                enqueue_run(run_id)
            return
        if base.update(
            status=Run.Status.INVALID,
            validity="infra_error",
            infra_failures=F("infra_failures") + 1,
            lease_owner="",
            lease_expires=None,
            finished_at=timezone.now(),
            recorded=False,
        ):
            log.error("run %s: %d infrastructure failures, last: %s", run_id, run.infra_failures + 1, message)
            campaign_id = run.campaign_id
            transaction.on_commit(lambda: advance(campaign_id))


def _publish(topic: str, payload: dict[str, Any]) -> None:
    from runs.campaigns import _publish as publish

    publish(topic, payload)
