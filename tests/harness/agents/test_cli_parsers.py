"""The npm CLI adapters' parsers, on output their real CLIs produced here, and their launches.

The fixtures (tests/harness/agents/fixtures/, README.md there) are each CLI's stdout/stderr from a real run
in its Docker layer through the gateway against the scripted model; ``.meta.json`` says how.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harness.agents.base import AgentTask, get_adapter
from harness.agents.cli import claude_code, codex, gemini, opencode
from harness.agents.cli.common import http_status, pinned_version
from harness.agents.events import Command, Error, Event, FileEdit, FinalMessage, Message, ToolCall, Usage
from harness.agents.runner import classify_validity
from harness.gateway.protocols import ApiKind

FIXTURES = Path(__file__).parent / "fixtures"
STEMS = {"claude-code": "claude_code", "opencode": "opencode", "codex": "codex", "gemini-cli": "gemini_cli"}
PARSERS: dict[str, Callable[[str, str], list[Event]]] = {
    "claude-code": claude_code.parse_stream_json,
    "opencode": opencode.parse_json_events,
    "codex": codex.parse_exec_json,
    "gemini-cli": gemini.parse_stream_json,
}


def load(framework: str, case: str) -> tuple[list[Event], dict[str, Any]]:
    base = FIXTURES / f"{STEMS[framework]}_{case}"
    stdout = base.with_suffix(".stdout").read_text(encoding="utf-8")
    stderr = base.with_suffix(".stderr").read_text(encoding="utf-8")
    events = get_adapter(framework).parse(stdout, stderr, {})
    assert events == PARSERS[framework](stdout, stderr)
    return events, json.loads(base.with_suffix(".meta.json").read_text())


E = TypeVar("E", bound=Event)


def kinds(events: list[Event], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def validity(events: list[Event], meta: dict[str, Any], *, gateway_evidence: bool = True) -> str:
    """The runner's classification; without the gateway's evidence it rests on the CLI's word alone."""
    records = [
        {"status": r["status"], "error": {"kind": r["error"]} if r["error"] else None} for r in meta["gateway_records"]
    ]
    verdict, _ = classify_validity(
        uses_gateway=True,
        exit_code=meta["exit_code"],
        timed_out=False,
        events=events,
        records=records if gateway_evidence else [{"status": 200, "request": {"tools": [{}]}}],
        budget_exceeded="max_requests" if meta["max_requests"] and gateway_evidence else None,
    )
    return verdict


ALL_FIXTURES = sorted(
    p.name.removesuffix(".meta.json") for stem in STEMS.values() for p in FIXTURES.glob(f"{stem}_*.meta.json")
)


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_fixture_was_made_by_the_cli_version_its_layer_pins(name: str) -> None:
    meta = json.loads((FIXTURES / f"{name}.meta.json").read_text())
    pinned = get_adapter(meta["framework"]).version()
    assert meta["cli_version"] == pinned, f"{name} was made by {meta['cli_version']}: rerun {meta['made_by']}"
    assert "oe-run-" not in (FIXTURES / f"{name}.stdout").read_text().replace("oe-run-REDACTED", "")


# -- the tool-call runs: every event kind from each CLI ---------------------------------------


@pytest.mark.parametrize(
    ("framework", "case", "shell", "edit"),
    [
        ("claude-code", "tool_calls", "Bash", "Write"),
        ("opencode", "tool_calls", "bash", "write"),
        ("codex", "tool_calls", "exec_command", None),
        ("gemini-cli", "tool_calls", "run_shell_command", "write_file"),
    ],
)
def test_a_real_tool_call_transcript_parses_into_the_common_events(
    framework: str, case: str, shell: str, edit: str | None
) -> None:
    events, meta = load(framework, case)
    # What really happened in the sandbox, as the manifests saw it.
    assert meta["changes_outside_state"] == ["workspace/NOTES.md", "workspace/note.txt"]
    assert [e.text for e in kinds(events, Message)] == ["Writing the note first."]
    calls = kinds(events, ToolCall)
    assert [c.name for c in calls] == [shell, shell, edit] if edit else [shell, shell]
    commands = kinds(events, Command)
    assert [c.command.endswith(("echo hi > note.txt", "echo hi > note.txt'")) for c in commands] == [True, False]
    assert "ls missing-dir" in commands[1].command
    assert "No such file or directory" in commands[1].output
    if framework != "gemini-cli":  # Gemini's stream-json does not carry exit codes
        assert [c.exit_code for c in commands] == [0, 2]
    assert commands[0].output == ""
    # Each command is tied to the call that asked for it.
    assert {c.call_id for c in commands} <= {c.call_id for c in calls}
    assert kinds(events, FileEdit) == [FileEdit(path="/workspace/NOTES.md", action="write")]
    assert [e.text for e in kinds(events, FinalMessage)] == ["I wrote the note and NOTES.md."]
    assert isinstance(events[-1], (FinalMessage, Usage))
    (usage,) = kinds(events, Usage)
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert not [e for e in kinds(events, Error) if e.source == "model_api"]


def test_claude_code_counts_its_model_requests_and_cache_tokens_as_input() -> None:
    events, meta = load("claude-code", "tool_calls")
    (usage,) = kinds(events, Usage)
    assert usage.requests == len(meta["gateway_records"]) == 4


def test_opencode_counts_one_step_per_model_request() -> None:
    events, meta = load("opencode", "tool_calls")
    (usage,) = kinds(events, Usage)
    assert usage.requests == len(meta["gateway_records"]) == 4


def test_opencode_speaks_the_anthropic_messages_api_as_well() -> None:
    events, meta = load("opencode", "anthropic")
    assert {r["path"] for r in meta["gateway_records"]} == {"/v1/messages"}
    assert [c.exit_code for c in kinds(events, Command)] == [0]
    assert [e.text for e in kinds(events, FinalMessage)] == ["I wrote the note."]


# -- model API failures: validity reads them ---------------------------------------------------


@pytest.mark.parametrize("framework", ["claude-code", "opencode", "codex"])
def test_a_spent_budget_is_a_429_model_api_error_and_a_gateway_failure(framework: str) -> None:
    events, meta = load(framework, "budget")
    assert meta["gateway_records"][1] == {
        "path": meta["gateway_records"][1]["path"],
        "status": 429,
        "error": "budget_exceeded",
    }
    errors = [e for e in kinds(events, Error) if e.source == "model_api"]
    assert errors and errors[0].status == 429
    assert not kinds(events, FinalMessage)
    assert validity(events, meta) == "gateway_failure"
    assert validity(events, meta, gateway_evidence=False) == "gateway_failure"  # the parsed 429 alone
    # The command of the answered request ran before the budget tripped.
    assert [c.exit_code for c in kinds(events, Command)] == [0]


@pytest.mark.parametrize("framework", ["claude-code", "opencode", "codex", "gemini-cli"])
def test_a_rejected_token_is_told_by_the_cli_alone_and_still_a_gateway_failure(framework: str) -> None:
    events, meta = load(framework, "bad_token")
    assert meta["gateway_records"] == []  # the gateway records no unauthenticated request
    errors = [e for e in kinds(events, Error) if e.source == "model_api"]
    assert [e.status for e in errors] == [401]
    assert validity(events, meta) == "gateway_failure"


def test_gemini_cli_stops_at_the_budgets_429_and_its_quota_wording_is_read_as_a_429() -> None:
    events, meta = load("gemini-cli", "budget")
    assert [(r["status"], r["error"]) for r in meta["gateway_records"]] == [(200, None), (429, "budget_exceeded")]
    assert meta["duration_s"] < 30  # no retries: the RetryInfo exceeds the CLI's 300 s ceiling
    [error] = [e for e in kinds(events, Error) if e.source == "model_api"]
    assert error.status == 429 and "run request budget is spent" in error.message
    assert validity(events, meta) == "gateway_failure"
    assert validity(events, meta, gateway_evidence=False) == "gateway_failure"  # the parsed 429 alone
    assert [c.command for c in kinds(events, Command)] == ["echo hi > note.txt"]


def test_codex_reports_a_failure_once_without_its_retry_notices() -> None:
    events, _ = load("codex", "bad_token")
    texts = [e.message for e in kinds(events, Error)]
    assert not any(t.startswith("Reconnecting") for t in texts)
    assert len(texts) == len(set(texts))


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("API Error: Request rejected (429) · budget", 429),
        ("unexpected status 401 Unauthorized: Incorrect API key", 401),
        ("[API Error: 404: Not Found]", 404),
        ("HTTP 502 from upstream", 502),
        ("exit code 2 after 200 lines", None),
    ],
)
def test_http_statuses_are_read_from_cli_error_texts(text: str, status: int | None) -> None:
    assert http_status(text) == status


def test_garbage_and_a_truncated_last_line_are_skipped() -> None:
    good = (FIXTURES / "claude_code_tool_calls.stdout").read_text()
    cut = good + 'banner text\n{"type":"assistant","message":{"content":[{"type":"te'
    assert claude_code.parse_stream_json(cut) == claude_code.parse_stream_json(good)
    for parse in PARSERS.values():
        assert parse("not json at all\n[1, 2]\n{broken\n", "") == []


# -- launches: the headless pitfalls are handled ------------------------------------------------


def task(api_kind: ApiKind, model: str = "m-1") -> AgentTask:
    return AgentTask(
        prompt="Fix the bug.",
        base_url="http://127.0.0.1:8765",
        run_token="oe-run-" + "t" * 32,
        model=model,
        api_kind=api_kind,
        max_steps=7,
        command_timeout=45,
        run_id="42",
    )


def test_claude_code_is_told_it_is_sandboxed_and_streams_json_verbosely() -> None:
    launch = get_adapter("claude-code").launch(task(ApiKind.ANTHROPIC_MESSAGES))
    assert launch.argv[:5] == [
        "claude",
        "--print",
        "--verbose",
        "--output-format=stream-json",
        "--permission-mode=bypassPermissions",
    ]
    assert launch.argv[-2:] == ["--max-turns", "7"]
    assert launch.env["IS_SANDBOX"] == "1"
    assert launch.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8765"
    assert launch.env["ANTHROPIC_API_KEY"] == "oe-run-" + "t" * 32
    assert launch.env["ANTHROPIC_MODEL"] == "m-1"
    assert launch.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert launch.env["BASH_DEFAULT_TIMEOUT_MS"] == "45000"
    assert launch.stdin == b"Fix the bug."
    settings = json.loads(launch.files["home/.claude/settings.json"])
    assert settings["permissions"]["defaultMode"] == "bypassPermissions"


def test_codex_gets_its_own_provider_with_the_responses_wire_api() -> None:
    launch = get_adapter("codex").launch(task(ApiKind.OPENAI_RESPONSES, model='we"ird'))
    config = tomllib.loads(launch.files["home/.codex/config.toml"].decode())
    assert config["model"] == 'we"ird' and config["model_provider"] == "overeager"
    provider = config["model_providers"]["overeager"]
    assert provider == {
        "name": "Overeager gateway",
        "base_url": "http://127.0.0.1:8765/v1",
        "env_key": "OVEREAGER_API_KEY",
        "wire_api": "responses",
        "request_max_retries": 1,
        "stream_max_retries": 1,
    }
    assert config["approval_policy"] == "never" and config["sandbox_mode"] == "danger-full-access"
    assert launch.env["OVEREAGER_API_KEY"] == "oe-run-" + "t" * 32
    assert "OPENAI_BASE_URL" not in launch.env  # Codex would ignore it
    assert "--dangerously-bypass-approvals-and-sandbox" in launch.argv and "--strict-config" in launch.argv
    assert launch.argv[-1] == "-" and launch.stdin == b"Fix the bug."


@pytest.mark.parametrize(
    ("kind", "package"),
    [(ApiKind.OPENAI_CHAT, "@ai-sdk/openai-compatible"), (ApiKind.ANTHROPIC_MESSAGES, "@ai-sdk/anthropic")],
)
def test_opencode_allows_every_permission_and_uses_a_bundled_provider(kind: ApiKind, package: str) -> None:
    launch = get_adapter("opencode").launch(task(kind))
    config = json.loads(launch.files["home/.config/opencode/opencode.json"])
    assert config["permission"] == "allow"  # anything left at "ask" would block forever
    assert "--auto" in launch.argv and "--pure" in launch.argv
    provider = config["provider"]["overeager"]
    assert provider["npm"] == package
    assert provider["options"] == {"baseURL": "http://127.0.0.1:8765/v1", "apiKey": "{env:OVEREAGER_API_KEY}"}
    assert config["model"] == "overeager/m-1" and "m-1" in provider["models"]
    # Inline config outranks a project's opencode.json, so the workspace cannot re-point the provider.
    assert json.loads(launch.env["OPENCODE_CONFIG_CONTENT"]) == config
    assert launch.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    # A title of our own: otherwise the first model request is a tool-less title generation.
    assert "--title" in launch.argv
    assert launch.argv[-1] == "Fix the bug."


def test_opencode_refuses_an_api_kind_it_has_no_provider_for() -> None:
    with pytest.raises(ValueError, match="opencode speaks"):
        get_adapter("opencode").launch(task(ApiKind.OPENAI_RESPONSES))


def test_gemini_cli_has_its_auth_type_pinned_for_the_custom_base_url() -> None:
    assert get_adapter("gemini-cli").api_kinds == (ApiKind.GEMINI,)
    launch = get_adapter("gemini-cli").launch(task(ApiKind.GEMINI, model="gemini-2.5-pro"))
    settings = json.loads(launch.files["home/.gemini/settings.json"])
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert launch.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:8765"
    assert launch.env["GEMINI_API_KEY"] == "oe-run-" + "t" * 32
    assert launch.argv[launch.argv.index("--approval-mode") + 1] == "yolo"
    assert launch.argv[-2:] == ["-p", "Fix the bug."]


@pytest.mark.parametrize("framework", sorted(STEMS))
def test_each_adapter_records_its_layers_pinned_version_and_ignores_its_own_state(framework: str) -> None:
    adapter = get_adapter(framework)
    assert adapter.image_layer == framework
    assert adapter.version() == pinned_version(framework)
    assert adapter.version()[0].isdigit()
    assert "home/.overeager-agent/**" in adapter.state_paths
    assert all(p.startswith(("home/", "workspace/.git/")) for p in adapter.state_paths)
