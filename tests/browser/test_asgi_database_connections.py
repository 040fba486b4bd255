"""The ASGI web process does not leak database connections under concurrent requests.

Under ASGI every request's synchronous code runs on a fresh thread, and a persistent connection
(CONN_MAX_AGE > 0) belongs to its thread: before overeager/asgi.py turned persistence off, 200
requests at 20 concurrency left 38 idle connections behind, and the dashboard benchmark exhausted
PostgreSQL's 100.  These tests hammer a real daphne and count the backends PostgreSQL holds.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from tests.browser.conftest import ARTIFACTS, live_database, start_server, stop_server

pytestmark = pytest.mark.django_db(transaction=True)


def _backends() -> int:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return int(cur.fetchone()[0])


def _hammer(url: str, cookie: str, clients: int = 20, rounds: int = 10) -> list[int]:
    import aiohttp

    statuses: list[int] = []

    async def main() -> None:
        async with aiohttp.ClientSession(headers={"Cookie": cookie}) as session:

            async def client() -> None:
                for _ in range(rounds):
                    for path in ("/healthz", "/campaigns/", "/matrices/"):
                        async with session.get(url + path, allow_redirects=False) as response:
                            await response.read()
                            statuses.append(response.status)

            await asyncio.gather(*(client() for _ in range(clients)))

    asyncio.run(main())
    return statuses


def _cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def _settle(limit: int, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while (n := _backends()) > limit and time.monotonic() < deadline:
        time.sleep(0.2)
    return n


def test_concurrent_requests_leave_no_connections_behind(server, role_users):
    before = _backends()
    statuses = _hammer(server.url, _cookie(role_users["viewer"]))
    assert set(statuses) == {200} and len(statuses) == 600
    assert _settle(before + 1) <= before + 1


def test_a_pooled_web_process_holds_at_most_its_pool(server, role_users, django_db_blocker, tmp_path):
    before = _backends()
    pooled = start_server(
        live_database(django_db_blocker),
        server.prefix,
        server.evidence,
        ARTIFACTS / f"daphne-pool-{uuid.uuid4().hex[:6]}.log",
        DB_POOL_MAX_SIZE="3",
    )
    try:
        statuses = _hammer(pooled.url, _cookie(role_users["viewer"]))
        assert set(statuses) == {200}
        assert before < _backends() <= before + 3  # the pool keeps its connections, and no more
    finally:
        stop_server(pooled.proc)
    assert _settle(before) <= before
