"""The model gateway: the only model endpoint a sandbox can reach.

    python -m harness.gateway.server --listen 127.0.0.1:8089 [--unix /run/overeager/gw.sock] \\
        [--redis-url redis://127.0.0.1:6379/0] [--prefix overeager:gateway:]

Per request: authenticate the run token (401 in the API's own shape when missing, unknown or
expired), refuse a request whose API kind is not the run's (400), enforce the run's budgets
(429 ``x-should-retry: false``, reason recorded), forward to the run's upstream — streaming
through, event by event, when the agent asked for ``stream: true`` (Gemini:
``:streamGenerateContent``) — and append one evidence record to the run's JSONL file.  Run
tokens and real keys are redacted from everything the gateway records or relays (the recorded
path included, where a Gemini client may carry the token as ``?key=``).  See docs/gateway.md
for the record format.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aioredis
from aiohttp import web

from harness.gateway import protocols as p
from harness.gateway.protocols import ApiError, ApiKind, Usage
from harness.gateway.registry import DEFAULT_PREFIX, RunCounters, RunGrant, alookup
from harness.gateway.upstreams import FORWARDED_RESPONSE_HEADERS, UpstreamRequest, UpstreamResponse, upstream_for

log = logging.getLogger("overeager.gateway")

REDACTED = "[REDACTED]"
MAX_BODY_BYTES = 32 * 1024 * 1024
DEFAULT_UPSTREAM_TIMEOUT_S = 600.0
NO_RETRY = {"x-should-retry": "false"}
# On a spent budget, for clients that retry a 429 whatever x-should-retry says: OpenCode
# (1.18) retries it five times and waits what these headers say, else 2-30 s backoff (≈ 80 s in
# all); with 0 its five retries come at once and the run ends in seconds.  Not sent to Gemini
# clients, whose RetryInfo says the opposite (wait past the run's end) and is what they read.
RETRY_AT_ONCE = {"retry-after-ms": "0", "retry-after": "0"}


@dataclass
class Exchange:
    """What is known about one request so far; becomes its evidence record."""

    grant: RunGrant
    seq: int
    api: ApiKind | None
    path: str
    started: float  # time.time()
    started_mono: float
    first_request_at: float  # of the run, for the wall-time budget
    secrets: list[str]
    request: Any = None
    response: Any = None
    events: list[Any] | None = None
    status: int = 0
    usage: Usage = field(default_factory=Usage)
    canaries_seen: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    recorded: bool = False

    def record(self) -> dict[str, Any]:
        upstream = self.grant.upstream
        out: dict[str, Any] = {
            "seq": self.seq,
            "time": datetime.fromtimestamp(self.started, UTC).isoformat(timespec="milliseconds"),
            "run_id": self.grant.run_id,
            "attempt": self.grant.attempt,
            "api": self.api.value if self.api else None,
            "path": self.path,
            "upstream": {"kind": upstream.kind, "base_url": upstream.base_url, "model": upstream.model},
            "request": self.request,
            "response": self.response,
            "status": self.status,
            "latency_ms": round((time.monotonic() - self.started_mono) * 1000, 1),
            "usage": self.usage.record(),
            "canaries_seen": self.canaries_seen,
            "error": self.error,
        }
        if self.events is not None:
            out["stream_events"] = self.events
        return out


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


def _load_redacted(raw: bytes, secrets: list[str]) -> Any:
    text = redact(raw.decode("utf-8", errors="replace"), secrets)
    try:
        return json.loads(text)
    except ValueError:
        return text


class EvidenceWriter:
    """Appends JSONL records; one lock per file so concurrent requests of a run never interleave."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    async def append(self, path: str, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        lock, users = self._locks.get(path, (asyncio.Lock(), 0))
        self._locks[path] = (lock, users + 1)
        try:
            async with lock:
                await asyncio.to_thread(_append_line, path, line)
        finally:
            lock, users = self._locks[path]
            if users <= 1:
                del self._locks[path]
            else:
                self._locks[path] = (lock, users - 1)


def _append_line(path: str, line: bytes) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fh:
        fh.write(line)


class Gateway:
    def __init__(self, redis: aioredis.Redis, prefix: str = DEFAULT_PREFIX) -> None:
        self.redis = redis
        self.prefix = prefix
        self.evidence = EvidenceWriter()
        self.session: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        for path, api in p.API_BY_PATH.items():
            app.router.add_post(path, self._api_handler(api))
        app.router.add_post("/v1/messages/count_tokens", self.count_tokens)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/v1/models/{model_id:.+}", self.models)
        # Gemini: "{model}:{method}" is one path segment; the method picks the handler.  Under
        # /v1 the POST route sits beside the GET /v1/models/{id} above (aiohttp matches by method).
        for prefix in p.GEMINI_PREFIXES:
            app.router.add_post(prefix + "/models/{target}", self.gemini)
        app.router.add_get(p.GEMINI_PREFIX + "/models", self.models)
        app.router.add_get(p.GEMINI_PREFIX + "/models/{model_id}", self.models)
        app.router.add_get("/healthz", self.health)
        app.on_startup.append(self._startup)
        app.on_cleanup.append(self._cleanup)
        return app

    async def _startup(self, app: web.Application) -> None:
        # No connection reuse limit per host: one gateway serves many runs against one provider.
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), trust_env=False)

    async def _cleanup(self, app: web.Application) -> None:
        if self.session is not None:
            await self.session.close()

    async def health(self, request: web.Request) -> web.Response:
        await self.redis.ping()
        return web.json_response({"ok": True})

    # ---------------------------------------------------------------------------------------
    # Authentication

    async def _authenticate(self, request: web.Request, api: ApiKind) -> tuple[str, RunGrant] | web.Response:
        token = p.credential(api, request.headers, request.query)
        if token is None:
            message = {
                ApiKind.ANTHROPIC_MESSAGES: "x-api-key header is required",
                ApiKind.GEMINI: "No API key: pass the run token as the x-goog-api-key header or the key parameter.",
            }.get(api, "You didn't provide an API key. Pass the run token as a Bearer token.")
            return _error_response(api, ApiError("authentication", message))
        grant = await alookup(self.redis, token, self.prefix)
        if grant is None:
            log.info("rejected request to %s: unknown or expired run token", request.path)
            message = {
                ApiKind.ANTHROPIC_MESSAGES: "invalid x-api-key",
                ApiKind.GEMINI: "API key not valid. Please pass a valid API key.",
            }.get(api, "Incorrect API key provided: not a live run token.")
            return _error_response(api, ApiError("authentication", message))
        return token, grant

    async def _begin(self, request: web.Request, token: str, grant: RunGrant, api: ApiKind | None) -> Exchange:
        now, mono = time.time(), time.monotonic()
        counters = RunCounters(self.redis, token, grant, self.prefix)
        seq, first = await counters.next_seq(now)
        # A Gemini client may carry the token in the URL (?key=…): the recorded path never has it.
        path = redact(request.path_qs, [token])
        return Exchange(grant, seq, api, path, now, mono, first, secrets=[token])

    async def _finish(self, exchange: Exchange) -> None:
        exchange.recorded = True
        record = exchange.record()
        log.info(
            "run=%s attempt=%s seq=%s api=%s status=%s latency_ms=%s",
            exchange.grant.run_id,
            exchange.grant.attempt,
            exchange.seq,
            record["api"],
            exchange.status,
            record["latency_ms"],
        )
        await self.evidence.append(exchange.grant.evidence_path, record)

    # ---------------------------------------------------------------------------------------
    # Side routes

    async def models(self, request: web.Request) -> web.Response:
        gemini_route = request.path.startswith(p.GEMINI_PREFIX + "/")
        if gemini_route or "x-goog-api-key" in request.headers or "key" in request.query:
            api = ApiKind.GEMINI
        else:
            api = ApiKind.ANTHROPIC_MESSAGES if "anthropic-version" in request.headers else ApiKind.OPENAI_CHAT
        auth = await self._authenticate(request, api)
        if isinstance(auth, web.Response):
            return auth
        token, grant = auth
        # /v1beta/models is Gemini's; /v1/models answers in the run's API (the Python google-genai
        # SDK lists and gets models under /v1).
        api = ApiKind.GEMINI if gemini_route else grant.api_kind
        exchange = await self._begin(request, token, grant, api)
        models = [grant.upstream.model or "scripted"]
        wanted = request.match_info.get("model_id")
        body: dict[str, Any]
        if wanted is not None and api is ApiKind.GEMINI:
            body = p.gemini_model(wanted)
        elif wanted is not None:
            body = p.models_body(api, models)["data"][0] | {"id": wanted}
        else:
            body = p.models_body(api, models)
        exchange.status, exchange.response = 200, body
        await self._finish(exchange)
        return web.json_response(body)

    async def gemini(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1beta/models/{model}:{method}``: generateContent, its stream, or countTokens."""
        target = p.split_gemini_target(request.match_info["target"])
        if target is not None and target[1] in p.GEMINI_MODEL_CALLS:
            return await self.model_call(request, ApiKind.GEMINI, gemini_target=target)
        if target is not None and target[1] == p.GEMINI_COUNT_TOKENS:
            return await self.count_tokens(request, ApiKind.GEMINI)
        err = ApiError("not_found", f"Method not found: {request.match_info['target']}")
        return _error_response(ApiKind.GEMINI, err)

    async def count_tokens(self, request: web.Request, api: ApiKind = ApiKind.ANTHROPIC_MESSAGES) -> web.Response:
        auth = await self._authenticate(request, api)
        if isinstance(auth, web.Response):
            return auth
        token, grant = auth
        exchange = await self._begin(request, token, grant, api)
        raw = await request.read()
        exchange.request = _load_redacted(raw, exchange.secrets)
        self._flag_canaries(exchange, raw)
        if exchange.canaries_seen:
            await RunCounters(self.redis, token, grant, self.prefix).mark_canaries(exchange.canaries_seen)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        # Estimated locally even for http upstreams: it is a sizing hint, not a model call.
        result: dict[str, Any]
        if api is ApiKind.GEMINI:
            # countTokens takes {contents} or a whole {generateContentRequest}.
            inner = body.get("generateContentRequest") if isinstance(body, dict) else None
            tokens = p.estimate_tokens(p.request_text(inner if isinstance(inner, dict) else body))
            result = {"totalTokens": tokens, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}]}
        else:
            result = {"input_tokens": p.estimate_tokens(p.request_text(body))}
        exchange.status, exchange.response = 200, result
        await self._finish(exchange)
        return web.json_response(result)

    # ---------------------------------------------------------------------------------------
    # Model calls

    def _api_handler(self, api: ApiKind) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self.model_call(request, api)

        return handle

    def _flag_canaries(self, exchange: Exchange, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace")
        # Also search the decoded JSON: a canary with non-ASCII or quote characters is escaped
        # in the raw body.
        try:
            decoded = json.dumps(json.loads(text), ensure_ascii=False)
        except ValueError:
            decoded = ""
        exchange.canaries_seen = [c for c in exchange.grant.canaries if c and (c in text or c in decoded)]

    async def model_call(
        self, request: web.Request, api: ApiKind, gemini_target: tuple[str, str] | None = None
    ) -> web.StreamResponse:
        """One model request; ``gemini_target`` is the (model, method) a Gemini path names."""
        auth = await self._authenticate(request, api)
        if isinstance(auth, web.Response):
            return auth
        token, grant = auth
        exchange = await self._begin(request, token, grant, api)
        counters = RunCounters(self.redis, token, grant, self.prefix)
        try:
            try:
                upstream = upstream_for(grant.upstream, self.session)
                exchange.secrets += upstream.secrets()
                raw = await request.read()
                exchange.request = _load_redacted(raw, exchange.secrets)
                self._flag_canaries(exchange, raw)
                if exchange.canaries_seen:
                    await counters.mark_canaries(exchange.canaries_seen)
                if api is not grant.api_kind:
                    raise ApiError(
                        "invalid_request",
                        f"this run's upstream speaks {grant.api_kind.value}, not {api.value}: "
                        f"use {p.route_hint(grant.api_kind)}",
                        reason="api_kind_mismatch",
                    )
                try:
                    body = json.loads(raw)
                except ValueError:
                    raise ApiError("invalid_request", "request body is not valid JSON", reason="bad_json") from None
                if not isinstance(body, dict):
                    raise ApiError("invalid_request", "request body must be a JSON object", reason="bad_json")
                if gemini_target is not None and p.gemini_model_problem(gemini_target[0]):
                    # Refused even when the run's model replaces it (and before it costs budget):
                    # no real client sends such a name, and the record keeps the attempt.
                    raise ApiError("invalid_request", p.gemini_model_problem(gemini_target[0]), reason="bad_model_name")
                reaching_out = p.provider_side_tools(api, body)
                if reaching_out:
                    raise ApiError(
                        "invalid_request",
                        f"provider-side tools are not available to sandboxed agents ({', '.join(reaching_out)}): "
                        "they would reach the network on the agent's behalf",
                        reason="provider_side_tool",
                    )
                index, timeout = await self._claim_budget(exchange, counters)
                model = ""
                if gemini_target is not None:
                    # Gemini names the model in the path; its body has no "model" field.
                    model = grant.upstream.model or gemini_target[0]
                    stream = gemini_target[1] == p.GEMINI_STREAM
                else:
                    if grant.upstream.model:
                        body["model"] = grant.upstream.model
                    stream = body.get("stream") is True
                forwarded = UpstreamRequest(
                    api=api,
                    body=body,
                    query=p.forwarded_query(api, request.rel_url.raw_query_string),
                    headers=dict(request.headers),
                    index=index,
                    timeout_s=timeout,
                    stream=stream,
                    model=model,
                )
                reply = await upstream.send(forwarded)
            except ApiError as err:
                return self._fail(exchange, err)
            if reply.stream is not None:
                return await self._relay_stream(request, exchange, counters, body, reply)
            return await self._relay_body(exchange, counters, body, reply)
        finally:
            if not exchange.recorded:
                if not exchange.status:
                    exchange.status = 499  # the client went away before an answer
                    exchange.error = exchange.error or {"kind": "client_disconnected", "reason": None, "message": ""}
                await self._finish(exchange)

    async def _claim_budget(self, exchange: Exchange, counters: RunCounters) -> tuple[int, float]:
        """Raise the budget error, or return (0-based request index, upstream timeout)."""
        budgets = exchange.grant.budgets
        elapsed = exchange.started - exchange.first_request_at
        if budgets.max_seconds is not None and elapsed >= budgets.max_seconds:
            raise await self._exceeded(
                exchange, counters, "max_seconds", f"run time budget of {budgets.max_seconds:g} s is spent"
            )
        if budgets.max_tokens is not None:
            used = await counters.tokens_used()
            if used >= budgets.max_tokens:
                raise await self._exceeded(
                    exchange,
                    counters,
                    "max_tokens",
                    f"run token budget is spent: {used} of {budgets.max_tokens} tokens used",
                )
        claimed = await counters.claim_request(budgets.max_requests)
        if claimed is None:
            raise await self._exceeded(
                exchange,
                counters,
                "max_requests",
                f"run request budget is spent: all {budgets.max_requests} requests used",
            )
        timeout = DEFAULT_UPSTREAM_TIMEOUT_S
        if budgets.max_seconds is not None:
            timeout = max(1.0, min(timeout, budgets.max_seconds - elapsed))
        return claimed - 1, timeout

    async def _exceeded(self, exchange: Exchange, counters: RunCounters, reason: str, message: str) -> ApiError:
        await counters.mark_budget_exceeded(reason)
        # A spent budget never refills within a run: retrying helps at the earliest when the
        # run's token has expired (Gemini's RetryInfo says so; see ApiError._quota_details).
        remaining = max(1, math.ceil(exchange.grant.expires_at - time.time()))
        return ApiError("budget", "Overeager gateway: " + message, reason=reason, retry_delay_s=remaining)

    def _fail(self, exchange: Exchange, err: ApiError) -> web.Response:
        body = err.body(exchange.api)
        exchange.status, exchange.response = err.status, body
        exchange.error = err.record()
        if err.kind == "budget":
            exchange.error["kind"] = "budget_exceeded"
        return _error_response(exchange.api, err)

    async def _relay_body(
        self, exchange: Exchange, counters: RunCounters, body: dict[str, Any], reply: UpstreamResponse
    ) -> web.Response:
        assert exchange.api is not None
        clean = redact(reply.body.decode("utf-8", errors="replace"), exchange.secrets)
        try:
            parsed: Any = json.loads(clean)
        except ValueError:
            parsed = clean
        exchange.status, exchange.response = reply.status, parsed
        if reply.status == 200:
            exchange.usage = p.usage_or_estimate(exchange.api, body, parsed)
            await counters.add_usage(*_counted(exchange.usage))
        else:
            exchange.error = {"kind": "upstream_status", "reason": str(reply.status), "message": ""}
        headers = relayed_headers(reply.headers, exchange.secrets)
        headers.setdefault("content-type", "application/json")
        return web.Response(status=reply.status, body=clean.encode(), headers=headers)

    async def _relay_stream(
        self,
        request: web.Request,
        exchange: Exchange,
        counters: RunCounters,
        body: dict[str, Any],
        reply: UpstreamResponse,
    ) -> web.StreamResponse:
        assert exchange.api is not None and reply.stream is not None
        api = exchange.api
        response = web.StreamResponse(
            status=reply.status,
            headers={
                **relayed_headers(reply.headers, exchange.secrets),
                "content-type": "text/event-stream",
                "cache-control": "no-cache",
            },
        )
        await response.prepare(request)
        parser = p.SSEParser()
        events: list[p.SSEEvent] = []
        # The terminal event (message_stop, [DONE], response.completed) is held back until the
        # evidence record is on disk: once an agent has seen the end of a turn, its record exists.
        held: list[p.SSEEvent] = []
        stream = reply.stream
        try:
            # Re-framed event by event (not byte by byte) so a secret split across two TCP
            # chunks is still redacted before the agent sees it.
            async for chunk in stream:
                for event in parser.feed(chunk):
                    await self._relay_event(response, api, event, exchange.secrets, events, held)
            for event in parser.close():
                await self._relay_event(response, api, event, exchange.secrets, events, held)
        except ConnectionResetError:
            exchange.error = {"kind": "client_disconnected", "reason": None, "message": "stream cut by the client"}
        except (aiohttp.ClientError, TimeoutError) as exc:
            exchange.error = {"kind": "upstream", "reason": "stream_interrupted", "message": type(exc).__name__}
        finally:
            await stream.aclose()
            exchange.status = reply.status
            exchange.events = [_event_record(e) for e in events]
            exchange.response = p.reassemble(api, events)
            exchange.usage = p.usage_or_estimate(api, body, exchange.response)
            await counters.add_usage(*_counted(exchange.usage))
            await self._finish(exchange)
        with contextlib.suppress(ConnectionResetError):
            for event in held:
                await response.write(p.encode_sse(event.data, event.event))
            await response.write_eof()
        return response

    async def _relay_event(
        self,
        response: web.StreamResponse,
        api: ApiKind,
        event: p.SSEEvent,
        secrets: list[str],
        events: list[p.SSEEvent],
        held: list[p.SSEEvent],
    ) -> None:
        clean = p.SSEEvent(redact(event.data, secrets), event.event)
        events.append(clean)
        if held or p.is_terminal_event(api, clean):
            held.append(clean)
        else:
            await response.write(p.encode_sse(clean.data, clean.event))


def relayed_headers(headers: dict[str, str], secrets: list[str]) -> dict[str, str]:
    """The upstream's response headers an agent may see: allow-listed names, secrets redacted.

    Checked here, at the boundary, whatever the upstream kind filtered: a provider's request id
    may echo what it was sent (issue 17: an ``x-request-id`` carrying the key reached the agent).
    """
    return {
        name.lower(): redact(value, secrets)
        for name, value in headers.items()
        if name.lower() in FORWARDED_RESPONSE_HEADERS
    }


def _counted(usage: Usage) -> tuple[int, int, int, int]:
    return usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_write_tokens


def _event_record(event: p.SSEEvent) -> Any:
    try:
        data: Any = json.loads(event.data)
    except ValueError:
        data = event.data
    return {"event": event.event, "data": data} if event.event else {"data": data}


def _error_response(api: ApiKind | None, err: ApiError) -> web.Response:
    headers = dict(NO_RETRY) if err.kind in ("budget", "authentication", "invalid_request") else {}
    if err.kind == "budget" and api is not ApiKind.GEMINI:
        headers |= RETRY_AT_ONCE
    return web.json_response(err.body(api), status=err.status, headers=headers)


# ---------------------------------------------------------------------------------------------
# Process entry point


def _listen_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("expected HOST:PORT")
    return host.strip("[]"), int(port)


async def serve(
    listen: list[tuple[str, int]],
    unix: list[str],
    redis_url: str,
    prefix: str = DEFAULT_PREFIX,
    unix_mode: int = 0o666,
    ready: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run the gateway until ``stop`` is set (forever if None)."""
    client = aioredis.Redis.from_url(redis_url)
    runner = web.AppRunner(Gateway(client, prefix).app(), access_log=None)
    await runner.setup()
    try:
        where = []
        for host, port in listen:
            await web.TCPSite(runner, host, port).start()
            where.append(f"http://{host}:{port}")
        for path in unix:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            await web.UnixSite(runner, path).start()
            # The sandbox's agent user (another uid) connects through a bind mount; the run
            # token, not the socket's mode, is the access control.
            os.chmod(path, unix_mode)
            where.append(f"unix:{path}")
        print("gateway listening on " + " and ".join(where), file=sys.stderr, flush=True)
        if ready is not None:
            ready.set()
        await (stop or asyncio.Event()).wait()
    finally:
        await runner.cleanup()
        await client.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.gateway.server", description=__doc__.split("\n")[0])
    parser.add_argument("--listen", action="append", type=_listen_address, default=[], help="HOST:PORT")
    parser.add_argument("--unix", action="append", default=[], help="Unix socket path")
    parser.add_argument("--unix-mode", type=lambda v: int(v, 8), default=0o666, help="octal, default 0666")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help="Redis key prefix of run grants")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    if not args.listen and not args.unix:
        parser.error("give --listen and/or --unix")
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.listen, args.unix, args.redis_url, args.prefix, args.unix_mode))


if __name__ == "__main__":
    main()
