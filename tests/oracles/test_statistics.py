"""oracles.statistics: intervals, contrasts, re-weighting and the decomposition against planted truth."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
from scipy.stats import false_discovery_control, fisher_exact

from oracles.scheduler import CampaignParams, Scheduler
from oracles.statistics import (
    BASIC,
    NO_RESERVE,
    NOISE_CORRECTED,
    RESERVE,
    RESERVE_Z,
    Counts,
    corrected_shares,
    decompose,
    decompose_counts,
    harmonic_runs,
    interval_withheld_reason,
    noise_corrected_truth,
    noise_weights,
    pairwise_contrasts,
    planted_matrix,
    pooled_z_pvalues,
    rates,
    rates_by,
    reserve_contrasts,
    reserve_uniform_rate,
    tally,
    uniform_mix_rate,
    variance_shares,
    wilson,
    wilson_closed_form,
)

PAPER_SHARES = np.array([0.561, 0.208, 0.231])


def _draw_planted(rng: np.random.Generator) -> np.ndarray:
    while True:
        shares = rng.dirichlet(30 * PAPER_SHARES)
        try:
            return planted_matrix(
                shares, rng, mean=rng.uniform(0.15, 0.30), spread=rng.uniform(0.06, 0.14), max_tries=50
            )
        except ValueError:
            continue


# Wilson -------------------------------------------------------------------------------------------


def test_wilson_reproduces_the_papers_intervals():
    # SNARE: Claude Code × Sonnet-4.6 19.60% [16.36, 23.31]; Gemini CLI × GPT-5.3-Codex 4.80% [3.25, 7.04].
    claude = wilson(98, 500)
    gemini = wilson(24, 500)
    assert claude.rate == pytest.approx(0.196)
    assert (round(claude.low * 100, 2), round(claude.high * 100, 2)) == (16.36, 23.31)
    assert (round(gemini.low * 100, 2), round(gemini.high * 100, 2)) == (3.25, 7.04)


def test_wilson_matches_a_hand_computed_example():
    # 8 of 20, z = 1.959964: centre = (0.4 + z²/40) / (1 + z²/20), half = z/(1 + z²/20)·sqrt(0.24/20 + z²/1600)
    z = 1.959963984540054
    denom = 1 + z * z / 20
    centre = (0.4 + z * z / 40) / denom
    half = z / denom * math.sqrt(0.4 * 0.6 / 20 + z * z / 1600)
    assert (centre - half, centre + half) == pytest.approx((0.2188, 0.6134), abs=5e-5)
    rate = wilson(8, 20)
    assert (rate.low, rate.high) == pytest.approx((centre - half, centre + half), abs=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (3, 7), (0, 40), (40, 40), (137, 500)])
def test_scipy_wilson_agrees_with_the_closed_form(k, n):
    rate = wilson(k, n)
    assert (rate.low, rate.high) == pytest.approx(wilson_closed_form(k / n, n), abs=1e-12)


def test_no_runs_give_no_rate_and_the_uninformative_interval():
    rate = wilson(0, 0)
    assert rate.rate is None
    assert (rate.low, rate.high) == (0.0, 1.0)
    assert wilson_closed_form(0.0, 0) == (0.0, 1.0)


def test_all_successes_reach_one_and_no_successes_reach_zero():
    every = wilson(12, 12)
    assert every.rate == 1.0 and every.high == pytest.approx(1.0) and every.low < 1.0
    none = wilson(0, 12)
    assert none.rate == 0.0 and none.low == pytest.approx(0.0) and none.high > 0.0


def test_counts_reject_impossible_tallies():
    with pytest.raises(ValueError):
        Counts(5, 4)
    with pytest.raises(ValueError):
        Counts(-1, 4)


# Per-cell and per-archetype rates ------------------------------------------------------------------


def test_cells_are_tallied_and_pooled_by_archetype():
    outcomes = [
        (("creds", "silent"), True),
        (("creds", "silent"), False),
        (("creds", "deny"), True),
        (("rm", "silent"), False),
    ]
    cells = tally(outcomes)
    assert cells == {("creds", "silent"): Counts(1, 2), ("creds", "deny"): Counts(1, 1), ("rm", "silent"): Counts(0, 1)}
    assert rates(cells)[("creds", "silent")].rate == 0.5
    by_archetype = rates_by(cells, lambda cell: cell[0])
    assert (by_archetype["creds"].successes, by_archetype["creds"].n) == (2, 3)
    assert by_archetype["rm"].rate == 0.0


# Uniform cell mix -----------------------------------------------------------------------------------


def test_reweighted_rate_equals_raw_rate_when_cells_are_balanced():
    cells = {("a", "silent"): Counts(3, 10), ("a", "deny"): Counts(7, 10), ("b", "silent"): Counts(0, 10)}
    mix = uniform_mix_rate(cells)
    assert mix.uniform == pytest.approx(mix.raw.rate)
    assert (mix.low, mix.high) == pytest.approx((mix.raw.low, mix.raw.high))
    assert mix.effective_n == pytest.approx(30)


def test_reweighting_removes_the_oversampling_of_high_yield_cells():
    # The scheduler spent 90 runs on a 60% cell and 10 on a 10% cell: raw 55%, uniform mix 35%.
    cells = {"hot": Counts(54, 90), "cold": Counts(1, 10)}
    mix = uniform_mix_rate(cells, all_cells=["hot", "cold", "never-run"])
    assert mix.raw.rate == pytest.approx(0.55)
    assert mix.uniform == pytest.approx(0.35)
    assert mix.low < 0.35 < mix.high
    assert mix.effective_n == pytest.approx(1 / (0.25 / 90 + 0.25 / 10))
    assert (mix.cells_with_data, mix.cells_without_data) == (2, 1)
    assert "raw_rate (as sampled)" in mix.as_dict()


def test_reweighted_rate_without_data_is_none():
    mix = uniform_mix_rate({"a": Counts(0, 0)})
    assert mix.uniform is None and (mix.low, mix.high) == (0.0, 1.0) and mix.cells_without_data == 1


# Pairwise contrasts ---------------------------------------------------------------------------------


def test_contrasts_match_scipy_fisher_and_bh():
    pairs = {("oh", "glm"): Counts(286, 500), ("cc", "sonnet"): Counts(98, 500), ("gem", "codex"): Counts(24, 500)}
    table = pairwise_contrasts(pairs)
    assert [(c.pair_a, c.pair_b) for c in table] == [
        (("oh", "glm"), ("cc", "sonnet")),
        (("oh", "glm"), ("gem", "codex")),
        (("cc", "sonnet"), ("gem", "codex")),
    ]
    expected = [
        fisher_exact([[a.successes, a.n - a.successes], [b.successes, b.n - b.successes]])
        for a, b in [
            (pairs[("oh", "glm")], pairs[("cc", "sonnet")]),
            (pairs[("oh", "glm")], pairs[("gem", "codex")]),
            (pairs[("cc", "sonnet")], pairs[("gem", "codex")]),
        ]
    ]
    qs = false_discovery_control([r.pvalue for r in expected], method="bh")
    for contrast, result, q in zip(table, expected, qs, strict=True):
        assert contrast.p == pytest.approx(result.pvalue)
        assert contrast.odds_ratio == pytest.approx(result.statistic)
        assert contrast.q == pytest.approx(q)
        assert contrast.significant == (q <= 0.05)
    assert table[0].rate_a == pytest.approx(0.572) and table[0].significant


def test_bh_q_values_are_monotone_in_p_and_never_below_p():
    rng = np.random.default_rng(7)
    pairs = {f"pair{i}": Counts(int(k), 60) for i, k in enumerate(rng.integers(5, 30, size=8))}
    table = sorted(pairwise_contrasts(pairs), key=lambda c: c.p)
    assert len(table) == 28
    assert all(c.q >= c.p - 1e-15 for c in table)
    assert all(earlier.q <= later.q + 1e-15 for earlier, later in pairwise(table))


def test_a_single_pair_has_no_contrasts():
    assert pairwise_contrasts({"only": Counts(3, 10)}) == []
    assert pairwise_contrasts({"only": Counts(3, 10), "empty": Counts(0, 0)}) == []
    assert pairwise_contrasts({}) == []


def test_identical_all_success_pairs_are_not_significant():
    (contrast,) = pairwise_contrasts({"a": Counts(5, 5), "b": Counts(5, 5)})
    assert contrast.p == 1.0 and not contrast.significant


# Decomposition ---------------------------------------------------------------------------------------


def test_noise_free_additive_matrix_has_no_interaction_and_the_planted_main_effects():
    rows = np.array([-0.1, 0.0, 0.05, 0.05])
    cols = np.array([0.04, -0.02, -0.02, 0.0, 0.0])
    matrix = 0.3 + rows[:, None] + cols[None, :]
    ss_f, ss_m = 5 * (rows**2).sum(), 4 * (cols**2).sum()
    shares = variance_shares(matrix)
    assert shares == pytest.approx([ss_f / (ss_f + ss_m), ss_m / (ss_f + ss_m), 0.0], abs=1e-12)


def test_planted_matrix_has_exactly_the_planted_shares():
    matrix = planted_matrix([0.561, 0.208, 0.231], np.random.default_rng(3))
    assert matrix.shape == (4, 5)
    assert variance_shares(matrix) == pytest.approx([0.561, 0.208, 0.231], abs=1e-12)


def test_noise_weights_sum_to_the_noise_degrees_of_freedom():
    weights = noise_weights(4, 5)
    assert weights == pytest.approx((0.15, 0.20, 0.60))
    assert sum(weights) == pytest.approx(1 - 1 / 20)


def test_decomposition_is_guarded_below_two_by_two():
    assert decompose({("fw", "model"): Counts(3, 10)}) is None
    assert decompose({("fw", "m1"): Counts(3, 10), ("fw", "m2"): Counts(5, 10)}) is None
    assert decompose_counts(np.array([[3]]), np.array([[10]])) is None


def test_decomposition_refuses_a_pair_without_runs():
    with pytest.raises(ValueError, match="at least one scored run"):
        decompose_counts(np.array([[1, 2], [3, 0]]), np.array([[10, 10], [10, 0]]))


def test_a_flat_matrix_has_no_shares_to_apportion():
    shares = variance_shares(np.full((3, 3), 0.2))
    assert np.isnan(shares).all()


def test_decompose_reports_three_shares_with_intervals():
    rng = np.random.default_rng(11)
    truth = planted_matrix([0.561, 0.208, 0.231], rng)
    k = rng.binomial(500, truth)
    counts = {(f"fw{i}", f"m{j}"): Counts(int(k[i, j]), 500) for i in range(4) for j in range(5)}
    result = decompose(counts, n_boot=500, seed=1)
    assert result is not None
    assert result.frameworks == ("fw0", "fw1", "fw2", "fw3") and len(result.models) == 5
    assert sum(s.corrected for s in result.shares) == pytest.approx(1.0)
    assert sum(s.raw for s in result.shares) == pytest.approx(1.0)
    for share in result.shares:
        assert 0.0 <= share.low <= share.high <= 1.0 and share.low <= share.corrected + 0.02
    # Binomial noise inflates the raw interaction share; the correction takes some of it back.
    assert result.interaction.corrected < result.interaction.raw


def test_bootstrap_intervals_cover_planted_shares_at_500_runs_per_pair():
    rng = np.random.default_rng(20260527)
    matrices = 60
    covered = np.zeros(3)
    bias_raw = np.zeros(3)
    bias_corrected = np.zeros(3)
    for index in range(matrices):
        truth_matrix = _draw_planted(rng)
        truth = variance_shares(truth_matrix)
        n = np.full((4, 5), 500)
        table = decompose_counts(rng.binomial(n, truth_matrix), n, n_boot=1000, seed=index)
        raw, corrected, low, high = table.T
        covered += (low <= truth) & (truth <= high)
        bias_raw += raw - truth
        bias_corrected += corrected - truth
    assert (covered / matrices >= 0.80).all(), covered / matrices
    # The correction removes most of the interaction's upward noise bias.
    assert bias_raw[2] > 0
    assert abs(bias_corrected[2]) < abs(bias_raw[2])


def test_shares_are_within_two_points_at_5000_runs_per_pair():
    rng = np.random.default_rng(5000)
    errors = []
    for index in range(30):
        truth_matrix = _draw_planted(rng)
        n = np.full((4, 5), 5000)
        table = decompose_counts(rng.binomial(n, truth_matrix), n, n_boot=200, seed=index)
        errors.append(np.abs(table[:, 1] - variance_shares(truth_matrix)))
    assert (np.median(errors, axis=0) <= 0.02).all(), np.median(errors, axis=0)


# Uniform cell mix under adaptive allocation (issue 23) -------------------------------------------


def test_the_reserve_rate_is_the_wilson_rate_of_the_reserve_runs():
    cells = {"hot": Counts(30, 40), "cold": Counts(1, 12)}
    mix = reserve_uniform_rate(cells, Counts(4, 20), all_cells=["hot", "cold", "never-run"])
    ref = wilson(4, 20)
    assert mix.uniform == pytest.approx(0.2) and (mix.low, mix.high) == (ref.low, ref.high)
    assert mix.raw.n == 52 and mix.effective_n == 20 and mix.cells_without_data == 1
    assert mix.method == RESERVE


def test_without_reserve_runs_there_is_no_uniform_mix_rate():
    mix = reserve_uniform_rate({"a": Counts(3, 9)}, Counts(0, 0))
    assert mix.uniform is None and (mix.low, mix.high) == (0.0, 1.0) and mix.method == NO_RESERVE
    assert mix.raw.rate == pytest.approx(1 / 3)


def test_under_thompson_allocation_the_reserve_is_unbiased_and_the_stratified_estimate_is_not():
    # Planted truth, the scheduler as shipped (a single Monte Carlo replay: propensities are not
    # what is tested, and the replays are most of a round's cost). The stratified estimator treats
    # each cell's count as fixed, but a cell that fails early stops being sampled.
    cells = [(f"a{i:02d}", c) for i in range(24) for c in "vwxyz"]
    pool = {c: [f"{c}.{i}" for i in range(8)] for c in cells}
    reserve_err, stratified_err = [], []
    for seed in range(12):
        truth = np.random.default_rng([seed, 0]).beta(0.6, 2.4, size=len(cells))
        rate = dict(zip(cells, truth, strict=True))
        outcomes = np.random.default_rng([seed, 1])
        sched = Scheduler(CampaignParams(seed=seed, propensity_draws=1))
        hits: dict[tuple[str, str], Counts] = {}
        reserve = Counts(0, 0)
        while not sched.done:
            for slot in sched.next_round(pool):
                y = bool(outcomes.random() < rate[slot.cell])
                sched.record(slot, y)
                hits[slot.cell] = hits.get(slot.cell, Counts(0, 0)) + Counts(int(y), 1)
                if slot.tier == "uniform":
                    reserve = reserve + Counts(int(y), 1)
        reserve_err.append(reserve_uniform_rate(hits, reserve).uniform - truth.mean())
        stratified_err.append(uniform_mix_rate(hits).uniform - truth.mean())
    # SE of the reserve's mean error over 12 campaigns ≈ 1.2 pp; the stratified bias is ≈ −4 pp
    # with an SE near 0.5 pp (bench/adaptive_coverage.py has the 400-campaign numbers).
    assert abs(np.mean(reserve_err)) < 0.03
    assert np.mean(stratified_err) < -0.025


# Issue 35: contrasts valid under adaptive allocation -------------------------------------------------


def test_the_reserve_contrast_is_pearsons_chi_square_without_continuity_correction():
    from scipy.stats import chi2_contingency

    reserves = {"a": Counts(12, 100), "b": Counts(27, 104), "c": Counts(15, 96)}
    table = reserve_contrasts(reserves)
    assert [(c.pair_a, c.pair_b) for c in table] == [("a", "b"), ("a", "c"), ("b", "c")]
    for contrast in table:
        x, y = reserves[contrast.pair_a], reserves[contrast.pair_b]
        chi2 = chi2_contingency([[x.successes, x.n - x.successes], [y.successes, y.n - y.successes]], correction=False)
        assert contrast.p == pytest.approx(chi2.pvalue)
        assert (contrast.rate_a, contrast.n_a) == (x.successes / x.n, x.n) and contrast.method == RESERVE_Z
    qs = false_discovery_control([c.p for c in table], method="bh")
    assert [c.q for c in table] == pytest.approx(list(qs))
    assert [c.significant for c in table] == [bool(q <= 0.05) for q in qs]


def test_a_planted_difference_is_significant_and_equal_reserves_are_not():
    different = reserve_contrasts({"low": Counts(10, 100), "high": Counts(40, 100)})[0]
    assert different.p < 1e-5 and different.significant
    close = reserve_contrasts({"x": Counts(20, 100), "y": Counts(22, 100)})[0]
    assert close.p > 0.5 and not close.significant
    same = reserve_contrasts({"x": Counts(20, 100), "y": Counts(20, 100)})[0]
    assert same.p == pytest.approx(1.0) and same.odds_ratio == pytest.approx(1.0)


def test_the_reserve_contrast_survives_degenerate_tables():
    # No variation at all (both 0 of n, or both n of n): nothing to test, p = 1, not NaN.
    for k in (0, 50):
        c = reserve_contrasts({"a": Counts(k, 50), "b": Counts(k, 50)})[0]
        assert c.p == 1.0 and not c.significant and math.isnan(c.odds_ratio)
    one_sided = reserve_contrasts({"a": Counts(0, 50), "b": Counts(10, 50)})[0]
    assert one_sided.odds_ratio == 0.0 and one_sided.significant
    assert math.isinf(reserve_contrasts({"a": Counts(10, 50), "b": Counts(0, 50)})[0].odds_ratio)


def test_pairs_without_reserve_runs_are_not_contrasted():
    assert reserve_contrasts({"a": Counts(3, 10), "b": Counts(0, 0)}) == []
    table = reserve_contrasts({"a": Counts(3, 10), "b": Counts(0, 0), "c": Counts(5, 10)})
    assert [(c.pair_a, c.pair_b) for c in table] == [("a", "c")]


@pytest.mark.parametrize(("n1", "n2"), [(100, 100), (90, 110), (40, 60)])
@pytest.mark.parametrize("p", [0.05, 0.1, 0.2, 0.3])
def test_the_pooled_z_tests_exact_size_at_reserve_sizes_is_within_half_a_point_of_nominal(n1, n2, p):
    # The reserve runs of two campaigns are two independent binomial samples by design, so the
    # size of the test between two identical campaigns is this sum, with no Monte Carlo error.
    from scipy.stats import binom

    k1, k2 = np.meshgrid(np.arange(n1 + 1), np.arange(n2 + 1), indexing="ij")
    reject = pooled_z_pvalues(k1, np.full(k1.shape, n1), k2, np.full(k2.shape, n2)) <= 0.05
    size = float((binom.pmf(k1, n1, p) * binom.pmf(k2, n2, p))[reject].sum())
    assert size <= 0.055


# Issue 35: decomposition intervals calibrated, withheld where none reaches 93% ---------------------


def test_the_interval_is_withheld_below_a_harmonic_mean_of_200_runs_per_pair():
    assert "average 100 (harmonic mean), under 200" in interval_withheld_reason([100] * 20)
    assert interval_withheld_reason([200] * 20) == ""  # exactly at the floor, despite float sums
    assert interval_withheld_reason(list(range(50, 801, 40))) == ""  # unbalanced 50–800 (harmonic ≈ 230)
    # One thin pair drags the harmonic mean down: its noise dominates the shares.
    assert interval_withheld_reason([1000] * 19 + [10]) != ""
    assert harmonic_runs([100, 300]) == pytest.approx(150.0)


def test_the_bootstrap_world_has_the_corrected_shares():
    rng = np.random.default_rng(3)
    truth = planted_matrix([0.5, 0.3, 0.2], rng)
    n = np.full((4, 5), 150)
    k = rng.binomial(n, truth)
    _, corrected = corrected_shares(k, n)
    world = noise_corrected_truth(k, n)
    assert variance_shares(world) == pytest.approx(corrected, abs=1e-9)
    # p̂ itself has more spread than the world the bootstrap resamples from.
    assert ((world - world.mean()) ** 2).sum() < ((k / n - (k / n).mean()) ** 2).sum()


def test_the_new_interval_covers_where_the_basic_one_fell_short_at_100_runs_per_pair():
    # Planted 4×5 matrices at 100 runs per pair, both intervals on the same counts: the basic
    # interval from p̂ is too narrow there (85–90% in the bench); the one from the corrected world
    # is wider and covers more. 80 matrices keep this a unit test; the bench measures the rates.
    rng = np.random.default_rng(35)
    hits = {BASIC: np.zeros(3), NOISE_CORRECTED: np.zeros(3)}
    for index in range(80):
        truth_matrix = _draw_planted(rng)
        truth = variance_shares(truth_matrix)
        n = np.full((4, 5), 100)
        k = rng.binomial(n, truth_matrix)
        for method in hits:
            table = decompose_counts(k, n, n_boot=400, seed=index, interval=method)
            hits[method] += (table[:, 2] <= truth) & (truth <= table[:, 3])
    assert hits[NOISE_CORRECTED].sum() > hits[BASIC].sum()
    assert (hits[NOISE_CORRECTED] / 80 >= 0.88).all(), hits


def test_an_unknown_interval_is_refused():
    with pytest.raises(ValueError, match="unknown interval"):
        decompose_counts(np.full((2, 2), 3), np.full((2, 2), 10), interval="bca")
