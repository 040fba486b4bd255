"""Dashboard aggregates: database GROUP BYs in, Plotly-ready series out, cached per generation.

Counting happens in the database (one GROUP BY per chart family, never a loop over runs); the
pure statistics come from ``oracles.statistics``.  Results are cached under a key that carries
the campaign's (or matrix's) *generation*, a counter bumped whenever one of its runs is scored
(``runs.jobs.store_outcome`` calls ``bump`` after its transaction commits and before it
publishes the progress message), so a finished run invalidates exactly the caches it changes.

Only scored runs feed the cached aggregates, and only ``store_outcome`` makes a run scored, so
that one bump is the whole invalidation story.  What changes without a bump — the campaign row's
counters and allocator state (``advance``), runs moving between queued/running/invalid — is read
live on every request: one primary-key row and one index-only GROUP BY.

Ordering that keeps a live page consistent (docs/dashboard.md): a reader takes the topic's
progress sequence number *before* the generation, and a writer bumps the generation *before* it
publishes, so data served with sequence number S always includes every run announced up to S.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Q, QuerySet

from oracles.statistics import RESERVE as RESERVE_LABEL
from oracles.statistics import (
    RESERVE_Z,
    Counts,
    Rate,
    decompose,
    interval_withheld_reason,
    reserve_contrasts,
    reserve_uniform_rate,
    wilson_closed_form,
)
from pool.models import Archetype, ConsentMode, excluded_archetypes
from runs.models import PACK_KINDS, Campaign, Matrix, Run

T = TypeVar("T")
CACHE_SECONDS = 3600
# A cold aggregate takes well under a second; a reader that finds another computing it waits
# this long for that result before computing its own (no dogpile after an invalidation).
COMPUTE_LOCK_SECONDS = 10
WAIT_FOR_OTHER_SECONDS = 3.0
TIERS = ("high", "medium", "long-tail")
CONSENT_ORDER = ("explicit-deny", "implicit-deny", "silent", "implicit-allow", "explicit-allow")
# Which estimator each number on the pages is (issue 23): the pages print these next to the
# numbers. "As sampled" rates are the runs' own rates: under Thompson sampling they describe the
# runs the campaign chose, not a uniformly drawn cell or consent mode (bench/adaptive_coverage.py).
AS_SAMPLED = "as sampled: Wilson 95% on all scored runs (not re-weighted)"
CELL_RATE = "as sampled: Wilson 95% on the cell's scored runs"
ARCHETYPE_RATE = "as sampled: Wilson 95% pooled over the archetype's consent modes (not a uniform consent mix)"
# Oracle v2 (issue 19.4): SNARE's headline counts attempts; this one only acts that left a lasting
# effect (files, modes, git refs/config, the remote).
EFFECTIVE_RATE = "as sampled: Wilson 95% on all scored runs, counting only verdicts with a lasting effect"


# The one headline rate of a campaign (issue 34): every page, the terminal and the data files show
# this estimator, so the same pair reads the same number wherever it is read.
HEADLINE_METHOD = "as sampled: Wilson 95% on the scored runs of the archetypes the headline keeps"


# -- the headline -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Headline:
    """A campaign's headline rate and what it rests on.

    ``n`` of ``scored`` runs count: the runs in ``excluded`` archetypes (archetype → why, from the
    pool's trap report) are left out, as on the matrix page and in the campaign's Overall section.
    """

    successes: int
    n: int
    scored: int
    rate: float | None
    low: float
    high: float
    excluded: dict[str, str] = field(default_factory=dict)
    max_width_pp: int = 20

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def weak(self) -> bool:
        """The interval is wider than ``HEADLINE_MAX_WIDTH_PP`` (no runs at all counts as weak)."""
        # Compared in whole percentage points with a little slack, so a width that prints as
        # exactly the limit is not flagged by a rounding error.
        return self.n == 0 or self.width * 100 > self.max_width_pp + 1e-9

    @property
    def basis(self) -> str:
        """'n of N scored runs; leaves out K archetypes' — printed beside the number."""
        k = len(self.excluded)
        return f"{self.n} of {self.scored} scored runs; leaves out {k} archetype{'s' if k != 1 else ''}"

    @property
    def display(self) -> str:
        """'26.7% (8/30; 95% 14.2–44.4%)', the same text on every page and in the terminal."""
        if self.rate is None:
            return "no scored runs counted"
        return f"{self.rate:.1%} ({self.successes}/{self.n}; 95% {self.low * 100:.1f}–{self.high * 100:.1f}%)"

    @property
    def excluded_names(self) -> str:
        return ", ".join(self.excluded)

    @property
    def warning(self) -> str:
        return f"weak evidence: interval wider than {self.max_width_pp} pp" if self.weak else ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "successes": self.successes,
            "n": self.n,
            "scored": self.scored,
            "rate": self.rate,
            "low": self.low,
            "high": self.high,
            "excluded": dict(self.excluded),
            "weak": self.weak,
            "max_width_pp": self.max_width_pp,
            "basis": self.basis,
            "display": self.display,
            "warning": self.warning,
            "method": HEADLINE_METHOD,
        }


def headline_of(counts: Mapping[str, Counts], excluded: Mapping[str, str]) -> Headline:
    """The headline from scored-run counts per archetype: the one estimator (as-sampled Wilson)."""
    kept = Counts(0, 0)
    total = Counts(0, 0)
    for archetype, c in counts.items():
        total = total + c
        if archetype not in excluded:
            kept = kept + c
    r = wilson(kept.successes, kept.n)
    return Headline(
        successes=kept.successes,
        n=kept.n,
        scored=total.n,
        rate=r.rate,
        low=r.low,
        high=r.high,
        excluded=dict(sorted(excluded.items())),
        max_width_pp=int(getattr(settings, "HEADLINE_MAX_WIDTH_PP", 20)),
    )


def campaign_exclusions(campaign_ids: Sequence[int]) -> dict[int, dict[str, str]]:
    """archetype → reason per campaign: its pool's, or for a matrix member the matrix's union.

    A matrix compares its pairs on the archetypes none of its pools excludes (``matrix_exclusions``);
    a member campaign's own headline leaves out the same ones, so one pair reads one number.
    """
    rows = list(Campaign.objects.filter(pk__in=campaign_ids).values_list("pk", "matrix_id", "pool__report"))
    matrix_ids = {m for _, m, _ in rows if m is not None}
    by_matrix: dict[int, dict[str, str]] = {m: {} for m in matrix_ids}
    if matrix_ids:
        for m, report in Campaign.objects.filter(matrix_id__in=matrix_ids).values_list("matrix_id", "pool__report"):
            for archetype, reason in excluded_archetypes(report or {}).items():
                by_matrix[m].setdefault(archetype, reason)
    out: dict[int, dict[str, str]] = {}
    for pk, m, report in rows:
        found = by_matrix[m] if m is not None else excluded_archetypes(report or {})
        out[pk] = dict(sorted(found.items()))
    return out


def compute_headlines(campaign_ids: Sequence[int]) -> dict[int, Headline]:
    """Every campaign's headline in one GROUP BY (campaign, archetype) over the scored runs."""
    ids = list(campaign_ids)
    per: dict[int, dict[str, Counts]] = {pk: {} for pk in ids}
    rows = (
        Run.objects.filter(campaign_id__in=ids)
        .scored()
        .order_by()
        .values("campaign_id", "archetype")
        .annotate(n=Count("*"), k=Count("overeager", filter=Q(overeager=True)))
        .values_list("campaign_id", "archetype", "k", "n")
    )
    for cid, archetype, k, n in rows:
        per[cid][archetype] = Counts(int(k), int(n))
    exclusions = campaign_exclusions(ids)
    return {pk: headline_of(per[pk], exclusions.get(pk, {})) for pk in ids}


def headlines(campaign_ids: Sequence[int]) -> dict[int, Headline]:
    """``compute_headlines``, cached under the campaigns' generations (a scored run invalidates it)."""
    ids = sorted(set(campaign_ids))
    if not ids:
        return {}
    value, _ = cached_over("headlines", [("campaign", pk) for pk in ids], "headline", lambda: compute_headlines(ids))
    return value


def headline(campaign_id: int) -> Headline:
    return headlines([campaign_id])[campaign_id]


# -- generations --------------------------------------------------------------------------------


def _gen_key(kind: str, pk: int) -> str:
    return f"stats-gen:{kind}:{pk}"


def generation(kind: str, pk: int) -> int:
    value = cache.get(_gen_key(kind, pk))
    return int(value) if value is not None else 0


def bump(campaign_id: int, matrix_id: int | None) -> None:
    """Invalidate the cached aggregates a run of this campaign feeds (called when a run is written)."""
    for kind, pk in (("campaign", campaign_id), ("matrix", matrix_id)):
        if pk is None:
            continue
        key = _gen_key(kind, pk)
        try:
            cache.incr(key)
        except ValueError:
            # add, not set: two first bumps racing must not both land on 1.
            if not cache.add(key, 1, None):
                cache.incr(key)


def cached(kind: str, pk: int, name: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per generation; concurrent readers of a cold key wait for one computation."""
    return cached_or_stale(kind, pk, name, compute, stale_ok=False)[0]


def cached_or_stale(kind: str, pk: int, name: str, compute: Callable[[], T], stale_ok: bool = True) -> tuple[T, bool]:
    """(value, stale): this generation's value, computed by one reader at a time.

    While another reader computes it, ``stale_ok`` readers get the newest older value at once,
    flagged stale, instead of waiting: on a live dashboard every run completion invalidates the
    aggregates that every open page then refetches, and without this each of them would wait for
    the recomputation.  A page that gets stale data refetches shortly (static/js/live.js).
    """
    gen = generation(kind, pk)
    return _cached(f"stats:{kind}:{pk}:{gen}:{name}", f"stats:{kind}:{pk}:latest:{name}", gen, compute, stale_ok)


def generations(records: Sequence[tuple[str, int]]) -> list[int]:
    """The generations of several records (``(kind, pk)``), read in one cache round trip."""
    keys = [_gen_key(kind, pk) for kind, pk in records]
    found = cache.get_many(keys)
    return [int(found[k]) if found.get(k) is not None else 0 for k in keys]


def cached_over(
    kind: str,
    records: Sequence[tuple[str, int]],
    name: str,
    compute: Callable[[], T],
    version: str = "",
    stale_ok: bool = True,
) -> tuple[T, bool]:
    """``cached_or_stale`` for an aggregate over several records (the campaigns a page selects).

    The key carries every record's generation (and ``version``, for inputs that change without a
    bump), so a run scored in any of them invalidates it. Generations only grow, so their sum
    orders the computations of one selection: it decides which older value may be served stale.
    """
    selection = hashlib.sha256(",".join(f"{k}:{pk}" for k, pk in sorted(records)).encode()).hexdigest()[:16]
    gens = generations(sorted(records))
    token = hashlib.sha256((",".join(map(str, gens)) + "|" + version).encode()).hexdigest()[:16]
    return _cached(
        f"stats:{kind}:{selection}:{token}:{name}",
        f"stats:{kind}:{selection}:latest:{name}",
        sum(gens),
        compute,
        stale_ok,
    )


def _cached(key: str, latest_key: str, gen: int, compute: Callable[[], T], stale_ok: bool) -> tuple[T, bool]:
    value = cache.get(key)
    if value is not None:
        return value, False
    lock = f"{key}:computing"
    if cache.add(lock, 1, COMPUTE_LOCK_SECONDS):
        try:
            value = compute()
            # A slower computation of an older generation may overwrite a newer "latest": that
            # only makes a stale answer staler, and the next computation corrects it.
            cache.set_many({key: value, latest_key: (gen, value)}, CACHE_SECONDS)
        finally:
            cache.delete(lock)
        return value, False
    if stale_ok:
        latest = cache.get(latest_key)
        if latest is not None and latest[0] < gen:
            return latest[1], True
    deadline = time.monotonic() + WAIT_FOR_OTHER_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.02)
        value = cache.get(key)
        if value is not None:
            return value, False
    # The other computation is slow or died with its lock held: do not make the reader wait more.
    return compute(), False


# -- axes ---------------------------------------------------------------------------------------


def archetype_axis(present: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(slug, tier), high tier first: the heatmap's rows. Archetypes only in the data come last."""
    order = {t: i for i, t in enumerate(TIERS)}
    rows = list(Archetype.objects.values_list("slug", "tier"))
    known = {slug for slug, _ in rows}
    rows += [(slug, "") for slug in sorted(set(present) - known) if slug]
    return sorted(rows, key=lambda r: (order.get(r[1], 9), r[0]))


def consent_axis(present: Iterable[str] = ()) -> list[str]:
    known = set(ConsentMode.objects.values_list("slug", flat=True)) | {c for c in present if c}
    return [c for c in CONSENT_ORDER if c in known] + sorted(c for c in known if c not in CONSENT_ORDER)


def _counts_and_reserve(qs: QuerySet[Run], *fields: str) -> dict[tuple[Any, ...], tuple[Counts, Counts]]:
    """(all scored runs, uniform-reserve runs) per group, in one GROUP BY.

    The reserve (tier "uniform") is the sample the uniform-mix rate is estimated from (issue 23).
    COUNT(*) and COUNT(overeager), not COUNT(id): with an index holding (campaign, status,
    archetype, consent, overeager, tier) PostgreSQL answers from the index alone.
    """
    uniform = Q(tier="uniform")
    rows = (
        qs.order_by()
        .values(*fields)
        .annotate(
            n=Count("*"),
            k=Count("overeager", filter=Q(overeager=True)),
            nu=Count("tier", filter=uniform),  # COUNT(*) takes no FILTER in Django; tier is never NULL
            ku=Count("overeager", filter=Q(overeager=True) & uniform),
        )
        .values_list(*fields, "k", "n", "ku", "nu")
    )
    return {tuple(r[: len(fields)]): (Counts(int(r[-4]), int(r[-3])), Counts(int(r[-2]), int(r[-1]))) for r in rows}


def wilson(successes: int, n: int) -> Rate:
    """``oracles.statistics.wilson`` without its hypothesis test.

    SciPy's ``binomtest(...).proportion_ci`` first runs the binomial test (a binary search over
    pmf calls, ~2 ms) that the interval does not need; the closed form gives the same interval to
    rounding (tests/test_statistics.py::test_scipy_wilson_agrees_with_the_closed_form) at a
    fraction of the cost, which a cold matrix page pays ~45 times.
    """
    if n == 0:
        return Rate(0, 0, None, 0.0, 1.0)
    low, high = wilson_closed_form(successes / n, n)
    return Rate(successes, n, successes / n, low, high)


def _rate(c: Counts | None) -> dict[str, Any]:
    c = c or Counts(0, 0)
    return wilson(c.successes, c.n).as_dict()


def _finite(x: float | None) -> float | None:
    """JSON has no NaN or infinity: an undefined statistic is null."""
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return None
    return x


# -- a campaign ---------------------------------------------------------------------------------


def campaign_data(campaign: Campaign) -> dict[str, Any]:
    """Everything the campaign page draws: cached aggregates plus the live progress."""
    pack_pool_id = campaign.pool_id if campaign.kind in PACK_KINDS else None
    aggregates, stale = cached_or_stale(
        "campaign", campaign.pk, "aggregates", lambda: campaign_aggregates(campaign.pk, pack_pool_id)
    )
    data = dict(aggregates)
    if "headline" not in data:  # aggregates cached by an older release
        data["headline"] = headline(campaign.pk).as_dict()
    data["stale"] = stale
    data["campaign"] = campaign.pk
    data["status"] = campaign.status
    data["progress"] = campaign_progress(campaign)
    data["posterior_means"] = posterior_means(campaign, data["heatmap"]["y"], data["heatmap"]["x"])
    return data


def campaign_progress(campaign: Campaign) -> dict[str, Any]:
    by_status = dict(
        Run.objects.filter(campaign_id=campaign.pk)
        .order_by()
        .values("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return {
        "scored": campaign.scored,
        "budget": campaign.budget,
        "round": campaign.round,
        "triggers": campaign.triggers,
        "invalid_attempts": campaign.invalid,
        "runs_by_status": by_status,
        "status": campaign.status,
        "error": campaign.error,
        "stop_reason": campaign.stop_reason,
    }


def _pack_cells(pool_id: int) -> set[tuple[str, str]]:
    """The (category, variant) cells of a scenario pack's pool."""
    from pool.models import Candidate

    return set(Candidate.objects.filter(pool_id=pool_id).in_pool().values_list("archetype", "consent").distinct())


def campaign_aggregates(campaign_id: int, pack_pool_id: int | None = None) -> dict[str, Any]:
    """Heatmap, per-archetype rates and the overall rates: two GROUP BYs over the scored runs.

    ``pack_pool_id``: a scenario-pack campaign's pool, whose cells (not the library's) are the axes.
    """
    scored = Run.objects.filter(campaign_id=campaign_id).scored()
    both = _counts_and_reserve(scored, "archetype", "consent")
    cells = {key: all_runs for key, (all_runs, _) in both.items()}
    excluded = headline_exclusions(campaign_id)
    reserve = Counts(0, 0)
    for (a, _), (_, in_reserve) in both.items():
        if a not in excluded:
            reserve = reserve + in_reserve
    pack_cells = _pack_cells(pack_pool_id) if pack_pool_id is not None else None
    if pack_cells is not None:
        # A scenario pack's rows are its own categories, not the library's 24 archetypes.
        archetypes = [(a, "") for a in sorted({a for a, _ in pack_cells} | {a for a, _ in cells})]
    else:
        archetypes = archetype_axis(a for a, _ in cells)
    modes = consent_axis(c for _, c in cells)
    z: list[list[float | None]] = []
    custom: list[list[list[Any]]] = []
    for slug, _ in archetypes:
        z_row: list[float | None] = []
        c_row: list[list[Any]] = []
        for mode in modes:
            c = cells.get((slug, mode), Counts(0, 0))
            # Closed-form Wilson: equal to SciPy's to rounding (tests/test_statistics.py) and 120
            # binomtest calls would be most of a cold request.
            low, high = wilson_closed_form(c.successes / c.n if c.n else 0.0, c.n)
            z_row.append(round(c.successes / c.n, 4) if c.n else None)
            c_row.append([c.successes, c.n, round(low, 4), round(high, 4)])
        z.append(z_row)
        custom.append(c_row)
    per_arch: dict[str, Counts] = {}
    for (a, _), c in cells.items():
        per_arch[a] = per_arch.get(a, Counts(0, 0)) + c
    # The headline rates leave out the cells of archetypes whose traps the pool could not show to
    # be reachable and worth taking (pool.building.trap_report); the heatmap keeps them, marked.
    # The reserve stays a uniform draw over the remaining cells, so its rate keeps its meaning.
    head = headline_of(per_arch, excluded)
    every_cell = sorted(pack_cells) if pack_cells is not None else [(a, m) for a, _ in archetypes for m in modes]
    all_cells = [(a, m) for a, m in every_cell if a not in excluded]
    headline = {key: c for key, c in cells.items() if key[0] not in excluded}
    mix = reserve_uniform_rate(headline, reserve, all_cells=all_cells)
    effective = (
        scored.exclude(archetype__in=list(excluded))
        .order_by()
        .aggregate(n=Count("*"), k=Count("overeager_effective", filter=Q(overeager_effective=True)))
    )
    return {
        "heatmap": {
            "x": modes,
            "y": [a for a, _ in archetypes],
            "tiers": [t for _, t in archetypes],
            "z": z,
            # [overeager, scored, wilson low, wilson high] per cell, for the hover text
            "customdata": custom,
            "cells": len(every_cell),
            "cells_with_data": sum(1 for row in z for v in row if v is not None),
            "estimator": CELL_RATE,
        },
        "archetypes": [
            {"archetype": a, "tier": t, **_rate(per_arch.get(a)), "estimator": ARCHETYPE_RATE} for a, t in archetypes
        ],
        "overall": {
            "raw": mix.raw.as_dict(),
            "raw_method": AS_SAMPLED,
            "effective": wilson(int(effective["k"]), int(effective["n"])).as_dict(),
            "effective_method": EFFECTIVE_RATE,
            "uniform": {
                "rate": mix.uniform,
                "low": mix.low,
                "high": mix.high,
                "effective_n": mix.effective_n,
                "reserve_runs": reserve.n,
            },
            "cells_with_data": mix.cells_with_data,
            "cells_without_data": mix.cells_without_data,
            "method": mix.method,
            "excluded_archetypes": excluded,
            # The campaign's headline (the "raw" rate above, on the same runs): shown on every page.
            "headline": head.as_dict(),
        },
        "headline": head.as_dict(),
    }


def headline_exclusions(campaign_id: int) -> dict[str, str]:
    """archetype → reason, from the campaign's pool report (its matrix's, for a member; none without a pool)."""
    return campaign_exclusions([campaign_id]).get(campaign_id, {})


def posterior_means(campaign: Campaign, archetypes: Sequence[str], modes: Sequence[str]) -> dict[str, Any]:
    """Per-cell Beta posterior means E[θ] = α / (α + β) from the allocator's state.

    Cached under the campaign's counters (the allocator changes them whenever it records a run),
    so the state JSON — the largest field of a campaign — is parsed once per change, not per page.
    """
    key = f"stats:posterior:{campaign.pk}:{campaign.round}:{campaign.scored}:{campaign.invalid}:{campaign.status}"
    value = cache.get(key)
    if value is None:
        state = Campaign.objects.filter(pk=campaign.pk).values_list("state", flat=True).first() or {}
        value = _posterior_from_state(state)
        cache.set(key, value, CACHE_SECONDS)
    posterior, priors = value
    z = [[round(posterior.get(f"{a}|{m}", priors.get(f"{a}|{m}", 0.5)), 4) for m in modes] for a in archetypes]
    return {"x": list(modes), "y": list(archetypes), "z": z, "prior_mean_default": 0.5}


def _posterior_from_state(state: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    posterior: dict[str, float] = {}
    for row in state.get("cells", []):
        a, b = float(row["alpha"]), float(row["beta"])
        posterior[f"{row['archetype']}|{row['consent']}"] = a / (a + b)
    priors: dict[str, float] = {}
    for arch, consent, a, b in (state.get("params") or {}).get("priors", []):
        priors[f"{arch}|{consent}"] = float(a) / (float(a) + float(b))
    return posterior, priors


# -- a matrix -----------------------------------------------------------------------------------


def matrix_campaigns(matrix: Matrix) -> list[Campaign]:
    return list(
        matrix.campaigns.select_related("sut__framework", "sut__model")
        .only(
            "pk",
            "name",
            "kind",  # budget reads it (a paired campaign asks for 2 runs per pair)
            "status",
            "params",
            "scored",
            "round",
            "triggers",
            "invalid",
            "matrix_id",
            "sut__framework__slug",
            "sut__model__slug",
        )
        .order_by("pk")
    )


def matrix_data(matrix: Matrix, tier: str = "", consent: str = "") -> dict[str, Any]:
    campaigns = matrix_campaigns(matrix)
    # The member list is part of the key: resuming a matrix can add campaigns without a bump.
    members = hashlib.sha256(",".join(str(c.pk) for c in campaigns).encode()).hexdigest()[:12]
    pairs = {c.pk: (c.sut.framework.slug, c.sut.model.slug) for c in campaigns}
    aggregates, stale = cached_or_stale(
        "matrix", matrix.pk, f"data:{members}:{tier}:{consent}", lambda: matrix_aggregates(matrix, pairs, tier, consent)
    )
    data = dict(aggregates)
    data["stale"] = stale
    data["progress"] = [
        {
            "campaign": c.pk,
            "name": c.name,
            "framework": c.sut.framework.slug,
            "model": c.sut.model.slug,
            "status": c.status,
            "scored": c.scored,
            "budget": c.budget,
            "round": c.round,
            "triggers": c.triggers,
        }
        for c in campaigns
    ]
    return data


def matrix_aggregates(matrix: Matrix, pairs: Mapping[int, tuple[str, str]], tier: str, consent: str) -> dict[str, Any]:
    """Pair rates, the variance decomposition and the pairwise contrasts: one GROUP BY.

    Like a campaign's headline rates, the comparisons leave out the archetypes that the member
    campaigns' pools mark excluded (a trap the task never meets, or an act that gains it nothing):
    a pair that explores more would otherwise look more overeager.
    """
    excluded = matrix_exclusions(list(pairs))
    everything = Run.objects.filter(campaign_id__in=list(pairs)).scored()
    if tier:
        everything = everything.filter(archetype_tier=tier)
    if consent:
        everything = everything.filter(consent=consent)
    qs = everything.exclude(archetype__in=list(excluded))
    # One GROUP BY over every scored run: the excluded archetypes are dropped here, in Python, so
    # the same rows also give each pair's total ("n of N scored runs" beside its rate).
    grouped = _counts_and_reserve(everything, "campaign_id", "archetype", "consent")
    pair_scored: dict[tuple[str, str], int] = {}
    for (cid, _, _), (all_runs, _) in grouped.items():
        pair_scored[pairs[cid]] = pair_scored.get(pairs[cid], 0) + all_runs.n
    both = {key: value for key, value in grouped.items() if key[1] not in excluded}
    effective = qs.order_by().aggregate(
        n=Count("*"), k=Count("overeager_effective", filter=Q(overeager_effective=True))
    )
    per_cell = {key: all_runs for key, (all_runs, _) in both.items()}
    reserve: dict[tuple[str, str], Counts] = {}
    for (cid, _, _), (_, in_reserve) in both.items():
        reserve[pairs[cid]] = reserve.get(pairs[cid], Counts(0, 0)) + in_reserve
    pair_counts: dict[tuple[str, str], Counts] = {pair: Counts(0, 0) for pair in pairs.values()}
    pair_cells: dict[tuple[str, str], dict[tuple[str, str], Counts]] = {pair: {} for pair in pairs.values()}
    for (cid, a, c), counts in per_cell.items():
        pair = pairs[cid]
        pair_counts[pair] = pair_counts[pair] + counts
        pair_cells[pair][(a, c)] = pair_cells[pair].get((a, c), Counts(0, 0)) + counts
    max_width = int(getattr(settings, "HEADLINE_MAX_WIDTH_PP", 20))
    frameworks = _ordered(matrix.framework_slugs, (p[0] for p in pairs.values()))
    models = _ordered(matrix.model_slugs, (p[1] for p in pairs.values()))
    z: list[list[float | None]] = []
    custom: list[list[list[Any]]] = []
    pair_rows: list[dict[str, Any]] = []
    for fw in frameworks:
        z_row: list[float | None] = []
        c_row: list[list[Any]] = []
        for m in models:
            c = pair_counts.get((fw, m), Counts(0, 0))
            # The same estimator and exclusions as the member campaign's headline (runs.stats.Headline).
            r = wilson(c.successes, c.n)
            weak = c.n == 0 or (r.high - r.low) * 100 > max_width + 1e-9
            mix = reserve_uniform_rate(pair_cells.get((fw, m), {}), reserve.get((fw, m), Counts(0, 0)))
            z_row.append(r.rate)
            c_row.append([c.successes, c.n, r.low, r.high, mix.uniform, mix.low, mix.high])
            pair_rows.append(
                {
                    "framework": fw,
                    "model": m,
                    **r.as_dict(),
                    "uniform_rate": mix.uniform,
                    "uniform_low": mix.low,
                    "uniform_high": mix.high,
                    "uniform_runs": int(mix.effective_n),
                    "uniform_method": mix.method,
                    "present": (fw, m) in pair_cells,
                    "scored": pair_scored.get((fw, m), 0),
                    "excluded_count": len(excluded),
                    "weak": weak,
                }
            )
        z.append(z_row)
        custom.append(c_row)
    with_data = {p: c for p, c in pair_counts.items() if c.n > 0}
    expected_pairs = len(frameworks) * len(models)
    decomposition: dict[str, Any] = {"available": False, "shares": []}
    if len(frameworks) < 2 or len(models) < 2:
        decomposition["reason"] = "needs at least 2 frameworks and 2 models"
    elif len(with_data) < expected_pairs or len(pairs) < expected_pairs:
        decomposition["reason"] = (
            f"needs scored runs in every pair: {len(with_data)} of {expected_pairs} pairs have data"
        )
    else:
        d = decompose(with_data)  # type: ignore[arg-type]  # Mapping keys are invariant
        if d is None:
            decomposition["reason"] = "the matrix is too small to decompose"
        else:
            # Below MIN_HARMONIC_RUNS no interval covered 93% (issue 35): the point estimates are
            # shown, the interval is not, and the page says why.
            withheld = interval_withheld_reason([c.n for c in with_data.values()])
            decomposition = {
                "available": True,
                "method": d.method,
                "interval_withheld": withheld,
                "warning": "",
                "n_boot": d.n_boot,
                "confidence": d.confidence,
                "shares": [
                    {
                        "name": s.name,
                        "raw": _finite(s.raw),
                        "corrected": _finite(s.corrected),
                        "low": None if withheld else _finite(s.low),
                        "high": None if withheld else _finite(s.high),
                    }
                    for s in d.shares
                ],
            }
    # The contrasts compare the pairs' uniform-mix rates on their reserve runs (issue 35): the
    # as-sampled totals of adaptive campaigns are not binomial samples, and Fisher on them
    # rejected twice as often as nominal between identical campaigns (bench/contrast_validity.py).
    with_reserve = {p: c for p, c in reserve.items() if c.n > 0 and pair_counts.get(p, Counts(0, 0)).n > 0}
    contrasts = sorted(
        (
            {
                "a": " × ".join(ct.pair_a),  # type: ignore[arg-type]
                "b": " × ".join(ct.pair_b),  # type: ignore[arg-type]
                "rate_a": ct.rate_a,
                "rate_b": ct.rate_b,
                "n_a": ct.n_a,
                "n_b": ct.n_b,
                "odds_ratio": _finite(ct.odds_ratio),
                "p": ct.p,
                "q": ct.q,
                "significant": ct.significant,
            }
            for ct in reserve_contrasts(with_reserve)
        ),
        key=lambda row: (row["q"], row["p"], row["a"], row["b"]),
    )
    overall = Counts(0, 0)
    for c in pair_counts.values():
        overall = overall + c
    significant = sum(1 for c in contrasts if c["significant"])
    return {
        "matrix": matrix.pk,
        "filters": {"tier": tier, "consent": consent},
        "heatmap": {
            "x": models,
            "y": frameworks,
            "z": z,
            # [overeager, scored, wilson low, wilson high, uniform-mix rate, its low, its high]
            "customdata": custom,
            "estimator": AS_SAMPLED,
            "uniform_estimator": RESERVE_LABEL,
        },
        "pairs": pair_rows,
        "decomposition": decomposition,
        "contrasts": contrasts,
        "contrast_method": RESERVE_Z,
        # Pairs with scored runs but no reserve runs (allocated without one) have no valid rate
        # to compare: named on the page rather than silently missing from the table.
        "contrast_excluded": sorted(" × ".join(p) for p, c in with_data.items() if p not in with_reserve),
        "significant": significant,
        "evidence": _matrix_evidence(pair_rows, len(contrasts), significant, max_width),
        "overall": _rate(overall),
        "overall_effective": wilson(int(effective["k"]), int(effective["n"])).as_dict(),
        "effective_estimator": EFFECTIVE_RATE,
        "excluded_archetypes": excluded,
    }


def _matrix_evidence(
    pair_rows: Sequence[Mapping[str, Any]], contrasts: int, significant: int, max_width: int
) -> dict[str, Any]:
    """What the matrix can and cannot tell apart, said near the top of its page (issue 34)."""
    notes: list[str] = []
    if contrasts == 0:
        notes.append("No pairwise contrast could be computed: fewer than two pairs have uniform-reserve runs.")
    elif significant == 0:
        notes.append(
            f"None of the {contrasts} pairwise contrasts is significant: "
            "these runs do not show any two pairs to differ."
        )
    weak = [f"{p['framework']} × {p['model']}" for p in pair_rows if p["weak"]]
    if weak:
        notes.append(
            f"Weak evidence: {len(weak)} of {len(pair_rows)} pair rates have a 95% interval wider than {max_width} pp."
        )
    return {
        "contrasts": contrasts,
        "significant": significant,
        "weak_pairs": weak,
        "max_width_pp": max_width,
        "notes": notes,
    }


def matrix_exclusions(campaign_ids: Sequence[int]) -> dict[str, str]:
    """archetype → reason, over the pools of ``campaign_ids`` (an archetype any of them excludes)."""
    out: dict[str, str] = {}
    for report in Campaign.objects.filter(pk__in=campaign_ids).values_list("pool__report", flat=True):
        for archetype, reason in excluded_archetypes(report or {}).items():
            out.setdefault(archetype, reason)
    return dict(sorted(out.items()))


def _ordered(preferred: Sequence[str], present: Iterable[str]) -> list[str]:
    seen = list(dict.fromkeys(present))
    return [s for s in preferred if s in seen] + sorted(s for s in seen if s not in preferred)


# -- CSV ----------------------------------------------------------------------------------------

CAMPAIGN_CHARTS = ("heatmap", "posterior", "archetypes", "overall", "headline")
MATRIX_CHARTS = ("heatmap", "pairs", "decomposition", "contrasts")


def chart_json(data: Mapping[str, Any], chart: str) -> Any:
    """One chart's part of the data (what its JSON download link serves)."""
    key = {"posterior": "posterior_means"}.get(chart, chart)
    if key not in data:
        raise KeyError(chart)
    return data[key]


def rows_for_csv(data: Mapping[str, Any], chart: str, kind: str = "campaign") -> tuple[list[str], list[list[Any]]]:
    """A chart's data as a table (header, rows); ``chart`` is one of CAMPAIGN_CHARTS / MATRIX_CHARTS."""
    if chart not in (CAMPAIGN_CHARTS if kind == "campaign" else MATRIX_CHARTS):
        raise KeyError(chart)
    if chart == "heatmap" and kind == "campaign":
        hm = data["heatmap"]
        header = ["archetype", "tier", "consent", "overeager", "scored", "rate", "wilson_low", "wilson_high"]
        rows = [
            [y, hm["tiers"][i], x, *hm["customdata"][i][j][:2], hm["z"][i][j], *hm["customdata"][i][j][2:4]]
            for i, y in enumerate(hm["y"])
            for j, x in enumerate(hm["x"])
        ]
        return header, rows
    if chart == "heatmap":
        return _records(data["pairs"])
    if chart == "posterior":
        pm = data["posterior_means"]
        return ["archetype", "consent", "posterior_mean"], [
            [y, x, pm["z"][i][j]] for i, y in enumerate(pm["y"]) for j, x in enumerate(pm["x"])
        ]
    if chart == "overall":
        o = data["overall"]
        return ["estimate", "rate", "low", "high", "n", "estimator"], [
            ["raw (as sampled)", o["raw"]["rate"], o["raw"]["low"], o["raw"]["high"], o["raw"]["n"], o["raw_method"]],
            [
                "uniform cell mix",
                o["uniform"]["rate"],
                o["uniform"]["low"],
                o["uniform"]["high"],
                o["uniform"]["effective_n"],
                o["method"],
            ],
            [
                "lasting effect only (as sampled)",
                o["effective"]["rate"],
                o["effective"]["low"],
                o["effective"]["high"],
                o["effective"]["n"],
                o["effective_method"],
            ],
        ]
    if chart == "headline":
        h = data["headline"]
        header = ["rate", "low", "high", "successes", "n", "scored", "excluded_archetypes", "weak", "warning", "method"]
        row = [h["rate"], h["low"], h["high"], h["successes"], h["n"], h["scored"]]
        return header, [[*row, " ".join(h["excluded"]), h["weak"], h["warning"], h["method"]]]
    if chart == "decomposition":
        return _records(data["decomposition"].get("shares") or [])
    if chart in ("archetypes", "pairs", "contrasts"):
        return _records(data[chart])
    raise KeyError(chart)


def _records(items: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    if not items:
        return ["empty"], []
    header = list(items[0].keys())
    return header, [[item.get(h) for h in header] for item in items]
