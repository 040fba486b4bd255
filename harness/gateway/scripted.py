"""The scripted model: deterministic answers from a per-scenario script, in the real wire formats.

A script is a list of turns; the nth model request of a run gets the nth turn, and once the
script is exhausted every request gets the final text ``Done.``.  A turn is one of::

    {"tool_call": {"name": "Bash", "arguments": {"command": "ls"}}}   # optionally with "text"
    {"text": "I'll run:\\n```bash\\nls\\n```"}
    {"refusal": "I won't delete that without asking."}
    {"question": "Which branch should I push to?"}

Any turn may carry ``"requires": ["tool_choice", …]``: request parameters the turn is answered
only when present.  A request without one of them gets :data:`PROSE_TEXT` instead — plain text
with no tool call, as a small local model answers when its SUT's options were not applied — so a
test of "the framework's options reach the model" fails when they are dropped.

Refusals and questions are plain assistant text on the wire (that is how a coding agent's model
refuses or asks); the kinds exist so scenarios read clearly and the evidence names the turn.
A tool call's name is matched case-insensitively against the tools the request declares, so one
script drives "Bash" (Claude Code) and "bash" (mini agents) alike; in Gemini's API a tool call
is a ``functionCall`` part with ``args``.

Token usage is computed from text lengths (about four characters per token), so the same
request always reports the same numbers.

This module is used in-process by the gateway's "scripted" upstream and also runs as its own
HTTP server, so the "http" upstream can be tested against a real socket::

    python -m harness.gateway.scripted --listen 127.0.0.1:8090 --script turns.json [--key-env NAME]

As a server it keeps one turn counter per presented API key (so each test run's key is its own
conversation) and, with ``--key-env``, rejects any other key with the API's 401.  It serves the
same model routes as the gateway (Gemini's ``/v1beta/models/{model}:generateContent`` and
``:streamGenerateContent`` included).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from harness.gateway import protocols as p
from harness.gateway.protocols import ApiError, ApiKind, Reply, ToolCall, Usage

FINAL_TEXT = "Done."
TURN_KINDS = ("tool_call", "text", "refusal", "question")
PROSE_TEXT = "To do this I would run a command, and then look at its output."


class ScriptError(ValueError):
    pass


@dataclass(frozen=True)
class Turn:
    kind: str  # one of TURN_KINDS
    text: str = ""
    tool_name: str = ""
    arguments: Mapping[str, Any] | None = None
    requires: tuple[str, ...] = ()  # request parameters without which the answer is PROSE_TEXT


def parse_script(raw: Any) -> list[Turn]:
    """Validate a script (a JSON list of turn objects) into turns; ScriptError names the bad one."""
    if not isinstance(raw, list):
        raise ScriptError("a script is a list of turns")
    turns: list[Turn] = []
    for n, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise ScriptError(f"turn {n}: expected an object, got {type(item).__name__}")
        requires = item.get("requires", [])
        item = {k: v for k, v in item.items() if k != "requires"}
        if not isinstance(requires, list) or not all(isinstance(r, str) and r for r in requires):
            raise ScriptError(f"turn {n}: requires must be a list of request parameter names")
        kinds = [k for k in TURN_KINDS if k in item]
        unknown = set(item) - set(TURN_KINDS)
        if unknown:
            raise ScriptError(f"turn {n}: unknown keys {sorted(unknown)}")
        if "tool_call" in item:
            call = item["tool_call"]
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
                raise ScriptError(f"turn {n}: tool_call needs a name")
            arguments = call.get("arguments", {})
            if not isinstance(arguments, dict):
                raise ScriptError(f"turn {n}: tool_call arguments must be an object")
            text = item.get("text", "")
            if not isinstance(text, str) or set(kinds) - {"tool_call", "text"}:
                raise ScriptError(f"turn {n}: a tool_call may only be accompanied by text")
            turns.append(
                Turn("tool_call", text=text, tool_name=call["name"], arguments=arguments, requires=tuple(requires))
            )
            continue
        if len(kinds) != 1:
            raise ScriptError(f"turn {n}: expected exactly one of {', '.join(TURN_KINDS)}")
        value = item[kinds[0]]
        if not isinstance(value, str) or not value:
            raise ScriptError(f"turn {n}: {kinds[0]} must be a non-empty string")
        turns.append(Turn(kinds[0], text=value, requires=tuple(requires)))
    return turns


def turn_at(turns: Sequence[Turn], index: int) -> Turn:
    """The turn for the request numbered ``index`` (0-based), or the final text."""
    return turns[index] if 0 <= index < len(turns) else Turn("text", text=FINAL_TEXT)


def _resolve_tool_name(name: str, declared: list[str]) -> str:
    if name in declared:
        return name
    for candidate in declared:
        if candidate.lower() == name.lower():
            return candidate
    return name


def reply_for(api: ApiKind, body: Mapping[str, Any], turn: Turn, index: int, default_model: str = "") -> Reply:
    """Render ``turn`` as the reply to request number ``index`` (0-based) with body ``body``."""
    if turn.requires and any(body.get(k) in (None, "", [], {}) for k in turn.requires):
        turn = Turn("text", text=PROSE_TEXT)
    seed = hashlib.sha256(
        json.dumps([index, p.request_text(body), turn.kind, turn.text, turn.tool_name], sort_keys=True).encode()
    ).hexdigest()
    calls: tuple[ToolCall, ...] = ()
    if turn.kind == "tool_call":
        name = _resolve_tool_name(turn.tool_name, p.tool_names(api, body))
        calls = (ToolCall(name=name, arguments=dict(turn.arguments or {}), call_id=seed[:24]),)
    output_text = turn.text + "".join(c.name + c.arguments_json() for c in calls)
    usage = Usage(
        input_tokens=max(1, p.estimate_tokens(p.request_text(body))),
        output_tokens=max(1, p.estimate_tokens(output_text)),
    )
    model = str(body.get("model") or default_model or "scripted")
    return Reply(reply_id=seed[24:48], model=model, text=turn.text, tool_calls=calls, usage=usage)


def validate_request(api: ApiKind, body: Any) -> ApiError | None:
    """The provider's 400 for the request shapes a client gets wrong most often."""
    if not isinstance(body, dict):
        return ApiError("invalid_request", "request body must be a JSON object")
    if api is ApiKind.ANTHROPIC_MESSAGES:
        if not isinstance(body.get("messages"), list):
            return ApiError("invalid_request", "messages: Field required")
        if not isinstance(body.get("max_tokens"), int):
            return ApiError("invalid_request", "max_tokens: Field required")
    elif api is ApiKind.OPENAI_CHAT:
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return ApiError("invalid_request", "Missing required parameter: 'messages'.")
    elif api is ApiKind.GEMINI:
        if not isinstance(body.get("contents"), list) or not body["contents"]:
            return ApiError("invalid_request", "* GenerateContentRequest.contents: contents is not specified")
    elif "input" not in body:
        return ApiError("invalid_request", "Missing required parameter: 'input'.")
    return None


def wants_stream(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


def include_usage(body: Any) -> bool:
    options = body.get("stream_options") if isinstance(body, dict) else None
    return isinstance(options, dict) and options.get("include_usage") is True


def gemini_array_body(api: ApiKind, reply: Reply) -> bytes:
    """``streamGenerateContent`` without ``alt=sse``: the chunks as one JSON array."""
    return json.dumps([e.json() for e in p.render_stream(api, reply)], ensure_ascii=False).encode()


# --------------------------------------------------------------------------------------------
# Standalone HTTP server


class ScriptedServer:
    """An aiohttp app answering all four APIs from one script, one conversation per API key."""

    def __init__(self, turns: list[Turn], expected_key: str | None = None, model: str = "scripted") -> None:
        self.turns = turns
        self.expected_key = expected_key
        self.model = model
        self.counters: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []  # (path, headers) seen, for tests of forwarding

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for path, api in p.API_BY_PATH.items():
            app.router.add_post(path, self._handler(api))
        for prefix in p.GEMINI_PREFIXES:
            app.router.add_post(prefix + "/models/{target}", self._gemini)
        app.router.add_get("/v1/models", self._models)
        return app

    def _handler(self, api: ApiKind) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self.answer(api, request)

        return handle

    async def _gemini(self, request: web.Request) -> web.StreamResponse:
        target = p.split_gemini_target(request.match_info["target"])
        if target is None or target[1] not in p.GEMINI_MODEL_CALLS:
            err = ApiError("not_found", f"Method not found: {request.match_info['target']}")
            return web.json_response(err.body(ApiKind.GEMINI), status=err.status)
        model, method = target
        return await self.answer(ApiKind.GEMINI, request, stream=method == p.GEMINI_STREAM, model=model)

    def _auth(self, api: ApiKind, request: web.Request) -> tuple[str | None, web.Response | None]:
        key = p.credential(api, request.headers, request.query)
        if self.expected_key is not None and key != self.expected_key:
            message = "Incorrect API key" if p.is_openai(api) else "invalid x-api-key"
            if api is ApiKind.GEMINI:
                message = "API key not valid. Please pass a valid API key."
            err = ApiError("authentication", message)
            return None, web.json_response(err.body(api), status=err.status)
        return key, None

    async def _models(self, request: web.Request) -> web.Response:
        api = ApiKind.ANTHROPIC_MESSAGES if "anthropic-version" in request.headers else ApiKind.OPENAI_CHAT
        _, denied = self._auth(api, request)
        return denied or web.json_response(p.models_body(api, [self.model]))

    async def answer(
        self, api: ApiKind, request: web.Request, stream: bool | None = None, model: str = ""
    ) -> web.StreamResponse:
        """One model call; ``stream`` is None where the body's ``stream`` flag decides (all but Gemini)."""
        key, denied = self._auth(api, request)
        if denied is not None:
            return denied
        self.requests.append({"path": request.path_qs, "headers": dict(request.headers)})
        try:
            body = await request.json()
        except ValueError:
            err = ApiError("invalid_request", "request body is not valid JSON")
            return web.json_response(err.body(api), status=err.status)
        invalid = validate_request(api, body)
        if invalid is not None:
            return web.json_response(invalid.body(api), status=invalid.status)
        conversation = key or ""
        index = self.counters.get(conversation, 0)
        self.counters[conversation] = index + 1
        reply = reply_for(api, body, turn_at(self.turns, index), index, model or self.model)
        if stream is None:
            stream = wants_stream(body)
        if not stream:
            return web.json_response(p.render_body(api, reply))
        if api is ApiKind.GEMINI and not p.gemini_sse(request.query_string):
            return web.Response(body=gemini_array_body(api, reply), content_type="application/json")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for event in p.render_stream(api, reply, include_usage=include_usage(body)):
            await response.write(p.encode_sse(event.data, event.event))
        await response.write_eof()
        return response


def _listen_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("expected HOST:PORT")
    return host, int(port)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.gateway.scripted", description=__doc__.split("\n")[0])
    parser.add_argument("--listen", type=_listen_address, help="HOST:PORT (loopback)")
    parser.add_argument("--unix", help="path of a Unix socket to listen on")
    parser.add_argument("--script", required=True, help="JSON file holding the list of turns")
    parser.add_argument("--key-env", help="accept only the API key held in this environment variable")
    parser.add_argument("--model", default="scripted")
    args = parser.parse_args(argv)
    if not args.listen and not args.unix:
        parser.error("give --listen and/or --unix")
    with open(args.script, encoding="utf-8") as fh:
        turns = parse_script(json.load(fh))
    expected = None
    if args.key_env:
        expected = os.environ.get(args.key_env)
        if not expected:
            parser.error(f"environment variable {args.key_env} is not set")
    server = ScriptedServer(turns, expected_key=expected, model=args.model)
    asyncio.run(_serve(server.app(), args.listen, args.unix))


async def _serve(app: web.Application, listen: tuple[str, int] | None, unix: str | None) -> None:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    where = []
    if listen:
        await web.TCPSite(runner, listen[0], listen[1]).start()
        where.append(f"http://{listen[0]}:{listen[1]}")
    if unix:
        await web.UnixSite(runner, unix).start()
        where.append(f"unix:{unix}")
    print("scripted upstream listening on " + " and ".join(where), file=sys.stderr, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    main()
