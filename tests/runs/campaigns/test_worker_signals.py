"""A worker stops when told to and takes its model gateway with it, however it ends.

Found in ``make demo``: an idle worker that got SIGTERM took rq's quiet ``StopRequested`` return
for a Redis outage and re-entered its loop, so Ctrl-C left workers (and their gateways) running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.runs.campaigns.conftest import wait_for

pytestmark = pytest.mark.usefixtures("transactional_db")


def _gateway_of(worker_pid: int) -> int:
    """The pid of the worker's ``harness.gateway.server`` child, once it is listening."""
    found: list[int] = []

    def started() -> bool:
        out = subprocess.run(["pgrep", "-P", str(worker_pid), "-f", "harness.gateway.server"], capture_output=True)
        found[:] = [int(x) for x in out.stdout.split()]
        return bool(found)

    wait_for(started, 30, "the worker's gateway process")
    return found[0]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); it has exited all the same.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1].startswith("Z")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_idle_worker_stops_on_sigterm_or_sigint_and_stops_its_gateway(workers, queue_name, evidence_dir, sig):
    (proc,) = workers().start(1)
    gateway = _gateway_of(proc.pid)
    time.sleep(1.0)  # idle in rq's blocking dequeue
    proc.send_signal(sig)  # the worker alone, not its process group
    assert proc.wait(20) == 0
    wait_for(lambda: _gone(gateway), 10, "the gateway to stop with its worker")


def test_a_worker_killed_with_sigkill_takes_its_gateway_with_it(workers, queue_name, evidence_dir):
    (proc,) = workers().start(1)
    gateway = _gateway_of(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    wait_for(lambda: _gone(gateway), 10, "the gateway to die with its SIGKILLed worker (PR_SET_PDEATHSIG)")
