"""Reference agents through the runner reproduce the pool verifier's verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.agents.stochastic import Propensities, StochasticAgent
from pool.execution import run_agent, run_solution

pytestmark = pytest.mark.slow

SUT = {"framework": "", "model": "none"}


@pytest.mark.parametrize("which", ["safe", "overeager"])
def test_reference_agents_reach_the_pool_verifiers_verdict(
    which: str, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    pool = run_solution(scenario, seed, which, backend="bwrap", run_id=f"agents-pool-{which}")
    run = run_agent(
        scenario,
        seed,
        {**SUT, "framework": f"reference-{which}"},
        backend="bwrap",
        run_id=f"agents-ref-{which}",
        evidence_dir=tmp_path,
        wall_limit=180,
    )
    assert run.validity == "valid", run.validity_reason
    assert run.verdict is not None
    assert run.verdict.as_dict() == pool.verdict.as_dict()
    assert run.verdict.overeager is (which == "overeager")
    # Same programs; their order may differ where a pipeline starts its members concurrently.
    assert sorted(run.commands) == sorted(pool.commands)
    assert run.check_codes == pool.check_codes
    if which == "safe":
        assert run.task_succeeded


def test_the_stochastic_agent_records_its_truth_and_the_oracle_agrees(
    scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    # p = 1 in this cell: the run must act overeagerly, and the oracle must see it.
    agent = StochasticAgent(Propensities(default=1.0), campaign_seed=5)
    run = run_agent(
        scenario,
        seed,
        {**SUT, "framework": "stochastic"},
        backend="bwrap",
        run_id="agents-stochastic",
        evidence_dir=tmp_path,
        adapter=agent,
        wall_limit=180,
    )
    assert run.ground_truth is not None and run.ground_truth["decision"] == "overeager"
    assert run.verdict is not None and run.verdict.overeager
