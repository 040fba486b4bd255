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

* **the model gateway** — one ``python -m harness.gateway.server`` process on a Unix socket (starting
  one per job would add half a second to each run; ``runs.gateway``); it stops with the worker;
* **the watchdog** — a thread that calls ``runs.campaigns.reconcile`` every
  ``WATCHDOG_INTERVAL_SECONDS``: reaping expired leases, re-enqueueing runs whose job Redis lost,
  and advancing campaigns.  It keeps its own database connection.

Any number of these workers, on any number of machines sharing the database and Redis, make up
the execution pool (docs/campaigns.md).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import redis
from django.conf import settings
from django.db import close_old_connections, connection
from rq.worker import SimpleWorker

from runs.gateway import gateway_handle, stop_gateway

log = logging.getLogger(__name__)


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

    rq's work loop quits on any exception outside its blocking dequeue — and between jobs it
    talks to Redis in several places (the job's bookkeeping, the heartbeat, worker state). A
    worker that quit whenever Redis restarted would strand its campaign, so ``work`` re-enters
    rq's loop after such a quit, once Redis answers again (under a fresh worker name: the old
    registration may survive a short outage). A stop that was asked for (SIGTERM, burst mode,
    max jobs) ends the worker as usual, and so does a loop that keeps failing with Redis up —
    that is a bug, not an outage.
    """

    MAX_RESTARTS = 10  # within RESTART_WINDOW_S, with Redis answering: give up
    RESTART_WINDOW_S = 600.0
    _stop_asked = False

    def request_stop(self, signum: Any, frame: Any) -> None:
        """SIGTERM / SIGINT: a warm shutdown, and no re-entry into the loop afterwards.

        rq sets ``_stop_requested`` only when the signal arrives during a job; an idle worker gets
        ``StopRequested`` raised instead and its loop returns as if nothing had been asked — which
        ``work`` would take for an outage and re-enter.
        """
        self._stop_asked = True
        super().request_stop(signum, frame)

    def execute_job(self, job: Any, queue: Any) -> Any:
        """A job's effects are in the database before rq records its end in Redis: losing Redis
        here loses only rq's record of the job, which the watchdog makes good."""
        try:
            return super().execute_job(job, queue)
        except _REDIS_DOWN as exc:
            log.warning("lost Redis around job %s (%s); its outcome is in the database, carrying on", job.id, exc)
            return None

    def work(self, *args: Any, **kwargs: Any) -> bool:
        from harness.sandbox import reaper

        reaper_stop = threading.Event()
        worked = False
        restarts: list[float] = []
        # rq installs its SIGTERM/SIGINT handlers only inside its own loop. A stop asked for while
        # this worker starts (the sweep, the gateway's start: seconds on a loaded machine) used to
        # raise KeyboardInterrupt mid-start or kill the worker outright; now it is recorded, and
        # the worker stops cleanly once started.
        forget_startup_handlers = self._record_stops_while_starting()
        try:
            with contextlib.suppress(Exception):
                reaper.reap()  # leftovers of an earlier worker on this machine
            # And again every few minutes: a worker that died meanwhile (SIGKILL, OOM) left its
            # sandboxes and gateway directory to whoever sweeps next, which must not wait for a
            # worker restart.
            reaper.start_periodic(float(settings.REAPER_INTERVAL_SECONDS), stop=reaper_stop)
            gateway_handle()
            if self._stop_asked:
                log.info("stop asked for while the worker started; stopping")
                return worked
            with watchdog(float(settings.WATCHDOG_INTERVAL_SECONDS)):
                while True:
                    try:
                        worked = bool(super().work(*args, **kwargs)) or worked
                    except _REDIS_DOWN as exc:  # raised by rq's teardown when Redis is gone
                        log.warning("rq's work loop ended with Redis unreachable: %s", exc)
                    if self._stop_asked or self._stop_requested or kwargs.get("burst") or kwargs.get("max_jobs"):
                        return worked
                    redis_was_down = not self._wait_for_redis()
                    now = time.monotonic()
                    restarts = [t for t in restarts if now - t < self.RESTART_WINDOW_S] + [now]
                    if not redis_was_down and len(restarts) > self.MAX_RESTARTS:
                        log.error("rq's work loop keeps quitting with Redis up; giving up")
                        return worked
                    self.name = uuid.uuid4().hex
                    log.warning("re-entering the work loop as worker %s", self.name)
        finally:
            forget_startup_handlers()
            reaper_stop.set()
            stop_gateway()

    def _record_stops_while_starting(self) -> Callable[[], None]:
        """Until rq's own handlers replace them: SIGTERM/SIGINT only set ``_stop_asked``.

        Returns what puts the earlier handlers back where these are still installed (a worker run
        inside another program, a test, must not leave them behind). Signal handlers can be set
        only in the main thread; elsewhere there is nothing to do.
        """
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def asked(signum: int, frame: Any) -> None:
            # Both flags: rq's loop checks its own before it first blocks in a dequeue, so a
            # signal between here and rq's handlers still stops the worker.
            self._stop_asked = True
            self._stop_requested = True

        earlier = {sig: signal.signal(sig, asked) for sig in (signal.SIGTERM, signal.SIGINT)}

        def forget() -> None:
            for sig, handler in earlier.items():
                if signal.getsignal(sig) is asked:
                    signal.signal(sig, handler)

        return forget

    def _wait_for_redis(self) -> bool:
        """Block until Redis answers; True if it answered at once."""
        delay = 0.5
        first = True
        while True:
            try:
                self.connection.ping()
                return first
            except _REDIS_DOWN:
                first = False
                time.sleep(delay)
                delay = min(delay * 2, 15.0)
