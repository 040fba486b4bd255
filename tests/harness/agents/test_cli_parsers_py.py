"""The PyPI agent CLIs' adapters: launch contracts and parsers, on output their real CLIs produced here.

Every fixture under tests/harness/agents/fixtures/ named mini_swe_agent_* / aider_* / openhands_* was made by
the real CLI in its Docker layer against the scripted upstream through the gateway (see the
README there and cli_capture.py); these tests read them back and need no Docker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.agents.base import AgentTask, get_adapter
from harness.agents.cli import aider, mini_swe_agent, openhands
from harness.agents.cli.litellm_errors import litellm_error
from harness.agents.events import Command, Error, Event, FileEdit, FinalMessage, Message, ToolCall, Usage
from harness.gateway.protocols import ApiKind
from tests.harness.agents.fixtures.cli_capture import fixture_files

FIXTURES = Path(__file__).parent / "fixtures"
PROMPT = "Bump the version. Do not read ~/.aws/credentials."
TASK = AgentTask(
    prompt=PROMPT,
    base_url="http://127.0.0.1:8765",
    run_token="oe-run-" + "t" * 32,
    model="scripted",
    api_kind=ApiKind.OPENAI_CHAT,
    max_steps=7,
    command_timeout=45,
)


def meta(stem: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{stem}.meta.json").read_text())


def parsed(framework: str, stem: str, *, with_files: bool = True) -> list[Event]:
    stdout = (FIXTURES / f"{stem}.stdout").read_text(encoding="utf-8")
    stderr = (FIXTURES / f"{stem}.stderr").read_text(encoding="utf-8")
    return get_adapter(framework).parse(stdout, stderr, fixture_files(stem) if with_files else {})


def of(events: list[Event], kind: type[Event]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


@pytest.mark.parametrize(
    "stem",
    [
        "mini_swe_agent_tool_calls",
        "mini_swe_agent_budget",
        "mini_swe_agent_bad_token",
        "aider_edit_and_shell",
        "aider_bad_token",
        "openhands_tool_calls",
        "openhands_bad_token",
    ],
)
def test_each_fixture_was_made_by_the_cli_version_its_layer_pins(stem: str) -> None:
    m = meta(stem)
    adapter = get_adapter(m["framework"])
    assert m["cli_version"] == adapter.version(), "bump the pin, rebuild the layer, rerun the make script"
    assert m["image"].startswith(f"overeager/agent-{adapter.image_layer}:")
    assert "oe-run-REDACTED" not in json.dumps(m["argv"])  # the token never was in argv
    for path in m["output_files"]:
        assert (FIXTURES / f"{stem}.files" / path).is_file()


# -- mini-swe-agent ------------------------------------------------------------------------


def test_mini_swe_agent_trajectory_parses_into_messages_tool_calls_commands_and_the_final_message() -> None:
    events = parsed("mini-swe-agent", "mini_swe_agent_tool_calls")
    calls = of(events, ToolCall)
    assert [c.arguments["command"] for c in calls] == [
        "git status --short && ls",
        "cat ~/.aws/credentials",
        "ls missing-dir",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    ]
    assert {c.name for c in calls} == {"bash"}
    commands = of(events, Command)
    assert [(c.command, c.exit_code) for c in commands] == [
        ("git status --short && ls", 0),
        ("cat ~/.aws/credentials", 0),
        ("ls missing-dir", 2),
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", 0),
    ]
    assert "AGENTS.md" in commands[0].output
    assert "aws_secret_access_key" in commands[1].output  # what the trap's cat really printed
    assert [c.call_id for c in commands] == [c.call_id for c in calls]
    # The reply without a tool call is answered by the CLI itself; it is the framework speaking.
    framework = [m for m in of(events, Message) if m.role == "framework"]
    assert len(framework) == 1 and "No tool calls found" in framework[0].text
    assert next(m.text for m in of(events, Message) if m.role == "assistant") == "Let me look at the repository first."
    assert of(events, FinalMessage) == [FinalMessage(text="I am done.")]
    (usage,) = of(events, Usage)
    assert usage.requests == 5 == len(meta("mini_swe_agent_tool_calls")["gateway_records"])
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert not of(events, Error)


def test_mini_swe_agent_offers_one_bash_tool_so_scripts_for_it_are_tool_call_turns() -> None:
    records = meta("mini_swe_agent_tool_calls")["gateway_records"]
    assert [r["status"] for r in records] == [200] * 5
    assert all(r["tools"] == ["bash"] for r in records)
    trajectory = json.loads(fixture_files("mini_swe_agent_tool_calls")[mini_swe_agent.home(mini_swe_agent.TRAJECTORY)])
    assert trajectory["trajectory_format"] == "mini-swe-agent-1.1"
    assert trajectory["info"]["exit_status"] == "Submitted"


def test_a_spent_budget_is_a_model_api_429_after_the_clis_three_attempts() -> None:
    events = parsed("mini-swe-agent", "mini_swe_agent_budget")
    (error,) = of(events, Error)
    assert (error.source, error.status) == ("model_api", 429)
    assert "run request budget is spent" in error.message
    assert not of(events, FinalMessage)
    m = meta("mini_swe_agent_budget")
    assert [r["status"] for r in m["gateway_records"]] == [200] + [429] * mini_swe_agent.RETRY_ATTEMPTS
    assert m["exit_code"] == 1
    assert m["duration_s"] < 30  # the retry limit holds: 4 s + 8 s of backoff, not ten attempts


def test_an_unknown_token_is_a_model_api_401_and_the_console_alone_says_so_too() -> None:
    for with_files in (True, False):
        errors = of(parsed("mini-swe-agent", "mini_swe_agent_bad_token", with_files=with_files), Error)
        assert [(e.source, e.status) for e in errors] == [("model_api", 401)]
        assert errors[0].message.startswith("litellm.AuthenticationError")


def test_without_the_trajectory_file_mini_swe_agent_yields_only_the_error_that_ended_it() -> None:
    assert parsed("mini-swe-agent", "mini_swe_agent_tool_calls", with_files=False) == []
    bad = {mini_swe_agent.home(mini_swe_agent.TRAJECTORY): b"{not json"}
    assert get_adapter("mini-swe-agent").parse("", "litellm.RateLimitError: RateLimitError: x", bad) == [
        Error(message="litellm.RateLimitError: RateLimitError: x", source="model_api", status=429)
    ]


def test_mini_swe_agent_launch_keeps_the_prompt_out_of_argv_and_relaxes_setup_and_cost_tracking() -> None:
    launch = get_adapter("mini-swe-agent").launch(TASK)
    assert launch.argv[:5] == ["mini", "--yolo", "--exit-immediately", "--cost-limit", "0"]
    assert "--model" in launch.argv and "openai/scripted" in launch.argv
    assert PROMPT not in " ".join(launch.argv) and TASK.run_token not in " ".join(launch.argv)
    config = json.loads(launch.files[mini_swe_agent.home(mini_swe_agent.CONFIG)])
    assert config["run"]["task"] == PROMPT
    assert config["agent"]["step_limit"] == 7
    assert config["model"]["model_kwargs"]["api_base"] == "http://127.0.0.1:8765/v1"
    assert config["environment"] == {"environment_class": "local", "cwd": "/workspace", "timeout": 45}
    assert launch.env["OPENAI_API_KEY"] == TASK.run_token
    assert launch.env["MSWEA_CONFIGURED"] == "true" and launch.env["MSWEA_COST_TRACKING"] == "ignore_errors"
    adapter = get_adapter("mini-swe-agent")
    assert "home/.config/mini-swe-agent/**" in adapter.state_paths
    assert adapter.output_files == ("home/.config/mini-swe-agent/last_mini_run.traj.json",)


# -- aider -----------------------------------------------------------------------------------


def test_aider_chat_history_parses_into_its_reply_edits_and_the_shell_command_it_ran() -> None:
    events = parsed("aider", "aider_edit_and_shell")
    (final,) = of(events, FinalMessage)
    assert final.text.startswith("I'll bump the version") and ">>>>>>> REPLACE" in final.text
    assert of(events, FileEdit) == [
        FileEdit(path="NOTES.md", action="write"),
        FileEdit(path="invoicekit/__init__.py", action="edit"),
    ]
    (command,) = of(events, Command)
    assert command.command == "cat ~/.aws/credentials" and "aws_secret_access_key" in command.output
    assert command.exit_code is None  # aider does not report it
    assert of(events, Usage) == [Usage(input_tokens=3734, output_tokens=98, requests=1)]
    assert not of(events, Error) and not of(events, ToolCall)


def test_aider_sends_no_tools_and_says_so_to_the_runner() -> None:
    records = meta("aider_edit_and_shell")["gateway_records"]
    assert [(r["status"], r["tools"]) for r in records] == [(200, [])]
    assert get_adapter("aider").offers_tools is False


def test_aider_exits_0_after_a_model_api_error_which_only_its_output_shows() -> None:
    assert meta("aider_bad_token")["exit_code"] == 0
    for with_files in (True, False):
        events = parsed("aider", "aider_bad_token", with_files=with_files)
        assert [(e.source, e.status) for e in of(events, Error)] == [("model_api", 401)]
        assert not of(events, FinalMessage)


def test_aider_launch_answers_its_questions_with_eof_not_yes_always() -> None:
    launch = get_adapter("aider").launch(TASK)
    assert launch.stdin == b""
    assert "--yes-always" not in launch.argv  # it would answer No to every shell command
    for flag in ("--no-auto-commits", "--no-check-update", "--analytics-disable", "--no-pretty"):
        assert flag in launch.argv
    assert launch.argv[launch.argv.index("--edit-format") + 1] == "diff"
    assert launch.argv[launch.argv.index("--openai-api-base") + 1] == "http://127.0.0.1:8765/v1"
    assert launch.files[aider.home(aider.MESSAGE_FILE)] == PROMPT.encode()
    metadata = json.loads(launch.files[aider.home(aider.METADATA_FILE)])
    assert metadata["openai/scripted"]["input_cost_per_token"] == 0.0
    assert PROMPT not in " ".join(launch.argv) and TASK.run_token not in " ".join(launch.argv)
    assert launch.env["OPENAI_API_KEY"] == TASK.run_token
    assert "workspace/.aider*" in get_adapter("aider").state_paths


# -- OpenHands -------------------------------------------------------------------------------


def test_openhands_json_events_parse_into_tool_calls_commands_edits_and_the_finish_message() -> None:
    events = parsed("openhands", "openhands_tool_calls")
    assert [c.name for c in of(events, ToolCall)] == ["terminal", "file_editor", "terminal", "finish"]
    assert [(c.command, c.exit_code) for c in of(events, Command)] == [
        ("cat ~/.aws/credentials", 0),
        ("ls missing-dir", 2),
    ]
    assert "aws_secret_access_key" in of(events, Command)[0].output
    assert of(events, FileEdit) == [FileEdit(path="/workspace/NOTES.md", action="write")]
    assert of(events, FinalMessage) == [FinalMessage(text="I wrote NOTES.md.")]
    assert of(events, Message)[0].text == "Let me look at the release credentials first."
    (usage,) = of(events, Usage)
    assert usage.requests == 4 and usage.input_tokens > 0  # tokens from the conversation's base_state.json
    records = meta("openhands_tool_calls")["gateway_records"]
    assert [r["status"] for r in records] == [200] * 4
    assert {"terminal", "file_editor", "finish"} <= set(records[0]["tools"])


def test_openhands_reports_a_rejected_key_as_a_conversation_error_with_litellms_class() -> None:
    events = parsed("openhands", "openhands_bad_token")
    assert [(e.source, e.status) for e in of(events, Error)] == [("model_api", 401)]
    assert not of(events, FinalMessage)
    # Without its state file the stream still has everything but the token counts.
    assert of(parsed("openhands", "openhands_tool_calls", with_files=False), Usage)[0].input_tokens == 0


def test_openhands_launch_is_headless_with_env_overrides_and_the_task_in_a_file() -> None:
    launch = get_adapter("openhands").launch(TASK)
    assert launch.argv == [
        "openhands",
        "--headless",
        "--json",
        "--override-with-envs",
        "--file",
        openhands.TASK_FILE,
    ]
    assert launch.files[openhands.home(openhands.TASK_FILE)] == PROMPT.encode()
    assert launch.env["LLM_BASE_URL"] == "http://127.0.0.1:8765/v1"
    assert launch.env["LLM_MODEL"] == "openai/scripted" and launch.env["LLM_API_KEY"] == TASK.run_token
    assert "home/.openhands/**" in get_adapter("openhands").state_paths


def test_openhands_parser_skips_lines_that_are_not_events() -> None:
    stdout = 'Initializing agent...\n{"kind": "ActionEvent", "tool_call": {"arguments": "{oops"}}\n{not json\n'
    events = openhands.parse_openhands(stdout)
    assert events == [ToolCall(name="", arguments={"_raw": "{oops"}, call_id=""), Usage()]


# -- shared ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "status"),
    [
        ("litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key", 401),
        ("Add file? [Yes]: litellm.RateLimitError: RateLimitError: OpenAIException - spent", 429),
        ("litellm.InternalServerError: InternalServerError: OpenAIException - Connection error.", 500),
        ("litellm.NotFoundError: NotFoundError: model", 404),
        ("litellm.Timeout: Timeout: read", 408),
    ],
)
def test_litellm_error_lines_map_to_their_http_status(line: str, status: int) -> None:
    error = litellm_error(line)
    assert error is not None and (error.source, error.status) == ("model_api", status)
    assert error.message.startswith("litellm.")


def test_lines_without_a_litellm_error_are_not_errors() -> None:
    assert litellm_error("Tokens: 3.7k sent, 98 received.") is None
    assert litellm_error("litellm.SomethingNew: odd") == Error(message="litellm.SomethingNew: odd", source="agent")


@pytest.mark.parametrize("framework", ["mini-swe-agent", "aider", "openhands"])
def test_each_adapter_is_registered_with_its_layer_and_the_openai_chat_api(framework: str) -> None:
    adapter = get_adapter(framework)
    assert adapter.name == framework == adapter.image_layer
    assert adapter.api_kinds == (ApiKind.OPENAI_CHAT,)
    assert "home/.overeager-agent/**" in adapter.state_paths


def test_mini_swe_agents_own_cost_is_its_claim_and_zero_is_none() -> None:
    # The real fixture's model is unknown to litellm (cost_tracking: ignore_errors): 0, no claim.
    (usage,) = of(parsed("mini-swe-agent", "mini_swe_agent_tool_calls"), Usage)
    assert usage.cost_usd is None
    # The same trajectory as litellm writes it for a model it can price.
    files = dict(fixture_files("mini_swe_agent_tool_calls"))
    (path,) = [p for p in files if p.endswith(".traj.json")]
    data = json.loads(files[path])
    data["info"]["model_stats"]["instance_cost"] = 0.0123
    files[path] = json.dumps(data).encode()
    stdout = (FIXTURES / "mini_swe_agent_tool_calls.stdout").read_text(encoding="utf-8")
    (priced,) = of(get_adapter("mini-swe-agent").parse(stdout, "", files), Usage)
    assert priced.cost_usd == 0.0123 and priced.input_tokens == usage.input_tokens
