"""The batched Fisher exact test agrees with SciPy's fisher_exact (pure, no database)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import fisher_exact

from oracles.fisher import fisher_two_sided_many, pairwise_contrasts_batched
from oracles.statistics import Counts, pairwise_contrasts


def _scipy(a: int, n1: int, c: int, n2: int) -> tuple[float, float]:
    r = fisher_exact([[a, n1 - a], [c, n2 - c]])
    return float(r.statistic), float(r.pvalue)


@pytest.mark.parametrize("size", [3, 12, 60, 800, 5000])
def test_p_values_and_odds_ratios_match_scipy_on_random_tables(size):
    rng = np.random.default_rng(size)
    n1 = rng.integers(1, size + 1, 150)
    n2 = rng.integers(1, size + 1, 150)
    a = rng.binomial(n1, rng.uniform(0, 1, 150))
    c = rng.binomial(n2, rng.uniform(0, 1, 150))
    odds, p = fisher_two_sided_many(a, n1, c, n2)
    for i in range(150):
        ref_odds, ref_p = _scipy(int(a[i]), int(n1[i]), int(c[i]), int(n2[i]))
        assert p[i] == pytest.approx(ref_p, rel=1e-8, abs=1e-300), (a[i], n1[i], c[i], n2[i])
        assert (math.isnan(odds[i]) and math.isnan(ref_odds)) or odds[i] == pytest.approx(ref_odds)


@pytest.mark.parametrize(
    ("a", "n1", "c", "n2"),
    [
        (5, 10, 5, 10),  # identical rates: p = 1
        (0, 10, 0, 10),  # no successes anywhere: an empty column
        (10, 10, 10, 10),  # all successes
        (0, 20, 20, 20),  # perfectly separated
        (3, 7, 4, 7),  # symmetric ties in the pmf
        (0, 1, 1, 1),
        (2, 5, 0, 0),  # an empty row
    ],
)
def test_edge_tables_match_scipy(a, n1, c, n2):
    odds, p = fisher_two_sided_many(np.array([a]), np.array([n1]), np.array([c]), np.array([n2]))
    if n2 == 0:
        assert math.isnan(odds[0]) and p[0] == 1.0
        return
    ref_odds, ref_p = _scipy(a, n1, c, n2)
    assert p[0] == pytest.approx(ref_p, rel=1e-9)
    assert (math.isnan(odds[0]) and math.isnan(ref_odds)) or odds[0] == ref_odds


def test_batched_contrasts_equal_the_statistics_modules():
    rng = np.random.default_rng(7)
    pairs = {
        (f"f{i}", f"m{j}"): Counts(int(rng.binomial(400, 0.1 + 0.05 * i)), 400) for i in range(4) for j in range(5)
    }
    pairs[("f0", "m0")] = Counts(0, 0)  # a pair without data is left out by both
    fast = pairwise_contrasts_batched(pairs)
    slow = pairwise_contrasts(pairs)
    assert [(c.pair_a, c.pair_b) for c in fast] == [(c.pair_a, c.pair_b) for c in slow]
    assert len(fast) == 19 * 18 // 2
    for f, s in zip(fast, slow, strict=True):
        assert f.p == pytest.approx(s.p, rel=1e-8, abs=1e-300)
        assert f.q == pytest.approx(s.q, rel=1e-8, abs=1e-300)
        assert f.significant == s.significant and f.rate_a == s.rate_a and f.odds_ratio == pytest.approx(s.odds_ratio)


def test_fewer_than_two_pairs_with_data_give_no_contrasts():
    assert pairwise_contrasts_batched({"a": Counts(1, 2), "b": Counts(0, 0)}) == []


def test_impossible_counts_are_refused():
    with pytest.raises(ValueError, match="0 <= a <= n1"):
        fisher_two_sided_many(np.array([3]), np.array([2]), np.array([0]), np.array([1]))
