"""The rq worker class run jobs execute in (``RQ["WORKER_CLASS"]``; ``manage.py rqworker``).

It is rq's ``SimpleWorker``: jobs run in the worker process itself, not in a forked work horse.
That is deliberate.  The worker owns a watchdog *thread*, and forking a process while another of
its threads holds a lock (a cache lock, a logging or connection-pool lock) hands the child a lock
nobody will ever release — seen here: a horse deadlocked inside a transaction holding the
campaign's row lock, and the whole campaign stalled.  Without forks there is no such hazard, and
each run saves the fork and the Django re-initialisation.  A run's job timeout is still enforced
(rq's SIGALRM death penalty in the main thread); a crash that kills the process is a dead worker,
which the lease mechanism already handles.

The worker owns, for its whole life:

* **the model gateway** — one ``python -m runs.gateway.server`` process on a Unix socket (starting
  one per job would add half a second to each run); it stops with the worker;
* **the watchdog** — a thread that calls ``runs.campaigns.reconcile`` every
  ``WATCHDOG_INTERVAL_SECONDS``: reaping expired leases, re-enqueueing runs whose job Redis lost,
  and advancing campaigns.  It keeps its own database connection.

Any number of these workers, on any number of machines sharing the database and Redis, make up
the execution pool (docs/campaigns.md).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import redis
from django.conf import settings
from django.db import close_old_connections, connection
from rq.worker import SimpleWorker

from runs.agents.runner import GatewayHandle, gateway_process

log = logging.getLogger(__name__)

_gateway: GatewayHandle | None = None
_gateway_cm: contextlib.AbstractContextManager[GatewayHandle] | None = None
_gateway_lock = threading.Lock()


def gateway_handle() -> GatewayHandle:
    """The worker's gateway; started on first use when the job runs outside an OvereagerWorker."""
    global _gateway, _gateway_cm
    with _gateway_lock:
        if _gateway is None:
            _gateway_cm = gateway_process(settings.REDIS_URL)
            _gateway = _gateway_cm.__enter__()
        return _gateway


def stop_gateway() -> None:
    global _gateway, _gateway_cm
    with _gateway_lock:
        if _gateway_cm is not None:
            _gateway_cm.__exit__(None, None, None)
        _gateway, _gateway_cm = None, None


@contextlib.contextmanager
def watchdog(interval: float) -> Iterator[threading.Event]:
    stop = threading.Event()

    def loop() -> None:
        from runs.campaigns import reconcile

        while not stop.wait(interval):
            try:
                close_old_connections()
                reconcile()
            except Exception:  # a database or Redis blip: the next pass retries
                log.exception("watchdog pass failed")
        connection.close()

    thread = threading.Thread(target=loop, name="overeager-watchdog", daemon=True)
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(timeout=interval + 5)


_REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


class OvereagerWorker(SimpleWorker):
    """rq's SimpleWorker that outlives a Redis restart.

    rq's work loop quits on any exception outside its blocking dequeue, and between jobs it talks
    to Redis in four places (the job's own bookkeeping, the heartbeat, the suspension check, the
    maintenance tasks). A worker that quit whenever Redis restarted would strand its campaign, so
    those four tolerate a lost connection; the dequeue already waits and reconnects by itself.
    """

    def heartbeat(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().heartbeat(*args, **kwargs)
        except _REDIS_DOWN as exc:
            log.warning("worker heartbeat skipped: Redis unreachable (%s)", exc)

    def check_for_suspension(self, burst: bool) -> None:
        try:
            super().check_for_suspension(burst)
        except _REDIS_DOWN as exc:
            log.warning("suspension check skipped: Redis unreachable (%s)", exc)

    def run_maintenance_tasks(self) -> None:
        try:
            super().run_maintenance_tasks()
        except _REDIS_DOWN as exc:
            log.warning("rq maintenance skipped: Redis unreachable (%s)", exc)

    def execute_job(self, job: Any, queue: Any) -> Any:
        """Run a job; survive losing Redis around it instead of quitting like rq would.

        A job's effects are in the database before rq records the job's end in Redis, so when
        Redis goes away mid-bookkeeping (a restart: it keeps nothing on disk) only rq's record of
        this job is lost. rq's loop quits on any exception from here; the dequeue that follows
        instead waits for Redis and reconnects, and the watchdog re-enqueues whatever Redis forgot.
        """
        try:
            return super().execute_job(job, queue)
        except _REDIS_DOWN as exc:
            log.warning("lost Redis around job %s (%s); its outcome is in the database, carrying on", job.id, exc)
            return None

    def work(self, *args: Any, **kwargs: Any) -> bool:
        from runs.sandbox import reaper

        with contextlib.suppress(Exception):
            reaper.reap()  # leftovers of an earlier worker on this machine
        gateway_handle()
        try:
            with watchdog(float(settings.WATCHDOG_INTERVAL_SECONDS)):
                return bool(super().work(*args, **kwargs))
        finally:
            stop_gateway()
