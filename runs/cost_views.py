"""Cost pages' endpoints: a campaign's costs per cell, a matrix's per pair (JSON or CSV), and the
curators' "raise the cap and resume" for campaigns and matrices a cost cap stopped.

The tables are computed live from the attempts (``runs.costs``): every attempt costs, scored or
not, so the scored-run caches of ``runs.stats`` do not cover them.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_POST

from overeager.roles import CURATOR, role_required
from runs import costs
from runs.campaigns import CampaignError, progress_summary, resume_campaign, resume_matrix
from runs.models import Campaign, Matrix
from runs.progress import publish

log = logging.getLogger(__name__)


def _respond(
    request: HttpRequest, data: dict[str, Any], rows: Sequence[Mapping[str, Any]], filename: str
) -> HttpResponse:
    fmt = request.GET.get("format", "json")
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        header = list(rows[0].keys()) if rows else ["empty"]
        writer.writerow(header)
        writer.writerows([[row.get(h) for h in header] for row in rows])
        response = HttpResponse(buf.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
        return response
    if fmt != "json":
        return JsonResponse({"error": f"format must be json or csv, got {fmt!r}"}, status=400)
    response = JsonResponse(data)
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{filename}.json"'
    return response


@role_required()
@require_GET
def campaign_costs(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.defer("state", "mutation_texts", "simulation", "software"), pk=pk)
    data = costs.campaign_costs(campaign)
    data["campaign"] = campaign.pk
    data["status"] = campaign.status
    rows = [{**cell, "notional": data["notional"]} for cell in data["cells"]]
    return _respond(request, data, rows, f"campaign-{pk}-costs")


@role_required()
@require_GET
def matrix_costs(request: HttpRequest, pk: int) -> HttpResponse:
    matrix = get_object_or_404(Matrix, pk=pk)
    pairs = {
        c.pk: (c.sut.framework.slug, c.sut.model.slug)
        for c in matrix.campaigns.select_related("sut__framework", "sut__model").only(
            "pk", "sut__framework__slug", "sut__model__slug"
        )
    }
    data = costs.matrix_costs(matrix, pairs)
    data["matrix"] = matrix.pk
    return _respond(request, data, data["pairs"], f"matrix-{pk}-costs")


@role_required(CURATOR)
@require_POST
def campaign_resume(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.only("pk", "name"), pk=pk)
    try:
        resumed = resume_campaign(campaign.pk, cost_cap=request.POST.get("cost_cap") or None)
    except CampaignError as exc:
        messages.error(request, f"Not resumed: {exc}")
        return redirect("campaign-detail", pk=pk)
    messages.success(
        request,
        f"Campaign resumed with a cost cap of {resumed.cost_cap_usd} USD: it continues where it stopped."
        if resumed.status == Campaign.Status.RUNNING
        else f"Campaign resumed and {resumed.status} at once: {resumed.error or 'nothing left to run'}",
    )
    _announce(resumed)
    return redirect("campaign-detail", pk=pk)


@role_required(CURATOR)
@require_POST
def matrix_resume(request: HttpRequest, pk: int) -> HttpResponse:
    matrix = get_object_or_404(Matrix.objects.only("pk"), pk=pk)
    try:
        resumed = resume_matrix(matrix.pk, cost_cap=request.POST.get("cost_cap") or None)
    except CampaignError as exc:
        messages.error(request, f"Not resumed: {exc}")
        return redirect("matrix-detail", pk=pk)
    messages.success(request, f"{len(resumed)} campaign{'s' if len(resumed) != 1 else ''} of the matrix resumed.")
    for campaign in resumed:
        _announce(campaign)
    return redirect("matrix-detail", pk=pk)


def _announce(campaign: Campaign) -> None:
    try:
        publish(campaign.topic, progress_summary(campaign))
        if campaign.matrix_id is not None:
            publish(f"matrix-{campaign.matrix_id}", progress_summary(campaign))
    except Exception as exc:  # the pages resync over HTTP on their next message or reconnect
        log.warning("could not publish the resumption of campaign %s: %s", campaign.pk, exc)
