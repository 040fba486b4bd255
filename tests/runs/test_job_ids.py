"""Two installs sharing one Redis never share an rq job (runs.campaigns.job_id)."""

from __future__ import annotations

import pytest

from harness.sandbox import base
from runs.campaigns import job_id


def test_the_same_run_and_claim_in_two_installs_are_two_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_install_id", "install-a")
    a = job_id(23190, 1)
    monkeypatch.setattr(base, "_install_id", "install-b")
    b = job_id(23190, 1)
    assert a != b  # rq keys a job's hash by its id across the whole Redis database
    assert job_id(23190, 1) == b and job_id(23190, 2) != b  # one job per claim within an install
