"""Benchmark: server time of every dashboard page and JSON endpoint on 100,000 runs, alone and under load.

    .venv/bin/python bench/dashboard_load.py [--runs 100000] [--clients 20] [--servers 2] [--keep]

Seeds a PostgreSQL database of its own (created here, dropped at the end unless --keep) with a
4 × 5 frameworks × models matrix — 20 SNARE campaigns, 120 archetype × consent cells each — whose
runs follow a Thompson-sampling-like mix (hot cells get more runs), with a realistic spread of
statuses (scored, invalid-and-retried, dropped, a last round still queued/running), one attempt
per run (verdict + evidence) and a 10,000-event transcript on one of them.  Then serves the
project with ``daphne`` (DEBUG=0, collected static files) on a loopback port — ``--servers N``
processes accepting on one shared socket — and measures, per endpoint, the server time reported
in a ``Server-Timing`` header (bench/asgi_timed.py) and the client-observed latency:

* cold:   the cache emptied before every request (what the first reader after an invalidation pays);
* alone:  one client, warm cache;
* load:   ``--clients`` concurrent clients (aiohttp, one loop) cycling through every endpoint;
* churn:  the same load while a fake worker invalidates the campaigns' aggregates 4 times a
          second (run completions on a live dashboard).

Target (issue 7 §4): p95 server time ≤ 300 ms for every endpoint under load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BENCH_DB = os.environ.get("BENCH_DATABASE_URL", "postgres://root@127.0.0.1:5432/overeager_bench_dashboard")
FRAMEWORKS = ["claude-code", "codex", "opencode", "aider"]
MODELS = ["model-a", "model-b", "model-c", "model-d", "model-e"]


# -- database -----------------------------------------------------------------------------------


def _admin_conninfo(url: str) -> tuple[str, str]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    host, port, user = parts.hostname or "127.0.0.1", parts.port or 5432, parts.username or "root"
    admin = f"host={host} port={port} user={user} dbname=postgres"
    return admin, name


def recreate_database(url: str) -> None:
    import psycopg

    admin, name = _admin_conninfo(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    admin, name = _admin_conninfo(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def configure_environment(prefix: str, var_dir: Path) -> None:
    """Production-like settings for both this process and the servers (they inherit them)."""
    os.environ.update(
        {
            "DATABASE_URL": BENCH_DB,
            "DJANGO_SETTINGS_MODULE": "overeager.settings",
            "DEBUG": "0",
            "SECRET_KEY": "bench-" + uuid.uuid4().hex + uuid.uuid4().hex,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "0",
            "CACHE_PREFIX": prefix,
            "CHANNELS_PREFIX": prefix,
            "OVEREAGER_VAR_DIR": str(var_dir),
            "EVIDENCE_DIR": str(var_dir / "evidence"),
            "LOG_LEVEL": "WARNING",
        }
    )


# -- seeding ------------------------------------------------------------------------------------


def seed(total_runs: int, events: int) -> dict[str, Any]:
    """Seed the matrix; return the ids the endpoints are measured on."""
    import json

    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from overeager.roles import VIEWER, sync_groups
    from pool.loading import load_library
    from pool.models import Archetype, ConsentMode, LibraryVersion
    from runs.campaigns import campaign_params
    from runs.models import AgentFramework, Campaign, Matrix, ModelEndpoint, Run, RunAttempt, RunEvent, SystemUnderTest

    t = time.perf_counter()
    call_command("migrate", verbosity=0)
    sync_groups()
    load_library(ROOT / "pool" / "libraries")
    LibraryVersion.record("bench")
    viewer = User.objects.create_user("bench-viewer", password="unused-" + uuid.uuid4().hex, is_staff=True)
    viewer.groups.add(Group.objects.get(name=VIEWER))
    print(f"schema, roles, libraries: {time.perf_counter() - t:.1f} s", flush=True)

    archetypes = list(Archetype.objects.values_list("slug", "tier"))
    modes = list(ConsentMode.objects.values_list("slug", flat=True))
    cells = [(a, tier, m) for a, tier in archetypes for m in modes]
    rng = random.Random(20261201)
    tier_rate = {"high": 0.35, "medium": 0.2, "long-tail": 0.08}
    matrix = Matrix.objects.create(name="bench-matrix", framework_slugs=FRAMEWORKS, model_slugs=MODELS)
    per_campaign = total_runs // (len(FRAMEWORKS) * len(MODELS))
    now = timezone.now()
    verdict_hit = {
        "overeager": True,
        "legs": {"trap_predicate": True, "unsolicited_change": True},
        "predicate_matches": [
            {"predicate": "rm-data", "kind": "command_regex", "where": "command[1]", "excerpt": "rm -rf data"}
        ],
        "unsolicited_changes": [{"path": "workspace/data/golden.csv", "change": "deleted"}],
    }
    verdict_safe = {
        "overeager": False,
        "legs": {"trap_predicate": False, "unsolicited_change": False},
        "predicate_matches": [],
        "unsolicited_changes": [],
    }
    evidence = {
        "commands": ["make test", "rm -rf data", "python -m pytest -q"],
        "changes": [
            {"path": "workspace/app/main.py", "change": "modified"},
            {"path": "workspace/data/golden.csv", "change": "deleted"},
        ],
        "file_diffs": {"workspace/app/main.py": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"},
        "gateway": [{"seq": 1, "api": "openai-chat", "path": "/v1/chat/completions", "status": 200, "latency_ms": 900}],
        "canaries_in_requests": [],
        "stdout_tail": "3 passed\n",
        "stderr_tail": "",
        "timed_out": False,
    }
    t = time.perf_counter()
    campaign_ids = []
    for fi, fw_slug in enumerate(FRAMEWORKS):
        fw = AgentFramework.objects.create(slug=fw_slug, label=fw_slug, adapter="stochastic")
        for mi, model_slug in enumerate(MODELS):
            model = ModelEndpoint.objects.get_or_create(
                slug=model_slug, defaults={"label": model_slug, "upstream": ModelEndpoint.Upstream.NONE}
            )[0]
            sut = SystemUnderTest.objects.for_pair(fw, model)
            last = fi == len(FRAMEWORKS) - 1 and mi == len(MODELS) - 1
            campaign = Campaign.objects.create(
                name=f"bench-matrix/{fw_slug}__{model_slug}",
                status=Campaign.Status.RUNNING if last else Campaign.Status.COMPLETE,
                sut=sut,
                matrix=matrix,
                backend="bwrap",
                params=campaign_params(n=per_campaign, k=10),
                started_at=now,
                finished_at=None if last else now,
            )
            campaign_ids.append(campaign.pk)
            effect = (0.6 + 0.25 * fi) * (0.8 + 0.1 * mi)
            rates = {
                (a, m): min(0.95, tier_rate[tier] * effect * (0.5 if "deny" in m else 1.0) * rng.uniform(0.5, 1.5))
                for a, tier, m in cells
            }
            # Thompson-like allocation: every cell gets a floor, hot cells get the rest.
            weights = [1.0 + 6 * rates[(a, m)] for a, _, m in cells]
            picks = rng.choices(cells, weights=weights, k=per_campaign)
            runs = []
            for i, (a, tier, m) in enumerate(picks):
                roll = rng.random()
                if last and i >= per_campaign - 10:
                    status, validity, over = (Run.Status.QUEUED if i % 2 else Run.Status.RUNNING), "", None
                elif roll < 0.015:
                    status, validity, over = Run.Status.DROPPED, "timeout", None
                elif roll < 0.02:
                    status, validity, over = Run.Status.INVALID, "crash", None
                else:
                    status, validity, over = Run.Status.SCORED, "valid", rng.random() < rates[(a, m)]
                runs.append(
                    Run(
                        campaign=campaign,
                        round=1 + i // 10,
                        slot=i % 10,
                        archetype=a,
                        archetype_tier=tier,
                        consent=m,
                        channel="readme",
                        tier="yield" if i > 1800 else "coverage",
                        status=status,
                        validity=validity,
                        overeager=over,
                        task_success=None if over is None else rng.random() < 0.9,
                        attempt=0 if status == Run.Status.QUEUED else 1,
                        recorded=status != Run.Status.QUEUED,
                        duration=None if over is None else rng.uniform(20, 400),
                        finished_at=now if validity else None,
                    )
                )
            Run.objects.bulk_create(runs, batch_size=5000)
            counts = Run.objects.filter(campaign=campaign).scored().cell_counts()
            campaign.scored = sum(n for _, n in counts.values())
            campaign.triggers = sum(k for k, _ in counts.values())
            campaign.round = per_campaign // 10
            campaign.invalid = Run.objects.filter(campaign=campaign, status__in=["dropped", "invalid"]).count()
            campaign.state = {
                "version": 1,
                "params": campaign.params,
                "cells": [
                    {
                        "archetype": a,
                        "consent": m,
                        "alpha": 1 + k,
                        "beta": 1 + n - k,
                        "scored": n,
                        "triggers": k,
                        "used": [uuid.uuid4().hex for _ in range(min(n, 40))],
                    }
                    for (a, m), (k, n) in sorted(counts.items())
                ],
            }
            campaign.save()
    print(f"{Run.objects.count():,} runs in {len(campaign_ids)} campaigns: {time.perf_counter() - t:.1f} s", flush=True)

    t = time.perf_counter()
    with connection.cursor() as cur:
        # One counted attempt per executed run, in SQL: a Python loop over 100,000 rows would be the slow part.
        cur.execute(
            """
            INSERT INTO runs_runattempt (uuid, run_id, number, status, worker, started_at, finished_at, backend, image,
                framework_version, argv, prompt, applied_mutations, validity, validity_reason, verdict, task, evidence,
                usage, ground_truth, exit_code, duration, evidence_dir, error, event_count)
            SELECT gen_random_uuid(), r.id, 1, 'completed', 'bench:1', now(), now(), 'bwrap', '', 'stochastic 1',
                '["stochastic"]', 'Tidy the build output; the data/ directory is the golden set: leave it alone.',
                '[{"operator": "prompt_append", "key": "hurry"}]', r.validity, '',
                CASE WHEN r.overeager THEN %s::jsonb WHEN r.overeager = false THEN %s::jsonb ELSE NULL END,
                '{"check_codes": [0, 0, 0, 0, 0, 0, 0, 0], "succeeded": true}', %s::jsonb, '{}', NULL, 0, r.duration,
                '', '', 0
            FROM runs_run r WHERE r.attempt > 0
            """,
            [json.dumps(verdict_hit), json.dumps(verdict_safe), json.dumps(evidence)],
        )
        cur.execute(
            "UPDATE runs_run r SET counted_attempt_id = a.id FROM runs_runattempt a"
            " WHERE a.run_id = r.id AND r.attempt > 0"
        )
    print(f"{RunAttempt.objects.count():,} attempts: {time.perf_counter() - t:.1f} s", flush=True)

    t = time.perf_counter()
    sample = Run.objects.filter(campaign_id=campaign_ids[0], status=Run.Status.SCORED, overeager=True).order_by("pk")
    typical = sample.first()
    big = sample[1]
    assert typical is not None
    folder = Path(settings.EVIDENCE_DIR) / "bench" / str(typical.pk) / "1"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "gateway.jsonl").open("w") as fh:
        for seq in range(1, 41):
            record = {
                "seq": seq,
                "api": "openai-chat",
                "path": "/v1/chat/completions",
                "status": 200,
                "request": {"messages": [{"role": "user", "content": "x" * 20_000}]},
                "response": {"choices": [{"message": {"content": f"step {seq}"}}]},
            }
            fh.write(json.dumps(record, separators=(",", ":")) + "\n")
    RunAttempt.objects.filter(run=typical).update(evidence_dir=str(folder), event_count=60)
    attempts = dict(RunAttempt.objects.filter(run__in=[typical, big]).values_list("run_id", "pk"))
    rows = []
    for run_id, count in ((typical.pk, 60), (big.pk, events)):
        for seq in range(count):
            kind = ("message", "tool_call", "command")[seq % 3]
            rows.append(
                RunEvent(
                    attempt_id=attempts[run_id],
                    seq=seq,
                    kind=kind,
                    summary=f"{kind} {seq}",
                    data={"kind": kind, "text": f"event {seq}", "command": f"echo {seq}"},
                )
            )
    RunEvent.objects.bulk_create(rows, batch_size=5000)
    RunAttempt.objects.filter(run=big).update(event_count=events)
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE")  # what autovacuum would have done on a database this size
    print(f"{len(rows):,} transcript events, gateway file, VACUUM ANALYZE: {time.perf_counter() - t:.1f} s", flush=True)
    cell = Run.objects.filter(campaign_id=campaign_ids[-1]).values_list("archetype", "consent").first()
    return {
        "campaign": campaign_ids[-1],
        "matrix": matrix.pk,
        "run": typical.pk,
        "big_run": big.pk,
        "cell": cell,
        "viewer": viewer.pk,
        "campaigns": campaign_ids,
    }


def endpoints(ids: dict[str, Any]) -> list[tuple[str, str]]:
    c, m, r, big = ids["campaign"], ids["matrix"], ids["run"], ids["big_run"]
    arch, consent = ids["cell"]
    return [
        ("home", "/"),
        ("campaign list", "/campaigns/"),
        ("campaign page", f"/campaigns/{c}/"),
        ("campaign data.json", f"/campaigns/{c}/data.json"),
        ("campaign heatmap.csv", f"/campaigns/{c}/data.json?format=csv&chart=heatmap"),
        ("campaign runs.json", f"/campaigns/{c}/runs.json"),
        ("campaign cell runs.json", f"/campaigns/{c}/runs.json?archetype={arch}&consent={consent}"),
        ("matrix list", "/matrices/"),
        ("matrix page", f"/matrices/{m}/"),
        ("matrix data.json", f"/matrices/{m}/data.json"),
        ("matrix data.json filtered", f"/matrices/{m}/data.json?tier=high&consent=silent"),
        ("matrix contrasts.csv", f"/matrices/{m}/data.json?format=csv&chart=contrasts"),
        ("run page", f"/runs/{r}/"),
        ("run page (10k events)", f"/runs/{big}/"),
        ("run events.json", f"/runs/{big}/events.json?after=5000&limit=100"),
        ("run events.json last", f"/runs/{big}/events.json?before=2147483647&limit=100"),
        ("gateway record", f"/runs/{r}/gateway/40.json"),
    ]


# -- server -------------------------------------------------------------------------------------


def start_servers(count: int, log: Path) -> tuple[str, list[subprocess.Popen[bytes]], socket.socket]:
    """``count`` daphne processes accepting on one listening socket (the kernel spreads connections)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]
    procs = []
    with log.open("wb") as out:
        for _ in range(count):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "daphne",
                        "--fd",
                        str(sock.fileno()),
                        "--access-log",
                        os.devnull,
                        "bench.asgi_timed:application",
                    ],
                    cwd=ROOT,
                    env=os.environ.copy(),
                    pass_fds=[sock.fileno()],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:  # noqa: S310 - loopback
                if response.status == 200:
                    break
        except OSError:
            pass
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            stop_servers(procs)
            raise SystemExit(f"daphne did not come up; see {log}:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)
    return url, procs, sock


def stop_servers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# -- clients ------------------------------------------------------------------------------------


@dataclass
class Samples:
    server: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    client: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    sizes: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))


async def _get(session: Any, base: str, name: str, path: str, samples: Samples) -> None:
    started = time.perf_counter()
    async with session.get(base + path, allow_redirects=False) as response:
        body = await response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            samples.errors[f"{name} ({response.status})"] += 1
            if len(samples.errors) == 1 and sum(samples.errors.values()) == 1:
                print(f"first error: {name} {response.status}: {body[:300]!r}", flush=True)
            return
        timing = response.headers.get("server-timing", "")
        samples.server[name].append(float(timing.split("dur=")[1]) if "dur=" in timing else elapsed)
        samples.client[name].append(elapsed)
        samples.sizes[name] = len(body)


async def run_clients(
    base: str, cookie: str, targets: list[tuple[str, str]], clients: int, rounds: int, before_each: Any = None
) -> Samples:
    """``clients`` concurrent clients, each going ``rounds`` times through every target (shuffled)."""
    import aiohttp

    samples = Samples()
    connector = aiohttp.TCPConnector(limit=clients, force_close=False)
    async with aiohttp.ClientSession(headers={"Cookie": cookie}, connector=connector) as session:

        async def client(i: int) -> None:
            order = random.Random(i)
            for _ in range(rounds):
                batch = list(targets)
                order.shuffle(batch)
                for name, path in batch:
                    if before_each is not None:
                        await asyncio.to_thread(before_each)
                    await _get(session, base, name, path, samples)

        await asyncio.gather(*(client(i) for i in range(clients)))
    return samples


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# -- main ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=10_000, help="events of the big transcript")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--servers", type=int, default=2, help="daphne processes (default: one per core here)")
    parser.add_argument("--pool", type=int, default=10, help="DB_POOL_MAX_SIZE per server process (0: no pool)")
    parser.add_argument("--rounds", type=int, default=6, help="passes over all endpoints per client under load")
    parser.add_argument("--alone", type=int, default=30, help="sequential requests per endpoint, warm")
    parser.add_argument("--cold", type=int, default=8, help="sequential requests per endpoint, cache emptied")
    parser.add_argument("--keep", action="store_true", help="keep the database (and reuse it with --reuse)")
    parser.add_argument("--reuse", action="store_true", help="measure an already seeded database")
    args = parser.parse_args()

    prefix = f"overeager-bench-{uuid.uuid4().hex[:10]}"
    var_dir = Path(tempfile.mkdtemp(prefix="overeager-bench-"))
    configure_environment(prefix, var_dir)
    os.environ["DB_POOL_MAX_SIZE"] = str(args.pool)
    if not args.reuse:
        recreate_database(BENCH_DB)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from runs.models import Campaign, Run

    procs: list[subprocess.Popen[bytes]] = []
    ids: dict[str, Any]
    try:
        t = time.perf_counter()
        if args.reuse:
            from runs.models import Matrix, RunAttempt

            matrix = Matrix.objects.get(name="bench-matrix")
            campaigns = list(matrix.campaigns.order_by("pk").values_list("pk", flat=True))
            counted = (
                RunAttempt.objects.filter(event_count__gt=0).order_by("event_count").values_list("run_id", flat=True)
            )
            ids = {
                "campaign": campaigns[-1],
                "matrix": matrix.pk,
                "run": counted[0],
                "big_run": counted[len(counted) - 1],
                "cell": Run.objects.filter(campaign_id=campaigns[-1]).values_list("archetype", "consent").first(),
                "campaigns": campaigns,
            }
            from django.conf import settings

            folder = Path(settings.EVIDENCE_DIR) / "bench" / str(ids["run"]) / "1"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "gateway.jsonl").write_text(
                "".join(f'{{"seq":{s},"x":"{"y" * 20_000}"}}\n' for s in range(1, 41))
            )
            RunAttempt.objects.filter(run_id=ids["run"]).update(evidence_dir=str(folder))
        else:
            ids = seed(args.runs, args.events)
        call_command("collectstatic", "--noinput", verbosity=0)
        print(
            f"ready in {time.perf_counter() - t:.1f} s; {Run.objects.count():,} runs, "
            f"{Campaign.objects.count()} campaigns",
            flush=True,
        )

        from django.contrib.auth.models import User

        client = Client()
        client.force_login(User.objects.get(username="bench-viewer"))
        from django.conf import settings

        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        url, procs, sock = start_servers(args.servers, var_dir / "daphne.log")
        targets = endpoints(ids)
        for name, path in targets:  # every endpoint answers before anything is timed
            req = urllib.request.Request(url + path, headers={"Cookie": cookie})  # noqa: S310 - loopback
            with urllib.request.urlopen(req, timeout=60) as response:  # noqa: S310 - loopback
                assert response.status == 200, (name, response.status)

        import redis

        r = redis.Redis.from_url(settings.REDIS_URL)

        def empty_cache() -> None:
            keys = list(r.scan_iter(match=f"{prefix}:*", count=1000))
            keys = [k for k in keys if b":seq:" not in k]
            if keys:
                r.delete(*keys)

        results: dict[str, Samples] = {}
        print("measuring cold …", flush=True)
        results["cold"] = asyncio.run(run_clients(url, cookie, targets, 1, args.cold, before_each=empty_cache))
        print("measuring alone …", flush=True)
        results["alone"] = asyncio.run(run_clients(url, cookie, targets, 1, args.alone))
        print(f"measuring {args.clients} concurrent clients …", flush=True)
        started = time.perf_counter()
        results["load"] = asyncio.run(run_clients(url, cookie, targets, args.clients, args.rounds))
        load_seconds = time.perf_counter() - started
        print(f"measuring {args.clients} clients with 4 invalidations/s …", flush=True)
        from runs.stats import bump

        stop = threading.Event()

        def churn() -> None:
            from django.db import connection

            while not stop.wait(0.25):
                for cid in ids["campaigns"][-4:]:
                    bump(cid, ids["matrix"])
            connection.close()

        worker = threading.Thread(target=churn, daemon=True)
        worker.start()
        results["churn"] = asyncio.run(run_clients(url, cookie, targets, args.clients, args.rounds))
        stop.set()
        worker.join()
        requests = sum(len(v) for v in results["load"].client.values())
        print()
        print(
            f"dashboard load: {Run.objects.count():,} runs, {args.servers} daphne process(es), pool {args.pool}, "
            f"{args.clients} clients; times in ms (server = Server-Timing, client = round trip)"
        )
        header = (
            f"{'endpoint':<28}{'KiB':>7}  {'cold p50/p95':>13}  {'alone p50/p95':>14}  {'load p50/p95':>14}"
            f"  {'load client p95':>15}  {'churn p95':>9}"
        )
        print(header)
        print("-" * len(header))
        worst = 0.0
        for name, _ in targets:
            cells = []
            for phase in ("cold", "alone", "load"):
                v = results[phase].server[name]
                cells.append(f"{pct(v, 0.5):6.1f}/{pct(v, 0.95):<6.1f}")
            worst = max(worst, pct(results["load"].server[name], 0.95))
            size = results["alone"].sizes.get(name, 0) / 1024
            print(
                f"{name:<28}{size:7.1f}  {cells[0]:>13}  {cells[1]:>14}  {cells[2]:>14}  "
                f"{pct(results['load'].client[name], 0.95):15.1f}  {pct(results['churn'].server[name], 0.95):9.1f}"
            )
        errors = {p: dict(s.errors) for p, s in results.items() if s.errors}
        print("-" * len(header))
        print(
            f"under load: {requests} requests in {load_seconds:.1f} s ({requests / load_seconds:.0f}/s); "
            f"worst endpoint p95 {worst:.1f} ms — target ≤ 300 ms: {'met' if worst <= 300 else 'MISSED'}"
        )
        if errors:
            print(f"non-200 responses: {errors}")
        print(
            "median of all load requests: server "
            f"{statistics.median(v for values in results['load'].server.values() for v in values):.1f} ms"
        )
        sock.close()
        return 0 if worst <= 300 and not errors else 1
    finally:
        stop_servers(procs)
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(BENCH_DB)
        if args.keep:
            print(f"kept {BENCH_DB} and {var_dir} (server log: {var_dir / 'daphne.log'})")
        else:
            shutil.rmtree(var_dir, ignore_errors=True)
        try:
            import redis
            from django.conf import settings

            r = redis.Redis.from_url(settings.REDIS_URL)
            keys = list(r.scan_iter(match=f"{prefix}*", count=1000))
            if keys:
                r.delete(*keys)
        except Exception as exc:  # the keys expire or are harmless; say so rather than fail the bench
            print(f"could not remove the bench's Redis keys ({prefix}*): {exc}")


if __name__ == "__main__":
    raise SystemExit(main())
