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
from scipy.stats import binomtest, false_discovery_control, fisher_exact

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

    def as_dict(self) -> dict[str, object]:
        return {
            "pair_a": self.pair_a,
            "pair_b": self.pair_b,
            "rate_a": self.rate_a,
            "rate_b": self.rate_b,
            "odds_ratio": self.odds_ratio,
            "p": self.p,
            "q": self.q,
            "significant": self.significant,
        }


def pairwise_contrasts(pair_counts: Mapping[K, Counts], alpha: float = ALPHA) -> list[Contrast]:
    """Two-sided Fisher exact test between every two pairs, with Benjamini–Hochberg q-values.

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
        Contrast(a, b, ca.successes / ca.n, cb.successes / cb.n, odds, p, float(q), bool(q <= alpha))
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
        "parametric bootstrap, basic (pivotal) interval"
    )

    @property
    def shares(self) -> tuple[ShareEstimate, ShareEstimate, ShareEstimate]:
        return self.framework, self.model, self.interaction


def decompose_counts(
    successes: NDArray[np.int64],
    n: NDArray[np.int64],
    *,
    n_boot: int = 2000,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> FloatArray | None:
    """Shares with bootstrap intervals for an F×M count matrix → array (3, 4) of raw, corrected, low, high.

    Interval: parametric bootstrap (resampling runs within each pair, i.e. k*_ij ~ Binomial(n_ij, p̂_ij);
    Efron & Tibshirani 1993, *An Introduction to the Bootstrap* §6.5), with the corrected estimator
    recomputed on every replicate. In the bootstrap world the true matrix is p̂ itself, whose true
    shares are the *raw* shares of p̂ — not the corrected ones — so the interval is the basic
    (pivotal) bootstrap interval around that truth (Davison & Hinkley 1997, *Bootstrap Methods and
    their Application* §5.2):

        [ θ̂ − (q*_(1−α/2) − θ_raw(p̂)),  θ̂ − (q*_(α/2) − θ_raw(p̂)) ]     clipped to [0, 1]

    where θ̂ is the corrected share and q* the corrected bootstrap replicates' quantiles. The
    bootstrap's estimate of the corrected estimator's error therefore includes both the noise
    spread and whatever bias the moment correction leaves (e.g. from truncation at 0). A plain
    percentile interval of the corrected replicates would be centred on θ_raw(p̂), i.e. it would
    re-introduce the upward noise bias of the interaction share that the correction removed.

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
    raw, corrected = corrected_shares(k, runs)
    rng = np.random.default_rng(seed)
    p_hat = k / runs
    boot_k = rng.binomial(runs, p_hat, size=(n_boot, *k.shape))
    _, boot = corrected_shares(boot_k, np.broadcast_to(runs, boot_k.shape))
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore"):
        lo_q, hi_q = np.nanquantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
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
