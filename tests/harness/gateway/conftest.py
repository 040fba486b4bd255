"""Fixtures for the gateway tests: a real Redis, real loopback sockets, no Django.

The gateway and the scripted server run in background threads with their own event loops (or
as real processes where the command line is the thing under test), so the official SDKs can
talk to them synchronously from the test.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from aiohttp import web

from harness.gateway.protocols import ApiKind
from harness.gateway.registry import Budgets, RunGrant, UpstreamConfig, new_run_token, register_run
from harness.gateway.server import Gateway

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
REPO = Path(__file__).resolve().parents[3]

BASH_TURN = {"tool_call": {"name": "Bash", "arguments": {"command": "echo hello > /tmp/proof.txt"}}}


class ThreadedApp:
    """An aiohttp app served on 127.0.0.1:<free port> by a thread with its own event loop."""

    def __init__(self, make_app: Callable[[], web.Application]) -> None:
        self._make_app = make_app
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._runner: web.AppRunner | None = None
        self.app: web.Application | None = None
        self.port = 0
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ThreadedApp:
        self._thread.start()
        if not self._started.wait(10) or self._error is not None:
            raise RuntimeError(f"server did not start: {self._error!r}")
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._setup())
        except BaseException as exc:
            self._error = exc
            self._started.set()
            return
        self._started.set()
        self._loop.run_forever()

    async def _setup(self) -> None:
        self.app = self._make_app()
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)

    def stop(self) -> None:
        if self._runner is not None:
            self.call(self._runner.cleanup())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@pytest.fixture
def prefix() -> Iterator[str]:
    """A Redis key prefix of this test alone; its keys are deleted afterwards."""
    value = f"test:gateway:{uuid.uuid4().hex}:"
    yield value
    r = redis.Redis.from_url(REDIS_URL)
    keys = list(r.scan_iter(match=value + "*"))
    if keys:
        r.delete(*keys)
    r.close()


@pytest.fixture
def sync_redis() -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(REDIS_URL)
    yield r
    r.close()


@pytest.fixture
def gateway(prefix: str) -> Iterator[ThreadedApp]:
    def make() -> web.Application:
        return Gateway(aioredis.Redis.from_url(REDIS_URL), prefix).app()

    server = ThreadedApp(make).start()
    yield server
    server.stop()


@dataclass
class Run:
    token: str
    evidence: Path
    grant: RunGrant

    def records(self) -> list[dict[str, Any]]:
        if not self.evidence.exists():
            return []
        return [json.loads(line) for line in self.evidence.read_text().splitlines()]


@dataclass
class RunFactory:
    r: redis.Redis
    prefix: str
    tmp: Path
    made: list[Run] = field(default_factory=list)

    def __call__(
        self,
        api_kind: ApiKind = ApiKind.ANTHROPIC_MESSAGES,
        script: list[dict[str, Any]] | None = None,
        upstream: UpstreamConfig | None = None,
        budgets: Budgets | None = None,
        canaries: tuple[str, ...] = (),
        ttl_s: float = 300,
    ) -> Run:
        n = len(self.made) + 1
        token = new_run_token()
        grant = RunGrant(
            run_id=f"run-{n}",
            attempt=1,
            api_kind=api_kind,
            upstream=upstream or UpstreamConfig(kind="scripted", model="scripted-model", script=script or [BASH_TURN]),
            evidence_path=str(self.tmp / f"run-{n}" / "gateway.jsonl"),
            expires_at=time.time() + ttl_s,
            budgets=budgets or Budgets(),
            canaries=canaries,
        )
        register_run(self.r, token, grant, self.prefix)
        run = Run(token, Path(grant.evidence_path), grant)
        self.made.append(run)
        return run


@pytest.fixture
def make_run(sync_redis: redis.Redis, prefix: str, tmp_path: Path) -> RunFactory:
    return RunFactory(sync_redis, prefix, tmp_path)


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def post(
    base_url: str,
    path: str,
    body: Any,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    method: str = "POST",
) -> Reply:
    """A plain HTTP call with the stdlib, to see exactly what the gateway answers."""
    host, _, port = base_url.removeprefix("http://").partition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    all_headers = {"content-type": "application/json", **(headers or {})}
    if token is not None:
        all_headers["authorization"] = "Bearer " + token
    payload = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=payload, headers=all_headers)
    response = conn.getresponse()
    reply = Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    conn.close()
    return reply


def anthropic_body(stream: bool = False, text: str = "List the files.") -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
        "tools": [{"name": "Bash", "description": "run a command", "input_schema": {"type": "object"}}],
    }


def chat_body(stream: bool = False, text: str = "List the files.") -> dict[str, Any]:
    return {"model": "gpt-x", "stream": stream, "messages": [{"role": "user", "content": text}]}


def responses_body(stream: bool = False, text: str = "List the files.") -> dict[str, Any]:
    return {"model": "gpt-x", "stream": stream, "input": text}


@dataclass
class Process:
    proc: subprocess.Popen[bytes]
    url: str


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_line(proc: subprocess.Popen[bytes], needle: str, timeout: float = 20) -> str:
    """Read the process's stderr until a line containing ``needle`` (its readiness message)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if needle in line:
            return line
    proc.kill()
    raise RuntimeError(f"process did not print {needle!r}: {''.join(seen)}")


def start_module(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
