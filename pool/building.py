"""Building the verified scenario pool (SNARE stage 1) from the libraries in the database.

Stages, each resumable because its results are stored on the candidate rows as they are made:

1. **materialise** every archetype × consent × skeleton × seed combination (positions fixed by the
   enumeration order, so the same libraries and seed give the same rows);
2. **dedup** by the SHA-256 of what an agent sees (``pool.materialize.content_digest``: files,
   history, prompt, world setup, with canary values and ids normalised out); later duplicates
   point at the first;
3. **static checks** (structural, trap coverage, chain depth, shortcut, CDP anchoring);
4. **executed checks**: both reference solutions run in sandboxes (``--workers`` processes) and
   are scored by the composite oracle; feasibility and discriminative gradient;
5. **selection**: a deterministic draw of ``target_size`` verified scenarios, balanced over the
   archetype × consent cells as evenly as the verified candidates allow.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from django.db import close_old_connections, connections, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from content.canonical import digest_of
from pool import live, reach, verify
from pool.materialize import FORMAT_VERSION, expand, seed_tree
from pool.materialize import candidates as enumerate_candidates
from pool.models import (
    Archetype,
    Candidate,
    ConsentMode,
    FixtureSeed,
    LibraryVersion,
    PoolVersion,
    Skeleton,
)

BATCH = 500
Progress = Callable[[str, int, int], None]


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class LibrarySnapshot:
    archetypes: dict[str, dict[str, Any]]
    modes: dict[str, dict[str, Any]]
    skeletons: dict[str, dict[str, Any]]
    seeds: dict[str, dict[str, Any]]
    seed_digests: dict[str, str] = field(default_factory=dict)
    digest: str = ""

    @classmethod
    def from_db(cls) -> LibrarySnapshot:
        seeds = list(FixtureSeed.objects.prefetch_related("commits", "files"))
        return cls(
            archetypes={a.slug: a.to_data() for a in Archetype.objects.prefetch_related("fixtures", "predicates")},
            modes={m.slug: m.to_data() for m in ConsentMode.objects.prefetch_related("phrasings")},
            skeletons={s.slug: s.to_data() for s in Skeleton.objects.prefetch_related("atoms")},
            seeds={s.slug: s.to_data() for s in seeds},
            seed_digests={s.slug: s.digest for s in seeds},
            digest=LibraryVersion.current_digest(),
        )


class Executions(Protocol):
    """Where a build keeps what each candidate's references did, before any oracle judged it.

    A later build of the same candidates with the same code that runs them (the world, the
    sandbox, the scripts) re-judges what is stored instead of running the pair again: an oracle or
    verifier change then costs seconds, not a re-execution of the pool (``DirectoryExecutions``).
    """

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, executed: dict[str, Any]) -> None: ...


class DirectoryExecutions:
    """Executions as one JSON file per candidate key in a directory (its name says what ran)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

    def put(self, key: str, executed: dict[str, Any]) -> None:
        path = self._path(key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, **executed}))
        tmp.replace(path)


def execution_key(candidate_digest: str, seed_digest: str, backend: str) -> str:
    return f"{candidate_digest}:{seed_digest}:{backend}"


def fixture_paths(archetype: dict[str, Any], variables: dict[str, str]) -> list[str]:
    return [expand(f["path"], variables=variables) for f in archetype["fixtures"]]


def seed_paths(seed: dict[str, Any]) -> list[str]:
    return [f"workspace/{p}" for p in seed_tree(seed)]


def materialize_stage(pool: PoolVersion, lib: LibrarySnapshot, progress: Progress) -> int:
    """Create the candidate rows (skipped when they exist: the enumeration is deterministic)."""
    total = len(lib.archetypes) * len(lib.modes) * len(lib.skeletons) * len(lib.seeds)
    existing = pool.candidates.originals().count()
    sample = pool.candidates.originals().exclude(scenario=None).values_list("scenario__format", flat=True).first()
    if existing == total and sample == FORMAT_VERSION:
        progress("materialise", total, total)
        return total
    try:
        # Twins go too: they are built from these candidates (twin_of cascades).
        pool.candidates.all().delete()
    except ProtectedError:
        raise ValueError(
            f"pool {pool.pk} must be materialised again (its candidates are missing or of an older "
            "format), but campaign runs use its scenarios: build a new pool with another --seed, "
            "or delete those campaigns first"
        ) from None
    rows: list[Candidate] = []
    done = 0
    stream = enumerate_candidates(
        list(lib.archetypes.values()),
        list(lib.modes.values()),
        list(lib.skeletons.values()),
        list(lib.seeds.values()),
        pool_seed=pool.pool_seed,
        seed_digests=lib.seed_digests,
    )
    for position, cand in enumerate(stream):
        rows.append(
            Candidate(
                pool=pool,
                position=position,
                key=cand.key,
                archetype=cand.archetype,
                tier=lib.archetypes[cand.archetype]["tier"],
                consent=cand.consent,
                skeleton=cand.skeleton,
                seed=cand.seed,
                channel=(cand.scenario or {}).get("phrasing", {}).get("channel") or "",
                digest=cand.digest,
                scenario=cand.scenario,
                error=cand.error or "",
            )
        )
        if len(rows) >= BATCH:
            Candidate.objects.bulk_create(rows)
            done += len(rows)
            rows = []
            progress("materialise", done, total)
    Candidate.objects.bulk_create(rows)
    done += len(rows)
    progress("materialise", done, total)
    return done


def dedup_stage(pool: PoolVersion) -> tuple[int, int]:
    """Mark later candidates with an already-seen digest as duplicates; return (before, after)."""
    first: dict[str, int] = {}
    dupes: list[Candidate] = []
    rows = pool.candidates.originals().order_by("position").values_list("id", "digest", "status")
    for pk, digest, status in rows.iterator():
        if digest in first:
            if status != Candidate.Status.DUPLICATE:
                dupes.append(Candidate(id=pk, duplicate_of_id=first[digest], status=Candidate.Status.DUPLICATE))
        else:
            first[digest] = pk
    Candidate.objects.bulk_update(dupes, ["duplicate_of", "status"], batch_size=BATCH)
    total = pool.candidates.originals().count()
    return total, total - pool.candidates.originals().filter(status=Candidate.Status.DUPLICATE).count()


def static_stage(pool: PoolVersion, lib: LibrarySnapshot, progress: Progress) -> None:
    pending = pool.candidates.originals().filter(status=Candidate.Status.PENDING)
    # Ids first, then one batch read in full before it is written: a cursor left open across the
    # writes holds a read snapshot, and on SQLite (make demo) a write by any other process (a
    # worker, a dashboard login) makes that snapshot stale, so the next write fails at once with
    # "database is locked" instead of waiting its turn.
    ids = list(pending.order_by("position").values_list("pk", flat=True))
    total = len(ids)
    done = 0
    paths_of_seed = {sid: seed_paths(s) for sid, s in lib.seeds.items()}
    for start in range(0, total, BATCH):
        batch = list(Candidate.objects.filter(pk__in=ids[start : start + BATCH]).order_by("position"))
        for cand in batch:
            arch = lib.archetypes[cand.archetype]
            variables = lib.seeds[cand.seed]["vars"]
            try:
                paths = fixture_paths(arch, variables)
            except ValueError:
                paths = []
            results = verify.static_checks(
                cand.scenario, cand.error or None, arch, variables, paths, paths_of_seed[cand.seed]
            )
            cand.checks = {name: r.as_dict() for name, r in results.items()}
            failed = next((name for name, r in results.items() if not r.passed), "")
            cand.failed_check = failed
            cand.status = Candidate.Status.STATIC_FAILED if failed else Candidate.Status.STATIC_PASSED
        Candidate.objects.bulk_update(batch, ["checks", "failed_check", "status"])
        done += len(batch)
        progress("static checks", done, total)
    if not total:
        progress("static checks", 0, 0)


def execute_candidate(payload: dict[str, Any]) -> dict[str, Any]:
    """Worker-process entry point: run both reference solutions; pure inputs and outputs."""
    from pool.execution import run_reference_pair

    scenario, seed, backend = payload["scenario"], payload["seed"], payload["backend"]
    out: dict[str, Any] = {"id": payload["id"]}
    try:
        pair = run_reference_pair(
            scenario,
            seed,
            backend=backend,
            run_id=f"pool-{payload['id']}",
            seed_digest=payload["seed_digest"],
            executed=payload.get("executed"),
        )
    except Exception as exc:  # infrastructure failure: recorded, retried by a later build
        out["infra_error"] = f"{type(exc).__name__}: {exc}"
        return out
    safe, over = pair.safe, pair.overeager
    assert safe.verdict is not None and over.verdict is not None  # reference runs are always scored
    codes = safe.check_codes or []
    surface = reach.expand_surface(payload.get("surface", []), seed["vars"])
    atoms = [{"atom": check["atom"], "solve": scenario["atom_texts"][i]} for i, check in enumerate(scenario["checks"])]
    reachable, reach_evidence = reach.reachability(pair.safe_parts, surface, atoms)
    genuine, shortcut_evidence = reach.shortcut(
        pair.safe_parts,
        pair.overeager_parts,
        surface,
        codes,
        over.check_codes or [],
        [a["atom"] for a in atoms],
    )
    out["reachability"] = reachable.as_dict()
    out["trap_shortcut"] = genuine.as_dict()
    out["trap_evidence"] = {"reachability": reach_evidence, "shortcut": shortcut_evidence}
    out["safe"] = safe.as_dict()
    out["overeager"] = over.as_dict()
    failing = [scenario["checks"][i]["atom"] for i, code in enumerate(codes) if code != 0]
    if failing:
        out["feasibility"] = verify.fail(
            f"the safe solution leaves {len(failing)} of {len(codes)} atom checks failing: {', '.join(failing[:5])}"
        ).as_dict()
    else:
        out["feasibility"] = verify.ok(f"all {len(codes)} atom checks pass after the safe solution").as_dict()
    if safe.verdict.overeager:
        out["gradient"] = verify.fail(f"the safe solution triggers the oracle: {safe.verdict.reason()}").as_dict()
    elif not over.verdict.overeager:
        out["gradient"] = verify.fail("the overeager solution does not trigger the oracle").as_dict()
    else:
        out["gradient"] = verify.ok(
            f"safe solution clean; overeager solution caught: {over.verdict.reason()}"
        ).as_dict()
    # The overeager run's checks are execution the shortcut check needs, like the safe run's.
    out["floor_seconds"] = sum(r.timings["script"] + r.timings["checks"] for r in (safe, over))
    out["harness_seconds"] = safe.timings["total"] + over.timings["total"] - out["floor_seconds"]
    if payload.get("executed") is None:
        out["executed"] = pair.executed
    else:
        out["replayed"] = True
    return out


def _store_execution(cand: Candidate, result: dict[str, Any]) -> None:
    checks = dict(cand.checks)
    for name in (*verify.EXECUTED_CHECKS, *verify.TRAP_CHECKS):
        checks[name] = result[name]
    failed = next((name for name in verify.EXECUTED_CHECKS if not result[name]["passed"]), "")
    Candidate.objects.filter(pk=cand.pk, status=Candidate.Status.STATIC_PASSED).update(
        checks=checks,
        failed_check=failed,
        status=Candidate.Status.REJECTED if failed else Candidate.Status.VERIFIED,
        trap_evidence=result["trap_evidence"],
        execution={
            "safe": result["safe"],
            "overeager": result["overeager"],
            "floor_seconds": result["floor_seconds"],
            "harness_seconds": result["harness_seconds"],
        },
        updated_at=timezone.now(),
    )


def _execute_batch(
    batch: list[Candidate],
    lib: LibrarySnapshot,
    backend: str,
    workers: int,
    stats: dict[str, Any],
    progress: Progress,
    done: int,
    total: int,
    executions: Executions | None = None,
) -> int:
    by_id = {c.pk: c for c in batch}
    keys = {c.pk: execution_key(c.digest, lib.seed_digests[c.seed], backend) for c in batch}
    payloads = [
        {
            "id": c.pk,
            "scenario": c.scenario,
            "seed": lib.seeds[c.seed],
            "seed_digest": lib.seed_digests[c.seed],
            "backend": backend,
            "surface": lib.archetypes[c.archetype].get("surface", []),
            "executed": executions.get(keys[c.pk]) if executions is not None else None,
        }
        for c in batch
    ]
    # Forked workers must not inherit the parent's database connection.
    connections.close_all()
    with ProcessPoolExecutor(max_workers=workers) as executor:
        running: set[Future[dict[str, Any]]] = set()
        for payload in payloads:
            running.add(executor.submit(execute_candidate, payload))
            if len(running) >= workers * 2:
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                done += _collect(finished, by_id, stats, executions, keys)
                progress("executed checks", done, total)
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            done += _collect(finished, by_id, stats, executions, keys)
            progress("executed checks", done, total)
    return done


def execute_stage(
    pool: PoolVersion,
    lib: LibrarySnapshot,
    workers: int,
    progress: Progress,
    *,
    exhaustive: bool = False,
    executions: Executions | None = None,
) -> dict[str, Any]:
    """Run the executed checks, in waves that keep every cell moving towards its quota.

    Executing both reference solutions costs about a second per candidate, and a full pool only
    needs ``ceil(target / cells)`` verified scenarios per cell. So by default the candidates that
    passed the static checks are executed in waves: each wave takes, for every cell still short of
    its quota, as many of its next candidates (in the pool seed's rank order) as it is short. A
    wave's make-up depends only on earlier waves' outcomes, which are deterministic, so the same
    libraries and seed execute the same candidates. Candidates a full cell never needed stay
    "awaiting execution" and are reported as such; ``exhaustive`` executes every one of them.
    """
    stats: dict[str, Any] = {
        "executed": 0,
        "infra_errors": [],
        "floor_seconds": 0.0,
        "harness_seconds": 0.0,
        "waves": 0,
        "exhaustive": exhaustive,
    }
    started = time.perf_counter()
    close_old_connections()
    cells = {(a, k) for a in lib.archetypes for k in lib.modes}
    quota = -(-pool.target_size // max(1, len(cells)))
    done = 0
    while True:
        # Only ids and ranks here: the scenarios of the thousands of waiting candidates stay in
        # the database until a wave needs them.
        waiting: dict[tuple[str, str], list[tuple[str, int, int]]] = defaultdict(list)
        rows = (
            pool.candidates.originals()
            .filter(status=Candidate.Status.STATIC_PASSED)
            .values_list("id", "position", "archetype", "consent", "digest")
        )
        for pk, position, arch, consent, digest in rows.iterator():
            waiting[(arch, consent)].append((_rank_key(pool.pool_seed, digest), position, pk))
        chosen: list[tuple[str, int, int]] = []
        if exhaustive:
            chosen = [item for items in waiting.values() for item in items]
        else:
            verified = Counter(pool.candidates.originals().verified().values_list("archetype", "consent"))
            for cell, items in waiting.items():
                short = quota - verified[cell]
                if short > 0:
                    chosen += sorted(items)[:short]
        ids = [pk for _, _, pk in chosen]
        batch = list(Candidate.objects.filter(pk__in=ids).order_by("position")) if ids else []
        if not batch:
            break
        stats["waves"] += 1
        total = done + len(batch)
        errors_before = len(stats["infra_errors"])
        done = _execute_batch(batch, lib, pool.backend, workers, stats, progress, done, total, executions)
        if len(stats["infra_errors"]) > errors_before and len(stats["infra_errors"]) - errors_before == len(batch):
            break  # every candidate of the wave hit an infrastructure error: stop rather than spin
        if exhaustive:
            break
    stats["wall_seconds"] = time.perf_counter() - started
    stats["awaiting_execution"] = pool.candidates.originals().filter(status=Candidate.Status.STATIC_PASSED).count()
    return stats


def _collect(
    finished: Iterable[Future[dict[str, Any]]],
    by_id: dict[int, Candidate],
    stats: dict[str, Any],
    executions: Executions | None = None,
    keys: Mapping[int, str] | None = None,
) -> int:
    n = 0
    for fut in finished:
        result = fut.result()
        n += 1
        if "infra_error" in result:
            # Left as STATIC_PASSED: a re-run of build_pool retries it. Never counted as a verdict.
            stats["infra_errors"].append({"id": result["id"], "error": result["infra_error"]})
            continue
        executed = result.pop("executed", None)
        if executions is not None and keys is not None and executed is not None:
            executions.put(keys[result["id"]], executed)
        stats["replayed"] = stats.get("replayed", 0) + bool(result.pop("replayed", False))
        _store_execution(by_id[result["id"]], result)
        stats["executed"] += 1
        stats["floor_seconds"] += result["floor_seconds"]
        stats["harness_seconds"] += result["harness_seconds"]
    return n


def _rank_key(pool_seed: int, digest: str) -> str:
    return hashlib.sha256(f"{pool_seed}:rank:{digest}".encode()).hexdigest()


def select_stage(pool: PoolVersion, cells: list[tuple[str, str]]) -> dict[str, Any]:
    """Balanced deterministic selection: water-fill the cells one scenario at a time."""
    verified: dict[tuple[str, str], list[tuple[str, int, str]]] = defaultdict(list)
    for pk, arch, consent, digest in (
        pool.candidates.originals().verified().values_list("id", "archetype", "consent", "digest")
    ):
        verified[(arch, consent)].append((_rank_key(pool.pool_seed, digest), pk, digest))
    for items in verified.values():
        items.sort()
    taken: dict[tuple[str, str], int] = Counter()
    chosen: list[tuple[int, str]] = []
    cell_order = sorted(cells, key=lambda c: _rank_key(pool.pool_seed, "/".join(c)))
    while len(chosen) < pool.target_size:
        progressed = False
        for cell in cell_order:
            if len(chosen) >= pool.target_size:
                break
            if taken[cell] < len(verified.get(cell, [])):
                _, pk, digest = verified[cell][taken[cell]]
                chosen.append((pk, digest))
                taken[cell] += 1
                progressed = True
        if not progressed:
            break
    with transaction.atomic():
        pool.candidates.originals().filter(pool_rank__isnull=False).update(pool_rank=None)
        Candidate.objects.bulk_update(
            [Candidate(id=pk, pool_rank=rank) for rank, (pk, _) in enumerate(chosen)], ["pool_rank"], batch_size=BATCH
        )
    counts = [taken[c] for c in cells]
    available = [len(verified.get(c, [])) for c in cells]
    return {
        "pool_size": len(chosen),
        "cells": len(cells),
        "per_cell_min": min(counts) if counts else 0,
        "per_cell_max": max(counts) if counts else 0,
        "empty_cells": [f"{a}/{k}" for (a, k), n in zip(cells, counts, strict=True) if n == 0],
        "verified_per_cell_min": min(available) if available else 0,
        "digest": digest_of([d for _, d in chosen]),
    }


def trap_report(pool: PoolVersion, archetypes: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per archetype: how many of the pool's scenarios pass reachability (a) and shortcut (b).

    An archetype with fewer than ``verify.REACH_THRESHOLD`` of its scenarios passing both is
    ``excluded``, with the reason: its cells stay in the pool (a campaign still runs them, and the
    heatmap shows them) but not in the headline rates (``runs.stats``), because a trap the task
    never meets, or an act that gains the task nothing, measures curiosity, not overeagerness.
    """
    rows: dict[str, dict[str, Any]] = {
        a: {"scenarios": 0, "reachable": 0, "shortcut": 0, "both": 0} for a in archetypes
    }
    for arch, checks in pool.candidates.in_pool().values_list("archetype", "checks").iterator():
        row = rows.setdefault(arch, {"scenarios": 0, "reachable": 0, "shortcut": 0, "both": 0})
        a = bool((checks or {}).get("reachability", {}).get("passed"))
        b = bool((checks or {}).get("trap_shortcut", {}).get("passed"))
        row["scenarios"] += 1
        row["reachable"] += a
        row["shortcut"] += b
        row["both"] += a and b
    for row in rows.values():
        n = row["scenarios"]
        row["rate"] = round(row["both"] / n, 4) if n else None
        if not n:
            row["excluded"] = "no scenario in the pool"
        elif row["both"] < verify.REACH_THRESHOLD * n:
            missing = []
            if row["reachable"] < n:
                missing.append(f"trap surface not shown by the task in {n - row['reachable']} of {n}")
            if row["shortcut"] < n:
                missing.append(f"no executed shortcut in {n - row['shortcut']} of {n}")
            row["excluded"] = (
                f"{row['both']} of {n} scenarios pass both trap checks (< {verify.REACH_THRESHOLD:.0%}): "
                + "; ".join(missing)
            )
        else:
            row["excluded"] = ""
    return dict(sorted(rows.items()))


def build_pool(
    *,
    pool_seed: int,
    target_size: int,
    workers: int,
    backend: str,
    exhaustive: bool = False,
    progress: Progress = _no_progress,
    executions: Executions | None = None,
) -> PoolVersion:
    """Build (or resume) the pool for the current libraries; returns the finished PoolVersion.

    ``executions``: where to keep each candidate's reference runs before judgement, and where
    stored ones are re-judged instead of run again (see :class:`Executions`).
    """
    lib = LibrarySnapshot.from_db()
    if not lib.archetypes or not lib.modes or not lib.skeletons or not lib.seeds:
        raise ValueError("the libraries are empty: run `manage.py load_libraries` first")
    version = LibraryVersion.objects.filter(digest=lib.digest).first()
    pool, _ = PoolVersion.objects.get_or_create(
        library_digest=lib.digest,
        pool_seed=pool_seed,
        target_size=target_size,
        defaults={"backend": backend, "library_version": version},
    )
    if pool.backend != backend:
        PoolVersion.objects.filter(pk=pool.pk).update(backend=backend)
        pool.backend = backend
    progress = live.recorder(pool.pk, progress)  # the pools page shows the build as it goes
    timings: dict[str, float] = {}
    t = time.perf_counter()
    materialize_stage(pool, lib, progress)
    timings["materialise"] = time.perf_counter() - t
    t = time.perf_counter()
    before, after = dedup_stage(pool)
    timings["dedup"] = time.perf_counter() - t
    t = time.perf_counter()
    static_stage(pool, lib, progress)
    timings["static"] = time.perf_counter() - t
    t = time.perf_counter()
    exec_stats = execute_stage(pool, lib, workers, progress, exhaustive=exhaustive, executions=executions)
    timings["executed"] = time.perf_counter() - t
    cells = [(a, k) for a in sorted(lib.archetypes) for k in sorted(lib.modes)]
    t = time.perf_counter()
    selection = select_stage(pool, cells)
    timings["select"] = time.perf_counter() - t

    passes = {name: 0 for name in (*verify.CHECKS, *verify.TRAP_CHECKS)}
    for checks in (
        pool.candidates.originals()
        .exclude(status=Candidate.Status.DUPLICATE)
        .values_list("checks", flat=True)
        .iterator()
    ):
        for name, result in (checks or {}).items():
            passes[name] += bool(result.get("passed"))
    statuses = Counter(pool.candidates.originals().values_list("status", flat=True))
    report = {
        "candidates": before,
        "after_dedup": after,
        "duplicates": before - after,
        "check_passes": passes,
        "statuses": dict(statuses),
        "verified": statuses.get(Candidate.Status.VERIFIED, 0),
        "retained": selection["pool_size"],
        "selection": selection,
        "trap_checks": trap_report(pool, lib.archetypes),
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "execution": {k: (round(v, 2) if isinstance(v, float) else v) for k, v in exec_stats.items()},
        "workers": workers,
        "backend": backend,
    }
    # Complete = every cell got its share or ran out of candidates, with no infrastructure errors
    # left to retry (those candidates are still awaiting execution and a re-run picks them up).
    complete = not exec_stats["infra_errors"] and selection["pool_size"] > 0
    PoolVersion.objects.filter(pk=pool.pk).update(
        report=report,
        digest=selection["digest"],
        status=PoolVersion.Status.COMPLETE if complete else PoolVersion.Status.BUILDING,
        finished_at=timezone.now() if complete else None,
    )
    pool.refresh_from_db()
    return pool
