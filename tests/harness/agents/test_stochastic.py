"""The stochastic agent's planted truth: deterministic per (campaign seed, run id), calibrated in rate."""

from __future__ import annotations

import math

from scipy import stats

from harness.agents.base import AgentTask
from harness.agents.stochastic import ANY, Propensities, StochasticAgent, decide, logit, sigmoid, uniform
from harness.gateway.protocols import ApiKind

PLANTED = Propensities(
    cells={("destructive-delete", "explicit-deny"): 0.2, (ANY, "explicit-allow"): 0.8},
    default=0.4,
    framework_effects={"claude-code": 1.0},
    model_effects={"small-model": -0.5},
)


def _task(run_id: str, archetype: str = "destructive-delete", consent: str = "explicit-deny") -> AgentTask:
    return AgentTask(
        prompt="",
        base_url="",
        run_token="",
        model="m",
        api_kind=ApiKind.OPENAI_CHAT,
        run_id=run_id,
        framework="shell",
        archetype=archetype,
        consent=consent,
        solutions={"safe": "echo safe", "overeager": "echo overeager"},
    )


def test_the_same_seed_and_run_decide_the_same_way_every_time() -> None:
    a = [decide(PLANTED, 7, f"run-{i}", archetype="x", consent="silent", framework="f", model="m") for i in range(200)]
    b = [decide(PLANTED, 7, f"run-{i}", archetype="x", consent="silent", framework="f", model="m") for i in range(200)]
    c = [decide(PLANTED, 8, f"run-{i}", archetype="x", consent="silent", framework="f", model="m") for i in range(200)]
    assert a == b
    assert [d.overeager for d in a] != [d.overeager for d in c]  # another campaign, other coins
    assert all(0.0 <= d.u < 1.0 for d in a)


def test_cells_fall_back_and_effects_add_on_the_logit() -> None:
    assert PLANTED.cell_p("destructive-delete", "explicit-deny") == 0.2
    assert PLANTED.cell_p("test-tampering", "explicit-allow") == 0.8
    assert PLANTED.cell_p("test-tampering", "silent") == 0.4
    p = PLANTED.p("destructive-delete", "explicit-deny", "claude-code", "small-model")
    assert math.isclose(p, sigmoid(logit(0.2) + 1.0 - 0.5))
    assert PLANTED.p("destructive-delete", "explicit-deny", "other", "other") == sigmoid(logit(0.2))


def test_the_empirical_rate_matches_the_planted_p() -> None:
    n = 20_000
    for framework, model in (("shell", "m"), ("claude-code", "small-model")):
        decisions = [
            decide(
                PLANTED,
                "campaign-1",
                f"r{i}",
                archetype="destructive-delete",
                consent="explicit-deny",
                framework=framework,
                model=model,
            )
            for i in range(n)
        ]
        p = decisions[0].p
        k = sum(d.overeager for d in decisions)
        # Two-sided exact binomial test; at alpha = 1e-4 a correct generator fails once in 10,000 seeds,
        # and the seed is fixed, so the test is deterministic.
        assert stats.binomtest(k, n, p).pvalue > 1e-4, (framework, k / n, p)


def test_the_draw_is_uniform() -> None:
    draws = [uniform(3, f"run-{i}") for i in range(5_000)]
    assert stats.kstest(draws, "uniform").pvalue > 1e-4


def test_the_agent_runs_the_script_it_decided_on_and_reports_its_truth() -> None:
    agent = StochasticAgent(PLANTED, campaign_seed=42)
    seen = set()
    for i in range(40):
        task = _task(f"run-{i}")
        truth = agent.ground_truth(task)
        launch = agent.launch(task)
        assert launch.env["OVEREAGER_SCRIPT"] == f"echo {truth['decision']}"
        assert truth["p"] == PLANTED.p("destructive-delete", "explicit-deny", "shell", "m")
        seen.add(truth["decision"])
    assert seen == {"safe", "overeager"}
