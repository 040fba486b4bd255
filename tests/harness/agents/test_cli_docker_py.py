"""The PyPI agent CLIs for real: installed in their image layers, run in the Docker sandbox.

mini-swe-agent (the issue's CI proof), OpenHands and aider each run a real pool scenario through
``run_agent``: scripted model → gateway process → in-sandbox forwarder → the CLI → its commands in
the sandbox → transcript → oracle.  Each layer also starts its CLI's version banner in a sandbox.
The layers are built here if missing (idempotent; scripts/ci_sandbox.sh builds them first).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.agents.base import get_adapter
from harness.agents.cli import mini_swe_agent
from harness.agents.events import Command, Error, FileEdit, FinalMessage, ToolCall, Usage
from harness.agents.runner import GatewayHandle
from harness.gateway.registry import Budgets, UpstreamConfig
from harness.sandbox.docker_backend import DockerSandbox, image_id
from harness.sandbox.images import agents as agent_images
from oracles.globs import glob_to_regex
from pool.execution import AgentRun, run_agent

pytestmark = pytest.mark.slow

# layer -> the argv that prints the CLI's version in the sandbox (mini has no --version; its
# banner names it), and how the version appears in the output.
VERSION_ARGV = {
    "mini-swe-agent": (["mini", "--help"], "This is mini-swe-agent version {}"),
    "aider": (["aider", "--version"], "aider {}"),
    "openhands": (["openhands", "--version"], "OpenHands CLI {}"),
}
# Only loopback exists in the sandbox: the external address fails at once (no route, no packet
# leaves), and the interface list shows nothing but loopback is there.
NO_NETWORK = (
    "curl -sS --max-time 5 -o /dev/null http://192.0.2.1/; echo curl-exit=$?;"
    " python3 -c 'import socket; print(\"interfaces\", [n for _, n in socket.if_nameindex()])'"
)


@pytest.fixture(scope="module", autouse=True)
def layers() -> dict[str, str]:
    return {name: agent_images.build_layer(name, progress=lambda _: None).tag for name in VERSION_ARGV}


def _sut(framework: str, script: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "framework": framework,
        "model": "scripted",
        "api_kind": "openai-chat",
        "upstream": UpstreamConfig(kind="scripted", model="scripted", script=script),
    }


def _records(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "gateway.jsonl").read_text().splitlines()]


def _assert_ran_in_its_layer(run: AgentRun) -> None:
    assert run.validity == "valid", (run.validity_reason, run.stdout_tail[-1500:], run.stderr_tail[-1500:])
    assert run.backend == "docker"
    assert run.image == image_id(agent_images.image_tag(run.framework))
    assert run.framework_version == get_adapter(run.framework).version()
    assert {"path": "workspace/note.txt", "change": "created"} in run.changes
    # A verdict exists; the CLI's own state is not counted as an unsolicited change.
    assert run.verdict is not None and run.verdict.overeager
    assert [c.path for c in run.verdict.unsolicited_changes] == ["workspace/note.txt"]


def _bash(command: str, text: str = "") -> dict[str, Any]:
    turn: dict[str, Any] = {"tool_call": {"name": "bash", "arguments": {"command": command}}}
    if text:
        turn["text"] = text
    return turn


def test_mini_swe_agent_really_runs_a_scenario_in_docker_through_the_gateway(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    script = [
        _bash("echo hi > note.txt", text="Writing the note."),
        _bash(NO_NETWORK),
        _bash(f"echo {mini_swe_agent.SUBMIT_MARKER}", text="I wrote the note."),
    ]
    run = run_agent(
        scenario,
        seed,
        _sut("mini-swe-agent", script),
        backend="docker",
        run_id="agents-cli-mini-swe-agent",
        evidence_dir=tmp_path,
        gateway=gateway,
        wall_limit=180,
    )
    _assert_ran_in_its_layer(run)
    # The scripted command ran in the sandbox (the trace has it) and made the file (above).
    assert any("echo hi > note.txt" in c for c in run.commands)
    # The trajectory parsed into the common events.
    calls = [e for e in run.events if isinstance(e, ToolCall)]
    assert [c.name for c in calls] == ["bash", "bash", "bash"]
    commands = [e for e in run.events if isinstance(e, Command)]
    assert commands[0].command == "echo hi > note.txt" and commands[0].exit_code == 0
    # The sandbox had no other network: no route to an external address, only loopback.
    assert "curl-exit=7" in commands[1].output
    assert "interfaces ['lo']" in commands[1].output
    assert [e.text for e in run.events if isinstance(e, FinalMessage)] == ["I wrote the note."]
    assert any(isinstance(e, Usage) and e.requests == 3 for e in run.events)
    # The gateway stored every model request; the first offered the bash tool and the prompt.
    records = _records(tmp_path)
    assert [r["status"] for r in records] == [200, 200, 200]
    assert run.usage["requests"] == 3
    assert [t["function"]["name"] for t in records[0]["request"]["tools"]] == ["bash"]
    assert "invoicekit 0.6.2" in json.dumps(records[0]["request"])
    assert "curl-exit=7" in json.dumps(records[2]["request"])  # the tool result went back to the model
    assert run.argv[:3] == ["mini", "--yolo", "--exit-immediately"]


# The SUT's options for a small local model (bench/local_model_smoke.py): always call bash.
TOOL_CHOICE = {"type": "function", "function": {"name": "bash"}}
MINI_OPTIONS = {"model_kwargs": {"tool_choice": TOOL_CHOICE, "max_tokens": 256}}


def _needs_tool_choice(*turns: dict[str, Any]) -> list[dict[str, Any]]:
    """Turns the scripted model answers only when the request names a tool_choice (else: prose)."""
    return [{**t, "requires": ["tool_choice"]} for t in turns]


def test_mini_swe_agent_applies_the_frameworks_options_to_every_model_request(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    script = _needs_tool_choice(_bash("echo hi > note.txt"), _bash(f"echo {mini_swe_agent.SUBMIT_MARKER}"))
    run = run_agent(
        scenario,
        seed,
        _sut("mini-swe-agent", script),
        backend="docker",
        run_id="agents-cli-mini-options",
        evidence_dir=tmp_path,
        gateway=gateway,
        adapter=get_adapter("mini-swe-agent", MINI_OPTIONS),
        wall_limit=180,
    )
    assert run.validity == "valid", (run.validity_reason, run.stderr_tail[-1500:])
    assert {"path": "workspace/note.txt", "change": "created"} in run.changes
    # As the gateway saw them: every request carried the options.
    records = _records(tmp_path)
    assert [r["status"] for r in records] == [200, 200]
    assert all(r["request"]["tool_choice"] == TOOL_CHOICE and r["request"]["max_tokens"] == 256 for r in records)


def test_a_mini_swe_agent_run_whose_options_were_dropped_never_acts_and_is_invalid(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    # The campaign: the model answers in prose, mini stops with RepeatedFormatError after
    # 0 commands and exits 0 — stored as valid and safe before.
    script = _needs_tool_choice(_bash("echo hi > note.txt"), _bash(f"echo {mini_swe_agent.SUBMIT_MARKER}"))
    run = run_agent(
        scenario,
        seed,
        _sut("mini-swe-agent", script),
        backend="docker",
        run_id="agents-cli-mini-no-options",
        evidence_dir=tmp_path,
        gateway=gateway,
        wall_limit=180,
    )
    assert run.exit_code == 0, run.stderr_tail[-1500:]
    assert run.validity == "agent_error", run.validity_reason
    assert "RepeatedFormatError" in run.validity_reason
    assert run.verdict is None and not run.acted
    assert not [e for e in run.events if isinstance(e, Command)]
    assert all("tool_choice" not in r["request"] for r in _records(tmp_path))


def test_a_mini_swe_agent_run_that_only_submits_did_not_act_and_is_valid(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    # Its trajectory is written under ~/.config and its submission is an echo: neither is an act.
    script = [_bash(f"echo {mini_swe_agent.SUBMIT_MARKER}", text="I would rather ask before touching this.")]
    run = run_agent(
        scenario,
        seed,
        _sut("mini-swe-agent", script),
        backend="docker",
        run_id="agents-cli-mini-nothing",
        evidence_dir=tmp_path,
        gateway=gateway,
        wall_limit=180,
    )
    assert run.validity == "valid", run.validity_reason
    assert not run.acted, run.changes
    assert all(c["path"].startswith("home/") for c in run.changes), run.changes  # the CLI's own state only
    assert [e.text for e in run.events if isinstance(e, FinalMessage)] == ["I would rather ask before touching this."]


def test_a_spent_budget_ends_a_mini_swe_agent_run_as_a_gateway_failure_within_its_retry_limit(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    run = run_agent(
        scenario,
        seed,
        _sut("mini-swe-agent", [_bash("echo hi > note.txt")]),
        backend="docker",
        run_id="agents-cli-mini-swe-agent-budget",
        evidence_dir=tmp_path,
        gateway=gateway,
        wall_limit=120,
        budgets=Budgets(max_requests=1),
    )
    assert run.validity == "gateway_failure", run.validity_reason
    assert run.verdict is None and run.usage["budget_exceeded"] == "max_requests"
    assert [r["status"] for r in run.gateway_records] == [200] + [429] * mini_swe_agent.RETRY_ATTEMPTS
    # Three attempts with 4 s and 8 s of backoff, not the default ten (≈ 6 minutes); the margin is
    # for a loaded machine, where starting the CLI alone takes tens of seconds.
    assert run.duration < 120


def test_openhands_really_runs_a_scenario_in_docker_through_the_gateway(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    script = [
        {
            "text": "Writing the note.",
            "tool_call": {"name": "terminal", "arguments": {"command": "echo hi > note.txt", "security_risk": "LOW"}},
        },
        {"tool_call": {"name": "terminal", "arguments": {"command": NO_NETWORK, "security_risk": "LOW"}}},
        {"tool_call": {"name": "finish", "arguments": {"message": "I wrote the note."}}},
    ]
    run = run_agent(
        scenario,
        seed,
        _sut("openhands", script),
        backend="docker",
        run_id="agents-cli-openhands",
        evidence_dir=tmp_path,
        gateway=gateway,
        wall_limit=180,
    )
    _assert_ran_in_its_layer(run)
    # The terminal tool types commands into tmux: the trace has them as send-keys arguments.
    assert any("echo hi > note.txt" in c for c in run.commands)
    commands = [e for e in run.events if isinstance(e, Command)]
    assert commands[0].command == "echo hi > note.txt" and commands[0].exit_code == 0
    assert "curl-exit=7" in commands[1].output and "interfaces ['lo']" in commands[1].output
    assert [e.text for e in run.events if isinstance(e, FinalMessage)] == ["I wrote the note."]
    records = _records(tmp_path)
    assert [r["status"] for r in records] == [200, 200, 200]
    assert {"terminal", "file_editor", "finish"} <= {t["function"]["name"] for t in records[0]["request"]["tools"]}


def test_aider_really_runs_a_scenario_in_docker_through_the_gateway(
    gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    reply = (
        "I'll write the note.\n\nnote.txt\n```\n<<<<<<< SEARCH\n=======\nhi\n>>>>>>> REPLACE\n```\n\n"
        f"Then check the network:\n\n```bash\n{NO_NETWORK}\n```\n"
    )
    run = run_agent(
        scenario,
        seed,
        _sut("aider", [{"text": reply}]),
        backend="docker",
        run_id="agents-cli-aider",
        evidence_dir=tmp_path,
        gateway=gateway,
        wall_limit=180,
    )
    _assert_ran_in_its_layer(run)
    assert FileEdit(path="note.txt", action="write") in run.events
    (command,) = [e for e in run.events if isinstance(e, Command)]
    assert "curl-exit=7" in command.output and "interfaces ['lo']" in command.output
    assert any("curl -sS --max-time 5" in c for c in run.commands)  # aider ran it in the sandbox
    assert [r["status"] for r in _records(tmp_path)] == [200]
    assert not [e for e in run.events if isinstance(e, Error)]


QUESTION = "Which release should I cut: 0.6.3 or 0.7.0?"
# framework -> the script of a run whose model only asks a question, in the CLI's protocol.
ASKING: dict[str, list[dict[str, Any]]] = {
    "aider": [{"question": QUESTION}],
    "openhands": [{"tool_call": {"name": "finish", "arguments": {"message": QUESTION}}}],
}


@pytest.mark.parametrize("framework", sorted(ASKING))
def test_a_cli_run_that_only_asks_is_valid_and_did_not_act(
    framework: str, gateway: GatewayHandle, scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    """What the CLI writes of its own is in its state paths, and its way of ending a turn is not an
    act: a run that does nothing reaches the non-action dispositions (issue 18 item 3)."""
    run = run_agent(
        scenario,
        seed,
        _sut(framework, ASKING[framework]),
        backend="docker",
        run_id=f"agents-cli-asks-{framework}",
        evidence_dir=tmp_path,
        gateway=gateway,
        wall_limit=180,
    )
    assert run.validity == "valid", (run.validity_reason, run.stdout_tail[-1500:], run.stderr_tail[-1500:])
    state = [glob_to_regex(g) for g in get_adapter(framework).state_paths]
    assert [c["path"] for c in run.changes if not any(r.match(c["path"]) for r in state)] == []
    assert not run.acted, run.events
    assert [e.text for e in run.events if isinstance(e, FinalMessage)] == [QUESTION]


@pytest.mark.parametrize("layer", sorted(VERSION_ARGV))
def test_each_layers_cli_reports_its_pinned_version_in_the_sandbox(layer: str, layers: dict[str, str]) -> None:
    argv, shown = VERSION_ARGV[layer]
    with DockerSandbox.create([], run_id=f"agents-cli-version-{layer}", image=layers[layer]) as sandbox:
        result = sandbox.exec(argv, timeout=120, input=b"")
    assert result.exit_code == 0, result.stderr_text[-2000:]
    assert shown.format(get_adapter(layer).version()) in result.stdout_text, result.stdout_text[-2000:]
