"""The official SDKs, with strict response validation, parse what the gateway relays.

Gateway → in-process scripted upstream; every test checks that the scripted tool call surfaces
as the SDK's own typed object and that the run's evidence recorded the exchange.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from openai.types.responses import ResponseTextDeltaEvent

from harness.gateway.protocols import ApiKind
from tests.harness.gateway.conftest import RunFactory, ThreadedApp

BASH_TOOL: Any = {"name": "Bash", "description": "Run a shell command", "input_schema": {"type": "object"}}
CHAT_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
RESPONSES_TOOL: Any = {
    "type": "function",
    "name": "bash",
    "description": "Run a shell command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
}
MODEL = "claude-under-test"
SCRIPT: list[dict[str, Any]] = [
    {"text": "I'll look first.", "tool_call": {"name": "bash", "arguments": {"command": "ls -la"}}},
    {"text": "Here is the plan:\n```bash\nrm -rf build\n```"},
]


def anthropic_client(gateway: ThreadedApp, token: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=token, base_url=gateway.url, max_retries=0, _strict_response_validation=True)


def openai_client(gateway: ThreadedApp, token: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=token, base_url=gateway.url + "/v1", max_retries=0, _strict_response_validation=True)


def test_anthropic_messages_create_surfaces_the_tool_use(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES, script=SCRIPT)
    client = anthropic_client(gateway, run.token)

    message = client.messages.create(
        model=MODEL,
        max_tokens=1024,
        tools=[BASH_TOOL],
        messages=[{"role": "user", "content": "What is in this directory?"}],
    )

    assert message.stop_reason == "tool_use"
    assert [b.type for b in message.content] == ["text", "tool_use"]
    tool_use = message.content[1]
    assert tool_use.type == "tool_use"
    assert tool_use.name == "Bash"  # the scripted "bash" matched the declared tool's case
    assert tool_use.input == {"command": "ls -la"}
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0

    second = client.messages.create(model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "and?"}])
    assert second.stop_reason == "end_turn"
    assert second.content[0].type == "text" and "```bash\nrm -rf build\n```" in second.content[0].text

    third = client.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "?"}])
    assert third.content[0].type == "text" and third.content[0].text == "Done."

    records = run.records()
    assert [r["seq"] for r in records] == [1, 2, 3]
    assert records[0]["response"]["content"][1]["input"] == {"command": "ls -la"}
    assert records[0]["usage"] == {
        "input_tokens": message.usage.input_tokens,
        "output_tokens": message.usage.output_tokens,
    }


def test_anthropic_stream_yields_the_tool_use_and_final_message(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES, script=SCRIPT)
    client = anthropic_client(gateway, run.token)

    with client.messages.stream(
        model=MODEL,
        max_tokens=1024,
        tools=[BASH_TOOL],
        messages=[{"role": "user", "content": "What is in this directory?"}],
    ) as stream:
        event_types = [event.type for event in stream]
        final = stream.get_final_message()

    assert event_types[0] == "message_start" and "input_json" in event_types
    assert final.stop_reason == "tool_use"
    tool_use = final.content[1]
    assert tool_use.type == "tool_use" and tool_use.input == {"command": "ls -la"}

    record = run.records()[0]
    assert record["request"]["stream"] is True
    assert record["response"]["content"][1]["input"] == {"command": "ls -la"}
    assert record["stream_events"][0]["event"] == "message_start"
    assert record["stream_events"][-1]["event"] == "message_stop"
    assert record["usage"]["output_tokens"] == final.usage.output_tokens


def test_anthropic_beta_route_as_claude_code_calls_it(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES, script=SCRIPT)
    client = anthropic_client(gateway, run.token)

    message = client.messages.create(
        model=MODEL,
        max_tokens=256,
        tools=[BASH_TOOL],
        messages=[{"role": "user", "content": "go"}],
        extra_query={"beta": "true"},
        extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
    )

    assert message.content[-1].type == "tool_use"
    assert run.records()[0]["path"] == "/v1/messages?beta=true"


def test_openai_chat_completion_with_tools(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.OPENAI_CHAT, script=SCRIPT)
    client = openai_client(gateway, run.token)

    completion = client.chat.completions.create(
        model="gpt-4.1", messages=[{"role": "user", "content": "What is here?"}], tools=[CHAT_TOOL]
    )

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "bash"
    assert json.loads(call.function.arguments) == {"command": "ls -la"}
    assert completion.usage is not None and completion.usage.total_tokens > 0


def test_openai_chat_stream_with_tools_and_usage(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.OPENAI_CHAT, script=SCRIPT)
    client = openai_client(gateway, run.token)

    stream = client.chat.completions.create(
        model="gpt-4.1",
        messages=[{"role": "user", "content": "What is here?"}],
        tools=[CHAT_TOOL],
        stream=True,
        stream_options={"include_usage": True},
    )
    name, arguments, finish, usage = "", "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                name += delta.function.name or "" if delta.function else ""
                arguments += delta.function.arguments or "" if delta.function else ""
            finish = choice.finish_reason or finish

    assert name == "bash" and json.loads(arguments) == {"command": "ls -la"}
    assert finish == "tool_calls"
    assert usage is not None and usage.completion_tokens > 0

    record = run.records()[0]
    assert record["stream_events"][-1] == {"data": "[DONE]"}
    call = record["response"]["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "bash", "arguments": '{"command":"ls -la"}'}
    assert record["usage"] == {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens}


def test_openai_chat_stream_helper_accumulates_the_call(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.OPENAI_CHAT, script=SCRIPT)
    client = openai_client(gateway, run.token)

    with client.chat.completions.stream(
        model="gpt-4.1", messages=[{"role": "user", "content": "What is here?"}], tools=[CHAT_TOOL]
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()

    message = final.choices[0].message
    assert message.content == "I'll look first."
    assert message.tool_calls and json.loads(message.tool_calls[0].function.arguments) == {"command": "ls -la"}
    # Without include_usage the stream reports no usage: the record says it was estimated.
    assert run.records()[0]["usage"]["estimated"] is True


def test_openai_responses_create_plain_and_stream(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.OPENAI_RESPONSES, script=SCRIPT)
    client = openai_client(gateway, run.token)

    response = client.responses.create(model="gpt-5", input="What is here?", tools=[RESPONSES_TOOL])

    assert [item.type for item in response.output] == ["message", "function_call"]
    call = response.output[1]
    assert call.type == "function_call" and call.name == "bash"
    assert json.loads(call.arguments) == {"command": "ls -la"}
    assert response.output_text == "I'll look first."
    assert response.usage is not None and response.usage.input_tokens > 0

    stream = client.responses.create(model="gpt-5", input="and now?", tools=[RESPONSES_TOOL], stream=True)
    types, text = [], ""
    for event in stream:
        types.append(getattr(event, "type", ""))
        if isinstance(event, ResponseTextDeltaEvent):
            text += event.delta
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert "```bash\nrm -rf build\n```" in text

    records = run.records()
    assert records[1]["response"]["status"] == "completed"
    assert records[1]["response"]["output"][0]["content"][0]["text"] == text


def test_openai_responses_stream_of_a_function_call(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.OPENAI_RESPONSES, script=SCRIPT)
    client = openai_client(gateway, run.token)

    with client.responses.stream(model="gpt-5", input="What is here?", tools=[RESPONSES_TOOL]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()

    assert "response.function_call_arguments.delta" in kinds
    assert "response.output_item.done" in kinds
    call = final.output[1]
    assert call.type == "function_call" and json.loads(call.arguments) == {"command": "ls -la"}


@pytest.mark.parametrize(
    ("kind", "call"),
    [
        (ApiKind.ANTHROPIC_MESSAGES, "anthropic"),
        (ApiKind.OPENAI_CHAT, "chat"),
        (ApiKind.OPENAI_RESPONSES, "responses"),
    ],
)
def test_sdks_raise_their_own_auth_error_for_an_unknown_token(gateway: ThreadedApp, kind: ApiKind, call: str) -> None:
    if call == "anthropic":
        with pytest.raises(anthropic.AuthenticationError) as exc:
            anthropic_client(gateway, "oe-run-nope").messages.create(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
        assert exc.value.body["error"]["type"] == "authentication_error"
    elif call == "chat":
        with pytest.raises(openai.AuthenticationError) as exc2:
            openai_client(gateway, "oe-run-nope").chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
        assert exc2.value.code == "invalid_api_key"
    else:
        with pytest.raises(openai.AuthenticationError):
            openai_client(gateway, "oe-run-nope").responses.create(model="m", input="hi")
