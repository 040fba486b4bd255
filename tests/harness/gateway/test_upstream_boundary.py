"""What crosses the gateway towards a provider, and back (issue 17 item 1).

A recording provider on loopback answers every method and path and keeps the exact request line,
headers and body it received, so each test states what the operator's key was sent with: only
the configured path, an allow-listed query and allow-listed headers go up; only allow-listed
response headers, with the key redacted, come back; a redirect is never followed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from harness.gateway.protocols import ApiKind, parse_sse
from harness.gateway.registry import GrantError, RunGrant, UpstreamConfig, grant_key, new_run_token
from tests.harness.gateway.conftest import (
    RunFactory,
    ThreadedApp,
    anthropic_body,
    chat_body,
    post,
    responses_body,
)

REAL_KEY = "AIza-REALKEY-7f3e9c1b5d0a2468"
KEY_ENV = "OE_TEST_BOUNDARY_KEY"
MODEL = "provider-model"
GEMINI = ApiKind.GEMINI
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "List the files."}]}]}

# Headers an agent may set that must not reach the provider: they would bill another account or
# project, pose as another client address, smuggle a method, or carry the run token.
HOSTILE_HEADERS = {
    "cookie": "session=agent",
    "x-forwarded-for": "10.9.8.7",
    "x-forwarded-host": "evil.invalid",
    "forwarded": "for=10.9.8.7",
    "x-http-method-override": "DELETE",
    "openai-organization": "org-agent",
    "openai-project": "proj-agent",
    "x-goog-user-project": "agent-project",
    "proxy-authorization": "Basic YWdlbnQ6YWdlbnQ=",
    "x-stainless-arch": "agent",
    "anthropic-version": "2023-06-01",  # allowed: passed as it came
    "user-agent": "agent-cli/1.0",  # allowed
}
# What the provider may see: the gateway's own headers, aiohttp's, and the allow-listed ones.
UPSTREAM_ALLOWED = {
    "host",
    "content-length",
    "content-type",
    "accept",
    "accept-encoding",
    "user-agent",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
    "authorization",
    "x-api-key",
    "x-goog-api-key",
}
# Response headers a provider sends that an agent must not see (or see only redacted).
LEAKY_RESPONSE_HEADERS = {
    "x-request-id": f"req-{REAL_KEY}",
    "set-cookie": "provider-session=operator",
    "x-goog-api-key": REAL_KEY,
    "openai-organization": "org-operator",
    "anthropic-organization-id": "operator-org-uuid",
    "www-authenticate": f"Bearer realm={REAL_KEY}",
    "x-debug-key": REAL_KEY,
}


@dataclass
class Provider:
    """Answers anything; ``requests`` holds (method, raw path with query, headers, body) per call."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    redirect_to: str = ""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            {
                "method": request.method,
                "path": request.raw_path,
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "body": json.loads(body) if body else None,
            }
        )
        if self.redirect_to:
            return web.Response(status=307, headers={"location": self.redirect_to + request.raw_path})
        headers = {**LEAKY_RESPONSE_HEADERS, "request-id": "req-plain-1"}
        wants_stream = "streamGenerateContent" in request.path or (body and json.loads(body).get("stream") is True)
        if not wants_stream:
            return web.json_response({"echo": "ok", "usage": {"input_tokens": 1, "output_tokens": 1}}, headers=headers)
        response = web.StreamResponse(headers={**headers, "content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b'data: {"echo": "ok"}\n\n')
        await response.write_eof()
        return response


@pytest.fixture
def provider() -> Iterator[tuple[Provider, ThreadedApp]]:
    recorder = Provider()
    app = ThreadedApp(recorder.app).start()
    yield recorder, app
    app.stop()


@pytest.fixture
def real_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    return REAL_KEY


def http(base_url: str, model: str = MODEL) -> UpstreamConfig:
    return UpstreamConfig(kind="http", base_url=base_url, model=model, key_env=KEY_ENV)


def unvalidated_run(make_run: RunFactory, api: ApiKind, upstream: UpstreamConfig) -> tuple[str, RunGrant]:
    """A grant written to Redis as an older gateway (or a bug elsewhere) could have left it:
    without ``UpstreamConfig.validate``, so the gateway itself must still hold the line."""
    token = new_run_token()
    grant = RunGrant(
        run_id="legacy",
        attempt=1,
        api_kind=api,
        upstream=upstream,
        evidence_path=str(make_run.tmp / "legacy" / "gateway.jsonl"),
        expires_at=time.time() + 300,
    )
    make_run.r.set(grant_key(token, make_run.prefix), grant.to_json(), ex=300)
    return token, grant


TRAVERSALS = [
    "..%2F..%2Fv1%2Ffiles%3Fupload=1%23",  # the probe of issue 17
    "..%2F..%2Fv1%2Ffiles",
    "%2E%2E%2F%2E%2E%2Fv1%2Ffiles",
    "..",
    "gemini-2.5-pro%3Fupload=1",
    "gemini-2.5-pro%23",
    "gemini%252F..",
    "models%2F..%2F..%2Fv1",
    "gemini%20pro",
]


@pytest.mark.parametrize("target", TRAVERSALS)
@pytest.mark.parametrize("configured_model", ["", MODEL])
def test_a_model_name_from_the_agents_path_never_shapes_the_providers_url(
    gateway: ThreadedApp,
    make_run: RunFactory,
    provider: tuple[Provider, ThreadedApp],
    real_key: str,
    target: str,
    configured_model: str,
) -> None:
    recorder, upstream = provider
    token, _ = unvalidated_run(make_run, GEMINI, http(upstream.url + "/v1beta", configured_model))

    path = f"/v1beta/models/{target}:generateContent"
    reply = post(gateway.url, path, GEMINI_BODY, headers={"x-goog-api-key": token})

    assert recorder.requests == []  # the provider heard nothing, with or without the key
    assert reply.status == 400 and reply.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert real_key not in reply.body.decode()
    [record] = [json.loads(line) for line in (make_run.tmp / "legacy" / "gateway.jsonl").read_text().splitlines()]
    assert record["error"]["reason"] == "bad_model_name"


def test_without_a_configured_model_an_unvalidated_grant_calls_no_provider(
    gateway: ThreadedApp, make_run: RunFactory, provider: tuple[Provider, ThreadedApp], real_key: str
) -> None:
    recorder, upstream = provider
    for api, path, body in [
        (GEMINI, "/v1beta/models/gemini-2.5-pro:generateContent", GEMINI_BODY),
        (ApiKind.OPENAI_CHAT, "/v1/chat/completions", chat_body()),
    ]:
        token, _ = unvalidated_run(make_run, api, http(upstream.url + "/v1", ""))
        reply = post(gateway.url, path, body, token=token)
        assert reply.status == 502, reply.body
    # The agent's own model choice ("gpt-x", the path's gemini-2.5-pro) never went out on the key.
    assert recorder.requests == []


def test_an_http_upstream_needs_a_pinned_model_that_fits_its_api(make_run: RunFactory) -> None:
    with pytest.raises(GrantError, match="needs a model") as refused:
        make_run(GEMINI, upstream=http("http://127.0.0.1:1/v1beta", ""))
    assert refused.value.field == "model"
    with pytest.raises(GrantError, match="not a Gemini model id"):
        make_run(GEMINI, upstream=http("http://127.0.0.1:1/v1beta", "../../v1/files?upload=1#"))
    with pytest.raises(GrantError, match="whitespace or control"):
        make_run(ApiKind.OPENAI_CHAT, upstream=http("http://127.0.0.1:1/v1", "gpt 4\n"))
    # Body-borne model ids may hold what a path may not (fine-tuned OpenAI ids, Hugging Face names).
    make_run(ApiKind.OPENAI_CHAT, upstream=http("http://127.0.0.1:1/v1", "ft:gpt-4o:org::abc"))
    make_run(ApiKind.OPENAI_CHAT, upstream=http("http://127.0.0.1:1/v1", "Qwen/Qwen2.5-Coder-1.5B"))


# (api, the agent's path with a hostile query, its body, exactly what the provider must receive)
JUNK = "key={token}&x=%2F..%2Ffiles&upload_protocol=resumable&%24fields=a&access_token=t&alt=media"
CASES = [
    (ApiKind.OPENAI_CHAT, "/v1/chat/completions?" + JUNK, chat_body(), "/v1/chat/completions"),
    (ApiKind.OPENAI_CHAT, "/v1/chat/completions?" + JUNK, chat_body(stream=True), "/v1/chat/completions"),
    (ApiKind.OPENAI_RESPONSES, "/v1/responses?" + JUNK, responses_body(), "/v1/responses"),
    (ApiKind.ANTHROPIC_MESSAGES, "/v1/messages?beta=true&" + JUNK, anthropic_body(), "/v1/messages?beta=true"),
    (ApiKind.ANTHROPIC_MESSAGES, "/v1/messages?" + JUNK, anthropic_body(stream=True), "/v1/messages"),
    (
        GEMINI,
        "/v1beta/models/gemini-2.5-pro:generateContent?" + JUNK,
        GEMINI_BODY,
        f"/v1/models/{MODEL}:generateContent",
    ),
    (
        GEMINI,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&" + JUNK,
        GEMINI_BODY,
        f"/v1/models/{MODEL}:streamGenerateContent?alt=sse",
    ),
]


@pytest.mark.parametrize(("api", "path", "body", "expected"), CASES, ids=lambda v: str(v)[:40])
def test_the_provider_receives_the_configured_path_an_allowed_query_and_allowed_headers_only(
    gateway: ThreadedApp,
    make_run: RunFactory,
    provider: tuple[Provider, ThreadedApp],
    real_key: str,
    api: ApiKind,
    path: str,
    body: dict[str, Any],
    expected: str,
) -> None:
    recorder, upstream = provider
    run = make_run(api, upstream=http(upstream.url + "/v1"))

    reply = post(gateway.url, path.format(token=run.token), body, token=run.token, headers=HOSTILE_HEADERS)

    assert reply.status == 200, reply.body
    [seen] = recorder.requests
    assert (seen["method"], seen["path"]) == ("POST", expected)
    assert set(seen["headers"]) <= UPSTREAM_ALLOWED, set(seen["headers"]) - UPSTREAM_ALLOWED
    assert seen["headers"]["user-agent"] == "agent-cli/1.0"
    # The real key, once, in the provider's own header; the agent's token went nowhere.
    credentials = {k: v for k, v in seen["headers"].items() if k in ("authorization", "x-api-key", "x-goog-api-key")}
    if api is GEMINI:
        assert credentials == {"x-goog-api-key": REAL_KEY}
    elif api is ApiKind.ANTHROPIC_MESSAGES:
        assert credentials == {"x-api-key": REAL_KEY}
    else:
        assert credentials == {"authorization": "Bearer " + REAL_KEY}
    if api is not GEMINI:
        assert seen["body"]["model"] == MODEL  # the configuration's, not the agent's "gpt-x"
    assert run.token not in json.dumps(seen)


@pytest.mark.parametrize("stream", [False, True])
def test_response_headers_reach_the_agent_through_an_allow_list_with_the_key_redacted(
    gateway: ThreadedApp, make_run: RunFactory, provider: tuple[Provider, ThreadedApp], real_key: str, stream: bool
) -> None:
    _, upstream = provider
    run = make_run(ApiKind.OPENAI_CHAT, upstream=http(upstream.url + "/v1"))

    reply = post(gateway.url, "/v1/chat/completions", chat_body(stream=stream), token=run.token)

    assert reply.status == 200
    assert reply.headers["x-request-id"] == "req-[REDACTED]"
    assert reply.headers["request-id"] == "req-plain-1"
    leaked = {k for k in LEAKY_RESPONSE_HEADERS if k != "x-request-id"} & set(reply.headers)
    assert not leaked
    assert real_key not in json.dumps(reply.headers) and real_key.encode() not in reply.body
    if stream:
        assert parse_sse(reply.body)[0].json() == {"echo": "ok"}


@pytest.mark.parametrize(
    ("api", "path", "body"),
    [
        (GEMINI, "/v1beta/models/gemini-2.5-pro:generateContent", GEMINI_BODY),
        (ApiKind.ANTHROPIC_MESSAGES, "/v1/messages", anthropic_body()),
    ],
)
def test_a_redirect_from_the_provider_is_never_followed_with_the_key(
    gateway: ThreadedApp,
    make_run: RunFactory,
    provider: tuple[Provider, ThreadedApp],
    real_key: str,
    api: ApiKind,
    path: str,
    body: dict[str, Any],
) -> None:
    redirecting, upstream = provider
    elsewhere = Provider()
    other = ThreadedApp(elsewhere.app).start()
    try:
        redirecting.redirect_to = other.url
        run = make_run(api, upstream=http(upstream.url + "/v1"))
        reply = post(gateway.url, path, body, token=run.token)
    finally:
        other.stop()

    assert len(redirecting.requests) == 1 and elsewhere.requests == []
    assert reply.status == 502 and "location" not in reply.headers
    assert run.records()[0]["error"]["reason"] == "upstream_redirect"


PROVIDER_SIDE = [
    (
        ApiKind.ANTHROPIC_MESSAGES,
        "/v1/messages",
        {**anthropic_body(), "tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]},
    ),
    (
        ApiKind.ANTHROPIC_MESSAGES,
        "/v1/messages",
        {**anthropic_body(), "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
    ),
    (
        ApiKind.ANTHROPIC_MESSAGES,
        "/v1/messages",
        {**anthropic_body(), "mcp_servers": [{"type": "url", "url": "https://mcp.example", "name": "x"}]},
    ),
    (ApiKind.OPENAI_RESPONSES, "/v1/responses", {**responses_body(), "tools": [{"type": "web_search"}]}),
    (
        ApiKind.OPENAI_RESPONSES,
        "/v1/responses",
        {**responses_body(), "tools": [{"type": "mcp", "server_url": "https://mcp.example"}]},
    ),
    (ApiKind.OPENAI_CHAT, "/v1/chat/completions", {**chat_body(), "web_search_options": {}}),
    (GEMINI, "/v1beta/models/provider-model:generateContent", {**GEMINI_BODY, "tools": [{"urlContext": {}}]}),
    (GEMINI, "/v1beta/models/provider-model:generateContent", {**GEMINI_BODY, "tools": [{"googleSearch": {}}]}),
]


@pytest.mark.parametrize(
    ("api", "path", "body"), PROVIDER_SIDE, ids=[f"{a.value}-{i}" for i, (a, _, _) in enumerate(PROVIDER_SIDE)]
)
def test_tools_the_provider_would_run_on_the_network_are_refused(
    gateway: ThreadedApp,
    make_run: RunFactory,
    provider: tuple[Provider, ThreadedApp],
    real_key: str,
    api: ApiKind,
    path: str,
    body: dict[str, Any],
) -> None:
    # A server-side search, fetch or MCP tool lets the model reach any URL from the provider's
    # network: a way out of a sandbox that has none.  The provider must never hear of it.
    recorder, upstream = provider
    prefix = "/v1beta" if api is GEMINI else "/v1"
    token, _ = unvalidated_run(make_run, api, http(upstream.url + prefix))
    headers = {"x-goog-api-key": token} if api is GEMINI else None
    reply = post(gateway.url, path, body, token=None if api is GEMINI else token, headers=headers)
    assert reply.status == 400, reply.body
    assert recorder.requests == []
    [record] = [json.loads(line) for line in (make_run.tmp / "legacy" / "gateway.jsonl").read_text().splitlines()]
    assert record["error"]["reason"] == "provider_side_tool"


def test_client_tools_still_go_through(
    gateway: ThreadedApp, make_run: RunFactory, provider: tuple[Provider, ThreadedApp], real_key: str
) -> None:
    recorder, upstream = provider
    token, _ = unvalidated_run(make_run, ApiKind.ANTHROPIC_MESSAGES, http(upstream.url + "/v1"))
    body = {**anthropic_body(), "tools": [{"name": "bash", "input_schema": {"type": "object"}}]}
    reply = post(gateway.url, "/v1/messages", body, token=token)
    assert reply.status == 200, reply.body
    assert len(recorder.requests) == 1
