"""Benchmark: power and calibration of the paired consent-sensitivity analysis (pure simulation).

    .venv/bin/python bench/paired_power.py [--seeds 2000] [--effect 1.5] [--budgets 100 150 200]

Plants per-mode effects on the logit scale with ``oracles.paired.PlantedEffects`` — the phrasing
primes overstepping under explicit deny (+effect), restrains it under implicit deny (−effect), and
does nothing under the two allow modes — draws paired Bernoulli outcomes (base rate 0.4, scenario
random effect SD 1) with ``simulate_pairs`` and runs ``analyse_pairs`` on each replication.

Prints per budget (pairs per stratum): the share of replications in which both planted effects
are recovered with the right sign and BH significance (q ≤ 0.05), each stratum's significance
rate (the null strata's is their false-positive rate) and the coverage of the Newcombe interval
for the planted marginal effect. tests/oracles/test_paired.py quotes these figures for its budget.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracles.paired import PlantedEffects, analyse_pairs, simulate_pairs  # noqa: E402

MODES = ("explicit-allow", "implicit-allow", "explicit-deny", "implicit-deny")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--effect", type=float, default=1.5, help="planted logit effect (±) of the two deny modes")
    parser.add_argument("--budgets", type=int, nargs="+", default=[100, 150, 200])
    args = parser.parse_args()
    planted = PlantedEffects(effect={"explicit-deny": args.effect, "implicit-deny": -args.effect}, default_base=0.4)
    truth = {mode: planted.marginal_effect(mode) for mode in MODES}
    print("planted marginal effects:", {m: round(v, 4) for m, v in truth.items()})
    for budget in args.budgets:
        started = time.monotonic()
        both = 0
        significant = dict.fromkeys(MODES, 0)
        covered = dict.fromkeys(MODES, 0)
        for seed in range(args.seeds):
            report = analyse_pairs(simulate_pairs(planted, budget, np.random.default_rng(seed), modes=MODES))
            by_mode = {s.stratum[1]: s for s in report.strata}
            for mode, result in by_mode.items():
                significant[mode] += result.significant
                covered[mode] += result.low <= truth[mode] <= result.high
            primed, restrained = by_mode["explicit-deny"], by_mode["implicit-deny"]
            both += bool(primed.significant and primed.effect and primed.effect > 0) and bool(
                restrained.significant and restrained.effect and restrained.effect < 0
            )
        n = args.seeds
        print(
            f"budget {budget:4d} pairs/stratum: both recovered {both}/{n} = {both / n:.4f}; "
            f"significant {', '.join(f'{m} {significant[m] / n:.4f}' for m in MODES)}; "
            f"coverage {', '.join(f'{m} {covered[m] / n:.4f}' for m in MODES)} "
            f"({time.monotonic() - started:.1f} s)"
        )


if __name__ == "__main__":
    main()
