"""The progress socket's origin rule and the live-update protocol, over the real Redis layer."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.urls import reverse

from overeager.asgi import application
from overeager.origin import origin_allowed
from runs import stats
from tests import factories
from tests.asyncrun import run_async

HOSTS = ["127.0.0.1", "localhost"]


@pytest.mark.parametrize(
    ("origin", "host", "ok"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000", True),
        ("http://localhost:8000", "localhost:8000", True),
        ("https://localhost", "localhost:443", True),
        ("http://127.0.0.1:9000", "127.0.0.1:8000", False),  # another local port is another origin
        ("http://evil.example", "127.0.0.1:8000", False),
        ("http://evil.example:8000", "evil.example:8000", False),  # host not allowed (DNS rebinding)
        ("null", "127.0.0.1:8000", False),
        ("", "127.0.0.1:8000", False),
        ("file:///tmp/x.html", "127.0.0.1:8000", False),
    ],
)
def test_only_the_sites_own_origin_may_open_a_socket(origin, host, ok):
    assert origin_allowed(origin, host, HOSTS) is ok


def test_csrf_trusted_origins_may_open_a_socket():
    assert origin_allowed("https://dash.example.org", "10.0.0.5:8000", HOSTS, ["https://dash.example.org"])


def _headers(user, origin: str, host: str = "127.0.0.1:8000"):
    client = Client()
    client.force_login(user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    headers = [(b"host", host.encode()), (b"cookie", cookie.encode())]
    if origin:
        headers.append((b"origin", origin.encode()))
    return headers


def _connects(headers, topic: str = "campaign-1") -> bool:
    async def scenario() -> bool:
        comm = WebsocketCommunicator(application, f"/ws/progress/{topic}/", headers=headers)
        connected, _ = await comm.connect(timeout=5)
        await comm.disconnect()
        return bool(connected)

    return run_async(scenario)


@pytest.mark.django_db(transaction=True)
def test_a_viewers_socket_from_another_port_or_without_origin_is_refused(role_users):
    viewer = role_users["viewer"]
    assert _connects(_headers(viewer, "http://127.0.0.1:8000"))
    assert not _connects(_headers(viewer, "http://127.0.0.1:8001"))
    assert not _connects(_headers(viewer, ""))


@pytest.mark.django_db(transaction=True)
def test_a_finished_run_is_announced_only_after_the_data_includes_it(role_users, axes):
    campaign = factories.campaign()
    run = factories.queued_run(campaign, "destructive-delete", "silent")
    client = Client()
    client.force_login(role_users["viewer"])
    url = reverse("campaign-data", args=[campaign.pk])
    before = client.get(url).json()  # warms the cache at the old generation
    i = before["heatmap"]["y"].index("destructive-delete")
    j = before["heatmap"]["x"].index("silent")
    assert before["heatmap"]["customdata"][i][j][:2] == [0, 0]
    headers = _headers(role_users["viewer"], "http://127.0.0.1:8000")

    async def scenario():
        comm = WebsocketCommunicator(application, f"/ws/progress/{campaign.topic}/", headers=headers)
        connected, _ = await comm.connect(timeout=5)
        assert connected
        await sync_to_async(factories.finish)(run, True)
        message = await comm.receive_json_from(timeout=5)
        # What a page does on the message: refetch. The run must already be in the data.
        after = await sync_to_async(lambda: client.get(url).json())()
        await comm.disconnect()
        return message, after

    message, after = run_async(scenario)
    assert message["data"]["event"] == "run" and message["data"]["run"] == run.pk
    assert message["seq"] == before["seq"] + 1
    assert after["seq"] >= message["seq"]
    assert after["heatmap"]["customdata"][i][j][:2] == [1, 1]
    assert stats.generation("campaign", campaign.pk) == 1


@pytest.mark.django_db(transaction=True)
def test_an_idle_socket_outlives_the_channel_layers_poll(role_users):
    """channels_redis polls with BZPOPMIN for 5 s; redis-py 8 reads with a 5 s socket timeout by
    default, so unless the layer's timeout is longer, every idle consumer dies after ~5 s."""
    import asyncio

    from runs.progress import publish

    headers = _headers(role_users["viewer"], "http://127.0.0.1:8000")

    async def scenario():
        comm = WebsocketCommunicator(application, "/ws/progress/idle-topic/", headers=headers)
        connected, _ = await comm.connect(timeout=5)
        assert connected
        await asyncio.sleep(7)
        await sync_to_async(publish)("idle-topic", {"event": "after-idle"})
        message = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return message

    assert run_async(scenario)["data"] == {"event": "after-idle"}
