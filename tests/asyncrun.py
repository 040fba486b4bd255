"""Run a test's coroutine on an event loop of its own, in a thread of its own.

``async_to_sync`` in a test's thread reuses the event loop asgiref remembers for that thread
(``SyncToAsync.threadlocal.main_event_loop``, set whenever a thread-sensitive sync function ran
there).  A CI run hung twice, in both workers, inside ``async_to_sync`` of the WebSocket tests:
asgiref had handed the coroutine to a remembered loop that was neither closed nor running, so
nothing ever ran it, and pytest-timeout's alarm did not break the wait.  ``asyncio.run`` in a
fresh thread has no such memory, and the join's timeout turns any hang into a failure that names
the coroutine.  The tests that use it are transactional, so the thread's database connection sees
what the test wrote.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_async(fn: Callable[..., Awaitable[T]], *args: Any, timeout: float = 120.0) -> T:
    result: list[T] = []
    error: list[BaseException] = []

    async def main() -> T:
        return await fn(*args)

    def target() -> None:
        from django.db import connections

        try:
            result.append(asyncio.run(main()))
        except BaseException as exc:  # re-raised in the test's thread
            error.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=target, name=f"test-loop-{getattr(fn, '__name__', 'coroutine')}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise AssertionError(f"{getattr(fn, '__name__', fn)!s} did not finish in {timeout:.0f} s")
    if error:
        raise error[0]
    return result[0]
