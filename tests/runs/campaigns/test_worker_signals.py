"""A worker stops when told to and takes its model gateway with it, however it ends.

Found in ``make demo``: an idle worker that got SIGTERM took rq's quiet ``StopRequested`` return
for a Redis outage and re-entered its loop, so Ctrl-C left workers (and their gateways) running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import redis
from django.conf import settings
from rq import Queue, Worker

from tests.runs.campaigns.conftest import MANAGE, wait_for

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


def _idle_in_dequeue(queue_name: str) -> bool:
    """Whether a worker of the queue has told rq it is idle, i.e. waits in its blocking dequeue."""
    conn = redis.Redis.from_url(settings.REDIS_URL)
    return any(w.get_state() == "idle" for w in Worker.all(queue=Queue(queue_name, connection=conn)))


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
    # Idle in rq's blocking dequeue: the case that re-entered the loop. (A fixed sleep here once
    # signalled a worker still starting its gateway on a loaded machine.)
    wait_for(lambda: _idle_in_dequeue(queue_name), 60, "the worker to wait in its dequeue")
    proc.send_signal(sig)  # the worker alone, not its process group
    assert proc.wait(20) == 0
    wait_for(lambda: _gone(gateway), 10, "the gateway to stop with its worker")


def test_a_worker_killed_with_sigkill_takes_its_gateway_with_it(workers, queue_name, evidence_dir):
    (proc,) = workers().start(1)
    gateway = _gateway_of(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    wait_for(lambda: _gone(gateway), 10, "the gateway to die with its SIGKILLed worker (PR_SET_PDEATHSIG)")


# The worker's start with its gateway replaced by one that asks the worker to stop: the signal
# arrives exactly while the worker starts, before rq has installed any handler of its own.
_STOP_WHILE_STARTING = textwrap.dedent(
    """
    import os, signal, sys
    import django
    django.setup()
    import redis
    from runs import worker as w

    def gateway_that_gets_a_stop():
        os.kill(os.getpid(), int(sys.argv[2]))

    w.gateway_handle = gateway_that_gets_a_stop
    w.stop_gateway = lambda: None
    worker = w.OvereagerWorker([sys.argv[1]], connection=redis.Redis.from_url(os.environ["REDIS_URL"]))
    print("worked:", worker.work(), flush=True)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_asked_while_the_worker_starts_is_a_clean_stop(queue_name, sig):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "overeager.settings", "REDIS_URL": settings.REDIS_URL}
    done = subprocess.run(
        [sys.executable, "-c", _STOP_WHILE_STARTING, queue_name, str(int(sig))],
        cwd=MANAGE.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Before: SIGTERM killed the starting worker (-15) and SIGINT raised KeyboardInterrupt.
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "worked: False" in done.stdout
