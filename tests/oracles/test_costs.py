"""The pre-campaign estimate and the cap's projection, against planted truth.

The estimate's interval is the median's distribution-free 95% interval: over many pilots drawn
from a known skewed distribution it must contain the true median at least 95% of the time (the
binomial method is conservative), whatever the distribution's shape.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracles.costs import MIN_RUNS_FOR_INTERVAL, Projection, estimate


@pytest.mark.parametrize("n", [8, 20, 60])
def test_the_medians_interval_covers_the_planted_median_at_least_95_percent(n: int) -> None:
    rng = np.random.default_rng(20261207 + n)
    mu, sigma = math.log(0.04), 0.9  # per-run cost ~ lognormal: true median exp(mu) = $0.04
    truth = math.exp(mu)
    trials = 600
    covered = 0
    for _ in range(trials):
        est = estimate(rng.lognormal(mu, sigma, size=n).tolist(), runs=100)
        assert est is not None and est.low is not None and est.high is not None
        covered += est.low <= truth <= est.high
    assert covered / trials >= 0.94, covered / trials  # nominal 95%, conservative; 1 point of MC slack


def test_the_total_is_runs_times_the_median_and_the_mean_total_is_beside_it() -> None:
    est = estimate([1, 2, 3, 4, 100, 6], runs=50)
    assert est.median == 3.5 and est.total == 175
    assert est.total_from_mean == pytest.approx(50 * 116 / 6)
    assert est.total_low == 50 * est.low and est.total_high == 50 * est.high


def test_too_few_runs_give_a_median_but_no_interval() -> None:
    est = estimate([0.1, 0.2, 0.3], runs=10)
    assert est.sample == 3 and est.median == 0.2 and est.low is None and est.total_low is None
    assert MIN_RUNS_FOR_INTERVAL == 6
    assert estimate([], runs=10) is None


def test_the_brake_stops_before_a_round_could_cross_the_cap_not_after() -> None:
    # $0.40 spent at $0.10 a run: another 4 runs reach $0.80 — within a $0.85 cap, not a $0.75 one.
    assert not Projection(spent=0.40, in_flight=0, next_runs=4, per_run=0.10, cap=0.85).crosses
    assert Projection(spent=0.40, in_flight=0, next_runs=4, per_run=0.10, cap=0.75).crosses
    # Runs already in flight will spend whatever is decided: they count.
    assert Projection(spent=0.40, in_flight=2, next_runs=2, per_run=0.10, cap=0.75).crosses
    # Nothing known yet: only a cap already reached stops.
    assert not Projection(spent=0.0, in_flight=0, next_runs=10, per_run=None, cap=0.01).crosses
    assert Projection(spent=0.02, in_flight=0, next_runs=0, per_run=None, cap=0.01).crosses


def test_the_totals_prediction_interval_covers_the_actual_total_where_its_approximation_holds() -> None:
    """Both variance terms matter: the campaign's own runs vary (N σ²) and the pilot's mean is an
    estimate (N² σ² / n). On costs the normal approximation fits, the interval covers ~95%; on
    skewed costs it is approximate (bench/cost_estimate.py prints how much)."""
    rng = np.random.default_rng(37)
    trials, covered = 800, 0
    for _ in range(trials):
        pilot = rng.normal(0.10, 0.03, size=12).clip(0)
        est = estimate(pilot.tolist(), runs=300)
        assert est is not None and est.total_prediction is not None
        low, high = est.total_prediction
        covered += low <= float(rng.normal(0.10, 0.03, size=300).clip(0).sum()) <= high
    assert 0.93 <= covered / trials <= 0.975, covered / trials
    assert estimate([0.2], runs=10).total_prediction is None
