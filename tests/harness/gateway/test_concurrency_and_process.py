"""Many runs at once, and the gateway as the process the worker starts (TCP and Unix socket)."""

from __future__ import annotations

import http.client
import json
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import redis

from harness.gateway.protocols import ApiKind, parse_sse
from harness.gateway.registry import Budgets, run_usage
from tests.harness.gateway.conftest import (
    REDIS_URL,
    RunFactory,
    ThreadedApp,
    anthropic_body,
    chat_body,
    free_port,
    post,
    responses_body,
    start_module,
    stop_process,
    wait_for_line,
)

KINDS = [
    (ApiKind.ANTHROPIC_MESSAGES, "/v1/messages", anthropic_body),
    (ApiKind.OPENAI_CHAT, "/v1/chat/completions", chat_body),
    (ApiKind.OPENAI_RESPONSES, "/v1/responses", responses_body),
]


def test_twenty_parallel_runs_each_get_their_own_evidence(gateway: ThreadedApp, make_run: RunFactory) -> None:
    plans = []
    for n in range(20):
        kind, path, body = KINDS[n % 3]
        run = make_run(kind, script=[{"text": f"answer for run {n}"}])
        plans.append((run, path, body(stream=n % 2 == 0, text=f"request of run {n}")))

    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(lambda plan: post(gateway.url, plan[1], plan[2], token=plan[0].token), plans))

    assert [r.status for r in replies] == [200] * 20
    for n, (run, _, _) in enumerate(plans):
        [record] = run.records()
        assert record["run_id"] == run.grant.run_id
        assert f"request of run {n}" in json.dumps(record["request"])
        assert f"answer for run {n}" in json.dumps(record["response"])


def test_parallel_requests_of_one_run_never_overspend_its_request_budget(
    gateway: ThreadedApp, make_run: RunFactory, sync_redis: redis.Redis, prefix: str
) -> None:
    run = make_run(ApiKind.OPENAI_CHAT, budgets=Budgets(max_requests=7))

    with ThreadPoolExecutor(max_workers=20) as pool:
        statuses = list(
            pool.map(
                lambda _: post(gateway.url, "/v1/chat/completions", chat_body(), token=run.token).status, range(20)
            )
        )

    assert sorted(statuses) == [200] * 7 + [429] * 13
    records = run.records()
    assert len(records) == 20 and sorted(r["seq"] for r in records) == list(range(1, 21))
    assert run_usage(sync_redis, run.token, prefix).requests == 7


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=30)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def test_the_gateway_process_serves_tcp_and_a_unix_socket(make_run: RunFactory, prefix: str, tmp_path: Path) -> None:
    run = make_run(ApiKind.ANTHROPIC_MESSAGES)
    sock = str(tmp_path / "gw.sock")
    port = free_port()
    proc = start_module(
        "harness.gateway",
        "--listen",
        f"127.0.0.1:{port}",
        "--unix",
        sock,
        "--prefix",
        prefix,
        "--redis-url",
        REDIS_URL,
    )
    try:
        wait_for_line(proc, "gateway listening")
        socket_mode = Path(sock).stat().st_mode & 0o777
        over_tcp = post(f"http://127.0.0.1:{port}", "/v1/messages", anthropic_body(stream=True), token=run.token)
        conn = UnixHTTPConnection(sock)
        conn.request(
            "POST",
            "/v1/messages?beta=true",
            body=json.dumps(anthropic_body()),
            headers={"x-api-key": run.token, "content-type": "application/json"},
        )
        over_unix = conn.getresponse()
        unix_body = json.loads(over_unix.read())
        conn.close()
        health = post(f"http://127.0.0.1:{port}", "/healthz", None, method="GET")
    finally:
        stop_process(proc)

    assert over_tcp.status == 200
    assert parse_sse(over_tcp.body)[0].event == "message_start"
    assert over_unix.status == 200 and unix_body["stop_reason"] == "end_turn"  # turn 2: script exhausted
    assert health.status == 200
    assert socket_mode == 0o666  # the sandbox's agent user is another uid
    assert [r["path"] for r in run.records()] == ["/v1/messages", "/v1/messages?beta=true"]
