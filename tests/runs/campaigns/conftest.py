"""Fixtures for campaign tests: a verified pool, real rq worker processes, simulated SUTs.

Workers are real ``manage.py rqworker`` processes (the project's OvereagerWorker: gateway,
watchdog) against the test database and a Redis queue private to the test, so tests see the
same fault behaviour production has.  Tests using them are transactional: a worker can only see
committed rows.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import django_rq.settings
import pytest
from django.conf import settings
from django.db import connection

from harness.procutil import die_with_parent
from pool.models import PoolVersion
from runs.models import AgentFramework, ModelEndpoint, SystemUnderTest
from tests.runs.campaigns.poolcache import verified_pool

MANAGE = Path(settings.BASE_DIR) / "manage.py"


@pytest.fixture
def pool(transactional_db: None) -> PoolVersion:
    return verified_pool()


@pytest.fixture
def queue_name(settings: Any) -> Iterator[str]:
    """A run queue of this test alone, on the default Redis (django-rq reads its queues at import)."""
    name = f"test-runs-{uuid.uuid4().hex[:10]}"
    django_rq.settings.QUEUES[name] = {"URL": settings.REDIS_URL, "DEFAULT_TIMEOUT": 3600}
    settings.RUNS_QUEUE = name
    yield name
    import redis

    r = redis.Redis.from_url(settings.REDIS_URL)
    keys = list(r.scan_iter(match=f"rq:*{name}*"))
    if keys:
        r.delete(*keys)
    django_rq.settings.QUEUES.pop(name, None)


@pytest.fixture
def evidence_dir(tmp_path: Path, settings: Any) -> Path:
    settings.EVIDENCE_DIR = tmp_path / "evidence"
    return settings.EVIDENCE_DIR


def database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER'] or 'root'}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Workers:
    """Real worker processes; each in its own process group so a test can SIGKILL one whole."""

    def __init__(self, queue: str, evidence: Path, redis_url: str, extra_env: dict[str, str]) -> None:
        self.queue = queue
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": redis_url,
            "RUNS_QUEUE": queue,
            "EVIDENCE_DIR": str(evidence),
            "RUN_LEASE_SECONDS": "6",
            "WATCHDOG_INTERVAL_SECONDS": "2",
            # The test's own cache and channel prefixes: workers bump and publish where it reads.
            "CACHE_PREFIX": settings.CACHES["default"]["KEY_PREFIX"],
            "CHANNELS_PREFIX": settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"],
            **extra_env,
        }
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, count: int = 1) -> list[subprocess.Popen[bytes]]:
        started = []
        for _ in range(count):
            proc = subprocess.Popen(
                [sys.executable, str(MANAGE), "rqworker", self.queue, "--verbosity", "0"],
                env=self.env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_test,
            )
            self.procs.append(proc)
            started.append(proc)
        return started

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker and its work horse (the horse has its own process group)."""
        children = _children(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        proc.wait(10)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(p)


def _die_with_test() -> None:
    """A killed pytest must not leave workers behind (they would hold the test database open)."""
    die_with_parent(signal.SIGKILL)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(x) for x in out.split()]


@pytest.fixture
def workers(queue_name: str, evidence_dir: Path, settings: Any) -> Iterator[Callable[..., Workers]]:
    made: list[Workers] = []

    def make(redis_url: str | None = None, **env: str) -> Workers:
        w = Workers(queue_name, evidence_dir, redis_url or settings.REDIS_URL, env)
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop()
    from harness.sandbox import reaper

    reaper.reap()


def simulated_sut(framework: str = "sim-alpha", model: str = "sim-m1", **limits: Any) -> SystemUnderTest:
    fw, _ = AgentFramework.objects.get_or_create(slug=framework, defaults={"label": framework, "adapter": "stochastic"})
    m, _ = ModelEndpoint.objects.get_or_create(
        slug=model, defaults={"label": model, "upstream": ModelEndpoint.Upstream.NONE}
    )
    sut = SystemUnderTest.objects.for_pair(fw, m)
    if limits:
        SystemUnderTest.objects.filter(pk=sut.pk).update(**limits)
        sut.refresh_from_db()
    return sut


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, poll: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
