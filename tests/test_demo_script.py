"""``make demo``'s first minutes (scripts/demo.sh): the dashboard answers before the pool is built.

The real script, from an empty var directory and database (the venv is the one installed), with
a private Redis database and port; it is stopped once the pool builder has started behind the
dashboard — the build itself is tested in tests/pool/test_building.py.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# From a fresh clone the dashboard must answer within a minute of the install; on a loaded
# two-core CI machine migrate + demo users take longer than on a quiet one, hence the margin.
DASHBOARD_WITHIN_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _redis_url() -> str:
    # A database of its own: the demo's workers listen on the "default" queue.
    if os.environ.get("DEMO_TEST_REDIS_URL"):
        return os.environ["DEMO_TEST_REDIS_URL"]
    parts = urllib.parse.urlsplit(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    return urllib.parse.urlunsplit(parts._replace(path="/15"))


def _pool_statuses(db: Path) -> list[str]:
    with sqlite3.connect(db, timeout=30) as conn:
        return [row[0] for row in conn.execute("SELECT status FROM pool_poolversion")]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - http://127.0.0.1 only
            return bool(response.status == 200)
    except OSError:
        return False


def test_the_dashboard_answers_before_the_pool_is_built_and_the_build_goes_on_behind_it(tmp_path: Path) -> None:
    var = tmp_path / "var"
    db = var / "demo.sqlite3"
    port = _free_port()
    env = {
        **os.environ,
        "OVEREAGER_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{db}",
        "REDIS_URL": _redis_url(),
        "CACHE_PREFIX": f"demo-test-{port}",
        "DEMO_PORT": str(port),
        "DEMO_WORKERS": "1",
    }
    log = tmp_path / "demo.log"
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", "scripts/demo.sh"], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        answered_after = None
        while time.monotonic() - started < 600:
            assert proc.poll() is None, f"demo.sh exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
            if _answers(f"http://127.0.0.1:{port}/healthz"):
                answered_after = time.monotonic() - started
                break
            time.sleep(0.5)
        assert answered_after is not None, log.read_text()[-3000:]
        # Before: the script built the whole pool first (15-34 minutes), then started the dashboard.
        assert "complete" not in _pool_statuses(db), "the dashboard answered only once the pool was built"
        assert answered_after < DASHBOARD_WITHIN_S, f"the dashboard took {answered_after:.0f}s"
        assert _answers(f"http://127.0.0.1:{port}/accounts/login/")
        # ... and the pool is built behind it (the pools page shows it live: tests/pool/test_live.py).
        while not _pool_statuses(db):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() - started < 600, log.read_text()[-3000:]
            time.sleep(1)
        assert _pool_statuses(db) == ["building"]
        assert _answers(f"http://127.0.0.1:{port}/healthz")
        print(f"dashboard answered {answered_after:.1f}s after make demo started")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
