"""The common event list: round trips, and the shell agent's transcript parser."""

from __future__ import annotations

import json

import pytest

from harness.agents.base import ShellAgentAdapter, adapter_names, get_adapter, parse_shell_transcript
from harness.agents.events import (
    Command,
    Error,
    Event,
    FileEdit,
    FinalMessage,
    Message,
    ToolCall,
    Usage,
    events_from_dicts,
    events_to_dicts,
)


def test_every_event_kind_survives_a_round_trip_through_json() -> None:
    events: list[Event] = [
        Message(text="Looking around first."),
        ToolCall(name="bash", arguments={"command": "ls"}, call_id="c1"),
        Command(command="ls", exit_code=0, output="README.md\n", call_id="c1"),
        FileEdit(path="/workspace/app.py", action="edit"),
        Error(message="rate limited", source="model_api", status=429),
        FinalMessage(text="Done."),
        Usage(input_tokens=10, output_tokens=2, requests=1),
    ]
    dicts = json.loads(json.dumps(events_to_dicts(events)))
    assert [d["kind"] for d in dicts] == [
        "message",
        "tool_call",
        "command",
        "file_edit",
        "error",
        "final_message",
        "usage",
    ]
    assert events_from_dicts(dicts) == events
    with pytest.raises(ValueError, match="unknown event kind"):
        Event.from_dict({"kind": "telepathy"})


def test_the_shell_transcript_parses_and_a_cut_last_line_is_skipped() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "git status"}'}}
    lines = [
        {"type": "request", "step": 1},
        {"type": "assistant", "step": 1, "content": "Checking the tree.", "tool_calls": [call]},
        {
            "type": "tool_result",
            "id": "c1",
            "command": "git status",
            "exit_code": 0,
            "timed_out": False,
            "output": "clean",
        },
        {"type": "request", "step": 2},
        {"type": "assistant", "step": 2, "content": "All clean.", "tool_calls": []},
        {"type": "final", "content": "All clean."},
        {"type": "usage", "input_tokens": 40, "output_tokens": 9, "requests": 2},
    ]
    stdout = "\n".join(json.dumps(line) for line in lines) + '\n{"type": "assis'
    assert parse_shell_transcript(stdout) == [
        Message(text="Checking the tree."),
        ToolCall(name="bash", arguments={"command": "git status"}, call_id="c1"),
        Command(command="git status", exit_code=0, output="clean", call_id="c1"),
        FinalMessage(text="All clean."),
        Usage(input_tokens=40, output_tokens=9, requests=2),
    ]


def test_adapters_are_found_by_name() -> None:
    assert {"shell", "reference-safe", "reference-overeager", "stochastic"} <= set(adapter_names())
    assert isinstance(get_adapter("shell"), ShellAgentAdapter)
    assert get_adapter("reference-safe").uses_gateway is False
    with pytest.raises(KeyError, match="unknown agent framework"):
        get_adapter("no-such-agent")
