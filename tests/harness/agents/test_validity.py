"""Validity is decided apart from the verdict: budget, hang, crash and toolless runs get no verdict."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.agents.base import AgentLaunch, AgentTask, ShellAgentAdapter
from harness.agents.events import Error, Event, FinalMessage
from harness.agents.runner import GatewayHandle, classify_validity
from harness.gateway.registry import Budgets
from pool.execution import run_agent
from tests.harness.agents.conftest import bash, scripted_sut


def _run(
    gateway: GatewayHandle,
    scenario: dict[str, Any],
    seed: dict[str, Any],
    tmp_path: Path,
    script: list[dict[str, Any]],
    **kwargs: Any,
) -> Any:
    return run_agent(
        scenario,
        seed,
        scripted_sut(script),
        backend="bwrap",
        run_id=f"agents-validity-{tmp_path.name}",
        evidence_dir=tmp_path,
        gateway=gateway,
        **{"wall_limit": 60.0, **kwargs},
    )


@pytest.mark.slow
def test_a_spent_budget_is_a_gateway_failure(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    run = _run(gateway, scenario, seed, tmp_path, [bash("ls"), bash("ls -la")], budgets=Budgets(max_requests=1))
    assert run.validity == "gateway_failure", run.validity_reason
    assert "max_requests" in run.validity_reason
    assert run.verdict is None
    assert run.gateway_records[-1]["error"]["kind"] == "budget_exceeded"
    assert any(isinstance(e, Error) and e.status == 429 for e in run.events)


@pytest.mark.slow
def test_an_agent_that_hangs_past_the_limit_is_a_timeout(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    run = _run(gateway, scenario, seed, tmp_path, [bash("sleep 60")], wall_limit=3.0)
    assert run.validity == "timeout", run.validity_reason
    assert run.timed_out and run.verdict is None
    assert run.duration < 15


@pytest.mark.slow
def test_an_agent_killed_mid_run_is_a_crash(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    # The tool's bash is a child of the agent: killing its parent kills the agent mid-step.
    run = _run(gateway, scenario, seed, tmp_path, [bash("kill -9 $PPID")])
    assert run.validity == "crash", run.validity_reason
    assert run.exit_code == 137 and not run.timed_out
    assert run.verdict is None


class _BrokenAdapter(ShellAgentAdapter):
    """An agent whose program is missing: it never reaches the model."""

    name = "broken"

    def launch(self, task: AgentTask) -> AgentLaunch:
        return AgentLaunch(argv=["python3", "/home/agent/.overeager-agent/missing.py"])


@pytest.mark.slow
def test_an_agent_that_never_reaches_the_model_is_a_toolless_start(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    run = run_agent(
        scenario,
        seed,
        scripted_sut([bash("ls")]),
        backend="bwrap",
        run_id="agents-validity-broken",
        evidence_dir=tmp_path,
        gateway=gateway,
        adapter=_BrokenAdapter(),
        wall_limit=30,
    )
    assert run.validity == "toolless_start", run.validity_reason
    assert run.gateway_records == [] and run.verdict is None


# -- the classifier alone -----------------------------------------------------------------------


def _answered(tools: bool = True) -> dict[str, Any]:
    return {"seq": 1, "status": 200, "request": {"tools": [{"type": "function"}] if tools else []}, "error": None}


def classify(events: list[Event], records: list[Mapping[str, Any]], **kw: Any) -> str:
    args: dict[str, Any] = {"uses_gateway": True, "exit_code": 0, "timed_out": False, "budget_exceeded": None}
    args.update(kw)
    return classify_validity(events=events, records=records, **args)[0]


def test_the_classifier_orders_its_reasons() -> None:
    final = [FinalMessage(text="done")]
    assert classify(final, [_answered()]) == "valid"
    assert classify(final, [_answered()], timed_out=True, exit_code=137) == "timeout"
    assert classify(final, [_answered()], budget_exceeded="max_tokens") == "gateway_failure"
    # The gateway does not record a 401; the agent's own report of it counts.
    assert classify([Error(message="bad key", source="model_api", status=401)], [], exit_code=1) == "gateway_failure"
    assert classify([], [], exit_code=1) == "toolless_start"
    assert classify(final, [_answered(tools=False)]) == "toolless_start"
    assert classify([], [_answered()], exit_code=1) == "crash"
    # A framework that exits non-zero after a final answer finished its work.
    assert classify(final, [_answered()], exit_code=1) == "valid"
    # Agents that never call a model are judged by their exit alone.
    assert classify([], [], uses_gateway=False, exit_code=0) == "valid"
    assert classify([], [], uses_gateway=False, exit_code=2) == "crash"
