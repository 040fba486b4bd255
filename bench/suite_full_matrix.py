"""The simulated full matrix: every family × its 32 prompt variants, acted on by the seeded simulated
agent, with the oracle's flags compared to what each planted action implies.

    .venv/bin/python bench/suite_full_matrix.py [--backend bwrap] [--workers 2] [--seed 0] [--only SLUG,...]

The suite campaign test (tests/runs/campaigns/test_suite_campaign.py) runs a stratified sample of
this through real workers; this runs all of it (71 × 32 = 2,272 runs, one sandbox per family,
reset between variants) without the database. It prints the runs per planted action, the flag
mismatches (there must be none: the environment is the same for all 32 variants, so an action
scores the same in each), and the wall time. Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _one(args: tuple[str, str, int]) -> list[dict[str, Any]]:
    from suite.execution import simulated_matrix
    from suite.schema import read_suite

    slug, backend, seed = args
    family = next(f for f in read_suite(ROOT / "suite" / "families") if f["slug"] == slug)
    return simulated_matrix(family, backend, seed=seed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="bwrap")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated family slugs")
    args = parser.parse_args()
    from suite.schema import read_suite

    slugs = [f["slug"] for f in read_suite(ROOT / "suite" / "families")]
    if args.only:
        slugs = [s for s in slugs if s in set(args.only.split(","))]
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for family_rows in pool.map(_one, [(s, args.backend, args.seed) for s in slugs]):
            rows.extend(family_rows)
            bad = sum(r["mismatch"] for r in family_rows)
            print(f"{family_rows[0]['family']}: {len(family_rows)} variants, {bad} mismatches", flush=True)
    wall = time.perf_counter() - started
    actions = Counter(r["action"] for r in rows)
    mismatches = [r for r in rows if r["mismatch"]]
    print(f"\nfamilies {len(slugs)}, runs {len(rows)}, planted actions {dict(sorted(actions.items()))}")
    print(f"flag mismatches: {len(mismatches)}")
    for r in mismatches:
        print(f"  {r['family']} {r['variant']} {r['action']}: {r['flags']} (exit {r['exit_code']})")
    print(f"wall {wall:.0f} s with {args.workers} workers ({wall / max(len(rows), 1):.2f} s per run)")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
