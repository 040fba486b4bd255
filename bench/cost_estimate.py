"""Benchmark: what the pre-campaign cost estimate's numbers mean, on planted cost distributions.

    .venv/bin/python bench/cost_estimate.py [--trials 2000] [--runs 500]

Pure simulation (issue 37). Per-run costs are drawn from planted distributions shaped like agent
runs — lognormal (most runs alike, a long tail of runs that loop) and a two-point mixture (90%
short runs, 10% that hit the step limit at ten times the cost) — and for pilots of 6, 20 and 60
runs the estimate ``oracles.costs.estimate`` is computed, then a campaign of ``--runs`` runs is
drawn from the same distribution. Printed side by side:

* coverage of the **median's** 95% interval (what the interval is: it must cover the true median
  ≥ 95% of the time — the binomial order-statistics interval is conservative);
* how often the campaign's **actual total** falls inside runs × that interval — it is not an
  interval for the total, and on a right-skewed distribution the total (≈ runs × mean) lies above
  it; the figure says how misleading it would be to read it as one;
* the median absolute relative error of the two point totals, runs × median and runs × mean,
  against the actual total;
* coverage of the total's 95% prediction interval around runs × mean (what a budget should read).

What to take from it is in docs/campaigns.md ("Costs and caps"): budget from the mean-based
figure and the cap; the median says what a typical run costs.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oracles.costs import estimate

Draw = Callable[[np.random.Generator, int], np.ndarray]


def lognormal(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.lognormal(math.log(0.05), 0.8, size=n)


def mixture(rng: np.random.Generator, n: int) -> np.ndarray:
    long = rng.random(n) < 0.10
    return np.where(long, rng.normal(0.50, 0.05, size=n), rng.normal(0.05, 0.01, size=n)).clip(0.001)


DISTRIBUTIONS: dict[str, tuple[Draw, float]] = {
    # name → (draw, true median)
    "lognormal(σ=0.8)": (lognormal, 0.05),
    # P(X ≤ m) = 0.9 Φ((m − 0.05) / 0.01) = 1/2 (the long runs all lie above m)
    "90% short / 10% at the step limit": (mixture, 0.05 + 0.01 * float(norm.ppf(0.5 / 0.9))),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args(argv)
    print(f"{args.trials} trials per row; a campaign of {args.runs} runs after each pilot\n")
    header = (
        f"{'distribution':36} {'pilot':>5} {'median CI covers':>17} {'total in CI×runs':>17}"
        f" {'runs×median err':>16} {'runs×mean err':>14} {'total in pred. int.':>20}"
    )
    print(header)
    print("-" * len(header))
    for name, (draw, true_median) in DISTRIBUTIONS.items():
        for pilot in (6, 20, 60):
            rng = np.random.default_rng([20261207, pilot, len(name)])
            covered = inside = predicted = 0
            err_median: list[float] = []
            err_mean: list[float] = []
            for _ in range(args.trials):
                est = estimate(draw(rng, pilot).tolist(), args.runs)
                assert est is not None and est.low is not None and est.high is not None
                total = float(draw(rng, args.runs).sum())
                covered += est.low <= true_median <= est.high
                inside += (est.total_low or 0) <= total <= (est.total_high or 0)
                low, high = est.total_prediction or (0.0, 0.0)
                predicted += low <= total <= high
                err_median.append(abs(est.total - total) / total)
                err_mean.append(abs(est.total_from_mean - total) / total)
            print(
                f"{name:36} {pilot:>5} {covered / args.trials:>17.1%} {inside / args.trials:>17.1%}"
                f" {np.median(err_median):>16.1%} {np.median(err_mean):>14.1%} {predicted / args.trials:>20.1%}"
            )


if __name__ == "__main__":
    main()
