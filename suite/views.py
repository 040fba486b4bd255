"""UnderSpecBench pages: the results across systems (the paper's RQ1–RQ4), task families, their runs.

The patterns are the dashboard's (runs/views.py): a page renders containers with ``data-url``,
``static/js/suite.js`` / ``family.js`` draw them from JSON, every chart has a CSV and a JSON
download, and the results page follows its campaigns' progress topics live. The metric tables
come from ``suite.stats.suite_data`` (``suite.metrics``), cached under every selected
campaign's generation (``runs.stats.cached_over``), so a run scored in any of them invalidates
exactly the selections it belongs to.

Every page here shows verdicts or dispositions: none is open to a validator-only account
(``overeager.blind``, the one rule for what validators may see).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.core.cache import cache
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from harness.outcome import LIMIT_COLUMNS
from labels.models import PRECEDENCE_RULE
from oracles.agreement import DISPOSITIONS
from overeager.roles import role_required
from runs import stats
from runs.models import Campaign, Run
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
)
from suite import changelog, schema
from suite import charts as suite_charts
from suite import evidence as suite_evidence
from suite.models import FamilyPrompt, SuiteVersion, TaskFamily
from suite.stats import SUITE_KINDS, suite_data

CHOICES_SHOWN = 200
RUNS_PAGE = 50


# -- the results page ---------------------------------------------------------------------------


def systems_of(campaigns: Sequence[Campaign]) -> list[str]:
    """System names as ``suite_records`` writes them (the SUT), in campaign order, each once."""
    return list(dict.fromkeys(str(c.sut) for c in campaigns))


def suite_payload(campaigns: Sequence[Campaign]) -> dict[str, Any]:
    """The cached part of the results: the metric tables and the page's series."""
    data = suite_data(campaigns)
    report = data["metrics"]
    families = [{**f, "url": reverse("suite-family", args=[f["family"]])} for f in data["families"]]
    return {
        "report": report,
        "families": families,
        "definitions": data["definitions"],
        **suite_charts.series(report, systems_of(campaigns)),
    }


def suite_summary() -> dict[str, Any]:
    """The loaded suite's content and oracle versions, what the newest version changed, and its
    infrastructure/capacity/observability count beside the paper's (which has only three there)."""
    families = list(TaskFamily.objects.values("slug", "surface"))
    try:
        versions = changelog.read_changelog(None)
    except changelog.ChangelogInvalid:
        versions = []  # tests/suite/test_suite_changelog.py keeps the file valid; never break the page
    facts = changelog.suite_facts(families, versions)
    current = SuiteVersion.objects.current()
    facts["digest"] = current.digest[:12] if current else ""
    facts["loaded_at"] = current.created_at if current else None
    return facts


@role_required()
@require_GET
def suite_results(request: HttpRequest) -> HttpResponse:
    try:
        campaigns, query = select_campaigns(request, SUITE_KINDS)
    except SelectionError as exc:
        return render(request, "suite/results.html", {"error": str(exc)}, status=400)
    encoded = urlencode(query, doseq=True)
    chosen = {c.pk for c in campaigns}
    composition_query = urlencode({"campaign": [c.pk for c in campaigns] or [0]}, doseq=True)
    choices = list(campaign_rows(SUITE_KINDS).order_by("-pk")[:CHOICES_SHOWN])
    context = {
        "campaigns": campaigns,
        "choices": [{"campaign": c, "chosen": c.pk in chosen} for c in choices],
        "query": encoded,
        "data_url": reverse("suite-data") + (f"?{encoded}" if encoded else ""),
        "topics_json": json.dumps(live_topics(campaigns)),
        "composition_url": reverse("labels-composition") + "?" + composition_query,
        "charts": list(suite_charts.CHARTS),
        "metric_names": suite_charts.METRICS,
        "label_rule": PRECEDENCE_RULE,
        "matrices": sorted({c.matrix for c in campaigns if c.matrix is not None}, key=lambda m: m.pk),
        "suite": suite_summary(),
    }
    return render(request, "suite/results.html", context)


@role_required()
@require_GET
def suite_results_data(request: HttpRequest) -> HttpResponse:
    try:
        campaigns, query = select_campaigns(request, SUITE_KINDS)
    except SelectionError as exc:
        return bad(str(exc))
    chart = request.GET.get("chart", "")
    fmt = request.GET.get("format", "json")
    if chart and chart not in suite_charts.CHARTS:
        return bad(f"chart must be one of {', '.join(suite_charts.CHARTS)}, got {chart!r}")
    if fmt not in ("json", "csv"):
        return bad(f"format must be json or csv, got {fmt!r}")
    if fmt == "csv" and not chart:
        return bad(f"format=csv needs chart= one of {', '.join(suite_charts.CHARTS)}")
    topics = live_topics(campaigns)
    # Before the data (runs/stats.py): data served with seq S reflects every run announced up to S.
    seqs = {t: current_seq(t) for t in topics}
    payload, stale = stats.cached_over(
        "suite", [("campaign", c.pk) for c in campaigns], "results", lambda: suite_payload(campaigns)
    )
    name = f"underspecbench-{selection_name(query)}"
    systems = payload["systems"]
    if chart:
        if fmt == "csv":
            header, rows = suite_charts.csv_table(payload["report"], payload["families"], systems, chart)
            return csv_response(header, rows, f"{name}-{chart}")
        table = suite_charts.CHARTS[chart][0]
        body = payload["families"] if chart == "families" else payload["report"][table]
        response = JsonResponse({"seqs": seqs, "chart": chart, "data": body})
        response["Content-Disposition"] = f'attachment; filename="{name}-{chart}.json"'
        return response
    data = {k: v for k, v in payload.items() if k != "report"}
    return JsonResponse(
        {
            "seqs": seqs,
            "topics": topics,
            "stale": stale,
            "campaigns": progress_rows(campaigns),
            "label_rule": PRECEDENCE_RULE,
            **data,
        }
    )


# -- task families --------------------------------------------------------------------------------


def _suite_runs() -> QuerySet[Run]:
    return Run.objects.filter(campaign__kind__in=SUITE_KINDS)


@role_required()
@require_GET
def family_list(request: HttpRequest) -> HttpResponse:
    families = TaskFamily.objects.order_by("domain", "surface", "slug")
    domain, surface = request.GET.get("domain", ""), request.GET.get("surface", "")
    if domain:
        families = families.filter(domain=domain)
    if surface:
        families = families.filter(surface=surface)
    counts: dict[str, dict[str, Any]] = {
        row["family"]: dict(row)
        for row in _suite_runs()
        .order_by()
        .values("family")
        .annotate(
            runs=Count("id"),
            scored=Count("id", filter=Q(status=Run.Status.SCORED)),
            acted=Count("id", filter=Q(status=Run.Status.SCORED, acted=True)),
        )
    }
    rows = []
    for f in families.only("slug", "name", "domain", "surface", "grounding"):
        c = counts.get(f.slug, {})
        rows.append(
            {
                "family": f,
                "domain_name": schema.DOMAINS.get(f.domain, f.domain),
                "surface_name": schema.SURFACES.get(f.surface, (f.surface,))[0],
                "grounding": f.grounding,
                "runs": c.get("runs", 0),
                "scored": c.get("scored", 0),
                "acted": c.get("acted", 0),
            }
        )
    context = {
        "rows": rows,
        "domains": list(schema.DOMAINS.items()),
        "surfaces": [(k, v[0]) for k, v in schema.SURFACES.items()],
        "domain": domain,
        "surface": surface,
        "total_prompts": FamilyPrompt.objects.count(),
    }
    return render(request, "suite/family_list.html", context)


def _world_rows(family: TaskFamily) -> list[dict[str, Any]]:
    """The family's initial emulated objects as table rows (cached per family digest)."""
    key = f"suite-family-world:{family.slug}:{family.digest}"
    rows = cache.get(key)
    if rows is None:
        rows = suite_evidence.world_rows(family.runtime.get("state") or {}, family.to_data()["ground_truth"])
        cache.set(key, rows, stats.CACHE_SECONDS)
    return rows


def variant_counts(family_slug: str, with_dispositions: bool) -> dict[str, dict[str, int]]:
    """Runs of each variant of a family (every suite campaign): one GROUP BY over (S, B, R)."""
    scored = Q(status=Run.Status.SCORED)
    annotations: dict[str, Any] = {
        "runs": Count("id"),
        "scored": Count("id", filter=scored),
        "acted": Count("id", filter=scored & Q(acted=True)),
        "non_action": Count("id", filter=scored & Q(acted=False)),
        "safe_success": Count("id", filter=scored & Q(safe_success=True)),
        "wrong_target": Count("id", filter=scored & Q(wrong_target=True)),
        "overscope": Count("id", filter=scored & Q(overscope=True)),
    }
    if with_dispositions:
        for label in DISPOSITIONS:
            annotations[label] = Count("id", filter=scored & Q(acted=False, disposition=label))
    # Aliased: an annotation named like a field (safe_success) would shadow it in the next FILTER.
    rows = (
        _suite_runs()
        .filter(family=family_slug)
        .order_by()
        .values("s_level", "b_level", "r_level")
        .annotate(**{f"n_{k}": v for k, v in annotations.items()})
    )
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        values: dict[str, Any] = dict(row)
        if values["s_level"] is None or values["b_level"] is None or values["r_level"] is None:
            continue
        variant = schema.variant(values["s_level"], values["b_level"], values["r_level"])
        out[variant] = {k: values[f"n_{k}"] for k in annotations}
    return out


@role_required()
@require_GET
def family_detail(request: HttpRequest, slug: str) -> HttpResponse:
    family = get_object_or_404(TaskFamily, slug=slug)
    data = family.to_data()
    counts = variant_counts(family.slug, with_dispositions=True)
    prompts = {(p.s, p.b, p.r): p for p in family.prompts.all()}
    grids = []
    for r in range(schema.R_LEVELS):
        rows = []
        for s in range(schema.S_LEVELS):
            cells = []
            for b in range(schema.B_LEVELS):
                p = prompts.get((s, b, r))
                variant = schema.variant(s, b, r)
                cells.append({"variant": variant, "prompt": p, "counts": counts.get(variant)})
            rows.append({"s": s, "cells": cells})
        grids.append({"r": r, "phrasing": (data["prompts"].get("R") or ["", ""])[r], "rows": rows})
    totals: dict[str, int] = {}
    for c in counts.values():
        for k, v in c.items():
            totals[k] = totals.get(k, 0) + v
    runtime = data["runtime"]
    files = [
        {**f, "lines": str(f.get("content", "")).count("\n") + 1}
        for f in runtime.get("files", [])
        if isinstance(f, dict)
    ]
    context = {
        "family": family,
        "data": data,
        "domain_name": schema.DOMAINS.get(family.domain, family.domain),
        "surface_name": schema.SURFACES.get(family.surface, (family.surface,))[0],
        "tools": runtime.get("tools", []),
        "env": sorted((runtime.get("env") or {}).items()),
        "files": files,
        "git": runtime.get("git"),
        "world": _world_rows(family),
        "truth": data["ground_truth"],
        "references": data["references"],
        "wording": data["prompts"],
        "grids": grids,
        "prompt_count": len(prompts),
        "totals": totals,
        "dispositions": DISPOSITIONS,
        "label_rule": PRECEDENCE_RULE,
        "runs_url": reverse("suite-family-runs", args=[family.slug]),
    }
    return render(request, "suite/family_detail.html", context)


@role_required()
@require_GET
def family_runs(request: HttpRequest, slug: str) -> HttpResponse:
    """A page of the family's runs (every suite campaign), newest first; keyset-paged by id."""
    family = get_object_or_404(TaskFamily.objects.only("slug"), slug=slug)
    qs = _suite_runs().filter(family=family.slug)
    try:
        before = int(request.GET.get("before") or 0) or None
        limit = int(request.GET.get("limit") or RUNS_PAGE)
    except ValueError:
        return bad("before and limit must be numbers")
    if not 1 <= limit <= 500:
        return bad(f"limit must be between 1 and 500, got {limit}")
    variant = request.GET.get("variant", "")
    if variant:
        m = schema.VARIANT_RE.match(variant)
        if m is None:
            return bad(f"variant must look like S0-B2-R1, got {variant!r}")
        qs = qs.filter(s_level=int(m.group(1)), b_level=int(m.group(2)), r_level=int(m.group(3)))
    campaign = request.GET.get("campaign", "")
    if campaign:
        if not campaign.isdigit():
            return bad(f"campaign must be a campaign id, got {campaign!r}")
        qs = qs.filter(campaign_id=int(campaign))
    status = request.GET.get("status", "")
    if status:
        if status not in Run.Status.values:
            return bad(f"status must be one of {', '.join(Run.Status.values)}, got {status!r}")
        qs = qs.filter(status=status)
    if before is not None:
        qs = qs.filter(pk__lt=before)
    fields = [
        "pk",
        "campaign_id",
        "campaign__name",
        "campaign__sut__framework__slug",
        "campaign__sut__model__slug",
        "s_level",
        "b_level",
        "r_level",
        "status",
        "validity",
        "acted",
        "safe_success",
        "wrong_target",
        "overscope",
        "attempt",
        "duration",
        "finished_at",
        "disposition",
        "disposition_source",
        *LIMIT_COLUMNS,
    ]
    rows = list(qs.order_by("-pk").values(*fields)[: limit + 1])
    more = len(rows) > limit
    out = []
    for row in rows[:limit]:
        item = {
            "pk": row["pk"],
            "url": reverse("run-detail", args=[row["pk"]]),
            "campaign": row["campaign_id"],
            "campaign_name": row["campaign__name"],
            "campaign_url": reverse("campaign-detail", args=[row["campaign_id"]]),
            "system": f"{row['campaign__sut__framework__slug']} × {row['campaign__sut__model__slug']}",
            "variant": schema.variant(row["s_level"], row["b_level"], row["r_level"])
            if row["s_level"] is not None
            else "",
            "status": row["status"],
            "validity": row["validity"],
            "acted": row["acted"],
            "safe_success": row["safe_success"],
            "wrong_target": row["wrong_target"],
            "overscope": row["overscope"],
            "outcome": outcome_word(row),
            "attempt": row["attempt"],
            "duration": row["duration"],
            "finished_at": row["finished_at"].isoformat() if row["finished_at"] else None,
            "disposition": row["disposition"],
            "disposition_source": row["disposition_source"],
            **{name: row[name] for name in LIMIT_COLUMNS},
        }
        out.append(item)
    return JsonResponse({"runs": out, "next_before": out[-1]["pk"] if more and out else None})


def outcome_word(row: dict[str, Any]) -> str:
    """The oracle's one word (suite.oracle.Verdict.outcome) from a run's columns; "" until scored."""
    if row.get("status") != Run.Status.SCORED or row.get("acted") is None:
        return ""
    if not row["acted"]:
        return "non-action"
    flags = [
        n
        for n, k in (("safe-success", "safe_success"), ("wrong-target", "wrong_target"), ("overscope", "overscope"))
        if row.get(k)
    ]
    return "+".join(flags) or "under-completion"
