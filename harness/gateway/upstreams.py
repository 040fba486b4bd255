"""Where the gateway sends a model request: one small interface, implementations by name.

* ``http``: any provider endpoint speaking the request's API kind.  The real key is read from
  the environment variable *named* in the run's configuration at the moment of the call, placed
  in the provider's auth header, and nowhere else.
* ``scripted``: :mod:`harness.gateway.scripted` in-process, for tests and the demo.

The gateway never translates between API kinds, so an upstream receives exactly the body the
agent sent (apart from ``model``, which the run's configuration fixes: in the body, or for
Gemini in the path).
"""

from __future__ import annotations

import asyncio
import json
import os
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import aiohttp

from harness.gateway import protocols as p
from harness.gateway import scripted
from harness.gateway.protocols import ApiError, ApiKind
from harness.gateway.registry import UpstreamConfig

# Request headers passed to an http upstream as they came (the rest, auth first, are dropped:
# ``openai-organization``, ``x-goog-user-project`` and the like would bill or act elsewhere).
FORWARDED_REQUEST_HEADERS = ("anthropic-version", "anthropic-beta", "openai-beta", "accept", "user-agent")
# Response headers passed back to the agent (server.relayed_headers also redacts their values).
FORWARDED_RESPONSE_HEADERS = ("content-type", "request-id", "x-request-id", "openai-processing-ms", "retry-after")


@dataclass
class UpstreamRequest:
    api: ApiKind
    body: dict[str, Any]
    query: str = ""  # rebuilt from the allow-list (``beta=true``, ``alt=sse``): protocols.forwarded_query
    headers: Mapping[str, str] = field(default_factory=dict)
    index: int = 0  # 0-based number of this model request within the run
    timeout_s: float = 600.0
    stream: bool = False  # the agent asked for a stream (body ``stream: true``; Gemini's method)
    model: str = ""  # Gemini: the model the path names (after the run's override); scripted replies only


@dataclass
class UpstreamResponse:
    """Either a whole body or a byte stream (SSE) with the upstream's status and headers."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    stream: AsyncGenerator[bytes, None] | None = None


class Upstream(ABC):
    kind: ClassVar[str]

    def __init__(self, config: UpstreamConfig) -> None:
        self.config = config

    @abstractmethod
    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        """Send one request; raise ApiError for failures the agent should see as gateway errors."""

    def secrets(self) -> list[str]:
        """Values that must never reach evidence or the agent (redacted wherever they appear)."""
        return []


_REGISTRY: dict[str, type[Upstream]] = {}


def register(cls: type[Upstream]) -> type[Upstream]:
    _REGISTRY[cls.kind] = cls
    return cls


def upstream_for(config: UpstreamConfig, session: aiohttp.ClientSession | None = None) -> Upstream:
    try:
        cls = _REGISTRY[config.kind]
    except KeyError:
        raise ApiError("upstream", f"unknown upstream kind {config.kind!r}") from None
    upstream = cls(config)
    if isinstance(upstream, HttpUpstream) and session is not None:
        upstream.session = session
    return upstream


@register
class HttpUpstream(Upstream):
    kind = "http"

    def __init__(self, config: UpstreamConfig) -> None:
        super().__init__(config)
        self.session: aiohttp.ClientSession | None = None

    def _key(self) -> str:
        if not self.config.key_env:
            return ""  # a keyless endpoint (e.g. a local llama.cpp server)
        key = os.environ.get(self.config.key_env, "")
        if not key:
            # Name the variable, never a value.
            raise ApiError("upstream", f"the gateway has no key: environment variable {self.config.key_env} is unset")
        return key

    def secrets(self) -> list[str]:
        key = os.environ.get(self.config.key_env, "") if self.config.key_env else ""
        return [key] if key else []

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        if self.session is None:
            raise RuntimeError("HttpUpstream needs a client session")
        if not self.config.model:
            # A grant registered without validation (UpstreamConfig.validate requires a model):
            # the agent's choice of model would go to the provider on the operator's key.
            raise ApiError("upstream", "the run's endpoint has no model configured", reason="bad_model")
        # The URL comes from the run's configuration alone: the base URL, a constant suffix, the
        # configured model (never the one an agent named in its path) and a query rebuilt from
        # an allow-list (protocols.forwarded_query).
        if request.api is ApiKind.GEMINI:
            method = p.GEMINI_STREAM if request.stream else p.GEMINI_GENERATE
            try:
                suffix = p.gemini_suffix(self.config.model, method)
            except ValueError as exc:
                message = f"the run's endpoint has no usable model: {exc}"
                raise ApiError("upstream", message, reason="bad_model") from None
        else:
            suffix = p.API_SUFFIX[request.api]
        url = self.config.base_url.rstrip("/") + suffix
        if request.query:
            url += "?" + request.query
        headers = {k: v for k, v in request.headers.items() if k.lower() in FORWARDED_REQUEST_HEADERS}
        headers["content-type"] = "application/json"
        key = self._key()
        if key:
            if request.api is ApiKind.ANTHROPIC_MESSAGES:
                headers["x-api-key"] = key
            elif request.api is ApiKind.GEMINI:
                headers["x-goog-api-key"] = key  # a header, never ?key=: URLs end up in logs
            else:
                headers["authorization"] = "Bearer " + key
        if request.api is ApiKind.ANTHROPIC_MESSAGES:
            headers.setdefault("anthropic-version", p.ANTHROPIC_VERSION)
        timeout = aiohttp.ClientTimeout(total=request.timeout_s, sock_connect=min(30.0, request.timeout_s))
        try:
            # No redirects: aiohttp would resend the body and the provider-key header (it strips
            # only Authorization across hosts) to wherever a Location points.
            response = await self.session.post(
                url, json=request.body, headers=headers, timeout=timeout, allow_redirects=False
            )
        except TimeoutError:
            raise ApiError("timeout", "upstream did not answer in time", reason="upstream_timeout") from None
        except aiohttp.ClientError as exc:
            raise ApiError("upstream", f"upstream unreachable: {type(exc).__name__}", reason="upstream_error") from None
        if 300 <= response.status < 400:
            response.release()
            raise ApiError(
                "upstream",
                f"upstream answered {response.status} (a redirect); the gateway follows none",
                reason="upstream_redirect",
            )
        kept = {k.lower(): v for k, v in response.headers.items() if k.lower() in FORWARDED_RESPONSE_HEADERS}
        if response.status == 200 and response.content_type == "text/event-stream":
            return UpstreamResponse(response.status, kept, stream=_relay(response))
        try:
            body = await response.read()
        except (aiohttp.ClientError, TimeoutError):
            raise ApiError("upstream", "upstream closed the connection", reason="upstream_error") from None
        finally:
            response.release()
        return UpstreamResponse(response.status, kept, body=body)


async def _relay(response: aiohttp.ClientResponse) -> AsyncGenerator[bytes, None]:
    try:
        async for chunk in response.content.iter_any():
            yield chunk
    finally:
        response.release()


@register
class ScriptedUpstream(Upstream):
    kind = "scripted"

    def __init__(self, config: UpstreamConfig) -> None:
        super().__init__(config)
        try:
            self.turns = scripted.parse_script(config.script or [])
        except scripted.ScriptError as exc:
            raise ApiError("upstream", f"the run's script is invalid: {exc}", reason="bad_script") from None

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        invalid = scripted.validate_request(request.api, request.body)
        if invalid is not None:
            return UpstreamResponse(invalid.status, _json_headers(), body=_dumps(invalid.body(request.api)))
        turn = scripted.turn_at(self.turns, request.index)
        model = request.model or self.config.model
        reply = scripted.reply_for(request.api, request.body, turn, request.index, model)
        if not request.stream:
            return UpstreamResponse(200, _json_headers(), body=_dumps(p.render_body(request.api, reply)))
        if request.api is ApiKind.GEMINI and not p.gemini_sse(request.query):
            return UpstreamResponse(200, _json_headers(), body=scripted.gemini_array_body(request.api, reply))
        events = p.render_stream(request.api, reply, include_usage=scripted.include_usage(request.body))
        return UpstreamResponse(200, {"content-type": "text/event-stream"}, stream=_emit(events))


async def _emit(events: list[p.SSEEvent]) -> AsyncGenerator[bytes, None]:
    for event in events:
        yield p.encode_sse(event.data, event.event)
        await asyncio.sleep(0)  # let the client see events arrive one by one, as from a socket


def _json_headers() -> dict[str, str]:
    return {"content-type": "application/json"}


def _dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode()
