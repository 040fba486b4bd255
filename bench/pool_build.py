"""Benchmark: the full verified-pool build, its stage times, and its floor.

    .venv/bin/python bench/pool_build.py [--size 1000] [--workers 2] [--backend bwrap]

Runs against its own SQLite database under var/bench/ (fresh each time unless --resume), so it
never touches the demo or test data. Prints the stage times of `build_pool` and, beside the
executed stage, its floor measured in the same run: the summed time of the reference scripts and
success checks themselves (each exec's duration inside the sandbox), divided by the number of
workers. wall / floor is the harness overhead factor (target ≤ 1.3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--seed", type=int, default=20260527)
    parser.add_argument("--resume", action="store_true", help="keep the bench database from the last run")
    args = parser.parse_args()

    bench_dir = ROOT / "var" / "bench"
    bench_dir.mkdir(parents=True, exist_ok=True)
    db = bench_dir / "pool.sqlite3"
    if db.exists() and not args.resume:
        db.unlink()
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "overeager.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from pool.building import build_pool
    from pool.loading import load_library
    from pool.models import Candidate

    call_command("migrate", verbosity=0)
    t0 = time.perf_counter()
    load_library(ROOT / "pool" / "libraries")
    load_seconds = time.perf_counter() - t0

    last = {"stage": ""}

    def progress(stage: str, done: int, total: int) -> None:
        if stage != last["stage"] or done == total:
            print(f"  … {stage}: {done}/{total}", flush=True)
            last["stage"] = stage

    started = time.perf_counter()
    pool = build_pool(
        pool_seed=args.seed, target_size=args.size, workers=args.workers, backend=args.backend, progress=progress
    )
    total = time.perf_counter() - started
    report = pool.report
    exe = report["execution"]
    executed = Candidate.objects.filter(pool=pool, status__in=["verified", "rejected"])
    per_candidate = [
        c["safe"]["timings"]["total"] + c["overeager"]["timings"]["total"]
        for c in executed.values_list("execution", flat=True)
    ]
    floor = exe["floor_seconds"] / args.workers
    wall = exe.get("wall_seconds", 0.0)

    print()
    print(f"pool build: size {args.size}, workers {args.workers}, backend {args.backend}, seed {args.seed}")
    print(f"{'stage':<28}{'seconds':>10}")
    print(f"{'load libraries':<28}{load_seconds:>10.1f}")
    for stage, seconds in report["timings"].items():
        print(f"{stage:<28}{seconds:>10.1f}")
    print(f"{'whole build':<28}{total:>10.1f}   ({total / 60:.1f} min)")
    print()
    print(f"candidates {report['candidates']:,}; after dedup {report['after_dedup']:,}")
    for name, n in report["check_passes"].items():
        print(f"  pass {name:<16}{n:>8,}")
    print(
        f"executed {exe['executed']:,} in {exe['waves']} waves; "
        f"verified {report['verified']:,}; retained {report['retained']:,}"
    )
    print(f"per cell: min {report['selection']['per_cell_min']}, max {report['selection']['per_cell_max']}")
    if per_candidate:
        print(f"per executed candidate (both solutions, one worker): median {statistics.median(per_candidate):.2f} s")
    trap = report.get("trap_checks") or {}
    if trap:
        print()
        print(f"{'trap checks (pool scenarios)':<34}{'(a) reach':>10}{'(b) shortcut':>14}{'both':>8}  headline")
        for arch, row in trap.items():
            n = row["scenarios"]
            state = "excluded" if row.get("excluded") else "included"
            print(f"{arch:<34}{row['reachable']:>6}/{n:<3}{row['shortcut']:>10}/{n:<3}{row['both']:>4}/{n:<3}  {state}")
    print()
    print(f"{'executed stage wall':<28}{wall:>10.1f} s")
    print(f"{'floor (scripts+checks)/N':<28}{floor:>10.1f} s")
    if floor:
        print(f"{'wall / floor':<28}{wall / floor:>10.2f}   (target ≤ 1.30)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
