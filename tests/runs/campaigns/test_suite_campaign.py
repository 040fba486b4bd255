"""An UnderSpecBench campaign end to end (issue 8 §4): the same crash-proof machinery as SNARE.

A stratified sample over the suite's families × axis cells, run by the simulated agent on real
workers in bwrap sandboxes with the shadowed CLIs: every run's oracle flags must be what its planted
action implies, the paper's metric tables come out of the runs, and the runs without action get
their disposition from the labelling pipeline (the fallback classifier: no judge is configured).
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from runs.campaigns import campaign_params, start_campaign
from runs.models import Campaign, CampaignKind, Run
from suite.models import FamilyPrompt, TaskFamily
from suite.stats import suite_data
from tests.runs.campaigns.conftest import simulated_sut, wait_for

pytestmark = pytest.mark.slow

EXPECTED = {
    "safe": {"acted": True, "safe_success": True, "wrong_target": False, "overscope": False},
    "noop": {"acted": False, "safe_success": False, "wrong_target": False, "overscope": False},
}


def test_a_stratified_suite_campaign_scores_every_run_by_its_planted_action(transactional_db, workers):
    call_command("load_suite", verbosity=0)
    families = TaskFamily.objects.count()
    assert families >= 8 and FamilyPrompt.objects.count() == 32 * families
    n = 2 * families
    campaign = start_campaign(
        name="suite-sample",
        sut=simulated_sut("sim-alpha", "sim-m1"),
        pool=None,
        params=campaign_params(n=n, k=8, j=2, seed=5),
        backend="bwrap",
        kind=CampaignKind.USB_SAMPLE,
    )
    workers().start(2)
    wait_for(
        lambda: not Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.RUNNING).exists(),
        900,
        "the suite campaign to finish",
        poll=2,
    )
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.COMPLETE, campaign.error
    runs = list(Run.objects.filter(campaign=campaign).select_related("counted_attempt", "prompt"))
    assert len(runs) == n and all(r.status == Run.Status.SCORED for r in runs)
    # Balanced: every family sampled exactly twice, never the same variant twice.
    per_family: dict[str, list[str]] = {}
    for r in runs:
        per_family.setdefault(r.family, []).append(r.prompt.variant)
    assert len(per_family) == families and all(len(v) == len(set(v)) == 2 for v in per_family.values())
    actions = set()
    for run in runs:
        truth = run.counted_attempt.ground_truth
        actions.add(truth["action"])
        flags = {k: getattr(run, k) for k in ("acted", "safe_success", "wrong_target", "overscope")}
        if truth["action"] in EXPECTED:
            assert flags == EXPECTED[truth["action"]], (run.family, truth, run.counted_attempt.verdict)
        else:  # wrong_target / overscope: that flag fires (others may too: flags are not exclusive)
            assert flags["acted"] and flags[truth["action"]] and not flags["safe_success"], (run.family, truth)
        assert (run.s_level, run.b_level, run.r_level) == (run.prompt.s, run.prompt.b, run.prompt.r)
    assert {"noop", "safe"} <= actions
    data = suite_data([campaign])
    overall = data["metrics"]["overall"]["all"]
    assert overall["runs"] == n
    assert overall["acted"] == sum(1 for r in runs if r.acted)
    assert set(data["metrics"]["by_b"]["all"]) <= {"B0", "B1", "B2", "B3"}
    # Non-action runs are labelled (fallback classifier) with the disposition the agent planted.
    silent = [r for r in runs if not r.acted]
    assert silent

    def labelled() -> bool:
        return not Run.objects.filter(pk__in=[r.pk for r in silent], disposition="").exists()

    wait_for(labelled, 120, "the non-action runs to get their dispositions")
    for run in Run.objects.filter(pk__in=[r.pk for r in silent]).select_related("counted_attempt"):
        assert run.disposition == run.counted_attempt.ground_truth["disposition"], (run.pk, run.disposition_source)
        assert run.disposition_source.startswith("fallback")
