"""Wire formats of the four model APIs the gateway speaks, and nothing else.

* **OpenAI Chat Completions** (``POST /v1/chat/completions``),
* **OpenAI Responses** (``POST /v1/responses``),
* **Anthropic Messages** (``POST /v1/messages``, also ``?beta=true`` as Claude Code sends it),
* **Gemini** ``generateContent`` (``POST /v1beta/models/{model}:generateContent`` and
  ``:streamGenerateContent``, also under ``/v1``; ``?alt=sse`` for Server-Sent Events as Gemini
  CLI and the ``google-genai`` SDKs send it, a JSON array of chunks without it).

This module knows how a request is authenticated, what an error body looks like, how a server
frames Server-Sent Events, how a stream is folded back into the body the non-streaming call would
have returned (for the evidence record), how usage is read from either, and how an assistant
reply (text and tool calls) is rendered as a body or as the exact event sequence each provider
emits. Field sets follow the providers' API references and what their official SDKs parse
(``anthropic``, ``openai`` and ``google-genai`` on PyPI are the conformance check in
tests/gateway).

No I/O here: everything is a pure function of its arguments, so the gateway, the scripted
upstream and the tests share one definition of each format.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JSON = dict[str, Any]


class ApiKind(StrEnum):
    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"
    ANTHROPIC_MESSAGES = "anthropic-messages"
    GEMINI = "gemini-generate-content"


# Request path (after the ``/v1`` prefix the gateway serves) per API kind.  An "http" upstream's
# base_url is used verbatim and this suffix appended, so ``https://api.openai.com/v1`` and
# ``https://api.anthropic.com/v1`` are the provider base URLs.  Gemini's path names the model and
# the method (gemini_suffix), so it has no fixed suffix.
API_SUFFIX: dict[ApiKind, str] = {
    ApiKind.OPENAI_CHAT: "/chat/completions",
    ApiKind.OPENAI_RESPONSES: "/responses",
    ApiKind.ANTHROPIC_MESSAGES: "/messages",
}

API_BY_PATH: dict[str, ApiKind] = {"/v1" + suffix: kind for kind, suffix in API_SUFFIX.items()}

ANTHROPIC_VERSION = "2023-06-01"

# Gemini: ``{prefix}/models/{model}:{method}``; the provider base URL of an "http" upstream is
# ``https://generativelanguage.googleapis.com/v1beta`` (or ``/v1``).  Gemini CLI and the JS SDK
# call ``/v1beta``, the Python SDK (google-genai 3.x) ``/v1``: both are served.
GEMINI_PREFIX = "/v1beta"
GEMINI_PREFIXES = (GEMINI_PREFIX, "/v1")
GEMINI_GENERATE = "generateContent"
GEMINI_STREAM = "streamGenerateContent"
GEMINI_COUNT_TOKENS = "countTokens"
GEMINI_MODEL_CALLS = (GEMINI_GENERATE, GEMINI_STREAM)


def is_openai(api: ApiKind) -> bool:
    return api in (ApiKind.OPENAI_CHAT, ApiKind.OPENAI_RESPONSES)


# A Gemini model id as it may appear in an upstream path: one path segment of letters, digits,
# ``.``, ``_`` and ``-``, starting with a letter or digit (so never ``.`` or ``..``), with no
# ``/ ? # %`` or anything else a URL gives a meaning to.  Google's ids (``gemini-2.5-pro``,
# ``gemini-2.0-flash-001``) all fit; a name from an agent's URL that does not is refused, never
# escaped: issue 17 found ``..%2F..%2Fv1%2Ffiles%3Fupload=1%23`` reaching the provider as
# ``POST /v1/files?upload=1`` with the operator's key.
_GEMINI_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def gemini_model_problem(model: str) -> str:
    """Empty when ``model`` (``models/`` prefix allowed) may name a Gemini model in a path; else why not."""
    bare = model.removeprefix("models/")
    if _GEMINI_MODEL.fullmatch(bare):
        return ""
    return (
        f"model name {model[:80]!r} is not a Gemini model id: letters, digits, '.', '_' and '-' only, "
        "starting with a letter or digit"
    )


def gemini_suffix(model: str, method: str) -> str:
    """``/models/{model}:{method}``: the path after the version prefix (``models/`` not doubled).

    Raises ``ValueError`` for a model or method that is not a plain id: this string is appended
    to the provider's URL, so nothing in it may be read as a separator, escape or dot segment.
    """
    problem = gemini_model_problem(model)
    if problem:
        raise ValueError(problem)
    if method not in (*GEMINI_MODEL_CALLS, GEMINI_COUNT_TOKENS):
        raise ValueError(f"unknown Gemini method {method[:40]!r}")
    return f"/models/{model.removeprefix('models/')}:{method}"


def split_gemini_target(target: str) -> tuple[str, str] | None:
    """``"gemini-2.5-pro:streamGenerateContent"`` (the path segment after ``models/``) → (model, method)."""
    model, colon, method = target.rpartition(":")
    if not colon or not model or not method:
        return None
    return model, method


def route_hint(api: ApiKind) -> str:
    """The route a client of ``api`` must call, for error messages."""
    if api is ApiKind.GEMINI:
        return f"{GEMINI_PREFIX}/models/{{model}}:{GEMINI_GENERATE} or :{GEMINI_STREAM}"
    return "/v1" + API_SUFFIX[api]


def gemini_sse(query_string: str) -> bool:
    """Whether a ``streamGenerateContent`` call asked for SSE (``alt=sse``) instead of a JSON array."""
    return ("alt", "sse") in urllib.parse.parse_qsl(query_string, keep_blank_values=True)


# The query parameters an upstream may see, per API, with the values each may take.  Everything
# else an agent puts in its URL stays out of the provider's URL (it is still in the evidence
# record's path): Google APIs read ``key``, ``access_token``, ``$fields``, ``upload_protocol`` …
# from the query, and a raw query string may carry a decoded ``#`` that cuts the URL short.
FORWARDED_QUERY: dict[ApiKind, dict[str, tuple[str, ...]]] = {
    ApiKind.ANTHROPIC_MESSAGES: {"beta": ("true",)},  # Claude Code calls /v1/messages?beta=true
    ApiKind.GEMINI: {"alt": ("sse", "json")},
}


# Tools the *provider* executes on its own network (search, fetch, code execution, remote MCP):
# a sandboxed agent that declares one reaches the internet through the gateway, around the
# sandbox's closed network.  Client tools (functions the agent runs itself) are fine.
_ANTHROPIC_SERVER_TOOLS = ("web_search", "web_fetch", "code_execution", "mcp")
_OPENAI_SERVER_TOOLS = ("web_search", "file_search", "mcp", "code_interpreter", "image_generation")
_GEMINI_SERVER_TOOLS = (
    "googleSearch",
    "google_search",
    "googleSearchRetrieval",
    "google_search_retrieval",
    "urlContext",
    "url_context",
    "codeExecution",
    "code_execution",
    "fileSearch",
    "file_search",
    "googleMaps",
    "google_maps",
    "computerUse",
    "computer_use",
)


def provider_side_tools(api: ApiKind, body: Mapping[str, Any]) -> list[str]:
    """What in a request would make the provider reach out on the agent's behalf (empty: nothing)."""
    found: list[str] = []
    raw_tools = body.get("tools")
    tools: list[Any] = raw_tools if isinstance(raw_tools, list) else []
    if api is ApiKind.ANTHROPIC_MESSAGES:
        for tool in tools:
            kind = str(tool.get("type") or "") if isinstance(tool, Mapping) else ""
            if kind.startswith(_ANTHROPIC_SERVER_TOOLS):
                found.append(f"tool {kind}")
        found += [f"parameter {k}" for k in ("mcp_servers", "container") if body.get(k)]
    elif api in (ApiKind.OPENAI_RESPONSES, ApiKind.OPENAI_CHAT):
        for tool in tools:
            kind = str(tool.get("type") or "") if isinstance(tool, Mapping) else ""
            if kind.startswith(_OPENAI_SERVER_TOOLS):
                found.append(f"tool {kind}")
        found += [f"parameter {k}" for k in ("web_search_options",) if k in body]
    elif api is ApiKind.GEMINI:
        for tool in tools:
            if isinstance(tool, Mapping):
                found += [f"tool {k}" for k in tool if k in _GEMINI_SERVER_TOOLS]
    return found


def forwarded_query(api: ApiKind, query_string: str) -> str:
    """The query string an upstream may see, rebuilt from the allow-list (FORWARDED_QUERY).

    The run token (Gemini's ``key``) and any other parameter are dropped; an allowed parameter
    is forwarded once, with its first allowed value.
    """
    allowed = FORWARDED_QUERY.get(api, {})
    kept: dict[str, str] = {}
    for name, value in urllib.parse.parse_qsl(query_string, keep_blank_values=True):
        if name in allowed and value in allowed[name] and name not in kept:
            kept[name] = value
    return urllib.parse.urlencode(kept)


# --------------------------------------------------------------------------------------------
# Authentication


def credential_from_headers(headers: Mapping[str, str]) -> str | None:
    """The API key a client presented: ``x-api-key`` (Anthropic), ``x-goog-api-key`` (Gemini) or
    ``Authorization: Bearer``.

    All are accepted on every route because clients are not consistent (Claude Code sends
    ``x-api-key`` for ANTHROPIC_API_KEY and a bearer for ANTHROPIC_AUTH_TOKEN).
    """
    for name in ("x-api-key", "x-goog-api-key"):
        key = headers.get(name, "").strip()
        if key:
            return key
    auth = headers.get("authorization", "").strip()
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def credential(api: ApiKind, headers: Mapping[str, str], query: Mapping[str, str]) -> str | None:
    """The presented key; Gemini clients may also pass it as the ``key`` query parameter."""
    found = credential_from_headers(headers)
    if found is None and api is ApiKind.GEMINI:
        found = query.get("key", "").strip() or None
    return found


# --------------------------------------------------------------------------------------------
# Errors

# (HTTP status, Anthropic error type, OpenAI error type, OpenAI error code, Google status)
# Google's status strings are the google.rpc.Code names its APIs put in ``error.status``.
_ERROR_SHAPES: dict[str, tuple[int, str, str, str | None, str]] = {
    "authentication": (401, "authentication_error", "invalid_request_error", "invalid_api_key", "UNAUTHENTICATED"),
    "invalid_request": (400, "invalid_request_error", "invalid_request_error", None, "INVALID_ARGUMENT"),
    "not_found": (404, "not_found_error", "invalid_request_error", "not_found", "NOT_FOUND"),
    # Budgets: 429 as a provider's quota error, with ``x-should-retry: false`` set by the server
    # so that the Stainless-generated SDKs (anthropic, openai, and Claude Code on top of the
    # former) stop instead of backing off for minutes; OpenAI's ``insufficient_quota`` is also
    # the code Codex treats as final.  Gemini's body carries a RetryInfo (see ApiError.body).
    "budget": (429, "rate_limit_error", "insufficient_quota", "insufficient_quota", "RESOURCE_EXHAUSTED"),
    "upstream": (502, "api_error", "server_error", None, "UNAVAILABLE"),
    "timeout": (504, "api_error", "server_error", "timeout", "DEADLINE_EXCEEDED"),
}

_GOOGLE_RPC = "type.googleapis.com/google.rpc."


class ApiError(Exception):
    """An error the gateway itself answers with, in the shape of the API that was called."""

    def __init__(self, kind: str, message: str, reason: str | None = None, retry_delay_s: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind  # a key of _ERROR_SHAPES
        self.message = message
        self.reason = reason  # machine-readable detail recorded in evidence (e.g. max_requests)
        # Budgets: how long until retrying could possibly help (the run's remaining lifetime).
        self.retry_delay_s = retry_delay_s

    @property
    def status(self) -> int:
        return _ERROR_SHAPES[self.kind][0]

    def body(self, api: ApiKind | None) -> JSON:
        status, anthropic_type, openai_type, openai_code, google_status = _ERROR_SHAPES[self.kind]
        if api is ApiKind.ANTHROPIC_MESSAGES:
            return {"type": "error", "error": {"type": anthropic_type, "message": self.message}}
        if api is ApiKind.GEMINI:
            error: JSON = {"code": status, "message": self.message, "status": google_status}
            if self.kind == "budget":
                error["details"] = self._quota_details()
            return {"error": error}
        return {"error": {"message": self.message, "type": openai_type, "param": None, "code": openai_code}}

    def _quota_details(self) -> list[JSON]:
        """google.rpc details of a spent budget, in the shape Google's quota errors use.

        Gemini CLI (0.61) retries a 429 ten times over about 3.5 minutes unless it classifies
        it as terminal; a RetryInfo delay above its 300 s ceiling is what makes it stop at once
        (packages/core/src/utils/googleQuotaErrors.ts).  The delay is the truth: the budget does
        not come back before the run's token expires.  The quota id avoids "PerDay"/"PerMinute",
        which the CLI would turn into a daily-quota or a 60 s-retry message of its own.
        """
        violation = {
            "subject": "overeager-run",
            "description": self.message,
            "quotaMetric": f"overeager.gateway/{self.reason or 'budget'}",
            "quotaId": f"overeager-run-{self.reason or 'budget'}",
        }
        details: list[JSON] = [{"@type": _GOOGLE_RPC + "QuotaFailure", "violations": [violation]}]
        if self.retry_delay_s is not None:
            details.append({"@type": _GOOGLE_RPC + "RetryInfo", "retryDelay": f"{self.retry_delay_s}s"})
        return details

    def record(self) -> JSON:
        return {"kind": self.kind, "reason": self.reason, "message": self.message}


# --------------------------------------------------------------------------------------------
# Server-Sent Events


@dataclass(frozen=True)
class SSEEvent:
    data: str
    event: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


def encode_sse(data: JSON | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class SSEParser:
    """Incremental parser of an ``text/event-stream`` body (WHATWG HTML §9.2.6, minus retry/id).

    Feed it arbitrary byte chunks; it yields complete events.  Comment lines (``: ping``) are
    dropped; multi-line ``data`` fields are joined with newlines as the spec says.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buffer += chunk
        events: list[SSEEvent] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                return events
            end, width = cut
            line = self._buffer[:end].decode("utf-8", errors="replace")
            self._buffer = self._buffer[end + width :]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def close(self) -> list[SSEEvent]:
        """Flush an unterminated last event (a server that closed without a blank line)."""
        events = self.feed(b"\n\n") if self._buffer or self._data else []
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if line == "":
            if not self._data:
                self._event = None
                return None
            event = SSEEvent(data="\n".join(self._data), event=self._event)
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Position and width of the first line terminator (CRLF, LF or CR) in ``buffer``."""
    for i, byte in enumerate(buffer):
        if byte == 0x0A:
            return i, 1
        if byte == 0x0D:
            if i + 1 == len(buffer):
                return None  # a CR at the end may be the first half of a CRLF
            return i, 2 if buffer[i + 1] == 0x0A else 1
    return None


_TERMINAL_TYPES = {"message_stop", "response.completed", "response.failed", "response.incomplete"}


def is_terminal_event(api: ApiKind, event: SSEEvent) -> bool:
    """The event after which a client considers the turn finished."""
    if api is ApiKind.OPENAI_CHAT:
        return event.data == "[DONE]"
    if api is ApiKind.GEMINI:
        # No end marker: the chunk that carries a finishReason (or a blocked prompt, or an
        # error) is the last one, and the server then closes the stream.
        try:
            data = json.loads(event.data)
        except ValueError:
            return False
        if not isinstance(data, dict):
            return False
        if "error" in data or (data.get("promptFeedback") or {}).get("blockReason"):
            return True
        return any(isinstance(c, dict) and c.get("finishReason") for c in data.get("candidates") or [])
    if event.event is not None:
        return event.event in _TERMINAL_TYPES
    try:
        data = json.loads(event.data)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("type") in _TERMINAL_TYPES


def parse_sse(body: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    return parser.feed(body) + parser.close()


# --------------------------------------------------------------------------------------------
# Usage


@dataclass(frozen=True)
class Usage:
    """Tokens of one model call.  ``input_tokens`` is every prompt token, cached ones included;
    ``cached_input_tokens`` (cache reads) and ``cache_write_tokens`` (Anthropic's cache creation)
    are the parts of it that providers bill at other rates (harness.gateway.pricing)."""

    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False  # the upstream reported nothing; counted from text length instead
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def record(self) -> JSON:
        out: JSON = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cached_input_tokens:
            out["cached_input_tokens"] = self.cached_input_tokens
        if self.cache_write_tokens:
            out["cache_write_tokens"] = self.cache_write_tokens
        if self.estimated:
            out["estimated"] = True
        return out


def estimate_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters per token."""
    return math.ceil(len(text) / 4) if text else 0


def usage_from_body(api: ApiKind, body: Any) -> Usage | None:
    """Usage reported in a (non-streaming or reassembled) response body, or None."""
    if api is ApiKind.GEMINI:
        return _gemini_usage(body)
    if not isinstance(body, dict):
        return None
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return None
    if api is ApiKind.ANTHROPIC_MESSAGES:
        # Cached prompt tokens are still prompt tokens a budget should see (Anthropic reports
        # them beside input_tokens, not inside it, unlike the other three APIs).
        read, write = _int(usage.get("cache_read_input_tokens")), _int(usage.get("cache_creation_input_tokens"))
        inp = _int(usage.get("input_tokens")) + read + write
        return Usage(inp, _int(usage.get("output_tokens")), cached_input_tokens=read, cache_write_tokens=write)
    if api is ApiKind.OPENAI_CHAT:
        details = usage.get("prompt_tokens_details")
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
        return Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), cached_input_tokens=cached)
    details = usage.get("input_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Usage(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")), cached_input_tokens=cached)


def _gemini_usage(body: Any) -> Usage | None:
    """``usageMetadata`` of a GenerateContentResponse (or the last one of a JSON-array stream).

    Input is ``promptTokenCount`` (cached content is a part of it, not added) plus
    ``toolUsePromptTokenCount``; output is ``candidatesTokenCount`` plus ``thoughtsTokenCount``,
    which Google bills as output (ai.google.dev/api/generate-content#UsageMetadata).
    """
    if isinstance(body, list):
        body = _reassemble_gemini(c for c in body if isinstance(c, dict))
    if not isinstance(body, dict) or not isinstance(body.get("usageMetadata"), dict):
        return None
    meta = body["usageMetadata"]
    return Usage(
        _int(meta.get("promptTokenCount")) + _int(meta.get("toolUsePromptTokenCount")),
        _int(meta.get("candidatesTokenCount")) + _int(meta.get("thoughtsTokenCount")),
        cached_input_tokens=_int(meta.get("cachedContentTokenCount")),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def request_text(body: Any) -> str:
    """The part of a request a tokenizer would see, for estimates: everything but sampling knobs."""
    if not isinstance(body, dict):
        return ""
    keys = ("system", "messages", "input", "instructions", "systemInstruction", "contents", "tools")
    return json.dumps([body.get(k) for k in keys if k in body], ensure_ascii=False, separators=(",", ":"))


def response_text(api: ApiKind, body: Any) -> str:
    """The generated text and tool arguments in a response body, for estimates."""
    if api is ApiKind.GEMINI and isinstance(body, list):
        body = _reassemble_gemini(c for c in body if isinstance(c, dict))
    if not isinstance(body, dict):
        return ""
    parts: list[str] = []
    if api is ApiKind.ANTHROPIC_MESSAGES:
        for block in body.get("content") or []:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_use":
                    parts.append(str(block.get("name", "")) + json.dumps(block.get("input", {})))
    elif api is ApiKind.GEMINI:
        for part in _gemini_parts(body):
            if isinstance(part.get("text"), str):
                parts.append(part["text"])
            call = part.get("functionCall")
            if isinstance(call, dict):
                parts.append(str(call.get("name", "")) + json.dumps(call.get("args", {})))
    elif api is ApiKind.OPENAI_CHAT:
        for choice in body.get("choices") or []:
            message = choice.get("message") or {} if isinstance(choice, dict) else {}
            parts.append(str(message.get("content") or ""))
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                parts.append(str(fn.get("name", "")) + str(fn.get("arguments", "")))
    else:
        for item in body.get("output") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                parts.append(str(item.get("name", "")) + str(item.get("arguments", "")))
            for part in item.get("content") or []:
                if isinstance(part, dict):
                    parts.append(str(part.get("text") or part.get("refusal") or ""))
    return "".join(parts)


def usage_or_estimate(api: ApiKind, request: Any, response: Any) -> Usage:
    reported = usage_from_body(api, response)
    if reported is not None and reported.total > 0:
        return reported
    return Usage(estimate_tokens(request_text(request)), estimate_tokens(response_text(api, response)), estimated=True)


# --------------------------------------------------------------------------------------------
# Reassembling a stream into the body the non-streaming call would have returned


def reassemble(api: ApiKind, events: Iterable[SSEEvent]) -> JSON | None:
    if api is ApiKind.ANTHROPIC_MESSAGES:
        return _reassemble_anthropic(events)
    if api is ApiKind.OPENAI_CHAT:
        return _reassemble_chat(events)
    if api is ApiKind.GEMINI:
        return _reassemble_gemini(_payloads(events))
    return _reassemble_responses(events)


def _payloads(events: Iterable[SSEEvent]) -> Iterator[JSON]:
    for event in events:
        if event.data == "[DONE]":
            continue
        try:
            data = json.loads(event.data)
        except ValueError:
            continue
        if isinstance(data, dict):
            yield data


def _reassemble_anthropic(events: Iterable[SSEEvent]) -> JSON | None:
    message: JSON | None = None
    json_parts: dict[int, list[str]] = {}
    for data in _payloads(events):
        kind = data.get("type")
        if kind == "message_start":
            message = dict(data.get("message") or {})
            message["content"] = list(message.get("content") or [])
            message["usage"] = dict(message.get("usage") or {})
        elif message is None:
            if kind == "error":
                return data
            continue
        elif kind == "content_block_start":
            message["content"].append(dict(data.get("content_block") or {}))
        elif kind == "content_block_delta":
            index, delta = data.get("index", -1), data.get("delta") or {}
            if not 0 <= index < len(message["content"]):
                continue
            block = message["content"][index]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif delta.get("type") == "input_json_delta":
                json_parts.setdefault(index, []).append(delta.get("partial_json", ""))
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            elif delta.get("type") == "signature_delta":
                block["signature"] = delta.get("signature", "")
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    message[key] = delta[key]
            # message_delta usage is cumulative: it overwrites, it does not add.
            message["usage"].update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        elif kind == "error":
            message["error"] = data.get("error")
    if message is not None:
        for index, parts in json_parts.items():
            raw = "".join(parts)
            try:
                message["content"][index]["input"] = json.loads(raw) if raw else {}
            except ValueError:
                message["content"][index]["input"] = {"_unparsed": raw}
    return message


def _reassemble_chat(events: Iterable[SSEEvent]) -> JSON | None:
    result: JSON | None = None
    choices: dict[int, JSON] = {}
    for data in _payloads(events):
        if "error" in data and result is None:
            return data
        if result is None:
            result = {k: data.get(k) for k in ("id", "created", "model", "system_fingerprint", "service_tier")}
            result["object"] = "chat.completion"
        if data.get("usage"):
            result["usage"] = data["usage"]
        for chunk_choice in data.get("choices") or []:
            index = chunk_choice.get("index", 0)
            choice = choices.setdefault(
                index,
                {"index": index, "message": {"role": "assistant", "content": None}, "finish_reason": None},
            )
            message = choice["message"]
            delta = chunk_choice.get("delta") or {}
            if delta.get("role"):
                message["role"] = delta["role"]
            if delta.get("content") is not None:
                message["content"] = (message["content"] or "") + delta["content"]
            if delta.get("refusal") is not None:
                message["refusal"] = message.get("refusal", "") + delta["refusal"]
            for call_delta in delta.get("tool_calls") or []:
                calls: list[JSON] = message.setdefault("tool_calls", [])
                position = call_delta.get("index", len(calls))
                while len(calls) <= position:
                    calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                call = calls[position]
                if call_delta.get("id"):
                    call["id"] = call_delta["id"]
                fn = call_delta.get("function") or {}
                call["function"]["name"] += fn.get("name") or ""
                call["function"]["arguments"] += fn.get("arguments") or ""
            if chunk_choice.get("finish_reason"):
                choice["finish_reason"] = chunk_choice["finish_reason"]
    if result is not None:
        result["choices"] = [choices[i] for i in sorted(choices)]
    return result


def _gemini_parts(body: JSON) -> list[JSON]:
    parts: list[JSON] = []
    for candidate in body.get("candidates") or []:
        content = candidate.get("content") if isinstance(candidate, dict) else None
        if isinstance(content, dict):
            parts += [part for part in content.get("parts") or [] if isinstance(part, dict)]
    return parts


def _is_plain_text(part: JSON) -> bool:
    return isinstance(part.get("text"), str) and set(part) <= {"text", "thought"}


def _reassemble_gemini(chunks: Iterable[JSON]) -> JSON | None:
    """Fold GenerateContentResponse chunks into one: text pieces joined, other parts kept in order.

    ``usageMetadata`` is cumulative in a stream (each chunk restates the counts so far), so the
    last one wins, as in the SDKs' own aggregation.
    """
    result: JSON | None = None
    candidates: dict[int, JSON] = {}
    for data in chunks:
        if "error" in data:
            if result is None:
                return data
            result["error"] = data["error"]
            continue
        if result is None:
            result = {}
        for key in ("usageMetadata", "modelVersion", "responseId", "createTime", "promptFeedback"):
            if key in data:
                result[key] = data[key]
        for chunk_candidate in data.get("candidates") or []:
            if not isinstance(chunk_candidate, dict):
                continue
            index = _int(chunk_candidate.get("index"))
            candidate = candidates.setdefault(index, {"content": {"parts": [], "role": "model"}, "index": index})
            content = chunk_candidate.get("content") or {}
            if content.get("role"):
                candidate["content"]["role"] = content["role"]
            parts: list[JSON] = candidate["content"]["parts"]
            for part in content.get("parts") or []:
                if not isinstance(part, dict):
                    continue
                last = parts[-1] if parts else None
                if (
                    last is not None
                    and _is_plain_text(last)
                    and _is_plain_text(part)
                    and last.get("thought") == part.get("thought")
                ):
                    parts[-1] = {**last, "text": last["text"] + part["text"]}
                else:
                    parts.append(dict(part))
            for key, value in chunk_candidate.items():
                if key not in ("content", "index"):
                    candidate[key] = value
    if result is not None and candidates:
        result = {"candidates": [candidates[i] for i in sorted(candidates)], **result}
    return result


def _reassemble_responses(events: Iterable[SSEEvent]) -> JSON | None:
    latest: JSON | None = None
    items: dict[int, JSON] = {}
    for data in _payloads(events):
        kind = data.get("type", "")
        if isinstance(data.get("response"), dict):
            latest = data["response"]
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                return latest
        elif kind == "response.output_item.done" and isinstance(data.get("item"), dict):
            items[data.get("output_index", len(items))] = data["item"]
        elif kind == "error":
            return data
    if latest is None:
        return None
    # A stream cut before response.completed: keep what the finished items say.
    return {**latest, "output": [items[i] for i in sorted(items)]}


# --------------------------------------------------------------------------------------------
# Rendering an assistant reply (used by the scripted upstream)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: JSON
    call_id: str  # provider-style id without prefix; rendered as toolu_… / call_…

    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Reply:
    """One assistant turn, independent of the wire format."""

    reply_id: str  # hex, rendered with each API's prefix
    model: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    created: int = field(default_factory=lambda: int(time.time()))


def chunks(text: str, size: int = 24) -> list[str]:
    """Deterministic split of streamed text; never yields an empty list for empty text."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def render_body(api: ApiKind, reply: Reply) -> JSON:
    if api is ApiKind.ANTHROPIC_MESSAGES:
        return _anthropic_body(reply)
    if api is ApiKind.OPENAI_CHAT:
        return _chat_body(reply)
    if api is ApiKind.GEMINI:
        return _gemini_body(reply)
    return _responses_body(reply, status="completed")


def render_stream(api: ApiKind, reply: Reply, *, include_usage: bool = False) -> list[SSEEvent]:
    """The event sequence the provider streams for ``reply``, ``[DONE]`` included for chat."""
    if api is ApiKind.ANTHROPIC_MESSAGES:
        return list(_anthropic_stream(reply))
    if api is ApiKind.OPENAI_CHAT:
        return list(_chat_stream(reply, include_usage=include_usage))
    if api is ApiKind.GEMINI:
        return list(_gemini_stream(reply))
    return list(_responses_stream(reply))


def _anthropic_usage(reply: Reply, output_tokens: int) -> JSON:
    return {
        "input_tokens": reply.usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _anthropic_blocks(reply: Reply) -> list[JSON]:
    blocks: list[JSON] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        blocks.append({"type": "tool_use", "id": "toolu_" + call.call_id, "name": call.name, "input": call.arguments})
    return blocks


def _anthropic_stop(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def _anthropic_body(reply: Reply) -> JSON:
    return {
        "id": "msg_" + reply.reply_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": _anthropic_blocks(reply),
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": _anthropic_usage(reply, reply.usage.output_tokens),
    }


def _anthropic_stream(reply: Reply) -> Iterator[SSEEvent]:
    def ev(data: JSON) -> SSEEvent:
        return SSEEvent(json.dumps(data, ensure_ascii=False, separators=(",", ":")), event=data["type"])

    start = {**_anthropic_body(reply), "content": [], "stop_reason": None, "usage": _anthropic_usage(reply, 1)}
    yield ev({"type": "message_start", "message": start})
    index = 0
    if reply.text:
        yield ev({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        yield ev({"type": "ping"})
        for piece in chunks(reply.text):
            yield ev({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})
        yield ev({"type": "content_block_stop", "index": index})
        index += 1
    for call in reply.tool_calls:
        block = {"type": "tool_use", "id": "toolu_" + call.call_id, "name": call.name, "input": {}}
        yield ev({"type": "content_block_start", "index": index, "content_block": block})
        # The API opens every tool_use with an empty partial_json before the argument pieces.
        for piece in ["", *chunks(call.arguments_json())]:
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield ev({"type": "content_block_delta", "index": index, "delta": delta})
        yield ev({"type": "content_block_stop", "index": index})
        index += 1
    yield ev(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _anthropic_stop(reply), "stop_sequence": None},
            "usage": {"output_tokens": reply.usage.output_tokens},
        }
    )
    yield ev({"type": "message_stop"})


def _chat_usage(reply: Reply) -> JSON:
    return {
        "prompt_tokens": reply.usage.input_tokens,
        "completion_tokens": reply.usage.output_tokens,
        "total_tokens": reply.usage.total,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_finish(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def _chat_body(reply: Reply) -> JSON:
    message: JSON = {"role": "assistant", "content": reply.text or None, "refusal": None, "annotations": []}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": "call_" + call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for call in reply.tool_calls
        ]
    return {
        "id": "chatcmpl-" + reply.reply_id,
        "object": "chat.completion",
        "created": reply.created,
        "model": reply.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _chat_finish(reply)}],
        "usage": _chat_usage(reply),
        "service_tier": "default",
        "system_fingerprint": None,
    }


def _chat_stream(reply: Reply, *, include_usage: bool) -> Iterator[SSEEvent]:
    def chunk(choices: list[JSON], usage: JSON | None = None) -> SSEEvent:
        data: JSON = {
            "id": "chatcmpl-" + reply.reply_id,
            "object": "chat.completion.chunk",
            "created": reply.created,
            "model": reply.model,
            "service_tier": "default",
            "system_fingerprint": None,
            "choices": choices,
        }
        if include_usage:
            # With stream_options.include_usage every chunk carries "usage": null but the last.
            data["usage"] = usage
        return SSEEvent(json.dumps(data, ensure_ascii=False, separators=(",", ":")))

    def delta(d: JSON, finish: str | None = None) -> list[JSON]:
        return [{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}]

    if reply.text or not reply.tool_calls:
        yield chunk(delta({"role": "assistant", "content": "", "refusal": None}))
        for piece in chunks(reply.text):
            if piece:
                yield chunk(delta({"content": piece}))
    for position, call in enumerate(reply.tool_calls):
        opening: JSON = {
            "tool_calls": [
                {
                    "index": position,
                    "id": "call_" + call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ]
        }
        if position == 0 and not reply.text:
            opening = {"role": "assistant", "content": None, **opening, "refusal": None}
        yield chunk(delta(opening))
        for piece in chunks(call.arguments_json()):
            yield chunk(delta({"tool_calls": [{"index": position, "function": {"arguments": piece}}]}))
    yield chunk(delta({}, _chat_finish(reply)))
    if include_usage:
        yield chunk([], _chat_usage(reply))
    yield SSEEvent("[DONE]")


def _responses_items(reply: Reply, *, done: bool) -> list[JSON]:
    status = "completed" if done else "in_progress"
    items: list[JSON] = []
    if reply.text:
        content = [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}] if done else []
        items.append(
            {
                "id": "msg_" + reply.reply_id,
                "type": "message",
                "status": status,
                "role": "assistant",
                "content": content,
            }
        )
    for call in reply.tool_calls:
        items.append(
            {
                "id": "fc_" + call.call_id,
                "type": "function_call",
                "status": status,
                "arguments": call.arguments_json() if done else "",
                "call_id": "call_" + call.call_id,
                "name": call.name,
            }
        )
    return items


def _responses_body(reply: Reply, *, status: str) -> JSON:
    done = status == "completed"
    return {
        "id": "resp_" + reply.reply_id,
        "object": "response",
        "created_at": reply.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": reply.model,
        "output": _responses_items(reply, done=True) if done else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": (
            {
                "input_tokens": reply.usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": reply.usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": reply.usage.total,
            }
            if done
            else None
        ),
        "user": None,
        "metadata": {},
    }


def _responses_stream(reply: Reply) -> Iterator[SSEEvent]:
    sequence = 0

    def ev(data: JSON) -> SSEEvent:
        nonlocal sequence
        data = {**data, "sequence_number": sequence}
        sequence += 1
        return SSEEvent(json.dumps(data, ensure_ascii=False, separators=(",", ":")), event=data["type"])

    in_progress = _responses_body(reply, status="in_progress")
    yield ev({"type": "response.created", "response": in_progress})
    yield ev({"type": "response.in_progress", "response": in_progress})
    started = _responses_items(reply, done=False)
    finished = _responses_items(reply, done=True)
    for output_index, (item, final) in enumerate(zip(started, finished, strict=True)):
        yield ev({"type": "response.output_item.added", "output_index": output_index, "item": item})
        ids = {"item_id": item["id"], "output_index": output_index}
        if item["type"] == "message":
            empty_part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield ev({"type": "response.content_part.added", **ids, "content_index": 0, "part": empty_part})
            for piece in chunks(reply.text):
                yield ev(
                    {"type": "response.output_text.delta", **ids, "content_index": 0, "delta": piece, "logprobs": []}
                )
            yield ev(
                {"type": "response.output_text.done", **ids, "content_index": 0, "text": reply.text, "logprobs": []}
            )
            yield ev({"type": "response.content_part.done", **ids, "content_index": 0, "part": final["content"][0]})
        else:
            for piece in chunks(final["arguments"]):
                yield ev({"type": "response.function_call_arguments.delta", **ids, "delta": piece})
            yield ev({"type": "response.function_call_arguments.done", **ids, "arguments": final["arguments"]})
        yield ev({"type": "response.output_item.done", "output_index": output_index, "item": final})
    yield ev({"type": "response.completed", "response": _responses_body(reply, status="completed")})


def _gemini_usage_metadata(reply: Reply, *, done: bool) -> JSON:
    # Mid-stream chunks restate the prompt count only; the finishing chunk has the whole count.
    meta: JSON = {"promptTokenCount": reply.usage.input_tokens}
    if done:
        meta["candidatesTokenCount"] = reply.usage.output_tokens
    meta["totalTokenCount"] = reply.usage.total if done else reply.usage.input_tokens
    meta["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": reply.usage.input_tokens}]
    return meta


def _gemini_call_part(call: ToolCall) -> JSON:
    # The Gemini API returns no call id (the client makes its own); Gemini ends a turn that
    # calls a function with finishReason STOP, like any other.
    return {"functionCall": {"name": call.name, "args": call.arguments}}


def _gemini_chunk(reply: Reply, parts: list[JSON], *, done: bool) -> JSON:
    candidate: JSON = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if done:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": _gemini_usage_metadata(reply, done=done),
        "modelVersion": reply.model,
        "responseId": reply.reply_id,
    }


def _gemini_body(reply: Reply) -> JSON:
    parts: list[JSON] = [{"text": reply.text}] if reply.text else []
    parts += [_gemini_call_part(call) for call in reply.tool_calls]
    return _gemini_chunk(reply, parts or [{"text": ""}], done=True)


def _gemini_stream(reply: Reply) -> Iterator[SSEEvent]:
    """Text in pieces, then each function call whole in its own chunk (Gemini does not stream a
    call's arguments); the last chunk carries finishReason and the final usage."""
    pieces: list[list[JSON]] = [[{"text": piece}] for piece in chunks(reply.text)] if reply.text else []
    pieces += [[_gemini_call_part(call)] for call in reply.tool_calls]
    pieces = pieces or [[{"text": ""}]]
    for n, parts in enumerate(pieces):
        chunk = _gemini_chunk(reply, parts, done=n == len(pieces) - 1)
        yield SSEEvent(json.dumps(chunk, ensure_ascii=False, separators=(",", ":")))


# --------------------------------------------------------------------------------------------
# Models listing


def gemini_model(model_id: str) -> JSON:
    """One ``Model`` resource of Gemini's models.get / models.list."""
    bare = model_id.removeprefix("models/")
    return {
        "name": "models/" + bare,
        "baseModelId": bare,
        "version": "001",
        "displayName": bare,
        "supportedGenerationMethods": [GEMINI_GENERATE, GEMINI_COUNT_TOKENS],
    }


def models_body(api: ApiKind, model_ids: list[str], created: int = 0) -> JSON:
    if api is ApiKind.GEMINI:
        return {"models": [gemini_model(m) for m in model_ids]}
    if api is ApiKind.ANTHROPIC_MESSAGES:
        data = [{"type": "model", "id": m, "display_name": m, "created_at": "1970-01-01T00:00:00Z"} for m in model_ids]
        return {
            "data": data,
            "has_more": False,
            "first_id": model_ids[0] if model_ids else None,
            "last_id": model_ids[-1] if model_ids else None,
        }
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "created": created, "owned_by": "overeager"} for m in model_ids],
    }


def tool_names(api: ApiKind, body: Any) -> list[str]:
    """Names of the function tools a request declares (for matching a scripted call's case)."""
    names: list[str] = []
    if not isinstance(body, dict):
        return names
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if api is ApiKind.GEMINI:
            # A Gemini Tool holds a list of functionDeclarations (and built-ins like googleSearch).
            declarations = tool.get("functionDeclarations") or []
            names += [d["name"] for d in declarations if isinstance(d, dict) and isinstance(d.get("name"), str)]
            continue
        if api is ApiKind.OPENAI_CHAT:
            name = (tool.get("function") or {}).get("name")
        else:
            name = tool.get("name")
        if isinstance(name, str):
            names.append(name)
    return names
