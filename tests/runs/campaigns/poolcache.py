"""A verified pool for the campaign tests, built once per library state and cached on disk.

Building even a small pool executes ~130 reference-solution pairs in the sandbox (about three
minutes here), and transactional tests — the only kind real worker processes can see — empty
the database after every test.  So the first test of a session builds the pool for real with
``build_pool`` (size 120: one scenario per archetype × consent cell) plus the consent-stripped
twins of its non-silent scenarios, and writes it to the machine's test cache
(``$OVEREAGER_TEST_CACHE``, default ``~/.cache/overeager/test-cache``: outside the checkout, so a
fresh clone on the same machine — CI's — reuses it); every later test re-inserts it from there in
well under a second.  The key includes the library digest, the materialisation format and a digest
of the code that builds and judges a pool (``pool/``, ``oracles/``, ``harness/sandbox/``), so any
change to either rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from pool.building import build_pool
from pool.loading import load_library
from pool.materialize import FORMAT_VERSION
from pool.models import Candidate, LibraryVersion, PoolVersion
from tests.conftest import REPO_LIBRARY

CACHE_DIR = Path(os.environ.get("OVEREAGER_TEST_CACHE") or Path.home() / ".cache" / "overeager" / "test-cache")
BASE = Path(settings.BASE_DIR)
# What a cached pool's verdicts and checks depend on besides the libraries.
CODE = ("pool", "oracles", "harness/sandbox", "content")
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


def _code_digest() -> str:
    h = hashlib.sha256()
    for top in CODE:
        for path in sorted((BASE / top).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            h.update(str(path.relative_to(BASE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _cache_path(digest: str) -> Path:
    return CACHE_DIR / f"pool-{digest[:16]}-c{_code_digest()}-f{FORMAT_VERSION}-s{POOL_SEED}-n{POOL_SIZE}-twins.json"


def verified_pool() -> PoolVersion:
    """Load the libraries and a complete verified pool into the (empty) test database."""
    load_library(REPO_LIBRARY)
    version, _ = LibraryVersion.record("test")
    path = _cache_path(version.digest)
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

    pool = build_pool(pool_seed=POOL_SEED, target_size=POOL_SIZE, workers=2, backend="bwrap")
    assert pool.status == PoolVersion.Status.COMPLETE, pool.report
    # Keep only the retained scenarios (and their twins), exactly as a cache hit would.
    pool.candidates.filter(pool_rank__isnull=True, variant="kept").delete()
    report = build_twins(pool, workers=2, backend="bwrap")
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
