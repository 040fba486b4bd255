"""The worker's model gateway: one ``harness.gateway.server`` process per worker, started on first use.

Runs reach it through :func:`gateway_handle`; the worker (``runs.worker``) starts it with itself
and stops it at the end. A job that runs outside an ``OvereagerWorker`` (a test, ``rq`` burst mode)
starts it on first use.

A gateway that stopped answering (it crashed, its socket directory was removed, or — outside a
worker — the thread that started it ended and took it along through ``PR_SET_PDEATHSIG``) is
replaced on the next call: without that every later run of the process would reach no model and
be filed as a toolless start, and the campaign would stop itself over a harness fault.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from django.conf import settings

from harness.agents.runner import GatewayHandle, gateway_process

_gateway: GatewayHandle | None = None
_gateway_cm: contextlib.AbstractContextManager[GatewayHandle] | None = None
_gateway_lock = threading.Lock()


def gateway_handle() -> GatewayHandle:
    """The worker's gateway; started on first use when the job runs outside an OvereagerWorker."""
    global _gateway, _gateway_cm
    with _gateway_lock:
        if _gateway is not None and not _answers(_gateway):
            _stop_locked()
        if _gateway is None:
            _gateway_cm = gateway_process(settings.REDIS_URL)
            _gateway = _gateway_cm.__enter__()
        return _gateway


def stop_gateway() -> None:
    with _gateway_lock:
        _stop_locked()


def _stop_locked() -> None:
    global _gateway, _gateway_cm
    cm, _gateway, _gateway_cm = _gateway_cm, None, None
    if cm is not None:
        with contextlib.suppress(Exception):  # a dead gateway's cleanup may fail; a new one follows
            cm.__exit__(None, None, None)


def _answers(handle: GatewayHandle) -> bool:
    """Whether something accepts connections on the gateway's socket (a connect, no request)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2.0)
        try:
            s.connect(handle.socket_path)
        except OSError:
            return False
    return True
