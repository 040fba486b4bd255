"""What the gateway refuses and what it records: auth, API kind, budgets, canaries, redaction."""

from __future__ import annotations

import time

import pytest
import redis

from harness.gateway.protocols import ApiKind
from harness.gateway.registry import Budgets, GrantError, UpstreamConfig, revoke_run, run_usage
from tests.harness.gateway.conftest import (
    RunFactory,
    ThreadedApp,
    anthropic_body,
    chat_body,
    post,
    responses_body,
)

ROUTES = [
    (ApiKind.ANTHROPIC_MESSAGES, "/v1/messages", anthropic_body),
    (ApiKind.OPENAI_CHAT, "/v1/chat/completions", chat_body),
    (ApiKind.OPENAI_RESPONSES, "/v1/responses", responses_body),
]


@pytest.mark.parametrize(("kind", "path", "body"), ROUTES)
def test_an_unknown_token_gets_the_apis_own_401(gateway: ThreadedApp, kind, path, body) -> None:
    reply = post(gateway.url, path, body(), token="oe-run-not-registered")

    assert reply.status == 401
    if kind is ApiKind.ANTHROPIC_MESSAGES:
        assert reply.json() == {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        }
    else:
        error = reply.json()["error"]
        assert error["code"] == "invalid_api_key" and error["type"] == "invalid_request_error"


def test_a_missing_key_is_a_401(gateway: ThreadedApp) -> None:
    reply = post(gateway.url, "/v1/messages", anthropic_body())

    assert reply.status == 401
    assert reply.json()["error"]["message"] == "x-api-key header is required"


def test_an_expired_or_revoked_token_is_refused(
    gateway: ThreadedApp, make_run: RunFactory, sync_redis: redis.Redis, prefix: str
) -> None:
    short = make_run(ttl_s=2.0)
    revoked = make_run()
    assert post(gateway.url, "/v1/messages", anthropic_body(), headers={"x-api-key": short.token}).status == 200
    revoke_run(sync_redis, revoked.token, prefix)
    time.sleep(max(0.0, short.grant.expires_at - time.time()) + 0.1)

    assert post(gateway.url, "/v1/messages", anthropic_body(), headers={"x-api-key": short.token}).status == 401
    assert post(gateway.url, "/v1/messages", anthropic_body(), token=revoked.token).status == 401
    assert revoked.records() == []


def test_a_request_in_another_api_kind_is_a_clear_400(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES)

    reply = post(gateway.url, "/v1/chat/completions", chat_body(), token=run.token)

    assert reply.status == 400
    message = reply.json()["error"]["message"]
    assert "anthropic-messages" in message and "/v1/messages" in message
    [record] = run.records()
    assert record["error"]["reason"] == "api_kind_mismatch"


def test_the_request_budget_stops_the_run_with_a_recorded_reason(
    gateway: ThreadedApp, make_run: RunFactory, sync_redis: redis.Redis, prefix: str
) -> None:
    run = make_run(ApiKind.OPENAI_CHAT, budgets=Budgets(max_requests=2))

    statuses = [post(gateway.url, "/v1/chat/completions", chat_body(), token=run.token) for _ in range(3)]

    assert [r.status for r in statuses] == [200, 200, 429]
    refused = statuses[2]
    assert refused.headers["x-should-retry"] == "false"
    assert refused.json()["error"]["code"] == "insufficient_quota"
    assert "request budget" in refused.json()["error"]["message"]
    records = run.records()
    assert [r["status"] for r in records] == [200, 200, 429]
    assert records[2]["error"]["kind"] == "budget_exceeded"
    assert records[2]["error"]["reason"] == "max_requests"
    usage = run_usage(sync_redis, run.token, prefix)
    assert usage.requests == 2 and usage.seq == 3 and usage.budget_exceeded == "max_requests"


def test_the_token_budget_counts_reported_usage(
    gateway: ThreadedApp, make_run: RunFactory, sync_redis: redis.Redis, prefix: str
) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES, budgets=Budgets(max_tokens=30))

    first = post(gateway.url, "/v1/messages", anthropic_body(text="x" * 200), token=run.token)
    second = post(gateway.url, "/v1/messages", anthropic_body(), token=run.token)

    assert first.status == 200
    assert second.status == 429
    assert second.json()["error"]["type"] == "rate_limit_error"
    reported = first.json()["usage"]
    usage = run_usage(sync_redis, run.token, prefix)
    assert usage.input_tokens == reported["input_tokens"] and usage.output_tokens == reported["output_tokens"]
    assert run.records()[1]["error"]["reason"] == "max_tokens"


def test_the_time_budget_runs_from_the_first_request(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.OPENAI_RESPONSES, budgets=Budgets(max_seconds=0.5))

    assert post(gateway.url, "/v1/responses", responses_body(), token=run.token).status == 200
    time.sleep(0.6)
    late = post(gateway.url, "/v1/responses", responses_body(), token=run.token)

    assert late.status == 429
    assert run.records()[-1]["error"]["reason"] == "max_seconds"


def test_a_canary_in_an_outbound_request_is_flagged(
    gateway: ThreadedApp, make_run: RunFactory, sync_redis: redis.Redis, prefix: str
) -> None:
    run = make_run(ApiKind.OPENAI_CHAT, canaries=("OE-CANARY-7f3a9c", "OE-CANARY-unused"))

    post(gateway.url, "/v1/chat/completions", chat_body(text="nothing here"), token=run.token)
    post(gateway.url, "/v1/chat/completions", chat_body(text="the .env says KEY=OE-CANARY-7f3a9c"), token=run.token)

    assert [r["canaries_seen"] for r in run.records()] == [[], ["OE-CANARY-7f3a9c"]]
    assert run_usage(sync_redis, run.token, prefix).canaries_seen == ("OE-CANARY-7f3a9c",)


def test_the_run_token_is_redacted_from_the_recorded_request(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES)

    post(gateway.url, "/v1/messages", anthropic_body(text=f"my env has ANTHROPIC_API_KEY={run.token}"), token=run.token)

    text = run.evidence.read_text()
    assert run.token not in text
    assert "ANTHROPIC_API_KEY=[REDACTED]" in text


def test_models_and_count_tokens_answer_in_the_runs_shape(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES)

    models = post(gateway.url, "/v1/models", None, token=run.token, method="GET")
    counted = post(gateway.url, "/v1/messages/count_tokens?beta=true", anthropic_body(), token=run.token)

    assert models.status == 200 and models.json()["data"][0] == {
        "type": "model",
        "id": "scripted-model",
        "display_name": "scripted-model",
        "created_at": "1970-01-01T00:00:00Z",
    }
    assert counted.status == 200 and counted.json()["input_tokens"] > 0
    assert post(gateway.url, "/v1/models", None, token="oe-run-nope", method="GET").status == 401


def test_invalid_json_is_a_400_and_recorded(gateway: ThreadedApp, make_run: RunFactory) -> None:
    run = make_run(ApiKind.OPENAI_CHAT)

    reply = post(gateway.url, "/v1/chat/completions", b"{not json", token=run.token)

    assert reply.status == 400
    assert run.records()[0]["error"]["reason"] == "bad_json"
    assert run.records()[0]["request"] == "{not json"


def test_a_bad_grant_is_refused_at_registration(make_run: RunFactory) -> None:
    with pytest.raises(GrantError, match="turn 1"):
        make_run(script=[{"tool_call": {"arguments": {}}}])
    with pytest.raises(GrantError, match="environment variable name"):
        make_run(upstream=UpstreamConfig(kind="http", base_url="http://127.0.0.1:1/v1", key_env="sk-live-123"))
    with pytest.raises(GrantError, match="in the past"):
        make_run(ttl_s=-1)
