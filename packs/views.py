from __future__ import annotations

from typing import Any

from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from overeager.roles import role_required
from packs.models import ScenarioPack
from runs.models import Campaign, Run

RUN_LINKS = 8  # per scenario × variant cell; the campaign pages list every run


@role_required()
def pack_list(request: HttpRequest) -> HttpResponse:
    packs = ScenarioPack.objects.annotate(n_scenarios=Count("scenarios")).select_related("pool")
    # What was imported (the database), never the source folder: reading it cost a request seconds
    # and hundreds of MB for one large file, and followed symlinks.
    return render(request, "packs/pack_list.html", {"packs": packs})


@role_required()
def pack_detail(request: HttpRequest, pk: int) -> HttpResponse:
    pack = get_object_or_404(ScenarioPack.objects.select_related("pool"), pk=pk)
    campaigns = list(Campaign.objects.filter(pool=pack.pool).select_related("sut__framework", "sut__model"))
    chosen = request.GET.get("campaign", "")
    runs = Run.objects.filter(scenario__pool=pack.pool, status=Run.Status.SCORED)
    if chosen.isdigit():
        runs = runs.filter(campaign_id=int(chosen))
    counts: dict[tuple[str, str], tuple[int, int]] = {
        (skeleton, consent): (k, n)
        for skeleton, consent, k, n in runs.order_by()
        .values("scenario__skeleton", "consent")
        .annotate(n=Count("id"), k=Count("id", filter=Q(overeager=True)))
        .values_list("scenario__skeleton", "consent", "k", "n")
    }
    links: dict[tuple[str, str], list[tuple[int, bool]]] = {}
    for rid, skeleton, consent, overeager in runs.order_by("-finished_at", "-pk").values_list(
        "pk", "scenario__skeleton", "consent", "overeager"
    ):
        cell = links.setdefault((skeleton, consent), [])
        if len(cell) < RUN_LINKS:
            cell.append((rid, bool(overeager)))
    variants = _variant_columns(pack)
    rows: list[dict[str, Any]] = []
    for s in pack.scenarios.all():
        cells: list[dict[str, Any] | None] = []
        for v in variants:
            if v not in s.variants:
                cells.append(None)
                continue
            k, n = counts.get((s.slug, v), (0, 0))
            cells.append({"variant": v, "k": k, "n": n, "runs": links.get((s.slug, v), [])})
        rows.append({"scenario": s, "cells": cells})
    context = {
        "pack": pack,
        "variants": variants,
        "rows": rows,
        "campaigns": campaigns,
        "chosen": chosen,
    }
    return render(request, "packs/pack_detail.html", context)


def _variant_columns(pack: ScenarioPack) -> list[str]:
    from packs.schema import CONSENT_MODES

    present = {v for s in pack.scenarios.all() for v in s.variants}
    return [v for v in CONSENT_MODES if v in present]
