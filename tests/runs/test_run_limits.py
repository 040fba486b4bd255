"""A run records the limits it was started under: an edit during the campaign shows on the runs it affected.

The worker's path is the real one (claim → the plan's perform → ``sut_limits`` → the fenced write);
only the sandboxed execution below it (``suite.execution.run_task``, ``pool.execution.run_agent``)
is replaced by the family's reference run in the emulators, which also notes the limits it was given.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from harness.outcome import LIMIT_COLUMNS, Outcome, limit_columns
from pool.models import Candidate, LibraryVersion, PoolVersion
from runs import inspect_export
from runs.jobs import claim, perform, store_outcome
from runs.models import Campaign, CampaignKind, Run, SystemUnderTest
from tests import factories

pytestmark = pytest.mark.django_db


class _Result:
    def __init__(self, outcome: Outcome) -> None:
        self._outcome = outcome

    def outcome(self) -> Outcome:
        return self._outcome


@pytest.fixture
def given(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The limits each execution was handed, in order (the stand-ins for the sandboxed runs)."""
    seen: list[dict[str, Any]] = []
    fam = factories.family()

    def run_task(*args: Any, **kwargs: Any) -> _Result:
        seen.append(limit_columns(kwargs))
        return _Result(factories.emulated_outcome(fam.to_data(), "safe"))

    def run_agent(*args: Any, **kwargs: Any) -> _Result:
        seen.append(limit_columns(kwargs))
        return _Result(factories.snare_result(False).outcome())

    monkeypatch.setattr("suite.execution.run_task", run_task)
    monkeypatch.setattr("pool.execution.run_agent", run_agent)
    return seen


def _work(run: Run) -> Run:
    """What a worker does with one queued run: claim it, perform it with its plan, store the result."""
    claimed = claim(run.pk)
    assert claimed is not None
    claimed_run, attempt = claimed
    assert store_outcome(run.pk, attempt.pk, attempt.number, perform(claimed_run, attempt))
    return Run.objects.get(pk=run.pk)


def _snare_run(c: Campaign) -> Run:
    """A queued SNARE run on a scenario of a pack's pool (no fixture seed: its build.sh makes the repo)."""
    pool, _ = PoolVersion.objects.get_or_create(
        library_digest=LibraryVersion.current_digest(), pool_seed=1, target_size=1, defaults={"backend": "bwrap"}
    )
    n = Candidate.objects.filter(pool=pool).count()
    scenario = Candidate.objects.create(
        pool=pool,
        position=n,
        key=f"k{n}",
        archetype="a",
        consent="silent",
        skeleton="s",
        seed="",
        digest=f"d{n}",
        scenario={"seed_digest": ""},
        pool_rank=n,
    )
    run = factories.queued_run(c, "a", "silent")
    Run.objects.filter(pk=run.pk).update(scenario=scenario)
    return run


def _limits(run: Run) -> dict[str, Any]:
    return {name: getattr(run, name) for name in LIMIT_COLUMNS}


@pytest.mark.parametrize("kind", [CampaignKind.USB_SAMPLE, CampaignKind.SNARE])
def test_runs_started_after_a_limit_change_record_the_new_limits_and_earlier_ones_the_old(
    given: list[dict[str, Any]], kind: str
) -> None:
    system = factories.sut()
    SystemUnderTest.objects.filter(pk=system.pk).update(
        max_steps=30, wall_limit_s=1800, command_timeout_s=120, max_requests=60, max_tokens=4_000_000
    )
    if kind == CampaignKind.SNARE:
        c = factories.campaign(system=system)
        queue = [_snare_run(c) for _ in range(3)]
    else:
        c = factories.suite_campaign(system=system)
        fam = factories.family()
        queue = [factories.queued_suite_run(c, fam, v) for v in ("S1-B1-R1", "S1-B2-R1", "S2-B1-R1")]
    Campaign.objects.filter(pk=c.pk).update(run_token_cap=500_000)  # tighter than the system's own

    first = _work(queue[0])
    # The curator edits the system while the campaign runs; the cap stays the campaign's where tighter.
    SystemUnderTest.objects.filter(pk=system.pk).update(
        max_steps=12, wall_limit_s=600, command_timeout_s=30, max_requests=20, max_tokens=100_000
    )
    second, third = _work(queue[1]), _work(queue[2])

    old = {"limit_steps": 30, "limit_wall_s": 1800.0, "limit_command_s": 120.0, "limit_requests": 60}
    new = {"limit_steps": 12, "limit_wall_s": 600.0, "limit_command_s": 30.0, "limit_requests": 20}
    assert _limits(first) == {**old, "limit_tokens": 500_000}
    assert _limits(second) == _limits(third) == {**new, "limit_tokens": 100_000}
    # What the runs record is what the harness was handed.
    assert given == [_limits(first), _limits(second), _limits(third)]
    assert Run.objects.get(pk=first.pk).status == Run.Status.SCORED


def test_a_run_not_yet_started_records_no_limits() -> None:
    c = factories.suite_campaign()
    run = factories.queued_suite_run(c, factories.family())
    assert _limits(run) == dict.fromkeys(LIMIT_COLUMNS) and run.limits == []


def test_the_run_page_and_the_exports_show_the_limits_the_run_used(
    given: list[dict[str, Any]], client: Any, role_users: Any
) -> None:
    c = factories.suite_campaign()
    run = _work(factories.queued_suite_run(c, factories.family()))
    Run.objects.filter(pk=run.pk).update(limit_steps=17, limit_wall_s=333)
    run.refresh_from_db()
    client.force_login(role_users["viewer"])
    html = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert 'id="run-limits"' in html
    assert "step limit <strong>17</strong>" in html and "wall-time limit (s) <strong>333</strong>" in html
    rows = client.get(reverse("campaign-runs", args=[c.pk])).json()["runs"]
    assert {name: rows[0][name] for name in LIMIT_COLUMNS} == _limits(run)
    assert inspect_export._cell(run)["limits"] == _limits(run)
