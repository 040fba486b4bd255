"""The "http" upstream against real sockets: a scripted server process, and a leaky echo server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest
from aiohttp import web

from harness.gateway.protocols import ApiKind, parse_sse
from harness.gateway.registry import UpstreamConfig
from tests.harness.gateway.conftest import (
    BASH_TURN,
    Process,
    RunFactory,
    ThreadedApp,
    anthropic_body,
    chat_body,
    free_port,
    post,
    start_module,
    stop_process,
    wait_for_line,
)

REAL_KEY = "sk-test-REALKEY-0b8d2f6e4a1c9e7d5b3a"
KEY_ENV = "OE_TEST_UPSTREAM_KEY"


@pytest.fixture
def scripted_process(tmp_path: Path) -> Iterator[Process]:
    """``python -m harness.gateway.scripted`` on its own loopback port, accepting only REAL_KEY."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([BASH_TURN, {"question": "Should I also remove the old logs?"}]))
    port = free_port()
    proc = start_module(
        "harness.gateway.scripted",
        "--listen",
        f"127.0.0.1:{port}",
        "--script",
        str(script),
        "--key-env",
        KEY_ENV,
        env={KEY_ENV: REAL_KEY},
    )
    wait_for_line(proc, "listening")
    yield Process(proc, f"http://127.0.0.1:{port}")
    stop_process(proc)


@pytest.fixture
def real_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    return REAL_KEY


def http_upstream(base_url: str) -> UpstreamConfig:
    return UpstreamConfig(kind="http", base_url=base_url + "/v1", model="provider-model", key_env=KEY_ENV)


def test_anthropic_requests_are_forwarded_with_the_real_key(
    gateway: ThreadedApp, make_run: RunFactory, scripted_process: Process, real_key: str
) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES, upstream=http_upstream(scripted_process.url))
    client = anthropic.Anthropic(
        api_key=run.token, base_url=gateway.url, max_retries=0, _strict_response_validation=True
    )

    plain = client.messages.create(
        model="what-the-agent-asked", max_tokens=64, messages=[{"role": "user", "content": "clean up"}]
    )
    with client.messages.stream(
        model="what-the-agent-asked", max_tokens=64, messages=[{"role": "user", "content": "and?"}]
    ) as stream:
        streamed = stream.get_final_message()

    assert plain.content[0].type == "tool_use" and plain.content[0].input == BASH_TURN["tool_call"]["arguments"]
    assert plain.model == "provider-model"  # the run's configuration fixes the model
    assert streamed.content[0].type == "text" and streamed.content[0].text == "Should I also remove the old logs?"
    records = run.records()
    assert [r["status"] for r in records] == [200, 200]
    assert records[1]["response"]["content"][0]["text"] == "Should I also remove the old logs?"
    assert records[0]["upstream"] == {
        "kind": "http",
        "base_url": scripted_process.url + "/v1",
        "model": "provider-model",
    }
    assert real_key not in run.evidence.read_text()


def test_openai_chat_stream_is_relayed_event_by_event(
    gateway: ThreadedApp, make_run: RunFactory, scripted_process: Process, real_key: str
) -> None:
    run = make_run(ApiKind.OPENAI_CHAT, upstream=http_upstream(scripted_process.url))
    client = openai.OpenAI(
        api_key=run.token, base_url=gateway.url + "/v1", max_retries=0, _strict_response_validation=True
    )

    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}], stream=True))

    calls = [tc for c in chunks for ch in c.choices for tc in ch.delta.tool_calls or []]
    assert calls[0].function is not None and calls[0].function.name == "Bash"
    arguments = "".join(tc.function.arguments or "" for tc in calls if tc.function)
    assert json.loads(arguments) == BASH_TURN["tool_call"]["arguments"]
    assert len(chunks) > 3
    record = run.records()[0]
    assert record["stream_events"][-1] == {"data": "[DONE]"}
    assert record["response"]["choices"][0]["finish_reason"] == "tool_calls"


def test_a_wrong_or_missing_upstream_key_is_reported_without_its_value(
    gateway: ThreadedApp,
    make_run: RunFactory,
    scripted_process: Process,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = make_run(ApiKind.OPENAI_CHAT, upstream=http_upstream(scripted_process.url))

    monkeypatch.setenv(KEY_ENV, "sk-wrong-key-123456")
    wrong = post(gateway.url, "/v1/chat/completions", chat_body(), token=run.token)
    monkeypatch.delenv(KEY_ENV)
    missing = post(gateway.url, "/v1/chat/completions", chat_body(), token=run.token)

    assert wrong.status == 401  # the provider's own answer, passed through
    assert missing.status == 502
    assert KEY_ENV in missing.json()["error"]["message"]
    assert "sk-wrong-key-123456" not in run.evidence.read_text()


def test_an_unreachable_upstream_is_a_502_in_the_apis_shape(
    gateway: ThreadedApp, make_run: RunFactory, real_key: str
) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES, upstream=http_upstream(f"http://127.0.0.1:{free_port()}"))

    reply = post(gateway.url, "/v1/messages", anthropic_body(), token=run.token)

    assert reply.status == 502
    assert reply.json()["error"]["type"] == "api_error"
    assert run.records()[0]["error"]["reason"] == "upstream_error"


class LeakyServer:
    """An upstream that echoes the credentials it received, in a body and split across a stream."""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.chat)
        return app

    async def chat(self, request: web.Request) -> web.StreamResponse:
        seen = request.headers.get("authorization", "")
        body = await request.json()
        if not body.get("stream"):
            return web.json_response({"echo": seen, "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        event = json.dumps({"choices": [{"index": 0, "delta": {"content": seen}, "finish_reason": None}]})
        frame = f"data: {event}\n\n".encode()
        middle = frame.index(b"REALKEY") + 3
        await response.write(frame[:middle])  # the key arrives in two TCP writes
        await asyncio.sleep(0.05)
        await response.write(frame[middle:])
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def test_a_key_echoed_by_the_upstream_is_redacted_everywhere(
    gateway: ThreadedApp, make_run: RunFactory, real_key: str
) -> None:
    leaky = ThreadedApp(LeakyServer().app).start()
    try:
        run = make_run(ApiKind.OPENAI_CHAT, upstream=http_upstream(leaky.url))
        plain = post(gateway.url, "/v1/chat/completions", chat_body(), token=run.token)
        streamed = post(gateway.url, "/v1/chat/completions", chat_body(stream=True), token=run.token)
    finally:
        leaky.stop()

    assert plain.json()["echo"] == "Bearer [REDACTED]"
    assert real_key.encode() not in plain.body and real_key.encode() not in streamed.body
    assert parse_sse(streamed.body)[0].json()["choices"][0]["delta"]["content"] == "Bearer [REDACTED]"
    assert real_key not in run.evidence.read_text()
