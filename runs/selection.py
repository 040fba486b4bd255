"""Pages over a selection of campaigns (the UnderSpecBench results, consent sensitivity, labels).

``?campaign=ID`` (repeatable) and ``?matrix=ID`` name the selection; these helpers parse it, list
the campaigns' live progress, and answer in JSON or CSV the same way on every such page.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse

from runs.models import Campaign, CampaignKind, Run

CAMPAIGN_DEFER = ("state", "mutation_texts", "simulation", "software", "sut_snapshot")
LIVE_STATUSES = (Campaign.Status.PENDING, Campaign.Status.RUNNING)
DEFAULT_STATUSES = (Campaign.Status.COMPLETE, Campaign.Status.RUNNING)


class SelectionError(ValueError):
    pass


def campaign_rows(kinds: Iterable[str]) -> QuerySet[Campaign]:
    return (
        Campaign.objects.filter(kind__in=list(kinds))
        .select_related("sut__framework", "sut__model", "matrix")
        .defer(*CAMPAIGN_DEFER)
    )


def select_campaigns(request: HttpRequest, kinds: Sequence[str]) -> tuple[list[Campaign], dict[str, list[str]]]:
    """The campaigns a page shows: ``campaign=ID`` (repeatable) and/or ``matrix=ID``; by default
    every complete or running campaign of ``kinds``. Returns them (by id) and the query that names them."""
    raw_ids = [c for c in request.GET.getlist("campaign") if c != ""]
    raw_matrix = request.GET.get("matrix", "")
    bad = [c for c in raw_ids if not c.isdigit()]
    if bad:
        raise SelectionError(f"campaign must be a campaign id (a number), got {bad[0]!r}")
    if raw_matrix and not raw_matrix.isdigit():
        raise SelectionError(f"matrix must be a matrix id (a number), got {raw_matrix!r}")
    qs = campaign_rows(kinds)
    query: dict[str, list[str]] = {}
    if raw_ids:
        ids = sorted({int(c) for c in raw_ids})
        found = {c.pk: c for c in qs.filter(pk__in=ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            names = ", ".join(CampaignKind(k).label for k in kinds)
            raise SelectionError(f"no {names} campaign with id {', '.join(map(str, missing))}")
        query["campaign"] = [str(i) for i in ids]
    if raw_matrix:
        query["matrix"] = [raw_matrix]
        members = list(qs.filter(matrix_id=int(raw_matrix)))
        if not members:
            raise SelectionError(f"matrix {raw_matrix} has no campaign of this kind")
        if raw_ids:
            wanted = {int(c) for c in query["campaign"]}
            members = [c for c in members if c.pk in wanted]
        chosen = members
    elif raw_ids:
        chosen = [found[i] for i in sorted(found)]
    else:
        chosen = list(qs.filter(status__in=DEFAULT_STATUSES))
    return sorted(chosen, key=lambda c: c.pk), query


def live_topics(campaigns: Sequence[Campaign]) -> list[str]:
    """Progress topics of the campaigns still producing runs: a matrix's one topic covers all its
    members (store_outcome publishes every run there too), other campaigns their own."""
    topics: list[str] = []
    for c in campaigns:
        if c.status not in LIVE_STATUSES:
            continue
        topic = f"matrix-{c.matrix_id}" if c.matrix_id else c.topic
        if topic not in topics:
            topics.append(topic)
    return topics


def progress_rows(campaigns: Sequence[Campaign], url_name: str = "campaign-detail") -> list[dict[str, Any]]:
    """Each campaign's live progress: the row's counters plus runs per status (one GROUP BY)."""
    counts = Run.objects.status_counts([c.pk for c in campaigns])
    return [
        {
            "campaign": c.pk,
            "name": c.name,
            "url": reverse(url_name, args=[c.pk]),
            "kind": c.kind,
            "status": c.status,
            "system": str(c.sut),
            "matrix": c.matrix_id,
            "scored": c.scored,
            "budget": c.budget,
            "invalid_attempts": c.invalid,
            "runs_by_status": counts[c.pk],
        }
        for c in campaigns
    ]


def status_version(progress: Sequence[dict[str, Any]]) -> str:
    """A token of every campaign's runs per status and counters: changes without a stats bump
    (claims, drops, cancellations, new rounds) still give a new cache key."""
    return json.dumps([[p["campaign"], p["status"], sorted(p["runs_by_status"].items())] for p in progress])


def bad(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def csv_response(header: Sequence[str], rows: Iterable[Sequence[Any]], filename: str) -> HttpResponse:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    response = HttpResponse(buf.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    return response


def selection_name(query: dict[str, list[str]]) -> str:
    parts = [f"matrix-{m}" for m in query.get("matrix", [])] + [f"c{c}" for c in query.get("campaign", [])]
    return "-".join(parts) or "default"
