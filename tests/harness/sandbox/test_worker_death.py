"""Issue 17 item 8: what a worker killed with SIGKILL leaves behind, without waiting for a restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import docker
import pytest

from harness.sandbox import reaper
from harness.sandbox.base import LABEL_MANAGED, LABEL_RUN, process_start_ticks
from tests.harness.sandbox.conftest import new_run_id
from tests.harness.sandbox.helpers import host_processes_with

REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("sigkill_worker.py")


def _running(run_id: str) -> list[bool]:
    api = docker.from_env().api
    found = api.containers(all=True, filters={"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN}={run_id}"]})
    return [c["State"] == "running" for c in found]


def test_a_sigkilled_workers_container_stops_without_any_reaper() -> None:
    run_id = new_run_id("worker-death")
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "docker", run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        while (line := proc.stdout.readline()) and line.strip() != "running":
            pass
        time.sleep(0.5)  # the agent's `sleep 60` is running now
        assert _running(run_id) == [True]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        started = time.monotonic()
        while _running(run_id) != [False]:
            assert time.monotonic() - started < 15, "the container outlived its worker"
            time.sleep(0.2)
        print(f"container stopped {time.monotonic() - started:.2f}s after its worker's SIGKILL")
        assert host_processes_with(f": {run_id}") == []
    finally:
        proc.kill()
        reaper.reap(run_prefix=run_id)
    assert _running(run_id) == []


def _dead_pid() -> tuple[int, int]:
    child = subprocess.Popen(["sleep", "5"])
    ticks = process_start_ticks(child.pid)
    assert ticks is not None
    child.kill()
    child.wait()
    return child.pid, ticks


def test_gateway_socket_dirs_of_dead_owners_are_swept_and_live_ones_kept() -> None:
    parent = tempfile.gettempdir()
    pid, ticks = _dead_pid()
    dead = tempfile.mkdtemp(prefix=f"{reaper.GATEWAY_DIR_PREFIX}{pid}-{ticks}-", dir=parent)
    Path(dead, "gateway.sock").write_text("")  # a stale name, no listener
    old_style = tempfile.mkdtemp(prefix=reaper.GATEWAY_DIR_PREFIX, dir=parent)  # older code: no owner
    live = tempfile.mkdtemp(prefix=reaper.gateway_dir_prefix(), dir=parent)
    young = tempfile.mkdtemp(prefix=f"{reaper.GATEWAY_DIR_PREFIX}{pid}-{ticks}-", dir=parent)
    try:
        past = time.time() - 2 * reaper.GATEWAY_DIR_GRACE_S
        for d in (dead, old_style, live):
            os.utime(d, (past, past))
        report = reaper.reap(docker=False, bwrap=False)
        assert not os.path.exists(dead) and not os.path.exists(old_style)
        assert os.path.isdir(live) and os.path.isdir(young)  # owner alive; too young to judge
        assert {os.path.basename(dead), os.path.basename(old_style)} <= set(report.removed_gateway_dirs)
    finally:
        for d in (dead, old_style, live, young):
            if os.path.isdir(d):
                for f in Path(d).iterdir():
                    f.unlink()
                os.rmdir(d)


def test_the_gateway_names_its_socket_dir_after_its_owner() -> None:
    from harness.agents import runner

    assert "reaper.gateway_dir_prefix()" in Path(runner.__file__).read_text()
    assert reaper._gateway_owner_alive(reaper.gateway_dir_prefix() + "abcdefgh")


def test_the_reaper_runs_periodically_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []

    def fake_reap() -> reaper.ReapReport:
        calls.append(time.monotonic())
        return reaper.ReapReport()

    monkeypatch.setattr(reaper, "reap", fake_reap)
    stop = threading.Event()
    thread = reaper.start_periodic(0.05, stop=stop)
    time.sleep(0.5)
    stop.set()
    thread.join(2)
    assert len(calls) >= 3 and not thread.is_alive()
