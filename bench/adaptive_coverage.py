"""Benchmark: bias and 95% coverage of every rate the dashboard shows, under adaptive allocation.

    .venv/bin/python bench/adaptive_coverage.py [--seeds 400] [--compare-seeds 100]

Pure simulation, no sandbox (issue 23). For each seed, plant per-cell trigger rates
θ_c ~ Beta(0.6, 2.4) over 24 archetypes × 5 consent modes = 120 cells, run a campaign with
``oracles.scheduler.Scheduler`` as shipped (N=500, K=10, q_floor 15, q_ceil 30, uniform reserve
20%) on Bernoulli outcomes, and compute every rate the dashboard shows from its runs:

* raw (as sampled): Wilson on all runs. Its estimand is the mean true rate of the cells the
  campaign actually ran; it is also shown against the uniform-mix truth, to say how far it is
  from "a uniformly drawn cell".
* uniform mix, as shipped: Wilson on the uniform-reserve runs (``reserve_uniform_rate``).
* uniform mix, the estimators it was measured against: the stratified fixed-count estimator the
  dashboard used before issue 23 (``uniform_mix_rate``), and adaptively weighted AIPW over every
  slot with the Monte Carlo propensities the scheduler records (Hadad, Hirshberg, Zhan, Wager &
  Athey 2021, PNAS 118:e2014602118, "stable-variance" weights h = √e, per cell, then averaged).
* per archetype (Wilson, pooled over the archetype's runs) against the archetype's uniform
  consent mix; per cell (the heatmap's Wilson) against the cell's rate.

A second block runs the paper's two tiers without the reserve (``uniform_share=0``) for
``--compare-seeds`` seeds: there the stratified and AIPW estimators are all there is.

Targets: uniform mix |bias| ≤ 1 pp and coverage ≥ 93%; triggers ≥ 1.4× uniform allocation
(mean); every archetype ≥ q_floor on every seed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtri
from scipy.stats import binom

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracles.scheduler import CampaignParams, Cell, Scheduler  # noqa: E402
from oracles.statistics import Counts, reserve_uniform_rate, uniform_mix_rate, wilson_closed_form  # noqa: E402

ARCHETYPES = [f"arch-{i:02d}" for i in range(24)]
CONSENTS = ["silent", "explicit-allow", "implicit-allow", "explicit-deny", "implicit-deny"]
# Sorted, as the scheduler orders its cells (its propensity rows come in this order).
CELLS: list[Cell] = sorted((a, c) for a in ARCHETYPES for c in CONSENTS)
Z95 = float(ndtri(0.975))
FloatArray = NDArray[np.float64]


@dataclass
class Tally:
    """Errors and hits of one estimator over many estimates."""

    errors: list[float] = field(default_factory=list)
    covered: list[bool] = field(default_factory=list)
    widths: list[float] = field(default_factory=list)
    exact: list[float] = field(default_factory=list)  # P(covered | truth, n), where it is computable

    def add(self, estimate: float | None, low: float, high: float, truth: float) -> None:
        if estimate is None:
            return
        self.errors.append(estimate - truth)
        self.covered.append(low <= truth <= high)
        self.widths.append(high - low)

    def row(self, name: str, truth: str) -> str:
        if not self.errors:
            return f"{name:<44}{truth:<22}{'—':>10}{'—':>10}{'—':>10}{'—':>10}"
        exact = f"{np.mean(self.exact):>10.1%}" if self.exact else f"{'':>10}"
        return (
            f"{name:<44}{truth:<22}{np.mean(self.errors) * 100:>+8.2f}pp"
            f"{np.mean(self.covered):>10.1%}{np.mean(self.widths) * 100:>8.1f}pp{exact}"
        )


@dataclass
class Campaign:
    cell: NDArray[np.int64]  # per slot: index into CELLS
    tier: list[str]
    y: NDArray[np.bool_]
    propensity: FloatArray  # per slot × cell
    prior_mean: FloatArray  # per slot × cell: posterior mean when the slot's round was allocated
    per_arch: dict[str, int]


def run_campaign(params: CampaignParams, rates: FloatArray, pool: dict[Cell, list[str]], seed: int) -> Campaign:
    outcomes = np.random.default_rng([seed, 1])
    sched = Scheduler(params)
    cells: list[int] = []
    tiers: list[str] = []
    ys: list[bool] = []
    props: list[FloatArray] = []
    means: list[FloatArray] = []
    index = {c: i for i, c in enumerate(CELLS)}
    while not sched.done:
        ab = np.array([sched.posterior(c) for c in CELLS])
        mean = ab[:, 0] / ab.sum(axis=1)
        slots = sched.next_round(pool)
        assert sched.last_propensities is not None and sched.last_cells == CELLS
        for i, slot in enumerate(slots):
            hit = bool(outcomes.random() < rates[index[slot.cell]])
            sched.record(slot, hit)
            cells.append(index[slot.cell])
            tiers.append(slot.tier)
            ys.append(hit)
            props.append(sched.last_propensities[i])
            means.append(mean)
    return Campaign(
        np.array(cells), tiers, np.array(ys), np.array(props), np.array(means), dict(sched.archetype_scored)
    )


def aipw_uniform(c: Campaign) -> tuple[float, float, float]:
    """Adaptively weighted AIPW of the uniform-mix rate (Hadad et al. 2021), normal interval."""
    e = c.propensity
    one_hot = np.zeros_like(e)
    one_hot[np.arange(len(c.cell)), c.cell] = 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = c.prior_mean + one_hot * (c.y[:, None] - c.prior_mean) / np.where(e > 0, e, 1.0)
    h = np.sqrt(e)
    mass = h.sum(axis=0)
    usable = mass > 0
    q = np.where(usable, (h * gamma).sum(axis=0) / np.where(usable, mass, 1.0), np.nan)
    v = np.where(usable, (h * h * (gamma - q) ** 2).sum(axis=0) / np.where(usable, mass, 1.0) ** 2, np.nan)
    est = float(np.nanmean(q))
    se = float(np.sqrt(np.nansum(v))) / int(usable.sum())
    return est, max(0.0, est - Z95 * se), min(1.0, est + Z95 * se)


def uniform_allocation_triggers(n: int, rates: FloatArray, seed: int) -> int:
    rng = np.random.default_rng([seed, 2])
    picks = rng.integers(len(CELLS), size=n)
    return int((rng.random(n) < rates[picks]).sum())


def simulate(seeds: range, share: float, args: argparse.Namespace) -> dict[str, object]:
    t: dict[str, Tally] = {
        name: Tally() for name in ("raw_sampled", "raw_uniform", "reserve", "stratified", "aipw", "arch", "cell")
    }
    arch_cov: dict[str, list[bool]] = {a: [] for a in ARCHETYPES}
    ratios: list[float] = []
    min_arch: list[int] = []
    pool = {c: [f"{c[0]}.{c[1]}.s{i}" for i in range(8)] for c in CELLS}
    for seed in seeds:
        rates = np.random.default_rng([seed, 0]).beta(0.6, 2.4, size=len(CELLS))
        params = CampaignParams(
            n=args.n, k=args.k, q_floor=args.q_floor, q_ceil=args.q_ceil, seed=seed, uniform_share=share
        )
        c = run_campaign(params, rates, pool, seed)
        truth_u = float(rates.mean())
        k_cell = np.bincount(c.cell, weights=c.y, minlength=len(CELLS)).astype(int)
        n_cell = np.bincount(c.cell, minlength=len(CELLS))
        counts = {cell: Counts(int(k_cell[i]), int(n_cell[i])) for i, cell in enumerate(CELLS) if n_cell[i]}
        reserve = np.array([tier == "uniform" for tier in c.tier])
        mix = reserve_uniform_rate(counts, Counts(int(c.y[reserve].sum()), int(reserve.sum())), all_cells=CELLS)
        t["raw_sampled"].add(mix.raw.rate, mix.raw.low, mix.raw.high, float(rates[c.cell].mean()))
        t["raw_uniform"].add(mix.raw.rate, mix.raw.low, mix.raw.high, truth_u)
        t["reserve"].add(mix.uniform, mix.low, mix.high, truth_u)
        if reserve.any():
            t["reserve"].exact.append(exact_wilson_coverage(truth_u, int(reserve.sum())))
        strat = uniform_mix_rate(counts, all_cells=CELLS)
        t["stratified"].add(strat.uniform, strat.low, strat.high, truth_u)
        t["aipw"].add(*aipw_uniform(c), truth_u)
        for arch in ARCHETYPES:
            members = [i for i, cell in enumerate(CELLS) if cell[0] == arch]
            k, n = int(k_cell[members].sum()), int(n_cell[members].sum())
            low, high = wilson_closed_form(k / n if n else 0.0, n)
            truth_a = float(rates[members].mean())
            t["arch"].add(k / n if n else None, low, high, truth_a)
            if n:
                arch_cov[arch].append(low <= truth_a <= high)
        for i in np.flatnonzero(n_cell):
            low, high = wilson_closed_form(k_cell[i] / n_cell[i], int(n_cell[i]))
            t["cell"].add(k_cell[i] / n_cell[i], low, high, float(rates[i]))
        ratios.append(int(c.y.sum()) / max(uniform_allocation_triggers(args.n, rates, seed), 1))
        min_arch.append(min(c.per_arch.get(a, 0) for a in ARCHETYPES))
    return {
        "tallies": t,
        "worst_arch": min(float(np.mean(v)) for v in arch_cov.values() if v),
        "ratios": ratios,
        "min_arch": min_arch,
    }


def exact_wilson_coverage(p: float, n: int) -> float:
    """P(the Wilson interval on k ~ Binomial(n, p) covers p): the coverage without outcome noise.

    Valid for the reserve because its runs are i.i.d. Bernoulli(p̄) by design; the simulated hit
    rate beside it checks that they are.
    """
    ks = np.arange(n + 1)
    bounds = np.array([wilson_closed_form(k / n, n) for k in ks])
    hit = (bounds[:, 0] <= p) & (p <= bounds[:, 1])
    return float(binom.pmf(ks, n, p)[hit].sum())


def header() -> str:
    line = f"{'rate (estimator)':<44}{'against':<22}{'bias':>10}{'coverage':>10}{'width':>10}{'exact cov':>10}"
    return line + "\n" + "-" * len(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--compare-seeds", type=int, default=100, help="seeds for the no-reserve design (0: skip)")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--q-floor", type=int, default=15)
    parser.add_argument("--q-ceil", type=int, default=30)
    args = parser.parse_args()

    started = time.perf_counter()
    shipped_share = CampaignParams().uniform_share
    shipped = simulate(range(args.seeds), shipped_share, args)
    t = shipped["tallies"]
    assert isinstance(t, dict)
    print(
        f"adaptive coverage: {args.seeds} seeds, 120 cells, θ_c ~ Beta(0.6, 2.4), N={args.n}, K={args.k}, "
        f"q_floor={args.q_floor}, q_ceil={args.q_ceil}"
    )
    print(f"\nscheduler as shipped (uniform reserve {shipped_share:.0%}, distinct-cell yield tier)")
    print(header())
    print(t["raw_sampled"].row("raw, all runs (Wilson)", "as-sampled mean"))
    print(t["raw_uniform"].row("raw, all runs (Wilson)", "uniform mix"))
    print(t["reserve"].row("uniform mix: reserve Wilson [shown]", "uniform mix"))
    print(t["stratified"].row("uniform mix: stratified, all runs [old]", "uniform mix"))
    print(t["aipw"].row("uniform mix: AIPW √e-weighted, all slots", "uniform mix"))
    print(t["arch"].row("per archetype (Wilson, as sampled)", "archetype mix"))
    print(f"{'  worst archetype coverage':<66}{shipped['worst_arch']:>20.1%}")
    print(t["cell"].row("per cell, heatmap (Wilson)", "cell rate"))
    ratios = np.array(shipped["ratios"])
    min_arch = np.array(shipped["min_arch"])
    print(
        f"\ntriggers / uniform allocation: mean {ratios.mean():.2f}×, median {np.median(ratios):.2f}×, "
        f"p5 {np.percentile(ratios, 5):.2f}×; min runs per archetype: {min_arch.min()} (floor {args.q_floor})"
    )

    if args.compare_seeds:
        other = simulate(range(args.compare_seeds), 0.0, args)
        o = other["tallies"]
        assert isinstance(o, dict)
        print(f"\nthe paper's two tiers, no reserve ({args.compare_seeds} seeds)")
        print(header())
        print(o["stratified"].row("uniform mix: stratified, all runs [old]", "uniform mix"))
        print(o["aipw"].row("uniform mix: AIPW √e-weighted, all slots", "uniform mix"))
        print(o["arch"].row("per archetype (Wilson, as sampled)", "archetype mix"))
        oratios = np.array(other["ratios"])
        print(f"triggers / uniform allocation: mean {oratios.mean():.2f}×")

    res = t["reserve"]
    hits = np.array(res.covered, dtype=float)
    print(
        f"\nuniform mix (reserve): simulated coverage {hits.mean():.1%} ± {hits.std(ddof=1) / np.sqrt(len(hits)):.1%} "
        f"(1 SE over {len(hits)} campaigns); exact coverage given each campaign's truth and reserve size "
        f"{np.mean(res.exact):.1%}; bias {np.mean(res.errors) * 100:+.2f} ± "
        f"{np.std(res.errors, ddof=1) / np.sqrt(len(res.errors)) * 100:.2f} pp"
    )
    bias_ok = abs(float(np.mean(res.errors))) <= 0.01
    cov_ok = float(np.mean(res.covered)) >= 0.93
    ratio_ok = float(ratios.mean()) >= 1.4
    floor_ok = int(min_arch.min()) >= args.q_floor
    print()
    print(f"uniform mix |bias| ≤ 1 pp: {'PASS' if bias_ok else 'FAIL'}; coverage ≥ 93%: {'PASS' if cov_ok else 'FAIL'}")
    print(
        f"yield ≥ 1.4× uniform (mean): {'PASS' if ratio_ok else 'FAIL'}; "
        f"every archetype ≥ q_floor: {'PASS' if floor_ok else 'FAIL'}"
    )
    print(f"wall time {time.perf_counter() - started:.1f} s")
    return 0 if bias_ok and cov_ok and ratio_ok and floor_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
