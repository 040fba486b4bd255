"""Campaign throughput: runs per minute with 1 and 2 workers, on bwrap and on Docker.

    .venv/bin/python bench/campaign_throughput.py [--runs 30] [--backends bwrap,docker] [--workers 1,2]

Each configuration runs a real campaign of the reference-safe agent (it executes the scenario's
safe reference solution: a realistic chain of git, test and build commands, and no model) on real
``rqworker`` processes, in a PostgreSQL database of the bench's own that is dropped at the end. It
prints, side by side:

* runs per minute (scored runs / wall time from the campaign's start to its completion);
* the harness share of each run: 1 − (the agent's exec time / the attempt's total time), where the
  attempt's total covers claiming, sandbox creation, setup, manifests, evidence, task checks, the
  oracle and the database writes — everything that is not the agent itself;
* the wall-time share not spent inside an agent exec across the workers:
  1 − Σ agent exec time / (workers × wall).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--backends", default="bwrap,docker")
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()

    db = f"overeager_bench_tp_{uuid.uuid4().hex[:8]}"
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "root", db], check=True)
    os.environ["DATABASE_URL"] = f"postgres://root@127.0.0.1:5432/{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "overeager.settings")
    queue = f"bench-tp-{uuid.uuid4().hex[:8]}"
    os.environ["RUNS_QUEUE"] = queue
    evidence = Path("/var/tmp") / f"overeager-bench-{uuid.uuid4().hex[:8]}"
    os.environ["EVIDENCE_DIR"] = str(evidence)
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        return run(args, queue)
    finally:
        from django.db import connections

        connections.close_all()
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "root", "--if-exists", db], check=False)
        subprocess.run(["rm", "-rf", str(evidence)], check=False)


def run(args: argparse.Namespace, queue: str) -> int:
    from runs.campaigns import campaign_params, start_campaign
    from runs.models import AgentFramework, Campaign, ModelEndpoint, Run, RunAttempt, SystemUnderTest
    from tests.runs.campaigns.poolcache import verified_pool

    print("loading the verified pool (built and cached in ~/.cache/overeager/test-cache on first use) …", flush=True)
    pool = verified_pool()
    fw = AgentFramework.objects.create(slug="reference-safe", label="reference safe", adapter="reference-safe")
    model = ModelEndpoint.objects.create(slug="none", label="no model", upstream=ModelEndpoint.Upstream.NONE)
    sut = SystemUnderTest.objects.for_pair(fw, model)
    rows = []
    for backend in args.backends.split(","):
        for workers in (int(w) for w in args.workers.split(",")):
            campaign = start_campaign(
                name=f"tp-{backend}-{workers}",
                sut=sut,
                pool=pool,
                params=campaign_params(n=args.runs, k=max(2, 2 * workers), j=workers, q_floor=1, q_ceil=3, seed=1),
                backend=backend,
            )
            env = {**os.environ, "RUN_LEASE_SECONDS": "60", "WATCHDOG_INTERVAL_SECONDS": "5"}
            procs = [
                subprocess.Popen(
                    [sys.executable, str(ROOT / "manage.py"), "rqworker", queue, "--verbosity", "0"],
                    env=env,
                    stdin=subprocess.DEVNULL,
                )
                for _ in range(workers)
            ]
            try:
                while Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.RUNNING).exists():
                    time.sleep(0.5)
            finally:
                for p in procs:
                    p.terminate()
                for p in procs:
                    p.wait(60)
            campaign.refresh_from_db()
            assert campaign.started_at and campaign.finished_at
            wall = (campaign.finished_at - campaign.started_at).total_seconds()
            attempts = list(
                RunAttempt.objects.filter(run__campaign=campaign, status=RunAttempt.Status.COMPLETED).values_list(
                    "started_at", "finished_at", "duration"
                )
            )
            done = [(s, f, d) for s, f, d in attempts if f is not None]
            totals = [(f - s).total_seconds() for s, f, _ in done]
            agent = [d or 0.0 for _, _, d in done]
            harness = [1 - a / t for a, t in zip(agent, totals, strict=True) if t > 0]
            scored = Run.objects.filter(campaign=campaign, status=Run.Status.SCORED).count()
            rows.append(
                (
                    backend,
                    workers,
                    scored,
                    wall,
                    scored / wall * 60,
                    statistics.median(totals),
                    statistics.median(agent),
                    statistics.median(harness),
                    1 - sum(agent) / (workers * wall),
                )
            )
            print(f"  {backend} × {workers} worker(s): {scored} runs in {wall:.1f} s", flush=True)
    print()
    print(
        f"{'backend':8} {'workers':>7} {'runs':>5} {'wall s':>7} {'runs/min':>9} {'run s p50':>9} "
        f"{'agent s p50':>11} {'harness share p50':>17} {'non-agent wall':>14}"
    )
    for backend, workers, scored, wall, rpm, total_p50, agent_p50, harness_p50, idle in rows:
        print(
            f"{backend:8} {workers:>7} {scored:>5} {wall:>7.1f} {rpm:>9.1f} {total_p50:>9.2f} "
            f"{agent_p50:>11.2f} {harness_p50:>17.1%} {idle:>14.1%}"
        )
    by = {(b, w): rpm for b, w, _, _, rpm, *_ in rows}
    for backend in args.backends.split(","):
        if (backend, 1) in by and (backend, 2) in by:
            print(f"{backend}: 2 workers / 1 worker = {by[(backend, 2)] / by[(backend, 1)]:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
