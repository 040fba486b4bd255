"""A process's gateway that stopped answering is replaced, not handed to the next run.

Outside an OvereagerWorker (a test, ``rq`` burst mode) the gateway starts on first use and lives
for the process. When it died — killed, crashed, or taken along by ``PR_SET_PDEATHSIG`` because
the thread that started it ended — every later run reached no model and was filed as a toolless
start, and campaigns stopped themselves over a harness fault (seen in CI as seven in-process
campaign tests failing together late in the suite).
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from harness.agents.runner import GatewayHandle
from runs import gateway


def _gateway_pid(path: str) -> int:
    """The pid of the process listening on the socket (SO_PEERCRED), not a name match."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        creds = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, _uid, _gid = struct.unpack("3i", creds)
    return pid


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # Our own child: reap it so it does not linger as a zombie that kill(0) still sees.
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            return
        time.sleep(0.05)
    raise AssertionError(f"gateway {pid} did not exit")


@pytest.fixture
def fresh_gateway() -> Iterator[None]:
    gateway.stop_gateway()
    yield
    gateway.stop_gateway()


def test_a_killed_gateway_is_replaced_on_the_next_call(fresh_gateway: None) -> None:
    first = gateway.gateway_handle()
    pid = _gateway_pid(first.socket_path)
    os.kill(pid, signal.SIGKILL)
    _wait_gone(pid)
    second = gateway.gateway_handle()
    assert second.socket_dir != first.socket_dir
    assert _gateway_pid(second.socket_path) != pid
    assert gateway.gateway_handle() == second  # a live gateway is kept


def test_a_gateway_started_by_a_thread_that_ended_is_replaced(fresh_gateway: None) -> None:
    started: list[GatewayHandle] = []
    t = threading.Thread(target=lambda: started.append(gateway.gateway_handle()))
    t.start()
    t.join()
    # The thread's end delivers the gateway's PR_SET_PDEATHSIG (SIGTERM); give it time to exit.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and gateway._answers(started[0]):
        time.sleep(0.05)
    assert not gateway._answers(started[0]), "the gateway outlived the thread that started it"
    handle = gateway.gateway_handle()
    assert handle != started[0] and gateway._answers(handle)
