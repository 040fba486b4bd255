"""Benchmark: coverage of the decomposition's intervals per share, before and after issue 35.

    .venv/bin/python bench/decomposition_calibration.py [--matrices 400] [--boot 2000] [--seed 35]

Pure simulation, no sandbox. Plants 4 × 5 matrices of true pair rates around the paper's shares
(``bench.decomposition_coverage.draw_planted``: Dirichlet(30 · (0.561, 0.208, 0.231)) shares,
mean 15–30%, per-pair SD 6–14 pp), draws each pair's runs as Bernoulli outcomes and computes the
framework / model / interaction shares with ``oracles.statistics.decompose_counts`` twice on the
same counts:

* old: the bootstrap from p̂ with the basic (pivotal) interval, as shipped before issue 35;
* new: the bootstrap from the noise-corrected matrix with the percentile interval, as shipped,
  together with the page's withholding rule (``interval_withheld_reason``: no interval below a
  harmonic mean of 200 runs per pair). "shown" is the coverage of the intervals the page shows,
  "withheld" the share of matrices whose interval it withholds.

Designs: balanced 100, 200 and 500 runs per pair; unbalanced, each pair's runs uniform on
50–800; and 500 per pair with a small planted interaction (≈ 5%), the case the old caution named.

Target: coverage ≥ 93% for every share wherever the page shows an interval.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # the sibling bench whose simulation this reuses

from decomposition_coverage import PAPER_SHARES, SMALL_INTERACTION, draw_planted  # noqa: E402

from oracles.statistics import (  # noqa: E402
    BASIC,
    NOISE_CORRECTED,
    SHARE_NAMES,
    decompose_counts,
    interval_withheld_reason,
    variance_shares,
)

DESIGNS: tuple[tuple[str, tuple[int, int], np.ndarray], ...] = (
    ("balanced 100 per pair", (100, 100), PAPER_SHARES),
    ("balanced 200 per pair", (200, 200), PAPER_SHARES),
    ("balanced 500 per pair", (500, 500), PAPER_SHARES),
    ("unbalanced 50–800 per pair", (50, 800), PAPER_SHARES),
    ("500 per pair, interaction ≈ 5%", (500, 500), SMALL_INTERACTION),
)


def simulate(matrices: int, runs: tuple[int, int], centre: np.ndarray, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    hit_old: list[np.ndarray] = []
    hit_new: list[np.ndarray] = []
    width_old: list[np.ndarray] = []
    width_new: list[np.ndarray] = []
    shown: list[bool] = []
    for index in range(matrices):
        matrix = draw_planted(rng, centre)
        n = rng.integers(runs[0], runs[1] + 1, size=matrix.shape)
        k = rng.binomial(n, matrix)
        truth = variance_shares(matrix)
        for method, hits, widths in ((BASIC, hit_old, width_old), (NOISE_CORRECTED, hit_new, width_new)):
            table = decompose_counts(k, n, n_boot=n_boot, seed=seed + index, interval=method)
            assert table is not None
            hits.append((table[:, 2] <= truth) & (truth <= table[:, 3]))
            widths.append(table[:, 3] - table[:, 2])
        shown.append(interval_withheld_reason(n) == "")
    return {
        "old": np.array(hit_old),
        "new": np.array(hit_new),
        "width_old": np.array(width_old),
        "width_new": np.array(width_new),
        "shown": np.array(shown),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrices", type=int, default=400)
    parser.add_argument("--boot", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    if args.matrices < 50:
        parser.error("use at least 50 matrices")
    started = time.perf_counter()
    print(
        f"decomposition interval coverage: {args.matrices} planted 4×5 matrices per design, "
        f"{args.boot} bootstrap replicates, nominal 95%"
    )
    print()
    cols = "".join(f"{name:>13}" for name in SHARE_NAMES)
    header = f"{'design':<32}{'interval':<34}{cols}{'width':>8}{'withheld':>10}"
    print(header)
    print("-" * len(header))
    ok = True
    for offset, (label, runs, centre) in enumerate(DESIGNS):
        sim = simulate(args.matrices, runs, centre, args.boot, args.seed + 1000 * offset)
        shown = sim["shown"]
        rows = (
            ("old: basic, from p̂", sim["old"], sim["width_old"]),
            ("new: percentile, corrected truth", sim["new"], sim["width_new"]),
        )
        for name, hits, widths in rows:
            cov = hits.mean(axis=0)
            print(
                f"{label:<32}{name:<34}"
                + "".join(f"{c:>13.1%}" for c in cov)
                + f"{widths.mean() * 100:>6.1f}pp{'':>10}"
            )
        if shown.any():
            cov = sim["new"][shown].mean(axis=0)
            ok &= bool((cov >= 0.93).all())
            cells = "".join(f"{c:>13.1%}" for c in cov)
        else:
            cells = "".join(f"{'—':>13}" for _ in SHARE_NAMES)
        width = f"{sim['width_new'][shown].mean() * 100:>6.1f}pp" if shown.any() else f"{'—':>8}"
        print(f"{label:<32}{'new, as the page shows it':<34}{cells}{width}{1 - shown.mean():>10.1%}")
        print()
    print(f"coverage ≥ 93% for every share wherever an interval is shown: {'PASS' if ok else 'FAIL'}")
    print(f"wall time {time.perf_counter() - started:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
