"""What the gateway does with Gemini calls: the key in a header or the URL (and never recorded or
forwarded), API kind, budgets, canaries, the model in the path, and the http upstream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from harness.gateway.protocols import ApiKind, parse_sse
from harness.gateway.registry import Budgets, UpstreamConfig, run_usage
from harness.gateway.scripted import ScriptedServer, parse_script
from tests.harness.gateway.conftest import BASH_TURN, RunFactory, ThreadedApp, anthropic_body, post

GEMINI = ApiKind.GEMINI
GENERATE = "/v1beta/models/gemini-2.5-pro:generateContent"
STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
REAL_KEY = "AIza-test-REALKEY-5e1f0c9a7b3d"
KEY_ENV = "OE_TEST_GEMINI_KEY"


def gemini_body(text: str = "List the files.") -> dict[str, Any]:
    return {
        "contents": [{"role": "user", "parts": [{"text": text}]}],
        "tools": [{"functionDeclarations": [{"name": "bash", "description": "run", "parametersJsonSchema": {}}]}],
    }


def key(token: str) -> dict[str, str]:
    return {"x-goog-api-key": token}


def test_the_key_in_the_url_is_accepted_and_never_recorded(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(GEMINI)

    reply = post(gateway.url, f"{STREAM}?alt=sse&key={run.token}", gemini_body())

    assert reply.status == 200 and reply.headers["content-type"].startswith("text/event-stream")
    [record] = run.records()
    assert record["path"] == STREAM + "?alt=sse&key=[REDACTED]"
    assert run.token not in run.evidence.read_text()
    assert record["response"]["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "bash", "args": BASH_TURN["tool_call"]["arguments"]}}  # the declared case
    ]


def test_the_x_goog_api_key_header_is_the_usual_way(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(GEMINI)

    reply = post(gateway.url, GENERATE, gemini_body(), headers=key(run.token))

    assert reply.status == 200
    assert reply.json()["candidates"][0]["finishReason"] == "STOP"
    assert run.records()[0]["path"] == GENERATE


@pytest.mark.parametrize(
    ("headers", "query", "message"),
    [
        ({}, "", "No API key: pass the run token as the x-goog-api-key header or the key parameter."),
        (key("oe-run-not-registered"), "", "API key not valid. Please pass a valid API key."),
        ({}, "?key=oe-run-not-registered", "API key not valid. Please pass a valid API key."),
    ],
)
def test_a_missing_or_unknown_key_gets_googles_401(
    gateway: ThreadedApp, headers: dict[str, str], query: str, message: str
) -> None:
    reply = post(gateway.url, GENERATE + query, gemini_body(), headers=headers)

    assert reply.status == 401
    assert reply.json() == {"error": {"code": 401, "message": message, "status": "UNAUTHENTICATED"}}


def test_gemini_calls_of_another_runs_kind_and_other_calls_of_a_gemini_run_are_clear_400s(
    gateway: ThreadedApp, make_run: RunFactory
) -> None:
    anthropic_run = make_run(ApiKind.ANTHROPIC_MESSAGES)
    gemini_run = make_run(GEMINI)

    wrong_route = post(gateway.url, GENERATE, gemini_body(), headers=key(anthropic_run.token))
    wrong_api = post(gateway.url, "/v1/messages", anthropic_body(), headers={"x-api-key": gemini_run.token})

    # Each answer is in the shape of the API the client called.
    assert wrong_route.status == 400 and wrong_route.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert "use /v1/messages" in wrong_route.json()["error"]["message"]
    assert wrong_api.status == 400 and wrong_api.json()["error"]["type"] == "invalid_request_error"
    assert "/v1beta/models/{model}:generateContent" in wrong_api.json()["error"]["message"]
    assert [r["error"]["reason"] for r in anthropic_run.records() + gemini_run.records()] == ["api_kind_mismatch"] * 2


def test_an_unknown_method_is_googles_404_and_bad_json_its_400(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(GEMINI)

    unknown = post(gateway.url, "/v1beta/models/gemini-2.5-pro:embedContent", gemini_body(), headers=key(run.token))
    bad = post(gateway.url, GENERATE, b"{not json", headers=key(run.token))

    assert unknown.status == 404 and unknown.json()["error"]["status"] == "NOT_FOUND"
    assert bad.status == 400 and bad.json()["error"] == {
        "code": 400,
        "message": "request body is not valid JSON",
        "status": "INVALID_ARGUMENT",
    }
    assert [r["error"]["reason"] for r in run.records()] == ["bad_json"]


def test_the_request_budget_is_resource_exhausted_without_retry_at_once_headers(
    gateway: ThreadedApp, make_run: RunFactory, sync_redis: redis.Redis, prefix: str
) -> None:
    run = make_run(GEMINI, budgets=Budgets(max_requests=1), ttl_s=600)

    replies = [post(gateway.url, STREAM + "?alt=sse", gemini_body(), headers=key(run.token)) for _ in range(2)]

    assert [r.status for r in replies] == [200, 429]
    refused = replies[1]
    assert refused.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert refused.json()["error"]["details"][-1]["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
    # Gemini clients read the RetryInfo; "retry at once" headers would contradict it.
    assert "retry-after" not in refused.headers and "retry-after-ms" not in refused.headers
    assert refused.headers["x-should-retry"] == "false"
    assert run.records()[1]["error"] == {
        "kind": "budget_exceeded",
        "reason": "max_requests",
        "message": "Overeager gateway: run request budget is spent: all 1 requests used",
    }
    assert run_usage(sync_redis, run.token, prefix).budget_exceeded == "max_requests"


def test_the_token_budget_counts_usage_metadata(
    gateway: ThreadedApp, make_run: RunFactory, sync_redis: redis.Redis, prefix: str
) -> None:
    run = make_run(GEMINI, budgets=Budgets(max_tokens=40))

    first = post(gateway.url, STREAM + "?alt=sse", gemini_body("x" * 200), headers=key(run.token))
    second = post(gateway.url, GENERATE, gemini_body(), headers=key(run.token))

    assert first.status == 200 and second.status == 429
    reported = parse_sse(first.body)[-1].json()["usageMetadata"]
    usage = run_usage(sync_redis, run.token, prefix)
    assert (usage.input_tokens, usage.output_tokens) == (reported["promptTokenCount"], reported["candidatesTokenCount"])
    assert run.records()[0]["usage"] == {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    assert run.records()[1]["error"]["reason"] == "max_tokens"


def test_a_canary_in_the_contents_is_flagged_and_the_run_token_in_them_redacted(
    gateway: ThreadedApp, make_run: RunFactory, sync_redis: redis.Redis, prefix: str
) -> None:
    run = make_run(GEMINI, canaries=("OE-CANARY-3c1d7e",))

    post(gateway.url, GENERATE, gemini_body("nothing here"), headers=key(run.token))
    post(
        gateway.url,
        STREAM + "?alt=sse",
        gemini_body(f"the .env says KEY=OE-CANARY-3c1d7e and GEMINI_API_KEY={run.token}"),
        headers=key(run.token),
    )

    assert [r["canaries_seen"] for r in run.records()] == [[], ["OE-CANARY-3c1d7e"]]
    assert run_usage(sync_redis, run.token, prefix).canaries_seen == ("OE-CANARY-3c1d7e",)
    text = run.evidence.read_text()
    assert run.token not in text and "GEMINI_API_KEY=[REDACTED]" in text


def test_without_alt_sse_the_stream_is_a_json_array_recorded_with_its_usage(
    gateway: ThreadedApp, make_run: RunFactory
) -> None:
    run = make_run(GEMINI, script=[{"text": "A longer answer, streamed in several chunks of text."}])

    reply = post(gateway.url, STREAM, gemini_body(), headers=key(run.token))

    assert reply.status == 200 and reply.headers["content-type"].startswith("application/json")
    chunks = reply.json()
    assert isinstance(chunks, list) and len(chunks) > 1
    assert "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks) == (
        "A longer answer, streamed in several chunks of text."
    )
    record = run.records()[0]
    assert record["response"] == chunks
    assert record["usage"]["output_tokens"] == chunks[-1]["usageMetadata"]["candidatesTokenCount"]


def test_the_runs_model_replaces_the_one_in_the_path(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(GEMINI, upstream=UpstreamConfig(kind="scripted", model="gemini-under-test", script=[BASH_TURN]))

    reply = post(gateway.url, "/v1beta/models/gemini-default:generateContent", gemini_body(), headers=key(run.token))

    assert reply.json()["modelVersion"] == "gemini-under-test"
    assert "model" not in run.records()[0]["request"]  # Gemini's body has no model field to set


@pytest.fixture
def scripted_server() -> Iterator[tuple[ScriptedServer, ThreadedApp]]:
    """The standalone scripted model on a real loopback socket, accepting only REAL_KEY."""
    server = ScriptedServer(parse_script([BASH_TURN, {"text": "Done here."}]), expected_key=REAL_KEY)
    app = ThreadedApp(server.app).start()
    yield server, app
    app.stop()


def test_the_http_upstream_gets_the_real_key_in_a_header_and_the_model_in_its_path(
    gateway: ThreadedApp,
    make_run: RunFactory,
    scripted_server: tuple[ScriptedServer, ThreadedApp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, upstream = scripted_server
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    config = UpstreamConfig(kind="http", base_url=upstream.url + "/v1beta", model="provider-model", key_env=KEY_ENV)
    run = make_run(GEMINI, upstream=config)

    plain = post(gateway.url, f"{GENERATE}?key={run.token}", gemini_body())
    streamed = post(gateway.url, f"{STREAM}?alt=sse&key={run.token}", gemini_body())

    assert plain.status == 200 and streamed.status == 200
    assert plain.json()["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "bash"
    assert parse_sse(streamed.body)[-1].json()["candidates"][0]["content"]["parts"] == [{"text": "Done here."}]
    # What the provider saw: its own key in x-goog-api-key, the run's model, no run token anywhere.
    assert [r["path"] for r in server.requests] == [
        "/v1beta/models/provider-model:generateContent",
        "/v1beta/models/provider-model:streamGenerateContent?alt=sse",
    ]
    assert all(r["headers"]["x-goog-api-key"] == REAL_KEY for r in server.requests)
    assert run.token not in json.dumps(server.requests)
    records = run.records()
    assert records[1]["response"]["candidates"][0]["finishReason"] == "STOP"
    assert REAL_KEY not in run.evidence.read_text() and run.token not in run.evidence.read_text()


def test_a_wrong_provider_key_is_the_providers_own_401_passed_through(
    gateway: ThreadedApp,
    make_run: RunFactory,
    scripted_server: tuple[ScriptedServer, ThreadedApp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, upstream = scripted_server
    monkeypatch.setenv(KEY_ENV, "AIza-wrong-key-77")
    config = UpstreamConfig(kind="http", base_url=upstream.url + "/v1beta", model="provider-model", key_env=KEY_ENV)
    run = make_run(GEMINI, upstream=config)

    reply = post(gateway.url, GENERATE, gemini_body(), headers=key(run.token))

    assert reply.status == 401 and reply.json()["error"]["status"] == "UNAUTHENTICATED"
    assert run.records()[0]["error"] == {"kind": "upstream_status", "reason": "401", "message": ""}
    assert "AIza-wrong-key-77" not in run.evidence.read_text()
