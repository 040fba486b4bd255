"""A slot's propensity reaches its Run row (issue 23): the bundle and a regrade read it from there."""

from __future__ import annotations

from typing import Any

import pytest

from oracles.scheduler import CampaignParams, Scheduler
from runs import campaigns
from runs.models import Run
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_new_run_stores_its_slots_tier_and_propensity(monkeypatch: pytest.MonkeyPatch) -> None:
    c = factories.campaign()
    # The SNARE plan's own fields need a built pool; only the allocation fields are under test.
    plan = campaigns.plan_of(c.kind)
    monkeypatch.setattr(type(plan), "run_fields", lambda self, campaign, alloc, slot: {"tier": slot.tier})
    pool = {(f"a{i}", m): [f"s{i}{m}"] for i in range(4) for m in ("x", "y")}
    sched = Scheduler(CampaignParams(seed=1, k=5, propensity_draws=50))
    slots = sched.next_round(pool)
    Run.objects.bulk_create([campaigns._new_run(c, sched, s) for s in slots])
    stored: list[tuple[Any, ...]] = list(
        Run.objects.filter(campaign=c).order_by("slot").values_list("tier", "propensity")
    )
    assert stored == [(s.tier, s.propensity) for s in slots]
    assert stored[0] == ("uniform", pytest.approx(1 / 8))
