"""What a campaign kind's plan needs to perform one run: its scenario, adapter, limits and folder.

Below the coordinator (``runs.campaigns``) and the job (``runs.jobs``), so a plan's ``perform``
reaches down here and never back up: the run's path goes job → plan → benchmark core →
``harness.run`` → world → sandbox, and returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from harness.outcome import Outcome, limit_columns
from runs.gateway import gateway_handle
from runs.models import Campaign, Run, RunAttempt


def evidence_dir(campaign: Campaign, run: Run, attempt: RunAttempt) -> Path:
    return Path(settings.EVIDENCE_DIR) / str(campaign.uuid) / str(run.pk) / str(attempt.number)


_seed_cache: dict[tuple[str, str], dict[str, Any]] = {}


def seed_data(slug: str, digest: str) -> dict[str, Any]:
    from pool.models import FixtureSeed

    key = (slug, digest)
    if key not in _seed_cache:
        _seed_cache[key] = FixtureSeed.objects.prefetch_related("commits", "files").get(slug=slug).to_data()
    return _seed_cache[key]


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
    """One SNARE (or pack) run: the plan gathers what the run needs here, then goes down once."""
    from pool.execution import EMPTY_SEED, run_agent

    campaign = run.campaign
    sut = campaign.sut
    adapter = adapter_for(run)
    folder = evidence_dir(campaign, run, attempt)
    RunAttempt.objects.filter(pk=attempt.pk).update(evidence_dir=str(folder), backend=campaign.backend)
    assert run.scenario is not None and run.scenario.scenario is not None
    if run.scenario.seed:
        seed = seed_data(run.scenario.seed, run.scenario.scenario.get("seed_digest", ""))
    else:  # a scenario pack's: its build.sh makes the repository
        seed = EMPTY_SEED
    result = run_agent(
        run.scenario.scenario,
        seed,
        sut.runner_config(),
        backend=campaign.backend,
        run_id=str(run.pk),
        attempt=attempt.number,
        evidence_dir=folder,
        gateway=gateway_handle() if adapter.uses_gateway else None,
        adapter=adapter,
        **record_limits(run, attempt, sut_limits(sut, campaign.run_token_cap)),
        seed_digest=run.scenario.scenario.get("seed_digest", ""),
        mutations=run.mutations,
        mutation_texts=campaign.mutation_texts,
    )
    return result.outcome()


def sut_limits(sut: Any, token_cap: int | None = None) -> dict[str, Any]:
    """The SUT's per-run limits as ``run_agent`` / ``run_task`` take them; ``token_cap`` is the
    campaign's per-run token cap, applied where it is tighter than the SUT's own ``max_tokens``."""
    from harness.gateway.registry import Budgets

    wall = float(sut.wall_limit_s)
    tokens = int(sut.max_tokens) if token_cap is None else min(int(sut.max_tokens), int(token_cap))
    return {
        "wall_limit": wall,
        "budgets": Budgets(max_requests=sut.max_requests, max_tokens=tokens, max_seconds=wall),
        "max_steps": sut.max_steps,
        "command_timeout": float(sut.command_timeout_s),
    }


def record_limits(run: Run, attempt: RunAttempt, limits: dict[str, Any]) -> dict[str, Any]:
    """Store on the run the limits its attempt starts under, and return them for the harness.

    The system's limits are read when the run is claimed, so an edit during a campaign reaches the
    next jobs; the run keeps what its own attempt used.  Fenced by the attempt number: an attempt
    that lost the run to a later one does not write over that one's limits.
    """
    Run.objects.filter(pk=run.pk, attempt=attempt.number).update(**limit_columns(limits))
    return limits
