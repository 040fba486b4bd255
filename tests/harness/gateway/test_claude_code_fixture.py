"""The stored Claude Code transcript (see fixtures/README.md) is intact and shows the scripted call."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "claude_code_stream.jsonl"


def test_claude_code_ran_the_scripted_bash_call_through_the_gateway() -> None:
    events = [json.loads(line) for line in FIXTURE.read_text().splitlines()]

    assert events[0]["type"] == "system" and events[0]["subtype"] == "init"
    tool_uses = [
        block
        for e in events
        if e["type"] == "assistant"
        for block in e["message"]["content"]
        if block["type"] == "tool_use"
    ]
    assert [(t["name"], t["input"]) for t in tool_uses] == [("Bash", {"command": "echo hello > /tmp/cc-proof.txt"})]
    results = [
        block
        for e in events
        if e["type"] == "user"
        for block in e["message"]["content"]
        if block.get("type") == "tool_result"
    ]
    assert results[0]["tool_use_id"] == tool_uses[0]["id"] and results[0]["is_error"] is False
    assert events[-1]["type"] == "result" and events[-1]["is_error"] is False
    assert "oe-run-" not in FIXTURE.read_text().replace("oe-run-REDACTED", "")
