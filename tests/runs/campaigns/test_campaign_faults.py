"""Campaign execution on real workers: the happy path and the faults issue 6 names.

Each test runs a small simulated campaign (the stochastic agent executing the scenario's safe or
overeager reference solution in a bwrap sandbox) on real ``rqworker`` processes and checks that it
ends with exactly N scored runs, whatever was done to it on the way.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runs.campaigns import campaign_params, start_campaign
from runs.models import Campaign, Run, RunAttempt
from tests.runs.campaigns.conftest import MANAGE, database_url, simulated_sut, wait_for

pytestmark = pytest.mark.slow


def _start(pool, n: int, *, name: str, latency: float = 0.0, k: int = 4, seed: int = 7) -> Campaign:
    sut = simulated_sut()
    return start_campaign(
        name=name,
        sut=sut,
        pool=pool,
        params=campaign_params(n=n, k=k, j=2, q_floor=1, q_ceil=3, seed=seed),
        backend="bwrap",
        simulation={"latency_s": latency} if latency else {},
    )


def _finished(campaign: Campaign) -> bool:
    campaign.refresh_from_db()
    return campaign.status != Campaign.Status.RUNNING


def _assert_exactly_n_scored(campaign: Campaign) -> None:
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.COMPLETE, campaign.error
    n = campaign.budget
    assert campaign.scored == n
    assert Run.objects.filter(campaign=campaign, status=Run.Status.SCORED).count() == n
    assert not Run.objects.filter(campaign=campaign, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).exists()
    # Every scored run has exactly one completed attempt it counts, and its verdict is the truth.
    for run in Run.objects.filter(campaign=campaign, status=Run.Status.SCORED).select_related("counted_attempt"):
        attempt = run.counted_attempt
        assert attempt is not None and attempt.status == RunAttempt.Status.COMPLETED
        assert attempt.verdict is not None
        truth = attempt.ground_truth["decision"] == "overeager"
        assert run.overeager == truth, (run.pk, attempt.verdict, attempt.ground_truth)


def test_a_simulated_campaign_ends_with_exactly_n_scored_runs(pool, workers):
    campaign = _start(pool, 12, name="happy")
    workers().start(2)
    wait_for(lambda: _finished(campaign), 240, "the campaign to finish")
    _assert_exactly_n_scored(campaign)
    assert campaign.round >= 3  # 12 runs in rounds of 4
    # Rounds are synchronous: no run of round r+1 was created before round r finished.
    for r in range(1, campaign.round):
        first_new = Run.objects.filter(campaign=campaign, round=r).order_by("enqueued_at").first()
        last_old = Run.objects.filter(campaign=campaign, round=r - 1).order_by("-finished_at").first()
        assert first_new is not None and last_old is not None
        assert first_new.enqueued_at >= last_old.finished_at


def test_a_worker_killed_mid_run_loses_its_attempt_and_the_run_is_redone(pool, workers):
    campaign = _start(pool, 8, name="sigkill", latency=4.0)
    pool_of_workers = workers()
    (victim,) = pool_of_workers.start(1)
    wait_for(lambda: Run.objects.filter(campaign=campaign, status=Run.Status.RUNNING).exists(), 60, "a running run")
    time.sleep(1.5)  # inside the simulated agent's think time: the sandbox exists
    running = Run.objects.get(campaign=campaign, status=Run.Status.RUNNING)
    pool_of_workers.kill(victim)
    pool_of_workers.start(2)
    wait_for(lambda: _finished(campaign), 300, "the campaign to finish after the SIGKILL")
    _assert_exactly_n_scored(campaign)
    attempts = list(RunAttempt.objects.filter(run=running).order_by("number"))
    assert attempts[0].status == RunAttempt.Status.ABANDONED
    assert attempts[-1].status == RunAttempt.Status.COMPLETED
    running.refresh_from_db()
    assert running.counted_attempt_id == attempts[-1].pk


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateRedis:
    """A redis-server of the test's own, so that restarting it disturbs nobody else."""

    def __init__(self, tmp: Path) -> None:
        self.port = _free_port()
        self.dir = tmp
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
        )
        import redis

        wait_for(lambda: _pings(redis.Redis.from_url(self.url)), 10, "the private redis to answer", 0.1)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)


def _pings(client: object) -> bool:
    try:
        return bool(client.ping())  # type: ignore[attr-defined]
    except Exception:  # not up yet
        return False


def test_a_campaign_survives_a_redis_restart(pool, workers, queue_name, tmp_path, settings):
    import django_rq.settings

    private = PrivateRedis(tmp_path)
    private.start()
    try:
        django_rq.settings.QUEUES[queue_name] = {"URL": private.url, "DEFAULT_TIMEOUT": 3600}
        campaign = _start(pool, 12, name="redis-restart", latency=1.0)
        workers(redis_url=private.url).start(2)
        wait_for(lambda: Run.objects.filter(campaign=campaign, status=Run.Status.SCORED).count() >= 3, 120, "3 runs")
        # Redis keeps nothing on disk: the restart loses every queued job and the workers' state.
        private.stop()
        time.sleep(2)
        private.start()
        wait_for(lambda: _finished(campaign), 300, "the campaign to finish after the Redis restart")
        _assert_exactly_n_scored(campaign)
    finally:
        private.stop()


def test_the_coordinator_can_be_killed_and_started_again(pool, workers, queue_name, evidence_dir):
    simulated_sut()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "RUNS_QUEUE": queue_name,
        "EVIDENCE_DIR": str(evidence_dir),
        "RUN_LEASE_SECONDS": "6",
        "WATCHDOG_INTERVAL_SECONDS": "2",
        "SANDBOX_BACKEND": "bwrap",
    }
    argv = [
        sys.executable,
        str(MANAGE),
        "run_campaign",
        "--sut",
        "sim-alpha:sim-m1",
        "--name",
        "coordinated",
        "--n",
        "10",
        "--k",
        "4",
        "--q-floor",
        "1",
        "--q-ceil",
        "3",
        "--seed",
        "3",
        "--workers",
        "0",
        "--backend",
        "bwrap",
        "--pool",
        str(pool.pk),
    ]
    first = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wait_for(lambda: Campaign.objects.filter(name="coordinated").exists(), 60, "the campaign row")
    campaign = Campaign.objects.get(name="coordinated")
    workers().start(1)
    wait_for(lambda: Run.objects.filter(campaign=campaign, status=Run.Status.SCORED).exists(), 120, "a scored run")
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "resuming campaign" in second.stdout
    assert Campaign.objects.filter(name="coordinated").count() == 1
    _assert_exactly_n_scored(campaign)
