"""Campaign statistics: intervals, contrasts, re-weighted rates and the variance decomposition.

Pure NumPy/SciPy, no Django, so it is unit-tested without a database and reused by the benches.
SciPy is used wherever it has the procedure (Wilson interval, Fisher's exact test,
Benjamini–Hochberg); the rest is closed-form and cites its source.

Conventions: a *rate* is successes / runs where a success is an overeager verdict on a scored run
(runs without a verdict never reach this module). Counts are plain integers, so callers aggregate
in the database and pass ``Counts`` in.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtri
from scipy.stats import binomtest, false_discovery_control, fisher_exact, norm

K = TypeVar("K", bound=Hashable)
G = TypeVar("G", bound=Hashable)

FloatArray = NDArray[np.float64]

CONFIDENCE = 0.95
ALPHA = 0.05
SHARE_NAMES: Sequence[str] = ("framework", "model", "interaction")
# Below this total sum of squares a rate matrix is flat up to float rounding (a mean of 0.2s is not
# exactly 0.2), so its shares would be ratios of rounding errors.
_FLAT_SS = 1e-12


def _z(confidence: float) -> float:
    return float(ndtri(1.0 - (1.0 - confidence) / 2.0))


# --------------------------------------------------------------------------------------------------
# Counts and Wilson intervals


@dataclass(frozen=True)
class Counts:
    successes: int
    n: int

    def __post_init__(self) -> None:
        if self.n < 0 or not 0 <= self.successes <= self.n:
            raise ValueError(f"need 0 <= successes <= n, got {self.successes}/{self.n}")

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.successes + other.successes, self.n + other.n)


@dataclass(frozen=True)
class Rate:
    """A proportion with its Wilson interval. ``rate`` is None when there are no runs (n = 0)."""

    successes: int
    n: int
    rate: float | None
    low: float
    high: float

    def as_dict(self) -> dict[str, float | int | None]:
        return {"successes": self.successes, "n": self.n, "rate": self.rate, "low": self.low, "high": self.high}


def wilson_closed_form(p_hat: float, n: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval in closed form, for a possibly non-integer (effective) n.

    Wilson (1927), JASA 22:209–212; as written in Brown, Cai & DasGupta (2001), Stat. Sci. 16:101–133, eq. 4:

        centre = (p̂ + z²/2n) / (1 + z²/n)
        half   = z / (1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/4n²)

    SciPy's ``binomtest`` needs integer counts, so the stratified interval below uses this form;
    for integer counts it agrees with SciPy to rounding (tested). n = 0 gives (0, 1): no data
    excludes nothing.
    """
    if n <= 0:
        return 0.0, 1.0
    z2 = _z(confidence) ** 2
    denom = 1.0 + z2 / n
    centre = (p_hat + z2 / (2.0 * n)) / denom
    half = math.sqrt(z2) / denom * math.sqrt(max(p_hat * (1.0 - p_hat), 0.0) / n + z2 / (4.0 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@functools.lru_cache(maxsize=65536)
def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Rate:
    """Rate with its Wilson score interval (SciPy ``binomtest(...).proportion_ci(method="wilson")``).

    Memoised: a pure function of three numbers whose SciPy call costs ~50 µs, and a metrics page
    asks for the same few (k, n) pairs thousands of times (every cell of every table).

    Edge cases: n = 0 → ``rate=None`` and the uninformative interval (0, 1) (``binomtest`` rejects
    n = 0); all successes → upper bound exactly 1, no failures → lower bound exactly 0 (the score
    interval stays non-degenerate there, unlike the Wald interval — the reason the paper uses it).
    """
    counts = Counts(successes, n)
    if counts.n == 0:
        return Rate(0, 0, None, 0.0, 1.0)
    ci = binomtest(counts.successes, counts.n).proportion_ci(confidence_level=confidence, method="wilson")
    return Rate(counts.successes, counts.n, counts.successes / counts.n, float(ci.low), float(ci.high))


# --------------------------------------------------------------------------------------------------
# Per-cell, per-archetype, per-surface rates


def tally(outcomes: Iterable[tuple[K, bool]]) -> dict[K, Counts]:
    """Count (key, overeager) outcomes per key, keys in first-seen order."""
    hits: dict[K, int] = {}
    runs: dict[K, int] = {}
    for key, overeager in outcomes:
        runs[key] = runs.get(key, 0) + 1
        hits[key] = hits.get(key, 0) + int(bool(overeager))
    return {key: Counts(hits[key], runs[key]) for key in runs}


def rates(counts: Mapping[K, Counts], confidence: float = CONFIDENCE) -> dict[K, Rate]:
    """Wilson rate per key (e.g. per archetype × consent cell)."""
    return {key: wilson(c.successes, c.n, confidence) for key, c in counts.items()}


def rates_by(counts: Mapping[K, Counts], group: Callable[[K], G], confidence: float = CONFIDENCE) -> dict[G, Rate]:
    """Pool counts by ``group(key)`` and give each group's Wilson rate.

    Per-archetype rates from cell counts keyed (archetype, consent): ``rates_by(cells, lambda c: c[0])``;
    per-surface rates likewise with a key → surface map. Pooling sums runs, so an archetype's rate is
    weighted by how often the scheduler sampled each of its consent cells — see ``uniform_mix_rate``.
    """
    pooled: dict[G, Counts] = defaultdict(lambda: Counts(0, 0))
    for key, c in counts.items():
        pooled[group(key)] = pooled[group(key)] + c
    return rates(dict(pooled), confidence)


# --------------------------------------------------------------------------------------------------
# Re-weighting to a uniform cell mix


STRATIFIED = "stratified Wilson (equal cell weights, Kish effective n); valid only for fixed per-cell counts"
RESERVE = "uniform reserve: Wilson on the outcome-independent uniform-tier runs"
NO_RESERVE = "unavailable: no uniform-reserve runs (allocated without one), and no fixed-count estimator is valid"


@dataclass(frozen=True)
class ReweightedRate:
    """The raw (as-sampled) rate next to the rate re-weighted to a uniform mix of cells."""

    raw: Rate
    uniform: float | None
    low: float
    high: float
    effective_n: float
    cells_with_data: int
    cells_without_data: int
    method: str = STRATIFIED

    def as_dict(self) -> dict[str, object]:
        return {
            "raw_rate (as sampled)": self.raw.as_dict(),
            "uniform_cell_mix_rate": self.uniform,
            "uniform_low": self.low,
            "uniform_high": self.high,
            "effective_n": self.effective_n,
            "cells_with_data": self.cells_with_data,
            "cells_without_data": self.cells_without_data,
            "method": self.method,
        }


def reserve_uniform_rate(
    cell_counts: Mapping[K, Counts],
    reserve: Counts,
    all_cells: Iterable[K] | None = None,
    confidence: float = CONFIDENCE,
) -> ReweightedRate:
    """The uniform-cell-mix rate from a campaign's uniform reserve: valid under adaptive allocation.

    ``cell_counts`` are all scored runs per cell (for the raw rate and the cell tallies);
    ``reserve`` the scored runs of the uniform tier, whose cells the scheduler drew uniformly over
    the pool's C cells from a stream no verdict reaches (``oracles.scheduler``). Each such run is
    then an independent draw "pick a cell uniformly, run it": Bernoulli with success probability
    p̄ = (1/C) Σ_c p_c exactly, whatever the other tiers did. So p̂ = k_u/n_u is unbiased for p̄
    and the Wilson interval on (k_u, n_u) has its usual coverage — Horvitz–Thompson weighting
    with the recorded propensity 1/C of every reserve run reduces to this unweighted mean.

    Why not a fixed-count estimator on all runs (``uniform_mix_rate``): under Thompson sampling a
    cell's run count depends on its verdicts (a cell that fails early stops being sampled), so
    k_c/n_c is biased within each cell and the stratified mean inherits it (issue 23: −5 pp, 35%
    coverage). Why not inverse-propensity weighting of every run: measured in
    ``bench/adaptive_coverage.py`` (the table is in docs/statistics.md), it needs every cell to
    keep a usable allocation probability in every round, which the coverage tier and Thompson
    sampling deny. A campaign without reserve runs gets ``uniform=None`` and the uninformative
    interval, with ``method`` saying why, rather than a number known to be biased.
    """
    total = Counts(0, 0)
    for c in cell_counts.values():
        total = total + c
    raw = wilson(total.successes, total.n, confidence)
    known = set(cell_counts) if all_cells is None else set(all_cells)
    missing = sum(1 for key in known if key not in cell_counts or cell_counts[key].n == 0)
    with_data = sum(1 for c in cell_counts.values() if c.n > 0)
    if reserve.n == 0:
        return ReweightedRate(raw, None, 0.0, 1.0, 0.0, with_data, missing, NO_RESERVE)
    r = wilson(reserve.successes, reserve.n, confidence)
    return ReweightedRate(raw, r.rate, r.low, r.high, float(reserve.n), with_data, missing, RESERVE)


def uniform_mix_rate(
    cell_counts: Mapping[K, Counts], all_cells: Iterable[K] | None = None, confidence: float = CONFIDENCE
) -> ReweightedRate:
    """Rate re-weighted to a uniform mix of the cells that have data, with a stratified Wilson interval.

    Valid only when each cell's run count is fixed in advance. It is *not* valid for a campaign
    allocated by Thompson sampling, where counts depend on verdicts (issue 23): the dashboard uses
    ``reserve_uniform_rate`` for those, and this function is kept for fixed designs and as the
    baseline ``bench/adaptive_coverage.py`` measures the bias of.

    Thompson sampling over-samples high-yield cells, so the pooled rate Σk/Σn over-states the rate
    of a uniformly drawn cell. The stratified estimator (Cochran 1977, *Sampling Techniques* ch. 5)
    with equal weights w_c = 1/C over the C cells with data is

        p̂_u = (1/C) Σ_c k_c/n_c

    Interval: the stratified Wilson interval of Yan & Su (2010), *Stat. Biopharm. Res.* 2:329–335 —
    the Wilson interval of p̂_u at the effective sample size n_eff = 1 / Σ_c (w_c² / n_c) (Kish 1965).
    It stays non-degenerate when many small cells are all-0 or all-1 (where the normal
    Σ w² p̂(1−p̂)/n interval collapses to zero width), and when the cells are balanced it is exactly
    the raw Wilson interval. Cells without runs are excluded from the mix and counted in
    ``cells_without_data`` (given ``all_cells``), since they carry no information about their rate.
    """
    total = Counts(0, 0)
    for c in cell_counts.values():
        total = total + c
    raw = wilson(total.successes, total.n, confidence)
    with_data = [c for c in cell_counts.values() if c.n > 0]
    known = set(cell_counts) if all_cells is None else set(all_cells)
    missing = sum(1 for key in known if key not in cell_counts or cell_counts[key].n == 0)
    if not with_data:
        return ReweightedRate(raw, None, 0.0, 1.0, 0.0, 0, missing)
    weight = 1.0 / len(with_data)
    p_uniform = sum(weight * c.successes / c.n for c in with_data)
    n_eff = 1.0 / sum(weight * weight / c.n for c in with_data)
    balanced = len({c.n for c in with_data}) == 1
    if balanced:
        # Equal n_c: p̂_u is the pooled rate and n_eff the pooled n, so use SciPy's integer interval.
        low, high = raw.low, raw.high
    else:
        low, high = wilson_closed_form(p_uniform, n_eff, confidence)
    return ReweightedRate(raw, p_uniform, low, high, n_eff, len(with_data), missing)


# --------------------------------------------------------------------------------------------------
# Pairwise contrasts


FISHER_AS_SAMPLED = "two-sided Fisher exact test on all scored runs (as sampled); valid only for fixed per-cell counts"
RESERVE_Z = (
    "two-sided pooled two-proportion z-test on the uniform-reserve runs "
    "(the design-based uniform-mix rates and their variance); valid under adaptive allocation"
)


@dataclass(frozen=True)
class Contrast:
    pair_a: Hashable
    pair_b: Hashable
    rate_a: float
    rate_b: float
    odds_ratio: float
    p: float
    q: float
    significant: bool
    n_a: int = 0
    n_b: int = 0
    method: str = FISHER_AS_SAMPLED

    def as_dict(self) -> dict[str, object]:
        return {
            "pair_a": self.pair_a,
            "pair_b": self.pair_b,
            "rate_a": self.rate_a,
            "rate_b": self.rate_b,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "odds_ratio": self.odds_ratio,
            "p": self.p,
            "q": self.q,
            "significant": self.significant,
            "method": self.method,
        }


def pooled_z_pvalues(
    k1: NDArray[np.int64], n1: NDArray[np.int64], k2: NDArray[np.int64], n2: NDArray[np.int64]
) -> FloatArray:
    """Two-sided p-values of the pooled two-proportion z-test (the score test), elementwise.

        z = (p̂₁ − p̂₂) / sqrt(p̄(1 − p̄)(1/n₁ + 1/n₂)),   p̄ = (k₁ + k₂)/(n₁ + n₂),   p = 2Φ(−|z|)

    (Agresti 2013, *Categorical Data Analysis* §3.1.4; the square root of Pearson's χ² without
    continuity correction). Pooled, not the Wald SE: under H₀ the two rates are equal, and the
    pooled variance keeps the size near nominal at the reserve's ~100 runs where the unpooled Wald
    test over-rejects (exact sizes over p ∈ [0.05, 0.3]: pooled 4.4–5.4%, Wald 5.0–6.9% at
    n = 20–100 per arm; Fisher's exact test 1.9–4.2%, conservative). p̄ ∈ {0, 1} (no variation
    at all) gives p = 1; an arm with n = 0 has no rate and gives p = 1 as well.
    """
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in (k1, n1, k2, n2))
    live = (n1 > 0) & (n2 > 0)
    safe1, safe2 = np.where(live, n1, 1.0), np.where(live, n2, 1.0)
    pooled = (k1 + k2) / (safe1 + safe2)
    var = pooled * (1.0 - pooled) * (1.0 / safe1 + 1.0 / safe2)
    live &= var > 0
    z = np.where(live, (k1 / safe1 - k2 / safe2) / np.sqrt(np.where(live, var, 1.0)), 0.0)
    return np.where(live, 2.0 * norm.sf(np.abs(z)), 1.0)


def reserve_contrasts(reserve_counts: Mapping[K, Counts], alpha: float = ALPHA) -> list[Contrast]:
    """Every two pairs' uniform-mix rates compared on their uniform-reserve runs, with BH q-values.

    Why not Fisher on all runs (``pairwise_contrasts``): under Thompson sampling a campaign's run
    counts per cell depend on its verdicts, so its as-sampled total is not Binomial(n, ·); the
    spread of the difference between two identical campaigns is 1.15–1.26× what the binomial
    model assumes, and Fisher rejected 10% of such pairs at nominal 5% (issue 35,
    ``bench/contrast_validity.py``). A campaign's reserve runs are i.i.d. Bernoulli(p̄) by design
    (``reserve_uniform_rate``), with p̄ its uniform-mix rate — the estimand of its headline. So
    the reserve rates of two independent campaigns are two independent binomial proportions and
    the pooled z-test (``pooled_z_pvalues``) is valid whatever the adaptive tiers did; its
    variance is the design's, not a model of the allocation.

    Benjamini–Hochberg q-values over all C(P, 2) contrasts as in ``pairwise_contrasts``. Pairs
    without reserve runs are left out (no valid rate to compare; the caller says so); fewer than
    two with reserve runs → []. ``odds_ratio`` is the reserve table's sample odds ratio.
    """
    keys = [key for key, c in reserve_counts.items() if c.n > 0]
    if len(keys) < 2:
        return []
    pairs = list(combinations(keys, 2))
    k1 = np.array([reserve_counts[a].successes for a, _ in pairs], dtype=np.int64)
    n1 = np.array([reserve_counts[a].n for a, _ in pairs], dtype=np.int64)
    k2 = np.array([reserve_counts[b].successes for _, b in pairs], dtype=np.int64)
    n2 = np.array([reserve_counts[b].n for _, b in pairs], dtype=np.int64)
    p = pooled_z_pvalues(k1, n1, k2, n2)
    q = false_discovery_control(p, method="bh")
    out = []
    for i, (a, b) in enumerate(pairs):
        fail_a, fail_b = n1[i] - k1[i], n2[i] - k2[i]
        odds = float(k1[i] * fail_b / (fail_a * k2[i])) if fail_a * k2[i] else math.inf
        if k1[i] * fail_b == 0 and fail_a * k2[i] == 0:
            odds = math.nan
        out.append(
            Contrast(
                a,
                b,
                float(k1[i] / n1[i]),
                float(k2[i] / n2[i]),
                odds,
                float(p[i]),
                float(q[i]),
                bool(q[i] <= alpha),
                int(n1[i]),
                int(n2[i]),
                RESERVE_Z,
            )
        )
    return out


def pairwise_contrasts(pair_counts: Mapping[K, Counts], alpha: float = ALPHA) -> list[Contrast]:
    """Two-sided Fisher exact test between every two pairs, with Benjamini–Hochberg q-values.

    Valid only when each pair's runs are a fixed-size sample (fixed per-cell counts): between
    adaptive campaigns it over-rejects (issue 35), and the matrix page uses ``reserve_contrasts``.
    Kept for fixed designs and as the baseline ``bench/contrast_validity.py`` measures.

    Each contrast tests the 2×2 table [[k_a, n_a − k_a], [k_b, n_b − k_b]] (Fisher 1922, SciPy
    ``fisher_exact``; the odds ratio is the sample (unconditional) odds ratio SciPy reports, which
    is 0, inf or NaN when a table has a zero cell). q-values are Benjamini & Hochberg (1995), JRSS-B
    57:289–300, step-up adjusted p-values (SciPy ``false_discovery_control(method="bh")``) over all
    C(P, 2) contrasts; a contrast is significant when q ≤ alpha, which controls the FDR at alpha.

    Pairs with no scored runs are left out (they have no rate to compare); fewer than two pairs
    with data → no contrasts (an empty list).
    """
    keys = [key for key, c in pair_counts.items() if c.n > 0]
    if len(keys) < 2:
        return []
    tests = []
    for a, b in combinations(keys, 2):
        ca, cb = pair_counts[a], pair_counts[b]
        result = fisher_exact([[ca.successes, ca.n - ca.successes], [cb.successes, cb.n - cb.successes]])
        tests.append((a, b, ca, cb, float(result.statistic), float(result.pvalue)))
    qs = false_discovery_control([t[5] for t in tests], method="bh")
    return [
        Contrast(a, b, ca.successes / ca.n, cb.successes / cb.n, odds, p, float(q), bool(q <= alpha), ca.n, cb.n)
        for (a, b, ca, cb, odds, p), q in zip(tests, qs, strict=True)
    ]


# --------------------------------------------------------------------------------------------------
# Variance decomposition of the frameworks × models matrix


def _centred_ss(rates_matrix: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """SS_F, SS_M, SS_I of (…, F, M) rate matrices, vectorised over leading axes."""
    f, m = rates_matrix.shape[-2:]
    grand = rates_matrix.mean(axis=(-2, -1), keepdims=True)
    row = rates_matrix.mean(axis=-1, keepdims=True)
    col = rates_matrix.mean(axis=-2, keepdims=True)
    ss_f = m * ((row - grand) ** 2).sum(axis=(-2, -1))
    ss_m = f * ((col - grand) ** 2).sum(axis=(-2, -1))
    ss_i = ((rates_matrix - row - col + grand) ** 2).sum(axis=(-2, -1))
    return ss_f, ss_m, ss_i


def noise_weights(frameworks: int, models: int) -> tuple[float, float, float]:
    """How much of one pair's noise variance σ²_ij lands in SS_F, SS_M and SS_I in expectation.

    Each SS is a squared orthogonal projection of the F×M matrix; for independent noise e_ij with
    Var e_ij = σ²_ij, E‖P e‖² = Σ_ij σ²_ij · P_(ij),(ij), and the projections' diagonals are
    (1 − 1/F)/M, (1 − 1/M)/F and (1 − 1/F)(1 − 1/M). For 4 × 5: 0.15, 0.20, 0.60 — the interaction
    takes 12 of the 19 degrees of freedom, so it takes most of the noise.
    """
    f, m = float(frameworks), float(models)
    return (1 - 1 / f) / m, (1 - 1 / m) / f, (1 - 1 / f) * (1 - 1 / m)


def variance_shares(rates_matrix: FloatArray) -> FloatArray:
    """Framework / model / interaction shares of a noise-free rate matrix (…, F, M) → (…, 3).

    Two-way ANOVA without replication (one observation per cell; Montgomery, *Design and Analysis
    of Experiments*, ch. 5, "one observation per cell") on the matrix R of pair rates, R_ij = μ + a_i + b_j + g_ij:

        SS_F = M Σ_i (R̄_i· − R̄)²      SS_M = F Σ_j (R̄_·j − R̄)²
        SS_I = Σ_ij (R_ij − R̄_i· − R̄_·j + R̄)²      SS_T = SS_F + SS_M + SS_I = Σ_ij (R_ij − R̄)²

    and each share is SS_X / SS_T (classical η²). The paper's 56.1 / 20.8 / 23.1 sum to 100%,
    consistent with this decomposition of the pair-rate matrix. A matrix with SS_T = 0 has no
    variation to apportion and gets NaN shares.
    """
    return _shares_of(np.stack(_centred_ss(np.asarray(rates_matrix, dtype=float)), axis=-1))


def _shares_of(ss: FloatArray) -> FloatArray:
    total = ss.sum(axis=-1, keepdims=True)
    flat = total <= _FLAT_SS
    return np.where(flat, np.nan, ss / np.where(flat, 1.0, total))


def corrected_shares(successes: NDArray[np.int64], n: NDArray[np.int64]) -> tuple[FloatArray, FloatArray]:
    """Raw and noise-corrected shares from (…, F, M) counts → two (…, 3) arrays.

    Correction (method of moments, as for ANOVA variance components; Searle, Casella & McCulloch
    1992, *Variance Components* ch. 4, ANOVA estimators for balanced data): each observed pair rate
    is p̂_ij = p_ij + e_ij with binomial noise Var e_ij = p_ij(1 − p_ij)/n_ij, so

        E[SS_X(p̂)] = SS_X(p) + w_X · Σ_ij p_ij(1 − p_ij)/n_ij

    with w_X from ``noise_weights``. Using the unbiased σ̂²_ij = p̂_ij(1 − p̂_ij)/(n_ij − 1)
    (E[p̂(1 − p̂)] = p(1 − p)(1 − 1/n)):

        SS_X* = max(0, SS_X(p̂) − w_X · Σ_ij σ̂²_ij),      share_X = SS_X* / Σ_Y SS_Y*

    All three are corrected, not only the interaction: the framework and model sums of squares
    also carry (less) noise, and correcting only one would bias the other shares' denominator.
    The truncation at 0 keeps shares in [0, 1] (a small, conservative upward bias when a component
    is near zero). The ratio of corrected sums is consistent but not exactly unbiased; the
    simulation in ``bench/decomposition_coverage.py`` measures what remains.
    """
    k = np.asarray(successes, dtype=float)
    runs = np.asarray(n, dtype=float)
    p_hat = k / runs
    f, m = p_hat.shape[-2:]
    ss = np.stack(_centred_ss(p_hat), axis=-1)
    sigma2 = (p_hat * (1 - p_hat) / np.maximum(runs - 1, 1)).sum(axis=(-2, -1))
    corrected = np.maximum(ss - np.asarray(noise_weights(f, m)) * sigma2[..., None], 0.0)
    return _shares_of(ss), _shares_of(corrected)


@dataclass(frozen=True)
class ShareEstimate:
    name: str
    raw: float
    corrected: float
    low: float
    high: float


@dataclass(frozen=True)
class Decomposition:
    frameworks: tuple[Hashable, ...]
    models: tuple[Hashable, ...]
    framework: ShareEstimate
    model: ShareEstimate
    interaction: ShareEstimate
    n_boot: int
    confidence: float
    method: str = (
        "two-way ANOVA η² on the pair-rate matrix; binomial-noise moment correction; "
        "parametric bootstrap from the noise-corrected matrix, percentile interval"
    )

    @property
    def shares(self) -> tuple[ShareEstimate, ShareEstimate, ShareEstimate]:
        return self.framework, self.model, self.interaction


# Below this harmonic mean of runs per pair the decomposition's interval is withheld (issue 35):
# at 100 runs per pair no interval we built covered 93% for every share
# (bench/decomposition_calibration.py); at 200 and above, and over 50–800 unbalanced, it did.
MIN_HARMONIC_RUNS = 200
NOISE_CORRECTED = "noise-corrected"
BASIC = "basic"


def noise_corrected_truth(successes: NDArray[np.int64], n: NDArray[np.int64]) -> FloatArray:
    """A rate matrix whose shares are the noise-corrected ones: the bootstrap world's truth.

    p̂ = grand + row effects a + column effects b + interaction g; each component is scaled by
    sqrt(SS_X* / SS_X(p̂)) (``corrected_shares``), so its sum of squares is the moment-corrected
    one, then clipped to [0, 1]. p̂ itself carries the binomial noise in every component (most of
    it in the interaction), so resampling from p̂ simulates a world with more spread, and a
    better signal-to-noise ratio, than the one that produced the data.
    """
    k = np.asarray(successes, dtype=float)
    runs = np.asarray(n, dtype=float)
    p_hat = k / runs
    f, m = p_hat.shape
    grand = p_hat.mean()
    row = p_hat.mean(axis=1, keepdims=True) - grand
    col = p_hat.mean(axis=0, keepdims=True) - grand
    inter = p_hat - grand - row - col
    ss = np.stack(_centred_ss(p_hat))
    sigma2 = (p_hat * (1 - p_hat) / np.maximum(runs - 1, 1)).sum()
    corrected = np.maximum(ss - np.asarray(noise_weights(f, m)) * sigma2, 0.0)
    scale = np.sqrt(np.where(ss > _FLAT_SS, corrected / np.where(ss > _FLAT_SS, ss, 1.0), 0.0))
    return np.asarray(np.clip(grand + scale[0] * row + scale[1] * col + scale[2] * inter, 0.0, 1.0), dtype=float)


def harmonic_runs(n: NDArray[np.int64] | Sequence[int]) -> float:
    """Harmonic mean of the runs per pair: the noise the shares see is Σ p(1 − p)/n_ij, i.e. 1/n averaged."""
    runs = np.asarray(n, dtype=float).ravel()
    return float(len(runs) / (1.0 / runs).sum()) if len(runs) and (runs > 0).all() else 0.0


def interval_withheld_reason(n: NDArray[np.int64] | Sequence[int]) -> str:
    """Why the decomposition's interval is not shown for these runs per pair, or "" when it is."""
    h = harmonic_runs(n)
    if round(h, 6) >= MIN_HARMONIC_RUNS:  # 20 pairs of 200 runs: Σ 1/200 is not exactly 0.1
        return ""
    return (
        f"runs per pair average {h:.0f} (harmonic mean), under {MIN_HARMONIC_RUNS}: at 100 runs per pair no "
        "interval we built covered 93% for every share (bench/decomposition_calibration.py; docs/statistics.md)"
    )


def decompose_counts(
    successes: NDArray[np.int64],
    n: NDArray[np.int64],
    *,
    n_boot: int = 2000,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    interval: str = NOISE_CORRECTED,
) -> FloatArray | None:
    """Shares with bootstrap intervals for an F×M count matrix → array (3, 4) of raw, corrected, low, high.

    Interval (``interval="noise-corrected"``, issue 35): parametric bootstrap under the design —
    runs resampled within each pair at their own counts, k*_ij ~ Binomial(n_ij, p̃_ij) (Efron &
    Tibshirani 1993, *An Introduction to the Bootstrap* §6.5) — from the matrix p̃ whose shares
    are the corrected estimates (``noise_corrected_truth``), with the corrected estimator
    recomputed on every replicate; the interval is the replicates' percentile interval
    [q*_(α/2), q*_(1−α/2)] clipped to [0, 1]. In that world the replicates spread as the estimate
    does in the real one (same counts, same noise, shares near the truth), and their quantiles
    carry the estimator's skew and truncation at 0.

    ``interval="basic"``: the interval shipped before issue 35, kept as the baseline the bench
    measures — the same bootstrap from p̂ itself, basic (pivotal) interval around p̂'s raw shares
    (Davison & Hinkley 1997 §5.2). p̂ has more spread than the truth (the noise), so that world's
    signal-to-noise ratio is too good: it covered 85–92% at 100 runs per pair and 50–800 unbalanced.

    No method reached 93% for every share at 100 runs per pair; ``interval_withheld_reason`` says
    when the caller should show the point estimates without an interval.

    Guards: fewer than 2 frameworks or 2 models → None (with one of either, the interaction cannot
    be separated from a main effect without replication); a pair with no runs → ValueError (the
    two-way layout needs every pair).
    """
    k = np.asarray(successes, dtype=np.int64)
    runs = np.asarray(n, dtype=np.int64)
    if k.shape != runs.shape or k.ndim != 2:
        raise ValueError(f"successes and n must be matching 2-D matrices, got {k.shape} and {runs.shape}")
    if k.shape[0] < 2 or k.shape[1] < 2:
        return None
    if (runs <= 0).any():
        raise ValueError("every framework × model pair needs at least one scored run")
    if ((k < 0) | (k > runs)).any():
        raise ValueError("need 0 <= successes <= n in every pair")
    if interval not in (NOISE_CORRECTED, BASIC):
        raise ValueError(f"unknown interval {interval!r}")
    raw, corrected = corrected_shares(k, runs)
    rng = np.random.default_rng(seed)
    truth = noise_corrected_truth(k, runs) if interval == NOISE_CORRECTED else k / runs
    boot_k = rng.binomial(runs, truth, size=(n_boot, *k.shape))
    _, boot = corrected_shares(boot_k, np.broadcast_to(runs, boot_k.shape))
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore"):
        lo_q, hi_q = np.nanquantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
    if interval == NOISE_CORRECTED:
        low, high = np.clip(lo_q, 0.0, 1.0), np.clip(hi_q, 0.0, 1.0)
    else:
        low = np.clip(corrected - (hi_q - raw), 0.0, 1.0)
        high = np.clip(corrected - (lo_q - raw), 0.0, 1.0)
    return np.stack([raw, corrected, low, high], axis=-1)


def decompose(
    pair_counts: Mapping[tuple[Hashable, Hashable], Counts],
    *,
    n_boot: int = 2000,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Decomposition | None:
    """Framework / model / interaction shares of the pair-rate matrix, keyed (framework, model).

    See ``variance_shares`` for the decomposition, ``corrected_shares`` for the noise correction
    and ``decompose_counts`` for the interval. Frameworks and models keep first-seen order.
    Returns None for a matrix smaller than 2 × 2 (including a single pair).
    """
    frameworks: list[Hashable] = []
    models: list[Hashable] = []
    for fw, model in pair_counts:
        if fw not in frameworks:
            frameworks.append(fw)
        if model not in models:
            models.append(model)
    k = np.zeros((len(frameworks), len(models)), dtype=np.int64)
    runs = np.zeros_like(k)
    for (fw, model), c in pair_counts.items():
        i, j = frameworks.index(fw), models.index(model)
        k[i, j], runs[i, j] = c.successes, c.n
    table = decompose_counts(k, runs, n_boot=n_boot, confidence=confidence, seed=seed)
    if table is None:
        return None
    framework, model, interaction = (
        ShareEstimate(name, *map(float, row)) for name, row in zip(SHARE_NAMES, table, strict=True)
    )
    return Decomposition(
        tuple(frameworks), tuple(models), framework, model, interaction, n_boot=n_boot, confidence=confidence
    )


def planted_matrix(
    shares: Sequence[float] | FloatArray,
    rng: np.random.Generator,
    *,
    frameworks: int = 4,
    models: int = 5,
    mean: float = 0.2,
    spread: float = 0.1,
    bounds: tuple[float, float] = (0.01, 0.95),
    max_tries: int = 1000,
) -> FloatArray:
    """A frameworks × models matrix of true pair rates whose ``variance_shares`` are exactly ``shares``.

    For the simulations that check the decomposition against planted truth. Random zero-sum
    framework effects a, model effects b and a double-centred interaction g are each rescaled so
    that SS_F : SS_M : SS_I = shares and Σ(R − R̄)² = F·M·spread²; draws that leave ``bounds`` are
    redrawn, so ``mean`` and ``spread`` must leave room (the paper's pairs span 4.8%–57.2%).
    """
    target = np.asarray(shares, dtype=float)
    if target.shape != (3,) or (target < 0).any() or not math.isclose(target.sum(), 1.0):
        raise ValueError(f"shares must be three non-negative numbers summing to 1, got {shares}")
    ss_total = frameworks * models * spread * spread
    for _ in range(max_tries):
        a = rng.normal(size=frameworks)
        a -= a.mean()
        b = rng.normal(size=models)
        b -= b.mean()
        g = rng.normal(size=(frameworks, models))
        g = g - g.mean(axis=1, keepdims=True) - g.mean(axis=0, keepdims=True) + g.mean()
        a *= math.sqrt(target[0] * ss_total / (models * float((a * a).sum())))
        b *= math.sqrt(target[1] * ss_total / (frameworks * float((b * b).sum())))
        g *= math.sqrt(target[2] * ss_total / float((g * g).sum()))
        matrix = mean + a[:, None] + b[None, :] + g
        if bounds[0] < matrix.min() and matrix.max() < bounds[1]:
            return matrix
    raise ValueError(f"no matrix within {bounds} after {max_tries} draws; lower the spread")
