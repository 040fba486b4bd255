"""Benchmark: type-I error and power of the matrix page's pair contrast between adaptive campaigns.

    .venv/bin/python bench/contrast_validity.py [--pairs 1000] [--seed 35]

Pure simulation, no sandbox (issue 35). For each pair, plant per-cell trigger rates
θ_c ~ Beta(0.6, 2.4) over 24 archetypes × 5 consent modes = 120 cells and run campaigns with
``oracles.scheduler.Scheduler`` as shipped (N=500, K=10, q_floor 15, q_ceil 30, uniform reserve
20%) on Bernoulli outcomes, through ``bench.adaptive_coverage.run_campaign``:

* null: two campaigns (different seeds) on the *same* planted rates;
* alternative: the first campaign against one on rates θ_c + 0.05 (clipped at 1), a planted
  difference of ≈ 5 pp in every cell and in the uniform mix.

Each pair is compared by the old test (two-sided Fisher exact on the as-sampled totals,
``oracles.fisher.pairwise_contrasts_batched``) and the new one the matrix page uses (two-sided
pooled z-test on the uniform-reserve runs, ``oracles.statistics.reserve_contrasts``), at nominal
5%. Two plain binomial samples of 500 at the campaign's as-sampled rate are tested by Fisher as
a reference, and for the new test the exact rejection probability given each pair's truth and
reserve sizes is printed beside the simulated one (the reserve is i.i.d. by design, so that
figure has no Monte Carlo error from the outcomes).

Propensities are replayed with 1 draw instead of 500: the allocation uses its own stream and
does not depend on them, and no estimator here reads them.

Target: the new test's type-I error ≤ 5.5%.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import binom

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # the sibling bench whose simulation this reuses

from adaptive_coverage import CELLS, run_campaign  # noqa: E402

from oracles.fisher import fisher_two_sided_many, pairwise_contrasts_batched  # noqa: E402
from oracles.scheduler import CampaignParams, Cell  # noqa: E402
from oracles.statistics import ALPHA, Counts, pooled_z_pvalues, reserve_contrasts  # noqa: E402

SHIFT = 0.05


def totals(
    rates: np.ndarray, seed: int, pool: dict[Cell, list[str]], args: argparse.Namespace
) -> tuple[Counts, Counts, float]:
    """(all runs, reserve runs, mean true rate of the runs) of one simulated campaign."""
    params = CampaignParams(
        n=args.n, k=10, q_floor=15, q_ceil=30, seed=seed, uniform_share=args.uniform_share, propensity_draws=1
    )
    c = run_campaign(params, rates, pool, seed)
    reserve = np.array([t == "uniform" for t in c.tier])
    return (
        Counts(int(c.y.sum()), len(c.y)),
        Counts(int(c.y[reserve].sum()), int(reserve.sum())),
        float(rates[c.cell].mean()),
    )


def exact_rejection(p1: float, n1: int, p2: float, n2: int) -> float:
    """P(pooled z rejects at ALPHA) for k1 ~ Bin(n1, p1), k2 ~ Bin(n2, p2), summed over the support."""
    k1 = np.arange(n1 + 1)[:, None]
    k2 = np.arange(n2 + 1)[None, :]
    k1b, k2b = np.broadcast_arrays(k1, k2)
    reject = pooled_z_pvalues(k1b, np.full(k1b.shape, n1), k2b, np.full(k2b.shape, n2)) <= ALPHA
    weight = binom.pmf(k1, n1, p1) * binom.pmf(k2, n2, p2)
    return float(weight[reject].sum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--uniform-share", type=float, default=0.2)
    args = parser.parse_args()
    if args.pairs < 50:
        parser.error("use at least 50 pairs")
    pool = {c: [f"{c[0]}.{c[1]}.s{i}" for i in range(8)] for c in CELLS}
    started = time.perf_counter()
    old_null: list[bool] = []
    new_null: list[bool] = []
    ref_null: list[bool] = []
    old_alt: list[bool] = []
    new_alt: list[bool] = []
    exact_null: list[float] = []
    exact_alt: list[float] = []
    gaps: list[float] = []
    sampled_means: list[float] = []
    diffs_total: list[float] = []
    binom_rng = np.random.default_rng([args.seed, 9])
    for i in range(args.pairs):
        base = args.seed * 1_000_003 + 3 * i
        rates = np.random.default_rng([base, 0]).beta(0.6, 2.4, size=len(CELLS))
        shifted = np.minimum(rates + SHIFT, 1.0)
        a_all, a_res, a_mean = totals(rates, base, pool, args)
        b_all, b_res, _ = totals(rates, base + 1, pool, args)
        c_all, c_res, _ = totals(shifted, base + 2, pool, args)
        for all_b, res_b, old, new in ((b_all, b_res, old_null, new_null), (c_all, c_res, old_alt, new_alt)):
            old.append(pairwise_contrasts_batched({"a": a_all, "b": all_b})[0].p <= ALPHA)
            new.append(reserve_contrasts({"a": a_res, "b": res_b})[0].p <= ALPHA)
        p_bar = float(rates.mean())
        exact_null.append(exact_rejection(p_bar, a_res.n, p_bar, b_res.n))
        exact_alt.append(exact_rejection(p_bar, a_res.n, float(shifted.mean()), c_res.n))
        gaps.append(float(shifted.mean() - p_bar))
        # Reference: two binomial samples of the same size at the campaign's as-sampled rate.
        ka, kb = binom_rng.binomial(args.n, a_mean, size=2)
        ref_null.append(
            fisher_two_sided_many(np.array([ka]), np.array([args.n]), np.array([kb]), np.array([args.n]))[1][0] <= ALPHA
        )
        diffs_total.append(a_all.successes / a_all.n - b_all.successes / b_all.n)
        sampled_means.append(a_mean)
    elapsed = time.perf_counter() - started

    def pct(hits: list[bool]) -> str:
        rate = float(np.mean(hits))
        se = float(np.sqrt(rate * (1 - rate) / len(hits)))
        return f"{rate:>7.1%} ± {se:.1%}"

    binomial_sd = float(np.sqrt(2 * np.mean([m * (1 - m) for m in sampled_means]) / args.n))
    print(
        f"contrast validity: {args.pairs} pairs of adaptive campaigns, 120 cells, θ_c ~ Beta(0.6, 2.4), "
        f"N={args.n}, K=10, uniform reserve {args.uniform_share:.0%}; nominal α = {ALPHA:.0%}"
    )
    print(f"planted difference for power: θ_c + {SHIFT:.2f} (uniform mix +{np.mean(gaps) * 100:.2f} pp on average)")
    print()
    header = f"{'test':<58}{'type-I error':>16}{'power @ 5 pp':>16}"
    print(header)
    print("-" * len(header))
    print(f"{'old: Fisher exact, all runs as sampled':<58}{pct(old_null):>16}{pct(old_alt):>16}")
    print(f"{'new: pooled z on the uniform-reserve runs [shown]':<58}{pct(new_null):>16}{pct(new_alt):>16}")
    print(
        f"{'new, exact given each pair truth and reserve sizes':<58}"
        f"{np.mean(exact_null):>16.2%}{np.mean(exact_alt):>16.1%}"
    )
    print(f"{'reference: Fisher on two binomial samples of N':<58}{pct(ref_null):>16}{'':>16}")
    print()
    sd_ratio = float(np.std(diffs_total)) / binomial_sd
    print(f"SD of as-sampled rate differences between identical campaigns / binomial SD: {sd_ratio:.2f}")
    ok = float(np.mean(new_null)) <= 0.055
    print(f"new test type-I error ≤ 5.5%: {'PASS' if ok else 'FAIL'}")
    print(f"wall time {elapsed:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
