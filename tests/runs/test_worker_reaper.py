"""The run worker sweeps leftovers periodically, not only when it starts (issue 17 item 8)."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

import pytest
import redis
from rq.worker import SimpleWorker

from harness.sandbox import reaper
from runs import worker as worker_mod


def test_the_worker_starts_the_periodic_reaper_and_stops_it_on_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[threading.Event] = []

    def fake_start_periodic(interval_s: float = 300.0, stop: threading.Event | None = None) -> None:
        assert stop is not None and interval_s > 0
        started.append(stop)

    monkeypatch.setattr(reaper, "reap", lambda *a, **k: reaper.ReapReport())
    monkeypatch.setattr(reaper, "start_periodic", fake_start_periodic)
    monkeypatch.setattr(worker_mod, "gateway_handle", lambda: None)
    monkeypatch.setattr(worker_mod, "stop_gateway", lambda: None)
    monkeypatch.setattr(worker_mod, "watchdog", lambda interval: contextlib.nullcontext())
    monkeypatch.setattr(SimpleWorker, "work", lambda self, *a, **k: True)
    conn = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    w: Any = worker_mod.OvereagerWorker(["test-worker-reaper"], connection=conn)
    assert w.work(burst=True) is True
    assert len(started) == 1 and started[0].is_set()
