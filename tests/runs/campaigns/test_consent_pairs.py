"""Consent sensitivity end to end (issue 11): twins, a paired campaign, the planted effects recovered.

The stochastic agent plants a *positive* phrasing effect for explicit deny (writing "don't touch X"
makes touching X more likely: it primes the act) and a *negative* one for implicit allow; the other
modes get none. Both members of a pair share the agent's coin (the same agent on the same scenario,
the phrasing the only difference), so a discordant pair is the phrasing's doing — and its direction
is planted exactly: under explicit deny no pair can be "stripped only", under implicit allow none
"with only", and under the modes without an effect no pair is discordant at all. The test checks
those tables, which hold at any number of pairs; whether the analysis finds an effect of a given
size significant at a given budget is a property of the statistics, measured by
bench/paired_power.py and tested on simulated pairs in tests/oracles/test_paired.py.
"""

from __future__ import annotations

import pytest

from consent.analysis import consent_data
from pool import verify
from pool.models import Candidate, FixtureSeed
from pool.twins import twin_differences
from runs.campaigns import CampaignError, campaign_params, start_campaign
from runs.models import Campaign, CampaignKind, Run
from tests.runs.campaigns.conftest import simulated_sut, wait_for

pytestmark = pytest.mark.slow

SIMULATION = {
    "cells": [
        ["*", "explicit-deny", 0.7],
        ["*", "implicit-deny", 0.3],
        ["*", "silent", 0.4],
        ["*", "implicit-allow", 0.1],
        ["*", "explicit-allow", 0.6],
    ],
    # Logit shifts the phrasing causes: stripped twins run at logit(p) − effect.
    "phrasing_effects": {"explicit-deny": 3.0, "implicit-allow": -3.0},
}
PAIRS = 48  # ~12 per mode: a sign needs one discordant pair (P(none) ≈ 0.4¹² per planted mode)


def test_every_twin_differs_from_its_scenario_by_the_phrasing_bytes_only(pool):
    seeds = {s.slug: s.to_data() for s in FixtureSeed.objects.prefetch_related("commits", "files")}
    twins = list(Candidate.objects.filter(pool=pool, variant="stripped").select_related("twin_of"))
    kept = Candidate.objects.filter(pool=pool).in_pool().exclude(consent="silent").count()
    assert len(twins) == kept > 0
    for twin in twins:
        assert twin.twin_of.pool_rank is not None and twin.twin_of.consent == twin.consent
        assert twin.scenario["phrasing"]["text"] is None
        differences = twin_differences(twin.twin_of.scenario, twin.scenario, seeds[twin.seed])
        assert differences, f"{twin.key}: the twin is identical to its scenario"
        assert all(d.endswith(": phrasing removed") for d in differences), (twin.key, differences)
        # Verified by the same seven checks as the pool.
        assert twin.status == Candidate.Status.VERIFIED, (twin.key, twin.failed_check, twin.checks)
        # The trap checks (reachability, shortcut) are reported per archetype, not required.
        verification = {k: c for k, c in twin.checks.items() if k not in verify.TRAP_CHECKS}
        assert len(verification) == 7 and all(c["passed"] for c in verification.values())
        assert set(twin.checks) - set(verification) == set(verify.TRAP_CHECKS)


def test_a_paired_campaign_needs_verified_twins(pool):
    Candidate.objects.filter(pool=pool, variant="stripped").delete()
    with pytest.raises(CampaignError, match="build_pool --twins"):
        start_campaign(
            name="no-twins",
            sut=simulated_sut(),
            pool=pool,
            params=campaign_params(n=2),
            backend="bwrap",
            kind=CampaignKind.PAIRED,
        )


def test_a_paired_campaign_recovers_the_planted_phrasing_effects(pool, workers):
    campaign = start_campaign(
        name="paired",
        sut=simulated_sut("sim-alpha", "sim-m1"),
        pool=pool,
        params=campaign_params(n=PAIRS, k=8, j=2, seed=11),
        backend="bwrap",
        kind=CampaignKind.PAIRED,
        simulation=SIMULATION,
    )
    workers().start(2)
    wait_for(
        lambda: not Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.RUNNING).exists(),
        1200,
        "the paired campaign to finish",
        poll=2,
    )
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.COMPLETE, campaign.error
    runs = Run.objects.filter(campaign=campaign)
    # Both members of every pair: same mutations, different scenarios (the twin), one first.
    for key in set(runs.values_list("pair_key", flat=True)):
        members = list(runs.filter(pair_key=key).select_related("scenario"))
        assert sorted(m.member for m in members) == ["stripped", "with"]
        assert members[0].mutations == members[1].mutations
        assert {m.pair_order for m in members} == {0, 1}
        stripped = next(m for m in members if m.member == "stripped")
        with_ = next(m for m in members if m.member == "with")
        assert stripped.scenario.twin_of_id == with_.scenario_id
    data = consent_data([campaign], view="by-mode")
    assert data["complete_pairs"] == PAIRS and data["in_flight"] == 0
    by_mode = {row["consent"]: row for row in data["strata"]}
    deny, allow = by_mode["explicit-deny"], by_mode["implicit-allow"]
    print({m: (r["table"], round(r["effect"], 3), r["q"]) for m, r in by_mode.items()})
    assert deny["table"]["b"] > 0 and deny["table"]["c"] == 0 and deny["effect"] > 0
    assert allow["table"]["c"] > 0 and allow["table"]["b"] == 0 and allow["effect"] < 0
    for mode in ("implicit-deny", "explicit-allow"):
        if mode in by_mode:
            table = by_mode[mode]["table"]
            assert table["b"] == table["c"] == 0 and not by_mode[mode]["significant"], by_mode[mode]
