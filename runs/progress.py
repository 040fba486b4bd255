"""The one helper workers use to publish live progress to browsers.

Every message goes to a Channels group with a per-group sequence number taken from Redis
(``INCR``), so a client that sees a gap knows it missed messages and re-syncs over HTTP.
"""

from __future__ import annotations

import functools
from typing import Any

import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

PROGRESS_GROUP = "progress"


def _redis() -> redis.Redis:
    return _client(settings.REDIS_URL)


@functools.lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    # One client (and connection pool) per URL and process: every dashboard data request reads a
    # sequence number, and a fresh client per call cost a TCP connect and ~0.5 ms of setup.
    # redis-py pools are thread-safe and reset themselves in a forked child (rq work horses).
    return redis.Redis.from_url(url)


def group_name(topic: str) -> str:
    # Channels group names allow only ASCII alphanumerics, hyphens, underscores and periods.
    return f"{PROGRESS_GROUP}.{topic}"


def publish(topic: str, payload: dict[str, Any]) -> int:
    """Send ``payload`` to every socket subscribed to ``topic``; return its sequence number."""
    seq = int(_redis().incr(f"{settings.CACHES['default']['KEY_PREFIX']}:seq:{topic}"))
    layer = get_channel_layer()
    assert layer is not None, "CHANNEL_LAYERS is not configured"
    async_to_sync(layer.group_send)(
        group_name(topic), {"type": "progress.message", "topic": topic, "seq": seq, "data": payload}
    )
    return seq


def current_seq(topic: str) -> int:
    value = _redis().get(f"{settings.CACHES['default']['KEY_PREFIX']}:seq:{topic}")
    return int(value) if value is not None else 0
