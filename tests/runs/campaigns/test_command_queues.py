"""Each run_campaign command runs its own jobs on its own workers (issue 34 item 8).

Before, every command's local workers read the install's one runs queue: two commands at once
ran each other's jobs, and a command's worker count (one, for a model served on this machine)
did not bound how many of its runs ran at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.campaigns import (
    _queue,
    campaign_params,
    command_queue,
    job_id,
    release_unserved_queues,
    route_campaigns,
    start_campaign,
)
from runs.models import Campaign, Run, RunAttempt
from tests.runs.campaigns.conftest import MANAGE, database_url, simulated_sut

pytestmark = pytest.mark.slow


def _waiting_jobs(campaign: Campaign) -> set[str]:
    waiting = campaign.runs.filter(status=Run.Status.QUEUED).values_list("pk", "attempt")
    return {job_id(pk, attempt) for pk, attempt in waiting}


def test_two_commands_at_once_each_run_only_their_own_jobs(pool, queue_name, evidence_dir):
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "RUNS_QUEUE": queue_name,
        "EVIDENCE_DIR": str(evidence_dir),
        "SANDBOX_BACKEND": "bwrap",
    }
    names = {"sim-alpha:sim-m1": "own-alpha", "sim-beta:sim-m1": "own-beta"}
    for sut in names:
        simulated_sut(*sut.split(":"))
    commands = [
        subprocess.Popen(
            [
                *(sys.executable, str(MANAGE), "run_campaign", "--sut", sut, "--name", name),
                *("--n", "8", "--k", "4", "--q-floor", "1", "--q-ceil", "3", "--seed", "5"),
                *("--workers", "1", "--backend", "bwrap", "--pool", str(pool.pk), "--timeout", "600"),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for sut, name in names.items()
    ]
    for command in commands:
        out, err = command.communicate(timeout=900)
        assert command.returncode == 0, (out[-2000:], err[-2000:])
    workers = {}
    for name in names.values():
        campaign = Campaign.objects.get(name=name)
        assert campaign.status == Campaign.Status.COMPLETE and campaign.scored == 8, campaign.error
        assert campaign.queue == "" and campaign.queue_since is None  # handed back when its command ended
        workers[name] = set(RunAttempt.objects.filter(run__campaign=campaign).values_list("worker", flat=True))
    # One worker per command (a SimpleWorker: the job runs in the worker's own process), each
    # running only its own command's runs.
    assert all(len(w) == 1 for w in workers.values()), workers
    assert workers["own-alpha"].isdisjoint(workers["own-beta"]), workers


def test_a_campaign_whose_commands_workers_are_gone_goes_back_to_the_runs_queue(pool, queue_name):
    campaign = start_campaign(
        name="orphaned",
        sut=simulated_sut(),
        pool=pool,
        params=campaign_params(n=6, k=3, j=1, q_floor=1, q_ceil=3, seed=2),
        backend="bwrap",
    )
    waiting = _waiting_jobs(campaign)
    assert waiting and waiting <= set(_queue().job_ids)
    own = command_queue()
    assert route_campaigns([campaign.pk], own) == len(waiting)
    campaign.refresh_from_db()
    assert campaign.queue == own
    assert waiting <= set(_queue(own).job_ids) and waiting.isdisjoint(_queue().job_ids)
    # Within the grace period its command's workers may still be starting: it stays.
    assert release_unserved_queues() == 0
    # Its command was killed (its workers with it) long ago: no worker reads the queue.
    Campaign.objects.filter(pk=campaign.pk).update(queue_since=timezone.now() - timedelta(hours=1))
    assert release_unserved_queues() == 1
    campaign.refresh_from_db()
    assert campaign.queue == "" and campaign.queue_since is None
    assert waiting <= set(_queue().job_ids) and waiting.isdisjoint(_queue(own).job_ids)
