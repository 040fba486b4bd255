"""A worker killed with SIGKILL mid-run leaves nothing behind once the reaper has run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.sandbox import reaper
from tests.harness.sandbox.conftest import new_run_id
from tests.harness.sandbox.helpers import (
    bwrap_state_dirs,
    foreign_mount,
    host_processes_with,
    labelled_containers,
    quota_mounts,
)

REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("sigkill_worker.py")
RUNS = 50
PARALLEL = 5


def _spawn(backend: str, run_id: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, str(WORKER), backend, run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )


@pytest.mark.slow
def test_sigkilled_workers_leave_no_sandbox_after_the_reaper(backend: str) -> None:
    prefix = new_run_id(f"sigkill-{backend}")
    # Only this test's sandboxes are its business: a quota mount another test (or a campaign
    # beside it) holds is not what the killed workers left behind.
    mounted_before = quota_mounts()
    rng = random.Random(20250520)
    phases = {"creating": 0, "running": 0}
    for batch in range(RUNS // PARALLEL):
        procs = [_spawn(backend, f"{prefix}-{batch}-{i}") for i in range(PARALLEL)]
        for proc in procs:
            assert proc.stdout is not None
            # Kill either while the sandbox is being created or while the command runs.
            phase = rng.choice(["creating", "running"])
            line = ""
            while line.strip() != phase:
                line = proc.stdout.readline()
                assert line, f"worker exited early ({proc.wait()})"
            time.sleep(rng.uniform(0.0, 0.3))
            proc.send_signal(signal.SIGKILL)
            phases[phase] += 1
        for proc in procs:
            proc.wait()
    assert phases["creating"] and phases["running"]

    # In-flight engine calls of the dead workers finish within moments of their death.
    time.sleep(1.0)
    report = reaper.reap(run_prefix=prefix)
    assert not report.errors, report.errors
    assert report.removed >= phases["running"]  # every worker killed mid-exec left one behind
    assert labelled_containers(prefix) == []
    assert bwrap_state_dirs(prefix) == []
    assert host_processes_with(prefix) == []
    left = sorted(t for t in quota_mounts() - mounted_before if not foreign_mount(t, prefix))
    assert left == [], left  # no quota filesystem of theirs left mounted
