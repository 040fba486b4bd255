"""Which non-action runs a validation queue holds, in which order, and how many labels each wants.

Pure Python (no Django): ``plan_queue`` takes candidate runs with their stratum (the system, the
S/B/R levels, or both — whatever the caller groups by) and returns the queue's items.

* **Allocation** of ``size`` items over the strata: *proportional* — stratum h gets
  size · N_h / N by the largest-remainder (Hamilton) method, so the allocations sum to ``size``
  exactly (Cochran 1977, *Sampling Techniques*, 3rd ed., §5.5 proportional allocation); or
  *equal* — every stratum the same number, a stratum smaller than its share giving its surplus to
  the others (water-filling), which over-represents rare systems or axis levels so that the
  judge's agreement can be read per stratum. ``size=None`` takes every candidate.
* **Selection** within a stratum: a seeded shuffle, so a queue is reproducible from its seed.
* **Order**: the strata are interleaved by the Sainte-Laguë rule (next item from the stratum
  with the smallest (taken + ½) / allocation), so every prefix of the queue is itself close to
  the allocation — validators who stop early still leave a stratified sample.
* **Overlap**: ⌊share · n + ½⌋ items want ``overlap`` labels (for inter-rater agreement), spread
  evenly through the order (item i when ⌊(i+1)k/n⌋ > ⌊ik/n⌋); the others want one.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

PROPORTIONAL = "proportional"
EQUAL = "equal"
ALLOCATIONS = (PROPORTIONAL, EQUAL)


@dataclass(frozen=True)
class Candidate:
    run_id: int
    stratum: Hashable = ()


@dataclass(frozen=True)
class PlannedItem:
    position: int  # 0-based order in the queue
    run_id: int
    stratum: Hashable
    wanted: int  # labels wanted for this run: 1, or ``overlap`` for the overlap share


def _stratum_key(stratum: Hashable) -> str:
    # Strata mix None and ints (SNARE runs have no axis levels); repr sorts them stably.
    return repr(stratum)


def proportional_allocation(sizes: Sequence[int], total: int) -> list[int]:
    """Largest-remainder (Hamilton) allocation of ``total`` proportional to ``sizes``.

    Ties in the remainders go to the earlier stratum, so the allocation is deterministic.
    """
    population = sum(sizes)
    if total > population:
        raise ValueError(f"cannot allocate {total} items from {population} candidates")
    if population == 0:
        return [0] * len(sizes)
    quotas = [total * s / population for s in sizes]
    floors = [int(q) for q in quotas]
    left = total - sum(floors)
    order = sorted(range(len(sizes)), key=lambda i: (-(quotas[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return floors


def equal_allocation(sizes: Sequence[int], total: int) -> list[int]:
    """``total`` spread as evenly as the strata allow: small strata are taken whole, the rest share the remainder."""
    population = sum(sizes)
    if total > population:
        raise ValueError(f"cannot allocate {total} items from {population} candidates")
    alloc = [0] * len(sizes)
    open_strata = [i for i, s in enumerate(sizes) if s > 0]
    left = total
    while left > 0 and open_strata:
        share, extra = divmod(left, len(open_strata))
        still_open = []
        for rank, i in enumerate(open_strata):
            give = min(sizes[i] - alloc[i], share + (1 if rank < extra else 0))
            alloc[i] += give
            left -= give
            if alloc[i] < sizes[i]:
                still_open.append(i)
        open_strata = still_open
    return alloc


def overlap_positions(n: int, share: float) -> set[int]:
    """The round(share · n) positions out of n that want several labels, evenly spread."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the overlap share must be between 0 and 1, got {share}")
    k = math.floor(share * n + 0.5)  # half up: 2.5 runs → 3, not Python's half-to-even 2
    return {i for i in range(n) if ((i + 1) * k) // n > (i * k) // n} if n else set()


def plan_queue(
    candidates: Iterable[Candidate],
    *,
    size: int | None,
    allocation: str = PROPORTIONAL,
    overlap: int = 2,
    overlap_share: float = 0.0,
    seed: int = 0,
) -> list[PlannedItem]:
    """The queue's items in order; see the module docstring for the rules.

    A ``size`` above the number of candidates takes them all (a queue can be smaller than asked,
    never padded); duplicate run ids are an error (a run is one item).
    """
    if allocation not in ALLOCATIONS:
        raise ValueError(f"allocation must be one of {', '.join(ALLOCATIONS)}, got {allocation!r}")
    if overlap < 1:
        raise ValueError(f"overlap is the number of labels wanted per overlapping run (>= 1), got {overlap}")
    if size is not None and size < 0:
        raise ValueError(f"size must be positive or None (all runs), got {size}")
    groups: dict[str, list[int]] = defaultdict(list)
    strata: dict[str, Hashable] = {}
    seen: set[int] = set()
    for cand in candidates:
        if cand.run_id in seen:
            raise ValueError(f"run {cand.run_id} is a candidate twice")
        seen.add(cand.run_id)
        key = _stratum_key(cand.stratum)
        strata[key] = cand.stratum
        groups[key].append(cand.run_id)
    keys = sorted(groups)
    for key in keys:
        groups[key].sort()
        random.Random(f"{seed}:{key}").shuffle(groups[key])  # noqa: S311 - sampling, not security
    sizes = [len(groups[k]) for k in keys]
    total = sum(sizes) if size is None else min(size, sum(sizes))
    allocate = proportional_allocation if allocation == PROPORTIONAL else equal_allocation
    alloc = allocate(sizes, total)

    taken = [0] * len(keys)
    ordered: list[tuple[int, Hashable]] = []
    for _ in range(total):
        best = min(
            (i for i in range(len(keys)) if taken[i] < alloc[i]),
            key=lambda i: ((taken[i] + 0.5) / alloc[i], i),
        )
        ordered.append((groups[keys[best]][taken[best]], strata[keys[best]]))
        taken[best] += 1
    several = overlap_positions(total, overlap_share) if overlap > 1 else set()
    return [
        PlannedItem(position=i, run_id=run_id, stratum=stratum, wanted=overlap if i in several else 1)
        for i, (run_id, stratum) in enumerate(ordered)
    ]
