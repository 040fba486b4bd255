"""Benchmark: the variance decomposition against planted truth (pure simulation, no sandbox).

    .venv/bin/python bench/decomposition_coverage.py [--matrices 500] [--boot 2000] [--seed 20260527]

Plants frameworks × models matrices (4 × 5, as in the paper) of true pair rates with known
framework / model / interaction shares, drawn from Dirichlet(30 · (0.561, 0.208, 0.231)) so they
scatter around the paper's 56.1 / 20.8 / 23.1, with pair-rate spread and mean drawn around the
paper's (mean 15–30%, per-pair SD 6–14 pp). Bernoulli outcomes are drawn per pair and the shares
re-estimated by ``oracles.statistics.decompose_counts``.

At 500 runs per pair: coverage of each share's 95% bootstrap interval (target ≥ 80% for every
share) and the mean bias of each share before and after the binomial-noise correction.
At 5,000 runs per pair: median absolute error of each corrected share (target ≤ 2 pp).

``--unbalanced`` adds the designs issue 23 names (runs per pair drawn from 200–800, and a small
planted interaction, around 5%) and prints each share's coverage there against 93%. The interval
is the one the page shows (issue 35: bootstrap from the noise-corrected matrix, percentile);
``bench/decomposition_calibration.py`` compares it with the earlier one per design.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracles.statistics import SHARE_NAMES, decompose_counts, planted_matrix, variance_shares  # noqa: E402

FRAMEWORKS, MODELS = 4, 5
PAPER_SHARES = np.array([0.561, 0.208, 0.231])


SMALL_INTERACTION = np.array([0.70, 0.25, 0.05])


def draw_planted(rng: np.random.Generator, centre: np.ndarray = PAPER_SHARES) -> np.ndarray:
    """One planted matrix; shares, mean and spread are redrawn together when they do not fit in (0, 1)."""
    while True:
        shares = rng.dirichlet(30 * centre)
        mean, spread = rng.uniform(0.15, 0.30), rng.uniform(0.06, 0.14)
        try:
            return planted_matrix(
                shares, rng, frameworks=FRAMEWORKS, models=MODELS, mean=mean, spread=spread, max_tries=50
            )
        except ValueError:
            continue


def simulate(
    matrices: int,
    runs: int,
    n_boot: int,
    seed: int,
    *,
    spread_runs: tuple[int, int] | None = None,
    centre: np.ndarray = PAPER_SHARES,
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth, raw, corrected, low, high = [], [], [], [], []
    for index in range(matrices):
        matrix = draw_planted(rng, centre)
        if spread_runs is None:
            n = np.full(matrix.shape, runs)
        else:
            n = rng.integers(spread_runs[0], spread_runs[1] + 1, size=matrix.shape)
        k = rng.binomial(n, matrix)
        table = decompose_counts(k, n, n_boot=n_boot, seed=seed + index)
        assert table is not None
        truth.append(variance_shares(matrix))
        raw.append(table[:, 0])
        corrected.append(table[:, 1])
        low.append(table[:, 2])
        high.append(table[:, 3])
    return {
        name: np.array(v)
        for name, v in zip(
            ("truth", "raw", "corrected", "low", "high"), (truth, raw, corrected, low, high), strict=True
        )
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrices", type=int, default=500)
    parser.add_argument("--boot", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20260527)
    parser.add_argument("--unbalanced", action="store_true", help="also the unbalanced and small-interaction designs")
    args = parser.parse_args()
    if args.matrices < 50:
        parser.error("use at least 50 matrices")

    started = time.perf_counter()
    at500 = simulate(args.matrices, 500, args.boot, args.seed)
    at5000 = simulate(args.matrices, 5000, args.boot, args.seed + 1)
    elapsed = time.perf_counter() - started

    truth = at500["truth"]
    covered = (at500["low"] <= truth) & (truth <= at500["high"])
    coverage = covered.mean(axis=0)
    width = (at500["high"] - at500["low"]).mean(axis=0)
    bias_raw = (at500["raw"] - truth).mean(axis=0)
    bias_corrected = (at500["corrected"] - truth).mean(axis=0)
    mae500 = np.median(np.abs(at500["corrected"] - truth), axis=0)
    mae5000 = np.median(np.abs(at5000["corrected"] - at5000["truth"]), axis=0)

    print(f"{args.matrices} planted {FRAMEWORKS}×{MODELS} matrices per budget, {args.boot} bootstrap replicates each")
    print(
        "planted shares (min–max): "
        + ", ".join(f"{name} {truth[:, i].min():.1%}–{truth[:, i].max():.1%}" for i, name in enumerate(SHARE_NAMES))
    )
    print()
    header = (
        f"{'share':<12} {'coverage@500':>13} {'CI width':>9} {'bias raw':>9} {'bias corr':>10} "
        f"{'MedAE@500':>10} {'MedAE@5000':>11}"
    )
    print(header)
    print("-" * len(header))
    for i, name in enumerate(SHARE_NAMES):
        print(
            f"{name:<12} {coverage[i]:>13.1%} {width[i] * 100:>7.1f}pp {bias_raw[i] * 100:>+7.2f}pp "
            f"{bias_corrected[i] * 100:>+8.2f}pp {mae500[i] * 100:>8.2f}pp {mae5000[i] * 100:>9.2f}pp"
        )
    print()
    coverage_ok = bool((coverage >= 0.80).all())
    mae_ok = bool((mae5000 <= 0.02).all())
    print(f"coverage ≥ 80% for every share at 500 runs/pair: {'PASS' if coverage_ok else 'FAIL'}")
    print(f"median |error| ≤ 2 pp for every share at 5,000 runs/pair: {'PASS' if mae_ok else 'FAIL'}")
    if args.unbalanced:
        print()
        print(f"{'design':<44}" + "".join(f"{name:>13}" for name in SHARE_NAMES))
        designs = (
            ("runs per pair 200–800", {"spread_runs": (200, 800)}),
            ("500 per pair, interaction ≈ 5%", {"centre": SMALL_INTERACTION}),
            ("200–800 per pair, interaction ≈ 5%", {"spread_runs": (200, 800), "centre": SMALL_INTERACTION}),
        )
        for offset, (label, options) in enumerate(designs, start=2):
            sim = simulate(args.matrices, 500, args.boot, args.seed + offset, **options)  # type: ignore[arg-type]
            cov = ((sim["low"] <= sim["truth"]) & (sim["truth"] <= sim["high"])).mean(axis=0)
            print(f"{label:<44}" + "".join(f"{c:>13.1%}" for c in cov))
        elapsed = time.perf_counter() - started
    print(f"wall time {elapsed:.1f} s")
    return 0 if coverage_ok and mae_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
