"""Benchmark: export, verify and import of a 10,000-run campaign's audit bundle.

    .venv/bin/python bench/bundle.py [--runs 10000] [--keep] [--compress-level 6]

Seeds a finished SNARE campaign with realistic rows and evidence (tests/runs/bundle/synthetic.py:
20–200 transcript events per attempt, a gateway.jsonl of a few tens of KB, agent output and
run.json; ~8 % of slots with an invalid first attempt and a retry, ~1 % dropped after three) into a
PostgreSQL database of its own, then runs each step as its own process, exactly as an operator
would, and measures its wall time and peak RSS (tests/runs/bundle/measure.py):

    manage.py export_bundle --campaign … --out bundle.tar.gz     (source database)
    manage.py verify_bundle bundle.tar.gz
    manage.py import_bundle bundle.tar.gz                         (a second, empty database)

and finally checks that the imported campaign's statistics equal the original's.  Both databases
(``overeager_bench_bundle_src`` / ``_dst``) are created fresh and dropped at the end (``--keep``
leaves them and the files under var/bench/bundle/ for a look).  Target: each step ≤ 2 minutes on
the 2-core machine, with memory bounded (streamed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MANAGE = ROOT / "manage.py"
SERVER = "postgres://root@127.0.0.1:5432"
SOURCE_DB, TARGET_DB = "overeager_bench_bundle_src", "overeager_bench_bundle_dst"
STATS_SCRIPT = """
import json
from runs.models import Campaign
from runs.stats import campaign_data
data = dict(campaign_data(Campaign.objects.get(uuid="{uuid}")))
data.pop("campaign")
print("STATS " + json.dumps(data, sort_keys=True))
"""


def _recreate(name: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def _drop(name: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def _env(db: str, evidence: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"{SERVER}/{db}",
        "EVIDENCE_DIR": str(evidence),
        "CACHE_PREFIX": f"bench-bundle-{uuid.uuid4().hex[:8]}",
        "DJANGO_SETTINGS_MODULE": "overeager.settings",
    }


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``manage.py ARGS``; return (seconds, peak RSS in MB, output)."""
    from tests.runs.bundle.measure import measured

    code, seconds, rss, output = measured([sys.executable, str(MANAGE), *args], env, cwd=str(ROOT))
    if code != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed ({code}):\n{output}")
    return seconds, rss, output


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--compress-level", type=int, default=6)
    parser.add_argument("--keep", action="store_true", help="keep the databases and files afterwards")
    args = parser.parse_args()

    work = ROOT / "var" / "bench" / "bundle"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    source_evidence, target_evidence = work / "evidence-src", work / "evidence-dst"
    archive = work / "bundle.tar.gz"
    _recreate(SOURCE_DB)
    _recreate(TARGET_DB)
    source_env, target_env = _env(SOURCE_DB, source_evidence), _env(TARGET_DB, target_evidence)
    os.environ.update({k: v for k, v in source_env.items() if k != "PATH"})
    try:
        import django

        django.setup()
        from django.core.management import call_command

        from runs.models import RunAttempt, RunEvent
        from runs.stats import campaign_data
        from tests.runs.bundle import synthetic

        call_command("migrate", verbosity=0)
        _run(["migrate", "--verbosity", "0"], target_env)
        print(f"seeding {args.runs} runs …", flush=True)
        t0 = time.perf_counter()
        campaign = synthetic.campaign(args.runs, name="bench-bundle", seed=args.seed)
        seed_seconds = time.perf_counter() - t0
        attempts = RunAttempt.objects.filter(run__campaign=campaign).count()
        events = RunEvent.objects.filter(attempt__run__campaign=campaign).count()
        evidence_bytes = _du(source_evidence)
        before = json.loads(
            json.dumps({k: v for k, v in campaign_data(campaign).items() if k != "campaign"}, sort_keys=True)
        )
        print(
            f"seeded in {seed_seconds:.0f} s: {args.runs} runs, {attempts} attempts, {events} events, "
            f"{evidence_bytes / 1e6:.0f} MB of evidence files",
            flush=True,
        )

        rows = []
        sec, rss, out = _run(
            ["export_bundle", "--campaign", str(campaign.uuid), "--out", str(archive),
             "--compress-level", str(args.compress_level)],
            source_env,
        )  # fmt: skip
        rows.append(("export (db → .tar.gz)", sec, rss))
        files_line = next(line for line in out.splitlines() if line.startswith("bundle "))
        sec, rss, out = _run(["verify_bundle", str(archive)], source_env)
        rows.append(("verify (.tar.gz)", sec, rss))
        verified = out.strip().splitlines()[-1]
        sec, rss, out = _run(["import_bundle", str(archive)], target_env)
        rows.append(("import (.tar.gz → empty db)", sec, rss))
        imported = out.strip().splitlines()[-1]
        _, _, out = _run(["shell", "-c", STATS_SCRIPT.format(uuid=campaign.uuid)], target_env)
        after = json.loads(next(line for line in out.splitlines() if line.startswith("STATS "))[6:])
        equal = after == before

        print()
        print(f"bundle bench: {args.runs} runs, {attempts} attempts, {events} events, gzip level {args.compress_level}")
        print(f"{'step':<30}{'seconds':>10}{'peak RSS MB':>14}{'target':>10}")
        for name, sec, rss in rows:
            print(f"{name:<30}{sec:>10.1f}{rss:>14.0f}{'≤ 120 s':>10}{'' if sec <= 120 else '  MISSED'}")
        print()
        print(f"evidence on disk      {evidence_bytes / 1e6:10.1f} MB")
        print(f"bundle (.tar.gz)      {archive.stat().st_size / 1e6:10.1f} MB")
        print(f"  {files_line}")
        print(f"  {verified}")
        print(f"  {imported}")
        print(f"imported evidence     {_du(target_evidence) / 1e6:10.1f} MB")
        print(f"statistics equal after import: {'yes' if equal else 'NO'}")
        return 0 if equal else 1
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            _drop(SOURCE_DB)
            _drop(TARGET_DB)
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
