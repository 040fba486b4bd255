"""Consent sensitivity (issue 11 §4): does the consent phrasing change what the agent does?

Per SUT and across SUTs, for each consent mode × channel, the paired effect P(overeager | with) −
P(overeager | stripped) with its Newcombe interval (a forest plot), exact McNemar p and BH q;
strata where a *deny* phrasing significantly raises the overeager rate are highlighted;
incomplete pairs are listed (reported, excluded) and in-flight pairs counted; every discordant
pair opens a page with both members side by side. The analysis is ``consent.analysis.consent_data``;
it is cached under the campaigns' generations and their runs-per-status (a pair goes in flight,
or is given up, without a stats bump).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from consent import charts as consent_charts
from consent import pairdiff
from consent.analysis import VIEWS, consent_data
from overeager.roles import role_required
from pool.models import Candidate
from runs import stats
from runs.models import Campaign, CampaignKind, Run, RunAttempt
from runs.progress import current_seq
from runs.selection import (
    SelectionError,
    bad,
    campaign_rows,
    csv_response,
    live_topics,
    progress_rows,
    select_campaigns,
    selection_name,
    status_version,
)
from runs.views import _attempt_for, _evidence_context

PAIRED = (CampaignKind.PAIRED,)
VIEW_LABELS = {
    "per-sut": "per SUT: consent mode × channel",
    "across-suts": "across SUTs: consent mode × channel",
    "by-mode": "per SUT: consent mode",
    "full": "per SUT: consent mode × channel × archetype tier",
}
DEFAULT_VIEW = "per-sut"


def _view(request: HttpRequest) -> str:
    view = request.GET.get("view", DEFAULT_VIEW) or DEFAULT_VIEW
    if view not in VIEWS:
        raise SelectionError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    return view


def _analysis(campaigns: list[Campaign], view: str) -> dict[str, Any]:
    from runs.stats import CONSENT_ORDER

    data = consent_charts.shape(consent_data(campaigns, view), CONSENT_ORDER)
    pair_url = reverse("consent-pair", args=[0, "KEY"])
    for p in data["discordant"]:
        cid, key = str(p["pair_id"]).split(":", 1)
        p["url"] = pair_url.replace("/0/KEY/", f"/{cid}/{key}/")
    for p in data["incomplete"]:
        cid, key = str(p["pair_id"]).split(":", 1)
        p["url"] = pair_url.replace("/0/KEY/", f"/{cid}/{key}/")
    return data


@role_required()
@require_GET
def consent_page(request: HttpRequest) -> HttpResponse:
    try:
        view = _view(request)
        campaigns, query = select_campaigns(request, PAIRED)
    except SelectionError as exc:
        return render(request, "consent/overview.html", {"error": str(exc)}, status=400)
    encoded = urlencode(query, doseq=True)
    chosen = {c.pk for c in campaigns}
    choices = list(campaign_rows(PAIRED).order_by("-pk")[:200])
    context = {
        "campaigns": campaigns,
        "choices": [{"campaign": c, "chosen": c.pk in chosen} for c in choices],
        "query": encoded,
        "data_url": reverse("consent-data") + (f"?{encoded}" if encoded else ""),
        "topics_json": json.dumps(live_topics(campaigns)),
        "views": list(VIEW_LABELS.items()),
        "view": view,
        "charts": consent_charts.CHARTS,
    }
    return render(request, "consent/overview.html", context)


@role_required()
@require_GET
def consent_data_view(request: HttpRequest) -> HttpResponse:
    try:
        view = _view(request)
        campaigns, query = select_campaigns(request, PAIRED)
    except SelectionError as exc:
        return bad(str(exc))
    chart = request.GET.get("chart", "")
    fmt = request.GET.get("format", "json")
    if chart and chart not in consent_charts.CHARTS:
        return bad(f"chart must be one of {', '.join(consent_charts.CHARTS)}, got {chart!r}")
    if fmt not in ("json", "csv"):
        return bad(f"format must be json or csv, got {fmt!r}")
    if fmt == "csv" and not chart:
        return bad(f"format=csv needs chart= one of {', '.join(consent_charts.CHARTS)}")
    topics = live_topics(campaigns)
    seqs = {t: current_seq(t) for t in topics}  # before the data (runs/stats.py)
    progress = progress_rows(campaigns)
    data, stale = stats.cached_over(
        "consent",
        [("campaign", c.pk) for c in campaigns],
        f"pairs:{view}",
        lambda: _analysis(campaigns, view),
        version=status_version(progress),
    )
    name = f"consent-{view}-{selection_name(query)}"
    if chart:
        if fmt == "csv":
            header, rows = consent_charts.csv_table(data, chart)
            return csv_response(header, rows, f"{name}-{chart}")
        response = JsonResponse({"seqs": seqs, "chart": chart, "view": view, "data": data[chart]})
        response["Content-Disposition"] = f'attachment; filename="{name}-{chart}.json"'
        return response
    return JsonResponse({"seqs": seqs, "topics": topics, "stale": stale, "campaigns": progress, **data})


# -- one pair, side by side ---------------------------------------------------------------------


def _member(run: Run) -> dict[str, Any]:
    attempt = _attempt_for(run, None)
    scenario = (
        Candidate.objects.filter(pk=run.scenario_id)
        .only("pk", "key", "digest", "channel", "variant", "scenario")
        .first()
        if run.scenario_id
        else None
    )
    member: dict[str, Any] = {
        "run": run,
        "attempt": attempt,
        "scenario": scenario,
        "prefix": f"m-{run.member or run.pk}",
        "events_url": (reverse("run-events", args=[run.pk]) + f"?attempt={attempt.number}") if attempt else "",
    }
    if attempt is not None:
        member.update(_evidence_context(attempt))
    return member


@role_required()
@require_GET
def consent_pair(request: HttpRequest, campaign: int, pair_key: str) -> HttpResponse:
    c = get_object_or_404(campaign_rows(PAIRED), pk=campaign)
    runs = {
        r.member: r
        for r in Run.objects.filter(campaign_id=c.pk, pair_key=pair_key).select_related(
            "campaign__sut__framework", "campaign__sut__model"
        )
    }
    if not runs:
        raise Http404(f"campaign {c.pk} has no pair {pair_key!r}")
    members = []
    for name in ("with", "stripped"):
        run = runs.get(name)
        members.append({"name": name, **(_member(run) if run else {"run": None, "prefix": f"m-{name}"})})
    left, right = members
    attempts: list[RunAttempt | None] = [m.get("attempt") for m in members]
    prompts = [a.prompt if a is not None else "" for a in attempts]
    left["prompt_segments"], right["prompt_segments"] = pairdiff.word_diff(*prompts)
    candidates: list[Candidate | None] = [m.get("scenario") for m in members]
    scenarios = [c.scenario if c is not None else None for c in candidates]
    phrasing = (scenarios[0] or {}).get("phrasing") or {}
    files = pairdiff.file_differences(pairdiff.overlay_files(scenarios[0]), pairdiff.overlay_files(scenarios[1]))
    any_run = next(iter(runs.values()))
    context = {
        "campaign": c,
        "pair_key": pair_key,
        "members": members,
        "stratum": {
            "sut": str(c.sut),
            "consent": any_run.consent,
            "channel": any_run.channel,
            "archetype": any_run.archetype,
            "tier": any_run.archetype_tier,
        },
        "phrasing": phrasing,
        "file_differences": files,
        "prompts_differ": prompts[0] != prompts[1],
        "discordant": all(m.get("run") is not None and m["run"].overeager is not None for m in members)
        and left["run"].overeager != right["run"].overeager,
        "terminal": all(m.get("run") is not None and m["run"].is_terminal for m in members),
        "topic": c.topic,
        "consent_url": reverse("consent-sensitivity") + f"?campaign={c.pk}",
    }
    return render(request, "consent/pair.html", context)
