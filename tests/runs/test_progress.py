"""The progress socket over the real Redis channel layer: auth, origin, delivery with sequence."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from overeager.asgi import application
from runs.progress import current_seq, publish
from tests.asyncrun import run_async

pytestmark = pytest.mark.django_db(transaction=True)


def _headers(user=None, origin: str = "http://127.0.0.1:8000") -> list[tuple[bytes, bytes]]:
    headers = [(b"origin", origin.encode()), (b"host", b"127.0.0.1:8000")]
    if user is not None:
        client = Client()
        client.force_login(user)
        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        headers.append((b"cookie", cookie.encode()))
    return headers


async def _connect(headers, topic: str = "test-topic"):
    comm = WebsocketCommunicator(application, f"/ws/progress/{topic}/", headers=headers)
    connected, code = await comm.connect(timeout=5)
    return comm, connected, code


def test_anonymous_sockets_are_refused(role_users):
    async def scenario():
        comm, connected, code = await _connect(_headers())
        await comm.disconnect()
        return connected, code

    connected, code = run_async(scenario)
    assert not connected and code == 4401


def test_users_without_a_role_are_refused(role_users):
    headers = _headers(role_users["norole"])

    async def scenario():
        comm, connected, code = await _connect(headers)
        await comm.disconnect()
        return connected, code

    connected, code = run_async(scenario)
    assert not connected and code == 4403


def test_cross_origin_sockets_are_refused(role_users):
    headers = _headers(role_users["viewer"], origin="http://evil.example")

    async def scenario():
        comm, connected, _ = await _connect(headers)
        await comm.disconnect()
        return connected

    assert run_async(scenario) is False


def test_a_viewer_receives_published_progress_in_order(role_users):
    topic = "campaign-test-1"
    headers = _headers(role_users["viewer"])

    async def scenario():
        comm, connected, _ = await _connect(headers, topic)
        assert connected
        from asgiref.sync import sync_to_async

        first = await sync_to_async(publish)(topic, {"done": 1})
        second = await sync_to_async(publish)(topic, {"done": 2})
        a = await comm.receive_json_from(timeout=5)
        b = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return first, second, a, b

    first, second, a, b = run_async(scenario)
    assert second == first + 1
    assert (a["seq"], a["data"]) == (first, {"done": 1})
    assert (b["seq"], b["data"]) == (second, {"done": 2})
    assert current_seq(topic) == second
