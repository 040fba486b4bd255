"""The project's ASGI application with a ``Server-Timing: app;dur=<ms>`` header on every response.

Used by bench/dashboard_load.py only. Django computes a (non-streaming) response completely
before it sends ``http.response.start``, so the time from the request reaching the application
to that message is the server time of the request, thread-pool waits included.
"""

from __future__ import annotations

import time
from typing import Any

from overeager.asgi import application as inner


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        await inner(scope, receive, send)
        return
    started = time.perf_counter()

    async def timed_send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            ms = (time.perf_counter() - started) * 1000
            message = {
                **message,
                "headers": [*message.get("headers", []), (b"server-timing", f"app;dur={ms:.2f}".encode())],
            }
        await send(message)

    await inner(scope, receive, timed_send)
