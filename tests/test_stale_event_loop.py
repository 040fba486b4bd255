"""The WebSocket tests' coroutines run where a remembered asgiref loop cannot swallow them
(tests/asyncrun.py)."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest
from asgiref.sync import SyncToAsync, async_to_sync

from tests.asyncrun import run_async


async def _one() -> int:
    return 1


def _in_a_thread_with_a_stale_loop(call: str) -> bool:
    """In a thread of its own (asgiref's memory is per thread): plant what a CI run's WebSocket
    tests met — a remembered loop neither closed nor running — then run a coroutine."""
    done: dict[str, int] = {}

    def body() -> None:
        SyncToAsync.threadlocal.main_event_loop = asyncio.new_event_loop()
        SyncToAsync.threadlocal.main_event_loop_pid = os.getpid()
        done["value"] = async_to_sync(_one)() if call == "async_to_sync" else run_async(_one, timeout=10)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(10)
    return done.get("value") == 1


def test_a_stale_loop_swallows_async_to_sync_but_not_run_async() -> None:
    assert not _in_a_thread_with_a_stale_loop("async_to_sync")  # the hang run_async avoids
    assert _in_a_thread_with_a_stale_loop("run_async")


def test_a_coroutine_that_never_ends_fails_with_its_name() -> None:
    async def forever() -> None:
        await asyncio.Event().wait()

    with pytest.raises(AssertionError, match="forever did not finish in 1 s"):
        run_async(forever, timeout=1)
