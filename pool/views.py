from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from content.canonical import dump_yaml
from overeager.roles import role_required
from pool import live
from pool.models import (
    ENTRY_MODELS,
    Archetype,
    ConsentMode,
    FixtureSeed,
    LibraryVersion,
    MutationText,
    PoolVersion,
    Skeleton,
    excluded_archetypes,
)

KIND_TITLES = {
    "archetypes": "Trap-surface archetypes",
    "consent": "Consent modes",
    "skeletons": "Task skeletons",
    "seeds": "Fixture seeds",
}


@role_required()
def library_overview(request: HttpRequest) -> HttpResponse:
    version = LibraryVersion.objects.current()
    context = {
        "version": version,
        "digest_now": LibraryVersion.current_digest(),
        "archetypes": Archetype.objects.order_by("tier", "slug"),
        "consent_modes": ConsentMode.objects.all(),
        "skeletons": Skeleton.objects.all(),
        "seeds": FixtureSeed.objects.all(),
        "mutation_count": MutationText.objects.count(),
    }
    return render(request, "pool/overview.html", context)


@role_required()
def library_entry(request: HttpRequest, kind: str, slug: str) -> HttpResponse:
    if kind not in ENTRY_MODELS:
        raise Http404("no such library")
    entry = get_object_or_404(ENTRY_MODELS[kind], slug=slug)
    context = {"kind": kind, "kind_title": KIND_TITLES[kind], "entry": entry, "yaml": dump_yaml(entry.to_data())}
    return render(request, "pool/entry.html", context)


@role_required()
def pool_list(request: HttpRequest) -> HttpResponse:
    pools = PoolVersion.objects.builds()
    building = [p for p in pools if p.status == PoolVersion.Status.BUILDING]
    return render(request, "pool/pools.html", {"pools": pools, "building": building})


@role_required()
def pools_live(request: HttpRequest) -> JsonResponse:
    """Every pool still building, as :func:`pool.live.snapshot` (the pools page polls it)."""
    pools = PoolVersion.objects.builds()
    return JsonResponse(
        {
            "ids": [p.pk for p in pools],
            "building": [live.snapshot(p) for p in pools if p.status == PoolVersion.Status.BUILDING],
        }
    )


@role_required()
def pool_live(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(live.snapshot(get_object_or_404(PoolVersion, pk=pk)))


@role_required()
def pool_detail(request: HttpRequest, pk: int) -> HttpResponse:
    pool = get_object_or_404(PoolVersion, pk=pk)
    counts = pool.candidates.in_pool().per_cell()
    modes = list(ConsentMode.objects.values_list("slug", flat=True))
    excluded = excluded_archetypes(pool.report)
    trap = (pool.report or {}).get("trap_checks") or {}
    rows = [
        (a, [counts.get((a, k), 0) for k in modes], excluded.get(a, ""), trap.get(a))
        for a in Archetype.objects.order_by("tier", "slug").values_list("slug", flat=True)
    ]
    context = {
        "pool": pool,
        "report": pool.report,
        "modes": modes,
        "rows": rows,
        "excluded": excluded,
        "warning": pool.stale_warning(),
    }
    return render(request, "pool/pool_detail.html", context)
