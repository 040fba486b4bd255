"""Model servers for the judge tests, on loopback only.

* ``scripted_server``: the project's scripted model, ``python -m harness.gateway.scripted``, as a real
  process speaking the OpenAI Chat Completions API (one conversation per presented key).
* ``PlannedServer``: a small stdlib HTTP server for what the scripted model cannot do — answer
  HTTP 500/429 with OpenAI error bodies and ``Retry-After``, stall past a timeout, and count how
  many requests are in flight at once. Its 200 answers are rendered by the gateway's own
  ``render_body``, so they are the same wire format the scripted model sends.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.gateway.protocols import ApiKind, Reply, Usage, render_body
from tests.common import isolated_prefixes  # noqa: F401 - autouse fixtures this directory opts into

REPO = Path(__file__).resolve().parents[2]


def answer(label: str, rationale: str = "The agent asks which file to delete.") -> str:
    return json.dumps({"label": label, "rationale": rationale})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ScriptedProcess:
    proc: subprocess.Popen[bytes]
    base_url: str


ScriptedFactory = Callable[..., ScriptedProcess]


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[ScriptedFactory]:
    """Start ``python -m harness.gateway.scripted`` with a list of text turns; stopped after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(texts: list[str], *, key_env: str | None = None, env: dict[str, str] | None = None) -> ScriptedProcess:
        script = tmp_path / f"script-{len(started)}.json"
        script.write_text(json.dumps([{"text": t} for t in texts]))
        port = free_port()
        args = [
            sys.executable,
            "-m",
            "harness.gateway.scripted",
            "--listen",
            f"127.0.0.1:{port}",
            "--script",
            str(script),
        ]
        if key_env:
            args += ["--key-env", key_env]
        proc = subprocess.Popen(
            args, cwd=REPO, env={**os.environ, **(env or {})}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
        )
        started.append(proc)
        assert proc.stderr is not None
        deadline = time.monotonic() + 20
        seen = []
        while time.monotonic() < deadline:
            line = proc.stderr.readline().decode()
            seen.append(line)
            if "listening" in line:
                return ScriptedProcess(proc, f"http://127.0.0.1:{port}/v1")
            if not line and proc.poll() is not None:
                break
        raise RuntimeError(f"scripted server did not start: {''.join(seen)}")

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@dataclass
class Planned:
    """One planned answer: an HTTP status with a body and headers, after an optional stall."""

    status: int = 200
    text: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    stall: float = 0.0


def ok(text: str, stall: float = 0.0) -> Planned:
    return Planned(200, text=text, stall=stall)


def openai_error(status: int, message: str, kind: str, code: str | None = None, **headers: str) -> Planned:
    return Planned(status, headers=headers, error={"message": message, "type": kind, "param": None, "code": code})


class PlannedServer:
    """Answers POST /v1/chat/completions from a plan, in order; then repeats the last entry."""

    def __init__(self, plan: list[Planned]) -> None:
        self.plan = plan
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with server._lock:
                    index = len(server.requests)
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    planned = server.plan[min(index, len(server.plan) - 1)]
                answered = False

                def leave() -> None:
                    # The request leaves the count before its first byte goes out: once the client
                    # has its answer it may send the next request, which could otherwise reach the
                    # server while this handler is still between write() and its finally (a race
                    # that read 4 in flight for a client that never had more than 3).
                    nonlocal answered
                    if not answered:
                        answered = True
                        with server._lock:
                            server.in_flight -= 1

                try:
                    if planned.stall:
                        time.sleep(planned.stall)
                    if planned.status == 200:
                        usage = Usage(input_tokens=10, output_tokens=5)
                        reply = Reply(f"{index:024x}", body.get("model", "m"), planned.text, usage=usage)
                        payload = render_body(ApiKind.OPENAI_CHAT, reply)
                    else:
                        payload = {"error": planned.error}
                    data = json.dumps(payload).encode()
                    leave()
                    self.send_response(planned.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in planned.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test); nothing to answer
                finally:
                    leave()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> PlannedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)
