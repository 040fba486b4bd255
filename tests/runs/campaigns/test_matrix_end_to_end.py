"""A simulated 2 × 2 matrix campaign through the real scheduler, workers, sandbox, oracle and statistics.

Issue 6 §5: the stochastic agent with planted per-cell propensities and per-framework / per-model
effects runs on every pair; the pipeline must score every valid run exactly as the planted
decision says, on every pair of the matrix — the wiring.  Whether the per-pair intervals recover
the planted pair rates is a property of the scheduler and the estimator, not of the wiring: it is
measured over hundreds of simulated campaigns by ``bench/adaptive_coverage.py`` (this test used to
run a 4 × 5 matrix, 240 sandboxed runs, for one draw of that property; issue 29).

The planted pair rate is the estimand of the re-weighted estimator: the uniform mix, over the
cells the pair's campaign scored, of the planted p(cell, framework, model).  (An adaptive campaign
scores a subset of the 120 cells; cells it never sampled carry no information about their rate, so
``uniform_mix_rate`` excludes them — see its docstring.)  The all-cell rate is printed alongside.
"""

from __future__ import annotations

import time

import pytest

from harness.agents.stochastic import propensities_from
from oracles.statistics import Counts, uniform_mix_rate
from runs.campaigns import campaign_params, start_matrix
from runs.models import Campaign, Run
from tests.runs.campaigns.conftest import simulated_sut, wait_for

pytestmark = pytest.mark.slow

FRAMEWORKS = {"sim-alpha": -0.6, "sim-delta": 0.6}
MODELS = {"sim-m1": -0.8, "sim-m5": 0.8}
PER_PAIR = 12
SIMULATION = {
    "cells": [
        ["*", "explicit-deny", 0.1],
        ["*", "implicit-deny", 0.25],
        ["*", "silent", 0.4],
        ["*", "implicit-allow", 0.6],
        ["*", "explicit-allow", 0.8],
    ],
    "framework_effects": FRAMEWORKS,
    "model_effects": MODELS,
}


@pytest.mark.timeout(1800)
def test_a_simulated_matrix_scores_every_run_as_planted_on_every_pair(pool, workers):
    suts = [simulated_sut(f, m) for f in FRAMEWORKS for m in MODELS]
    started = time.monotonic()
    campaigns = start_matrix(
        "planted-matrix",
        suts,
        frameworks=list(FRAMEWORKS),
        models=list(MODELS),
        pool=pool,
        params=campaign_params(n=PER_PAIR, k=5, j=2, q_floor=1, q_ceil=3, seed=20261201),
        backend="bwrap",
        kind="snare",
        simulation=SIMULATION,
    )
    workers().start(2)

    def all_done() -> bool:
        return not Campaign.objects.filter(pk__in=[c.pk for c in campaigns], status=Campaign.Status.RUNNING).exists()

    wait_for(all_done, 1700, f"the {len(campaigns)} campaigns to finish", poll=2)
    elapsed = time.monotonic() - started
    truth = propensities_from(SIMULATION)
    contained = 0
    lines = []
    for campaign in Campaign.objects.filter(pk__in=[c.pk for c in campaigns]).select_related(
        "sut__framework", "sut__model"
    ):
        assert campaign.status == Campaign.Status.COMPLETE, campaign.error
        assert campaign.scored == PER_PAIR
        fw, model = campaign.sut.framework.slug, campaign.sut.model.slug
        cells: dict[tuple[str, str], Counts] = {}
        for run in Run.objects.filter(campaign=campaign, status=Run.Status.SCORED).select_related("counted_attempt"):
            decision = run.counted_attempt.ground_truth["decision"] == "overeager"
            assert run.overeager == decision, f"oracle disagrees with the planted decision on run {run.pk}"
            key = (run.archetype, run.consent)
            cells[key] = cells.get(key, Counts(0, 0)) + Counts(int(bool(run.overeager)), 1)
        mix = uniform_mix_rate(cells)
        planted = sum(truth.p(a, c, fw, model) for a, c in cells) / len(cells)
        all_cells = (
            sum(
                truth.p("*", c, fw, model)
                for c in ("explicit-deny", "implicit-deny", "silent", "implicit-allow", "explicit-allow")
            )
            / 5
        )
        inside = mix.low <= planted <= mix.high
        contained += inside
        lines.append(
            f"{fw:10} {model:7} planted {planted:.3f} (all cells {all_cells:.3f}) "
            f"re-weighted {mix.uniform:.3f} [{mix.low:.3f}, {mix.high:.3f}] {'ok' if inside else 'MISS'}"
        )
    print("\n".join(lines))
    print(f"{contained}/{len(campaigns)} intervals contain the planted pair rate (not asserted: see the module)")
    print(f"{len(campaigns) * PER_PAIR} runs in {elapsed:.0f} s")
    assert len(campaigns) == len(FRAMEWORKS) * len(MODELS)
