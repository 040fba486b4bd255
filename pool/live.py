"""A pool build as it happens: the stage the builder is in and what each cell has verified so far.

The builder runs in its own process (``manage.py build_pool``), not in a worker, and the pool app
sits below ``runs`` in the layering, so it does not push over the dashboard's Channels topics:
the builder writes its stage to the cache (shared through Redis), the candidates' rows hold the
rest, and the pools page polls :func:`snapshot` (``/pools/live.json``, ``/pools/<pk>/live.json``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db.models import Count

from pool.models import Archetype, Candidate, ConsentMode, PoolVersion

Progress = Callable[[str, int, int], None]
# At most one cache write per this many seconds per build (a stage change always writes): the
# executed checks call progress once per candidate, materialisation once per 500 rows.
WRITE_INTERVAL_S = 1.0
# A build that stopped without finishing leaves its last stage behind; a week is plenty to see it.
KEEP_S = 7 * 24 * 3600


def cache_key(pool_id: int) -> str:
    return f"pool-build:{pool_id}"


def recorder(pool_id: int, forward: Progress, interval: float = WRITE_INTERVAL_S) -> Progress:
    """``forward`` (the command's progress bars), also recording the stage for the pools page."""
    last: dict[str, Any] = {"stage": None, "at": 0.0}

    def progress(stage: str, done: int, total: int) -> None:
        forward(stage, done, total)
        now = time.monotonic()
        if stage == last["stage"] and done < total and now - last["at"] < interval:
            return
        last["stage"], last["at"] = stage, now
        cache.set(cache_key(pool_id), {"stage": stage, "done": done, "total": total, "at": time.time()}, KEEP_S)

    return progress


def quota(pool: PoolVersion, cells: int) -> int:
    """Verified scenarios a cell needs (``pool.building.execute_stage``'s waves stop there)."""
    return -(-pool.target_size // max(1, cells))


def snapshot(pool: PoolVersion) -> dict[str, Any]:
    """What the pools page shows of ``pool``: stage, candidates by status, verified per cell."""
    modes = list(ConsentMode.objects.order_by("slug").values_list("slug", flat=True))
    archetypes = list(Archetype.objects.order_by("tier", "slug").values_list("slug", flat=True))
    originals = pool.candidates.originals()
    # order_by(): no default ordering in the GROUP BY.
    statuses = Counter(dict(originals.order_by().values("status").annotate(n=Count("id")).values_list("status", "n")))
    verified = Counter(originals.verified().per_cell())
    need = quota(pool, len(modes) * len(archetypes))
    live = cache.get(cache_key(pool.pk)) or {}
    complete = pool.status == PoolVersion.Status.COMPLETE
    stage = live.get("stage") or ("complete" if complete else "waiting for the builder")
    if complete and stage != "twins":
        stage = "complete"
    return {
        "pool": pool.pk,
        "status": pool.status,
        "target_size": pool.target_size,
        "stage": stage,
        "done": live.get("done"),
        "total": live.get("total"),
        "seconds_since_update": round(time.time() - live["at"], 1) if "at" in live else None,
        "candidates": sum(statuses.values()),
        "statuses": {s.value: statuses.get(s.value, 0) for s in Candidate.Status},
        "checked": sum(n for s, n in statuses.items() if s != Candidate.Status.PENDING),
        "verified": sum(verified.values()),
        "quota": need,
        "cells": len(modes) * len(archetypes),
        "cells_full": sum(1 for a in archetypes for k in modes if verified[(a, k)] >= need),
        "modes": modes,
        "rows": [[a, [verified[(a, k)] for k in modes]] for a in archetypes],
    }
