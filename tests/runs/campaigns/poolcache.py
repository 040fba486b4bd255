"""A verified pool for the campaign tests, built once per library state and cached on disk.

Building even a small pool executes ~130 reference-solution pairs in the sandbox (about three
minutes here), and transactional tests — the only kind real worker processes can see — empty
the database after every test.  So the first test of a session builds the pool for real with
``build_pool`` (size 120: one scenario per archetype × consent cell) plus the consent-stripped
twins of its non-silent scenarios, and writes it to the machine's test cache
(``$OVEREAGER_TEST_CACHE``, default ``~/.cache/overeager/test-cache``: outside the checkout, so a
fresh clone on the same machine — CI's — reuses it); every later test re-inserts it from there in
well under a second.  The key includes the library digest, the materialisation format and a digest
of the code that builds and judges a pool, so any change to either rebuilds it.

Two levels, so a change that does not change what runs does not run anything again: the built
pool is keyed by everything (``CODE``); what each candidate's references did is kept in a store
of executions keyed by the code that *runs* them (``EXEC_CODE``: the harness, the SNARE core's
world and evidence, the script instrumentation) and by each candidate's own content.  After an
oracle or verifier change the pool is rebuilt by re-judging the stored executions — the
materialisation, the checks and the judgement, in a minute or two instead of 10–15.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from django.db import transaction

from pool.building import DirectoryExecutions, build_pool
from pool.loading import load_library
from pool.materialize import FORMAT_VERSION
from pool.models import Candidate, LibraryVersion, PoolVersion
from tests.conftest import REPO_LIBRARY
from tests.machine_cache import CACHE_DIR, code_digest

# What a cached pool's verdicts and checks depend on besides the libraries.
CODE = ("pool", "oracles", "harness", "content")
# What a candidate's reference runs depend on besides its own content (which keys each entry).
EXEC_CODE = ("harness", "content", "pool/execution.py", "pool/reach.py", "oracles/predicates.py", "oracles/globs.py")
POOL_SIZE = 120
POOL_SEED = 20261201
FIELDS = (
    "position",
    "key",
    "archetype",
    "tier",
    "consent",
    "skeleton",
    "seed",
    "channel",
    "digest",
    "scenario",
    "status",
    "checks",
    "execution",
    "pool_rank",
    "variant",
)


def _cache_path(digest: str) -> Path:
    code = code_digest(*CODE)[:12]
    return CACHE_DIR / f"pool-{digest[:16]}-c{code}-f{FORMAT_VERSION}-s{POOL_SEED}-n{POOL_SIZE}-twins.json"


def executions() -> DirectoryExecutions:
    """The store of executed reference runs, keyed by the code that runs them."""
    return DirectoryExecutions(CACHE_DIR / f"executions-{code_digest(*EXEC_CODE)}")


def verified_pool() -> PoolVersion:
    """Load the libraries and a complete verified pool into the (empty) test database.

    Under pytest-xdist both workers may ask at once on a cold cache: the build runs under a lock
    on the cache directory, and the second waits for it and reads what the first wrote.
    """
    load_library(REPO_LIBRARY)
    version, _ = LibraryVersion.record("test")
    path = _cache_path(version.digest)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / ".build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _verified_pool(version, path)


def _verified_pool(version: LibraryVersion, path: Path) -> PoolVersion:
    if path.exists():
        data = json.loads(path.read_text())
        with transaction.atomic():
            pool = PoolVersion.objects.create(
                library_digest=version.digest,
                library_version=version,
                pool_seed=POOL_SEED,
                target_size=POOL_SIZE,
                backend=data["backend"],
                status=PoolVersion.Status.COMPLETE,
                report=data["report"],
                digest=data["digest"],
            )
            kept = Candidate.objects.bulk_create(
                [Candidate(pool=pool, **row) for row in data["candidates"]], batch_size=200
            )
            by_position = {c.position: c for c in kept}
            Candidate.objects.bulk_create(
                [
                    Candidate(pool=pool, twin_of=by_position[row.pop("twin_of_position")], **row)
                    for row in data["twins"]
                ],
                batch_size=200,
            )
        return pool
    from pool.twins import build_twins

    store = executions()
    pool = build_pool(pool_seed=POOL_SEED, target_size=POOL_SIZE, workers=2, backend="bwrap", executions=store)
    assert pool.status == PoolVersion.Status.COMPLETE, pool.report
    # Keep only the retained scenarios (and their twins), exactly as a cache hit would.
    pool.candidates.filter(pool_rank__isnull=True, variant="kept").delete()
    report = build_twins(pool, workers=2, backend="bwrap", executions=store)
    assert report["verified"] > 0, report
    pool.refresh_from_db()
    rows: list[dict[str, Any]] = list(pool.candidates.in_pool().values(*FIELDS))
    twins = []
    for row in pool.candidates.filter(variant="stripped").values(*FIELDS, "twin_of__position"):
        position = row.pop("twin_of__position")
        twins.append({**row, "twin_of_position": position})
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # two sessions may build it at once
    tmp.write_text(
        json.dumps(
            {"backend": pool.backend, "report": pool.report, "digest": pool.digest, "candidates": rows, "twins": twins}
        )
    )
    tmp.replace(path)
    return pool
