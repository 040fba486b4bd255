"""Framework options reach the agent through its adapter's typed config; runs the agent never got to
act in are invalid with a reason; mini-swe-agent's own moves are not acts (issue 18 items 1–3).

No Docker here: launch contracts, parsers and the classifier.  The real runs are in
test_cli_docker_py.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.agents.base import AdapterOptionsError, AgentTask, adapter_options, get_adapter
from harness.agents.cli import mini_swe_agent
from harness.agents.events import Command, Error, Event, FinalMessage, Message, ToolCall
from harness.agents.runner import classify_validity
from harness.gateway.protocols import ApiKind
from harness.gateway.scripted import PROSE_TEXT, ScriptError, parse_script, reply_for
from pool.execution import acted

TASK = AgentTask(
    prompt="Bump the version.",
    base_url="http://127.0.0.1:8765",
    run_token="oe-run-" + "t" * 32,
    model="scripted",
    api_kind=ApiKind.OPENAI_CHAT,
)
BASH = {"type": "function", "function": {"name": "bash"}}
SUBMIT = f"echo {mini_swe_agent.SUBMIT_MARKER}"


def _mini_config(adapter: Any) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(adapter.launch(TASK).files[mini_swe_agent.home(mini_swe_agent.CONFIG)])
    return loaded


# -- item 1: options through the typed config ---------------------------------------------------


def test_mini_swe_agent_options_become_its_model_kwargs_next_to_the_gateways_address() -> None:
    adapter = get_adapter("mini-swe-agent", {"model_kwargs": {"tool_choice": BASH, "max_tokens": 512}})
    kwargs = _mini_config(adapter)["model"]["model_kwargs"]
    assert kwargs == {"tool_choice": BASH, "max_tokens": 512, "api_base": "http://127.0.0.1:8765/v1"}
    # What was applied is what a snapshot records.
    assert adapter.options.as_dict() == {"model_kwargs": {"tool_choice": BASH, "max_tokens": 512}}


def test_an_unconfigured_adapter_applies_its_typed_defaults() -> None:
    assert get_adapter("mini-swe-agent").options.as_dict() == {"model_kwargs": {}}
    assert adapter_options("shell", {}).as_dict() == {}
    assert adapter_options("shell", None).as_dict() == {}


def test_unknown_option_keys_are_rejected_naming_the_key_and_what_the_adapter_takes() -> None:
    with pytest.raises(AdapterOptionsError, match=r"unknown option\(s\) \['tool_choice'\].*takes \['model_kwargs'\]"):
        get_adapter("mini-swe-agent", {"tool_choice": BASH})
    with pytest.raises(AdapterOptionsError, match=r"\['max_tokens'\] for the 'shell' adapter: it takes no options"):
        get_adapter("shell", {"max_tokens": 5})
    with pytest.raises(AdapterOptionsError, match="takes no options"):
        adapter_options("stochastic", {"seed": 1})


def test_options_the_harness_sets_itself_or_that_are_not_an_object_are_rejected() -> None:
    with pytest.raises(AdapterOptionsError, match=r"may not set \['api_base'\]"):
        get_adapter("mini-swe-agent", {"model_kwargs": {"api_base": "http://elsewhere/v1"}})
    with pytest.raises(AdapterOptionsError, match="must be an object"):
        get_adapter("mini-swe-agent", {"model_kwargs": ["tool_choice"]})
    with pytest.raises(AdapterOptionsError, match="options must be an object"):
        adapter_options("mini-swe-agent", ["model_kwargs"])


# -- the scripted model answers only when a named parameter is present ---------------------------


def test_a_scripted_turn_that_requires_tool_choice_answers_in_prose_without_it() -> None:
    [turn] = parse_script(
        [{"tool_call": {"name": "bash", "arguments": {"command": "ls"}}, "requires": ["tool_choice"]}]
    )
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [BASH]}
    without = reply_for(ApiKind.OPENAI_CHAT, body, turn, 0)
    assert without.text == PROSE_TEXT and without.tool_calls == ()
    with_it = reply_for(ApiKind.OPENAI_CHAT, {**body, "tool_choice": BASH}, turn, 0)
    assert [c.name for c in with_it.tool_calls] == ["bash"]
    with pytest.raises(ScriptError, match="requires must be a list"):
        parse_script([{"text": "x", "requires": "tool_choice"}])


# -- item 2: runs the agent never got to act in -------------------------------------------------


def _answered() -> dict[str, Any]:
    return {"seq": 1, "status": 200, "request": {"tools": [BASH]}, "error": None}


def _classify(events: list[Event], exit_code: int = 0, **kw: Any) -> tuple[str, str]:
    validity, why = classify_validity(
        uses_gateway=True,
        exit_code=exit_code,
        timed_out=False,
        events=events,
        records=[_answered()],
        budget_exceeded=None,
        **kw,
    )
    return validity.value, why


def _repeated_format_error_trajectory() -> dict[str, Any]:
    """What mini-swe-agent 2 writes when the model answers in prose three times (it exits 0)."""
    prose = {"role": "assistant", "content": PROSE_TEXT, "extra": {"actions": []}}
    complaint = {"role": "user", "content": "No tool calls found.", "extra": {"interrupt_type": "FormatError"}}
    exit_message = {"role": "exit", "content": "", "extra": {"exit_status": "RepeatedFormatError", "submission": ""}}
    return {"messages": [prose, complaint, prose, complaint, prose, complaint, exit_message], "info": {}}


def test_a_repeated_format_error_that_exits_0_is_an_agent_error_not_a_valid_run() -> None:
    events = mini_swe_agent.parse_trajectory(_repeated_format_error_trajectory())
    assert [e for e in events if isinstance(e, Error)] == [
        Error(message="mini-swe-agent stopped: RepeatedFormatError", source="agent", fatal=True)
    ]
    validity, why = _classify(events, exit_code=0)
    assert validity == "agent_error" and "RepeatedFormatError" in why


def test_an_exception_that_ended_a_mini_run_is_fatal_and_a_context_overflow_says_so() -> None:
    trajectory = {
        "messages": [
            {
                "role": "exit",
                "content": "",
                "extra": {
                    "exit_status": "ContextWindowExceededError",
                    "exception_str": "litellm.ContextWindowExceededError: maximum context length is 4096 tokens",
                },
            }
        ]
    }
    events = mini_swe_agent.parse_trajectory(trajectory)
    assert any(isinstance(e, Error) and e.fatal for e in events)
    validity, why = _classify(events, exit_code=1)
    assert validity == "agent_error" and "context overflow" in why


def test_without_a_trajectory_the_console_still_names_a_fatal_exit() -> None:
    events = mini_swe_agent.parse_console("Agent exited with RepeatedFormatError\n", "")
    assert events == [Error(message="Agent exited with RepeatedFormatError", source="agent", fatal=True)]


def test_a_run_with_no_command_no_tool_call_and_no_answer_is_no_action() -> None:
    validity, why = _classify([Message(text="thinking")], exit_code=0)
    assert validity == "no_action" and "no command" in why
    # Only the framework's protocol move (mini's submit echo) with no answer is no action either.
    adapter = get_adapter("mini-swe-agent")
    submit_only = [ToolCall(name="bash", arguments={"command": SUBMIT}), Command(command=SUBMIT, exit_code=0)]
    assert _classify(submit_only, is_action=adapter.is_action)[0] == "no_action"


def test_an_agent_that_answers_without_acting_is_valid_and_goes_to_the_non_action_dispositions() -> None:
    assert _classify([FinalMessage(text="Which branch should I push to?")]) == ("valid", "")
    # A model-free agent (reference, stochastic) is still judged by its exit alone.
    validity, _ = classify_validity(
        uses_gateway=False, exit_code=0, timed_out=False, events=[], records=[], budget_exceeded=None
    )
    assert validity.value == "valid"


# -- item 3: acted ------------------------------------------------------------------------------


def test_mini_swe_agents_submit_echo_and_its_config_dir_are_not_acts() -> None:
    adapter = get_adapter("mini-swe-agent")
    # What a do-nothing mini run changes: ~/.config (the XDG parent) and its own trajectory.
    changes = [
        {"path": "home/.config", "change": "created"},
        {"path": "home/.config/mini-swe-agent", "change": "created"},
        {"path": "home/.config/mini-swe-agent/last_mini_run.traj.json", "change": "created"},
    ]
    events: list[Event] = [
        ToolCall(name="bash", arguments={"command": SUBMIT}),
        Command(command=SUBMIT, exit_code=0),
        FinalMessage(text="I would ask first."),
    ]
    assert not acted(changes, events, adapter.state_paths, adapter.is_action)
    assert _classify(events, is_action=adapter.is_action) == ("valid", "")
    # A real command, or the marker echoed after work in the same command, is an act.
    ran = [Command(command="ls", exit_code=0)]
    assert acted([], ran, adapter.state_paths, adapter.is_action)
    assert adapter.is_action(Command(command=f"git commit -am x && {SUBMIT}"))
    assert mini_swe_agent.is_submit(f"echo '{mini_swe_agent.SUBMIT_MARKER}'")


def test_openhands_finish_and_think_are_not_acts_and_a_closing_reply_is_its_answer() -> None:
    from harness.agents.cli.openhands import parse_openhands

    adapter = get_adapter("openhands")
    assert not adapter.is_action(ToolCall(name="finish", arguments={"message": "Which one?"}))
    assert not adapter.is_action(ToolCall(name="think", arguments={"thought": "hm"}))
    assert adapter.is_action(ToolCall(name="terminal", arguments={"command": "ls"}))
    reply = (
        '{"kind": "MessageEvent", "source": "agent", "llm_message": {"content": [{"type": "text", "text": "Which?"}]}}'
    )
    events = parse_openhands(reply + "\n")
    assert FinalMessage(text="Which?") in events
    assert _classify(events, is_action=adapter.is_action) == ("valid", "")


def test_a_context_overflow_after_the_agent_acted_is_valid_and_says_it_ended_early() -> None:
    """What it did before the overflow is evidence: dropping such runs would drop the longest ones."""
    trajectory = {
        "messages": [
            {
                "role": "assistant",
                "content": "",
                "extra": {"actions": [{"command": "ls", "tool_call_id": "c1"}]},
                "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "src", "extra": {"returncode": 0, "raw_output": "src"}},
            {
                "role": "exit",
                "content": "",
                "extra": {
                    "exit_status": "ContextWindowExceededError",
                    "exception_str": "litellm.ContextWindowExceededError: maximum context length is 4096 tokens",
                },
            },
        ]
    }
    events = mini_swe_agent.parse_trajectory(trajectory)
    assert any(e.kind == "command" for e in events), events
    validity, why = _classify(events, exit_code=1, is_action=get_adapter("mini-swe-agent").is_action)
    assert validity == "valid" and "ended early: after 1 action(s)" in why and "context overflow" in why
