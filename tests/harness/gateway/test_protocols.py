"""The wire formats without sockets: SSE framing, stream reassembly, usage, errors, scripts."""

from __future__ import annotations

import json

import pytest

from harness.gateway import protocols as p
from harness.gateway.protocols import ApiError, ApiKind, SSEEvent, SSEParser
from harness.gateway.scripted import FINAL_TEXT, ScriptError, parse_script, reply_for, turn_at

ALL_KINDS = list(ApiKind)


def test_sse_parser_handles_split_chunks_crlf_comments_and_multiline_data() -> None:
    raw = b': keep-alive\r\nevent: ping\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: [DONE]\n\n'
    parser = SSEParser()
    events = []
    for i in range(len(raw)):
        events += parser.feed(raw[i : i + 1])  # one byte at a time, CR and LF split included
    events += parser.close()

    assert events == [SSEEvent('{"a":\n1}', "ping"), SSEEvent("[DONE]")]


def test_sse_parser_flushes_an_unterminated_last_event() -> None:
    assert p.parse_sse(b"data: tail") == [SSEEvent("tail")]


def scripted_reply(kind: ApiKind, turn: dict) -> p.Reply:
    [parsed] = parse_script([turn])
    return reply_for(kind, {"model": "m", "messages": [], "input": "hi"}, parsed, 0)


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize(
    "turn",
    [
        {"tool_call": {"name": "Bash", "arguments": {"command": "echo 'quoted' \"twice\" > /tmp/x"}}},
        {"text": "Let me check.", "tool_call": {"name": "bash", "arguments": {"command": "ls"}}},
        {"text": "Run this:\n```bash\ngit status\n```\n" + "long " * 40},
        {"refusal": "I won't delete the production database."},
    ],
)
def test_a_rendered_stream_reassembles_into_the_rendered_body(kind: ApiKind, turn: dict) -> None:
    reply = scripted_reply(kind, turn)
    body = p.render_body(kind, reply)
    events = p.parse_sse(
        b"".join(p.encode_sse(e.data, e.event) for e in p.render_stream(kind, reply, include_usage=True))
    )

    rebuilt = p.reassemble(kind, events)

    assert rebuilt is not None
    assert p.response_text(kind, rebuilt) == p.response_text(kind, body)
    assert p.usage_from_body(kind, rebuilt) == p.usage_from_body(kind, body)
    assert p.is_terminal_event(kind, events[-1])
    assert not any(p.is_terminal_event(kind, e) for e in events[:-1])


def test_anthropic_stream_follows_the_documented_event_order() -> None:
    reply = scripted_reply(ApiKind.ANTHROPIC_MESSAGES, {"text": "ok", "tool_call": {"name": "Bash", "arguments": {}}})

    names = [e.event for e in p.render_stream(ApiKind.ANTHROPIC_MESSAGES, reply)]

    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",  # the empty partial_json opening a tool_use
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    # Every event's data carries its own name as "type", as the API does.
    assert all(json.loads(e.data)["type"] == e.event for e in p.render_stream(ApiKind.ANTHROPIC_MESSAGES, reply))


def test_responses_stream_numbers_its_events() -> None:
    reply = scripted_reply(ApiKind.OPENAI_RESPONSES, {"tool_call": {"name": "shell", "arguments": {"command": ["ls"]}}})

    data = [json.loads(e.data) for e in p.render_stream(ApiKind.OPENAI_RESPONSES, reply)]

    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    assert [d["type"] for d in data] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]


def test_chat_stream_without_include_usage_has_no_usage_field() -> None:
    reply = scripted_reply(ApiKind.OPENAI_CHAT, {"text": "hi"})

    events = p.render_stream(ApiKind.OPENAI_CHAT, reply)

    assert events[-1].data == "[DONE]"
    assert all("usage" not in json.loads(e.data) for e in events[:-1])


def test_usage_counts_anthropic_cache_tokens_as_input() -> None:
    body = {"usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 5}}

    assert p.usage_from_body(ApiKind.ANTHROPIC_MESSAGES, body) == p.Usage(103, 5, cached_input_tokens=100)


def test_usage_is_estimated_when_the_upstream_reports_none() -> None:
    usage = p.usage_or_estimate(ApiKind.OPENAI_CHAT, {"messages": ["x" * 40]}, {"choices": []})

    assert usage.estimated and usage.input_tokens > 0


def test_error_bodies_take_each_apis_shape() -> None:
    err = ApiError("budget", "spent", reason="max_tokens")

    assert err.status == 429
    assert err.body(ApiKind.ANTHROPIC_MESSAGES) == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "spent"},
    }
    assert err.body(ApiKind.OPENAI_RESPONSES)["error"]["code"] == "insufficient_quota"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"x-api-key": "oe-run-a"}, "oe-run-a"),
        ({"authorization": "Bearer oe-run-b"}, "oe-run-b"),
        ({"authorization": "bearer  oe-run-c "}, "oe-run-c"),
        ({"authorization": "Basic abc"}, None),
        ({}, None),
    ],
)
def test_credentials_come_from_x_api_key_or_a_bearer(headers: dict, expected: str | None) -> None:
    assert p.credential_from_headers(headers) == expected


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({"text": "x"}, "a script is a list"),
        (["text"], "turn 1: expected an object"),
        ([{"text": "a", "refusal": "b"}], "turn 1: expected exactly one"),
        ([{"tool_call": {"arguments": {}}}], "turn 1: tool_call needs a name"),
        ([{"text": "ok"}, {"tool_call": {"name": "Bash", "arguments": "ls"}}], "turn 2: tool_call arguments"),
        ([{"question": ""}], "non-empty"),
        ([{"say": "hi"}], "unknown keys"),
    ],
)
def test_a_bad_script_names_the_bad_turn(script: object, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        parse_script(script)


def test_an_exhausted_script_answers_done() -> None:
    turns = parse_script([{"text": "one"}])

    assert turn_at(turns, 0).text == "one"
    assert turn_at(turns, 1).text == FINAL_TEXT == turn_at(turns, 99).text


def test_scripted_replies_are_deterministic_and_match_declared_tool_case() -> None:
    [turn] = parse_script([{"tool_call": {"name": "bash", "arguments": {"command": "ls"}}}])
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "Bash"}]}

    first = reply_for(ApiKind.ANTHROPIC_MESSAGES, body, turn, 0)
    again = reply_for(ApiKind.ANTHROPIC_MESSAGES, body, turn, 0)

    assert first.tool_calls[0].name == "Bash"
    assert (first.reply_id, first.tool_calls, first.usage) == (again.reply_id, again.tool_calls, again.usage)
    assert reply_for(ApiKind.ANTHROPIC_MESSAGES, body, turn, 1).reply_id != first.reply_id
