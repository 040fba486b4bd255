"""Dashboard pages and their JSON endpoints.

Pages render containers (``data-url`` attributes) and the static facts of a record; the charts
are drawn by ``static/js/<page>.js`` from the JSON endpoints, which serve Plotly-ready series
computed in the database and cached (``runs.stats``).  Every JSON payload of a live page carries
the progress topic's sequence number, read before the data, so the browser can tell whether a
socket message is already reflected (docs/dashboard.md, "Live updates").
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, F, Q, QuerySet, Sum
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from harness.outcome import LIMIT_COLUMNS
from harness.world.world import WorldRecords, describe
from overeager.roles import CURATOR, role_required, roles_of
from pool.models import Candidate, ConsentMode
from runs import costs, stats
from runs import evidence as ev
from runs.campaigns import CampaignError, plan_of, progress_summary, start_campaign, start_matrix, stop_campaign
from runs.forms import CampaignStartForm
from runs.models import Campaign, CampaignKind, Matrix, Run, RunAttempt, RunEvent, SystemUnderTest
from runs.progress import current_seq, publish
from runs.state import FINAL_EVENTS_CAP

log = logging.getLogger(__name__)

# Large JSON fields no dashboard page reads from the campaign row (state is read, when needed,
# by runs.stats.posterior_means on its own).
CAMPAIGN_DEFER = ("state", "mutation_texts", "simulation", "software", "sut_snapshot")
EVENTS_PAGE = 100
EVENTS_MAX_PAGE = 500
EVENT_STRING_CLIP = 2000
RUNS_PAGE = 50


def _can_curate(request: HttpRequest) -> bool:
    return CURATOR in roles_of(request.user)


def _bad(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _int_param(request: HttpRequest, name: str, default: int | None = None, lo: int = 0, hi: int = 2**31) -> int | None:
    raw = request.GET.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def _campaigns() -> QuerySet[Campaign]:
    return Campaign.objects.select_related("sut__framework", "sut__model", "pool", "matrix").defer(*CAMPAIGN_DEFER)


# -- campaigns ----------------------------------------------------------------------------------


@role_required()
@require_GET
def campaign_list(request: HttpRequest) -> HttpResponse:
    return _campaign_list(request, CampaignStartForm() if _can_curate(request) else None)


def _campaign_list(
    request: HttpRequest, form: CampaignStartForm | None, status: int = 200, estimates: list[str] | None = None
) -> HttpResponse:
    qs = _campaigns()
    wanted = request.GET.get("status", "")
    if wanted in Campaign.Status.values:
        qs = qs.filter(status=wanted)
    kind = request.GET.get("kind", "")
    if kind in CampaignKind.values:
        qs = qs.filter(kind=kind)
    page = Paginator(qs, RUNS_PAGE).get_page(request.GET.get("page"))
    # Only the in-flight runs: scored counts are on the campaign row, and a GROUP BY over every
    # run of 50 campaigns would be most of this page's time at 100,000 runs.
    counts = Run.objects.status_counts([c.pk for c in page], statuses=(Run.Status.RUNNING, Run.Status.QUEUED))
    # The SNARE headline (runs.stats.Headline), the number every other page shows for the campaign.
    heads = stats.headlines([c.pk for c in page if c.is_snare])
    rows = []
    for c in page:
        by_status = counts.get(c.pk, {})
        rows.append(
            {
                "campaign": c,
                "headline": heads.get(c.pk),
                "percent": min(100, round(100 * c.scored / c.budget)) if c.budget else 0,
                "running": by_status.get(Run.Status.RUNNING, 0),
                "queued": by_status.get(Run.Status.QUEUED, 0),
            }
        )
    context = {
        "page": page,
        "rows": rows,
        "statuses": Campaign.Status.values,
        "status_filter": wanted,
        "kinds": CampaignKind.choices,
        "kind_filter": kind if kind in CampaignKind.values else "",
        "form": form,
        "has_suts": form is None or SystemUnderTest.objects.exists(),
        "estimates": estimates,
    }
    return render(request, "runs/campaign_list.html", context, status=status)


@role_required(CURATOR)
@require_POST
def campaign_start(request: HttpRequest) -> HttpResponse:
    form = CampaignStartForm(request.POST)
    if not form.is_valid():
        return _campaign_list(request, form, status=400)
    d = form.cleaned_data
    if request.POST.get("estimate"):
        return _campaign_list(request, form, estimates=costs.estimate_lines(d["suts"], d["kind"], d["params"]))
    try:
        if d["mode"] == "single":
            campaign = start_campaign(
                name=d["name"],
                sut=d["sut"],
                pool=d["pool"],
                params=d["params"],
                backend=d["backend"],
                kind=d["kind"],
                simulation=d["simulation"],
                user_id=request.user.pk,
                cost_cap=d.get("cost_cap"),
                run_token_cap=d.get("run_token_cap"),
            )
            messages.success(request, f"Campaign {campaign.name} started: {campaign.budget} scored runs to go.")
            return redirect("campaign-detail", pk=campaign.pk)
        frameworks, models = list(d["frameworks"]), list(d["models"])
        suts = [SystemUnderTest.objects.for_pair(f, m) for f in frameworks for m in models]
        started = start_matrix(
            d["name"],
            suts,
            frameworks=[f.slug for f in frameworks],
            models=[m.slug for m in models],
            pool=d["pool"],
            params=d["params"],
            backend=d["backend"],
            kind=d["kind"],
            simulation=d["simulation"],
            out=log.info,
            cost_cap=d.get("cost_cap"),
            matrix_cost_cap=d.get("matrix_cost_cap"),
            run_token_cap=d.get("run_token_cap"),
        )
    except CampaignError as exc:
        form.add_error(None, str(exc))
        return _campaign_list(request, form, status=400)
    matrix_id = started[0].matrix_id
    assert matrix_id is not None  # start_matrix puts every campaign in its matrix
    Matrix.objects.filter(pk=matrix_id, created_by__isnull=True).update(created_by=request.user)
    messages.success(request, f"Matrix {d['name']} started: {len(started)} campaigns.")
    return redirect("matrix-detail", pk=matrix_id)


@role_required(CURATOR)
@require_POST
def campaign_stop(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.defer(*CAMPAIGN_DEFER), pk=pk)
    if stop_campaign(campaign.pk):
        campaign.refresh_from_db(fields=["status", "finished_at"])
        messages.success(request, "Campaign stopped: queued runs were cancelled; running ones finish and are kept.")
        try:
            publish(campaign.topic, progress_summary(campaign))
        except Exception as exc:  # the page resyncs over HTTP on its next message or reconnect
            log.warning("could not publish the stop of campaign %s: %s", campaign.pk, exc)
    else:
        messages.info(request, f"Campaign was not running ({campaign.status}); nothing to stop.")
    return redirect("campaign-detail", pk=campaign.pk)


@role_required()
@require_GET
def campaign_detail(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(_campaigns(), pk=pk)
    context = {
        "campaign": campaign,
        "can_stop": _can_curate(request) and campaign.status == Campaign.Status.RUNNING,
        # Bundles are of finished campaigns only (runs/bundle): the button appears once it ends.
        "can_download": _can_curate(request) and campaign.status not in ("pending", "running"),
        "charts": stats.CAMPAIGN_CHARTS,
        "params": plan_of(campaign.kind).header_params(campaign),
        "costs": costs.campaign_costs(campaign),
        "can_resume": _can_curate(request) and campaign.stop_reason != "",
        "headline": stats.headline(campaign.pk) if campaign.is_snare else None,
    }
    plan = plan_of(campaign.kind)
    context["oracle"] = {"name": plan.oracle_name, "version": plan.oracle_version}
    template, extra = plan.campaign_page(campaign)
    return render(request, template, {**context, **extra})


@role_required()
@require_GET
def campaign_data(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.defer(*CAMPAIGN_DEFER), pk=pk)
    seq = current_seq(campaign.topic)  # before the data: see runs.stats
    data = stats.campaign_data(campaign)
    return _chart_response(request, data, seq, "campaign", f"campaign-{pk}")


@role_required()
@require_GET
def campaign_runs(request: HttpRequest, pk: int) -> HttpResponse:
    """A page of the campaign's runs, newest first, optionally one cell's (keyset-paged by id)."""
    campaign = get_object_or_404(Campaign.objects.only("pk"), pk=pk)
    try:
        before = _int_param(request, "before", None, lo=1)
        limit = _int_param(request, "limit", RUNS_PAGE, lo=1, hi=500) or RUNS_PAGE
    except ValueError as exc:
        return _bad(str(exc))
    qs = Run.objects.filter(campaign_id=campaign.pk)
    for name in ("archetype", "consent", "family"):
        if request.GET.get(name):
            qs = qs.filter(**{name: request.GET[name]})
    status = request.GET.get("status", "")
    if status:
        if status not in Run.Status.values:
            return _bad(f"status must be one of {', '.join(Run.Status.values)}, got {status!r}")
        qs = qs.filter(status=status)
    if before is not None:
        qs = qs.filter(pk__lt=before)
    rows = list(
        qs.order_by("-pk").values(
            "pk",
            "round",
            "slot",
            "member",
            "archetype",
            "consent",
            "status",
            "validity",
            "overeager",
            "task_success",
            "attempt",
            "duration",
            "finished_at",
            # UnderSpecBench runs (empty / null for SNARE runs); not open to validators (overeager.blind).
            "family",
            "s_level",
            "b_level",
            "r_level",
            "acted",
            "safe_success",
            "wrong_target",
            "overscope",
            "pair_key",
            *LIMIT_COLUMNS,
        )[: limit + 1]
    )
    more = len(rows) > limit
    out = [
        {
            **row,
            "url": reverse("run-detail", args=[row["pk"]]),
            "finished_at": row["finished_at"].isoformat() if row["finished_at"] else None,
            "variant": f"S{row['s_level']}-B{row['b_level']}-R{row['r_level']}" if row["s_level"] is not None else "",
        }
        for row in rows[:limit]
    ]
    return JsonResponse({"runs": out, "next_before": out[-1]["pk"] if more and out else None})


# -- matrices -----------------------------------------------------------------------------------


@role_required()
@require_GET
def matrix_list(request: HttpRequest) -> HttpResponse:
    qs = Matrix.objects.annotate(
        n_campaigns=Count("campaigns"),
        n_running=Count("campaigns", filter=Q(campaigns__status=Campaign.Status.RUNNING)),
        scored=Sum("campaigns__scored"),
        triggers=Sum("campaigns__triggers"),
        invalid=Sum("campaigns__invalid"),
    ).order_by("-created_at", "-pk")
    page = Paginator(qs, RUNS_PAGE).get_page(request.GET.get("page"))
    return render(request, "runs/matrix_list.html", {"page": page})


@role_required()
@require_GET
def matrix_detail(request: HttpRequest, pk: int) -> HttpResponse:
    matrix = get_object_or_404(Matrix, pk=pk)
    context = {
        "matrix": matrix,
        "tiers": stats.TIERS,
        "consent_modes": stats.consent_axis(),
        "charts": stats.MATRIX_CHARTS,
        "topic": f"matrix-{matrix.pk}",
        # Beside every rate: runs that never got to act are in none of them (issue 18).
        "invalid": matrix.campaigns.aggregate(n=Sum("invalid"))["n"] or 0,
        "can_download": _can_curate(request)
        and not matrix.campaigns.filter(status__in=(Campaign.Status.PENDING, Campaign.Status.RUNNING)).exists(),
        "can_resume": _can_curate(request) and matrix.campaigns.exclude(stop_reason="").exists(),
    }
    if not matrix.is_suite:
        # The page's charts load this same (cached) data; the evidence note is near the top in the HTML.
        context["evidence"] = stats.matrix_data(matrix)["evidence"]
    return render(request, "runs/matrix_detail.html", context)


@role_required()
@require_GET
def matrix_data(request: HttpRequest, pk: int) -> HttpResponse:
    matrix = get_object_or_404(Matrix, pk=pk)
    tier = request.GET.get("tier", "")
    consent = request.GET.get("consent", "")
    if tier and tier not in stats.TIERS:
        return _bad(f"tier must be one of {', '.join(stats.TIERS)} (or empty for all), got {tier!r}")
    if consent and not ConsentMode.objects.filter(slug=consent).exists():
        modes = ", ".join(stats.consent_axis())
        return _bad(f"consent must be one of {modes} (or empty for all), got {consent!r}")
    seq = current_seq(f"matrix-{matrix.pk}")
    data = stats.matrix_data(matrix, tier, consent)
    suffix = "".join(f"-{v}" for v in (tier, consent) if v)
    return _chart_response(request, data, seq, "matrix", f"matrix-{pk}{suffix}")


def _chart_response(request: HttpRequest, data: dict[str, Any], seq: int, kind: str, filename: str) -> HttpResponse:
    fmt = request.GET.get("format", "json")
    chart = request.GET.get("chart", "")
    charts = stats.CAMPAIGN_CHARTS if kind == "campaign" else stats.MATRIX_CHARTS
    if chart and chart not in charts:
        return _bad(f"chart must be one of {', '.join(charts)}, got {chart!r}")
    if fmt == "csv":
        if not chart:
            return _bad(f"format=csv needs chart= one of {', '.join(charts)}")
        header, rows = stats.rows_for_csv(data, chart, kind)
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(header)
        writer.writerows(rows)
        response = HttpResponse(buf.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}-{chart}.csv"'
        return response
    if fmt != "json":
        return _bad(f"format must be json or csv, got {fmt!r}")
    if chart:
        response = JsonResponse({"seq": seq, "chart": chart, "data": stats.chart_json(data, chart)})
        response["Content-Disposition"] = f'attachment; filename="{filename}-{chart}.json"'
        return response
    return JsonResponse({"seq": seq, **data})


# -- runs ---------------------------------------------------------------------------------------


def _attempt_of(run_pk: int, raw: str | None, fields: tuple[str, ...]) -> RunAttempt:
    """``_attempt_for`` in one query for the JSON endpoints (404 for no run or no attempt)."""
    qs = RunAttempt.objects.filter(run_id=run_pk).only(*fields)
    if raw not in (None, ""):
        try:
            number = int(str(raw))
        except ValueError:
            raise Http404(f"attempt must be a number, got {raw!r}") from None
        return get_object_or_404(qs, number=number)
    found = qs.filter(run__counted_attempt_id=F("pk")).first() or qs.order_by("-number").first()
    if found is None:
        raise Http404("no such run, or it has no attempts yet")
    return found


def _attempt_for(run: Run, raw: str | None, fields: tuple[str, ...] | None = None) -> RunAttempt | None:
    """The attempt ?attempt=N names, else the counted one, else the latest."""
    qs = RunAttempt.objects.filter(run_id=run.pk)
    if fields:
        qs = qs.only(*fields)
    if raw not in (None, ""):
        try:
            number = int(str(raw))
        except ValueError:
            raise Http404(f"attempt must be a number, got {raw!r}") from None
        return get_object_or_404(qs, number=number)
    if run.counted_attempt_id:
        found = qs.filter(pk=run.counted_attempt_id).first()
        if found is not None:
            return found
    return qs.order_by("-number").first()


@role_required()
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        Run.objects.select_related("campaign__sut__framework", "campaign__sut__model").defer(
            *(f"campaign__{f}" for f in CAMPAIGN_DEFER)
        ),
        pk=pk,
    )
    attempts = list(
        RunAttempt.objects.filter(run_id=run.pk)
        .only("pk", "number", "status", "worker", "validity", "validity_reason", "started_at", "finished_at", "error")
        .order_by("number")
    )
    attempt = _attempt_for(run, request.GET.get("attempt"))
    scenario = (
        Candidate.objects.filter(pk=run.scenario_id).only("pk", "key", "skeleton", "seed", "digest", "channel").first()
        if run.scenario_id
        else None
    )
    # Not open to validator-only accounts (overeager/blind.py): the run page shows the verdict.
    context: dict[str, Any] = {
        "run": run,
        "campaign": run.campaign,
        "attempts": attempts,
        "attempt": attempt,
        "scenario": scenario,
        "topic": run.campaign.topic,
        "is_terminal": run.is_terminal,
        "show_disposition": run.status == Run.Status.SCORED and run.acted is False,
    }
    snapshot = Campaign.objects.filter(pk=run.campaign_id).values_list("sut_snapshot", flat=True).first() or {}
    context["cost"] = costs.run_cost(run, attempt, snapshot)
    context.update(plan_of(run.campaign.kind).run_page(run, attempt))
    if attempt is not None:
        context.update(_evidence_context(attempt))
    return render(request, "runs/run_detail.html", context)


def _evidence_context(attempt: RunAttempt) -> dict[str, Any]:
    evidence = attempt.evidence or {}
    commands = [str(c) for c in evidence.get("commands") or []]
    changes = list(evidence.get("changes") or [])
    diffs = dict(evidence.get("file_diffs") or {})
    gateway = list(evidence.get("gateway") or [])
    verdict = attempt.verdict
    paths = ev.path_index(changes, diffs)
    marks = ev.highlights(verdict, paths)
    unsolicited = [str(c.get("path")) for c in (verdict or {}).get("unsolicited_changes") or []]
    tree = ev.file_tree(changes, diffs, paths, marks, unsolicited)
    diff_blocks = []
    for path, text in sorted(diffs.items()):
        lines = ev.diff_lines(text, marks.diff_lines.get(path, ()))
        diff_blocks.append(
            {
                "path": path,
                "element": ev.path_id(path, paths),
                "lines": lines,
                "decisive": ev.path_id(path, paths) in marks.elements,
                "added": sum(1 for line in lines if line.kind == "add"),
                "removed": sum(1 for line in lines if line.kind == "del"),
            }
        )

    def why(element: str) -> list[str]:
        return marks.elements.get(element, [])

    return {
        "verdict": verdict,
        "verdict_links": marks.links,
        "commands": [
            {"i": i, "text": c, "element": f"command-{i}", "why": why(f"command-{i}")} for i, c in enumerate(commands)
        ],
        "tree": tree,
        "diffs": diff_blocks,
        "gateway": [
            {**g, "i": i, "element": f"request-{i}", "why": why(f"request-{i}")} for i, g in enumerate(gateway)
        ],
        "outputs": [
            {"name": "stdout", "text": evidence.get("stdout_tail", ""), "element": "output-0", "why": why("output-0")},
            {"name": "stderr", "text": evidence.get("stderr_tail", ""), "element": "output-1", "why": why("output-1")},
        ],
        "canaries": evidence.get("canaries_in_requests") or [],
        # What the world recorded: services' ends, the sink, the index, the scheduler, and the
        # commands the world's shims answered themselves (facts, not verdicts: blind-safe).
        "world_records": describe(WorldRecords.from_dict(evidence.get("world"))) if evidence.get("world") else [],
        "timed_out": evidence.get("timed_out"),
        "mutations_json": json.dumps(attempt.applied_mutations, indent=1, ensure_ascii=False),
        "usage_json": json.dumps(attempt.usage, indent=1, ensure_ascii=False) if attempt.usage else "",
        "ground_truth_json": json.dumps(attempt.ground_truth, indent=1, ensure_ascii=False)
        if attempt.ground_truth
        else "",
        "task": attempt.task or {},
        "events_url": reverse("run-events", args=[attempt.run_id]) + f"?attempt={attempt.number}",
    }


@role_required()
@require_GET
def run_events(request: HttpRequest, pk: int) -> HttpResponse:
    """A page of an attempt's transcript by seq: ``after=S`` (forward) or ``before=S`` (backward)."""
    attempt = _attempt_of(pk, request.GET.get("attempt"), ("pk", "number", "event_count", "run_id"))
    try:
        after = _int_param(request, "after", None, lo=-1)
        before = _int_param(request, "before", None, lo=0)
        limit = _int_param(request, "limit", EVENTS_PAGE, lo=1, hi=EVENTS_MAX_PAGE) or EVENTS_PAGE
        one = _int_param(request, "seq", None, lo=0)
    except ValueError as exc:
        return _bad(str(exc))
    if after is not None and before is not None:
        return _bad("give after= or before=, not both")
    qs = RunEvent.objects.filter(attempt_id=attempt.pk)
    kind = request.GET.get("kind", "")
    if kind:
        qs = qs.filter(kind=kind)
    fields = ("seq", "kind", "summary", "data")
    if one is not None:
        event = qs.filter(seq=one).values(*fields).first()
        if event is None:
            return _bad(f"attempt {attempt.number} has no event {one}", status=404)
        return JsonResponse({"attempt": attempt.number, "event": event})
    # Stored events are numbered 0, 1, 2 … without gaps (runs.jobs.store_outcome), so without a
    # kind filter the other side of a page is known without asking the database.
    last_seq = min(attempt.event_count, FINAL_EVENTS_CAP) - 1
    if before is not None:
        rows = list(qs.filter(seq__lt=before).order_by("-seq").values(*fields)[: limit + 1])
        has_before = len(rows) > limit
        rows = rows[:limit][::-1]
        if kind:
            has_after = bool(rows) and qs.filter(seq__gt=rows[-1]["seq"]).exists()
        else:
            has_after = bool(rows) and rows[-1]["seq"] < last_seq
    else:
        start = -1 if after is None else after
        rows = list(qs.filter(seq__gt=start).order_by("seq").values(*fields)[: limit + 1])
        has_after = len(rows) > limit
        rows = rows[:limit]
        if kind:
            has_before = bool(rows) and qs.filter(seq__lt=rows[0]["seq"]).exists()
        else:
            has_before = bool(rows) and rows[0]["seq"] > 0
    clipped_any = False
    for row in rows:
        row["data"], clipped = ev.clip_strings(row["data"], EVENT_STRING_CLIP)
        row["clipped"] = clipped
        clipped_any = clipped_any or clipped
    return JsonResponse(
        {
            "run": pk,
            "attempt": attempt.number,
            "count": attempt.event_count,
            "events": rows,
            "has_before": has_before,
            "has_after": has_after,
            "clipped": clipped_any,
        }
    )


@role_required()
@require_GET
def run_gateway_record(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    """The full request/response record ``seq`` of an attempt, read from its gateway.jsonl."""
    attempt = _attempt_of(pk, request.GET.get("attempt"), ("pk", "number", "evidence_dir", "run_id"))
    if not attempt.evidence_dir:
        return _bad("this attempt recorded no evidence directory", status=404)
    root = Path(settings.EVIDENCE_DIR).resolve()
    path = (Path(attempt.evidence_dir) / "gateway.jsonl").resolve()
    # The directory comes from the database; never let it point the server at another file.
    if not path.is_relative_to(root):
        return _bad(f"the attempt's evidence is outside EVIDENCE_DIR ({root}); it cannot be served", status=404)
    if not path.is_file():
        return _bad("no gateway records for this attempt (it made no model requests, or its evidence was removed)", 404)
    with path.open(encoding="utf-8", errors="replace") as fh:
        record = ev.find_record(fh, seq)
    if record is None:
        return _bad(f"attempt {attempt.number} has no gateway record with seq {seq}", status=404)
    response = JsonResponse({"run": pk, "attempt": attempt.number, "record": record})
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="run-{pk}-{attempt.number}-request-{seq}.json"'
    return response
