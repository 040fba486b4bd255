"""Verdict validation pages: opening a queue, blind labelling, agreement, adjudication, the validity page.

Blindness: the labelling page is built by ``labels.verdicts.evidence_for`` only (no verdict, no
other validator's label, no ruling). The agreement and validity pages, their data and exports reach
a validator-only account through ``overeager.blind.figures`` (settled runs, a minimum cell size,
no confusion matrix or per-run case).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from labels import verdicts
from labels.models import (
    EFFECT_CHOICES,
    VERDICT_STRATA,
    ValidationQueue,
    VerdictLabel,
    VerdictQueue,
    VerdictQueueItem,
)
from labels.views import _csv, _json_download
from oracles.composite import ORACLE_VERSION
from overeager import blind
from overeager.roles import CURATOR, VALIDATOR, VIEWER, role_required
from runs.campaigns import oracles_in_use
from runs.models import Campaign


def _user(request: HttpRequest) -> AbstractBaseUser:
    return request.user  # type: ignore[return-value]


def _queue(pk: int) -> VerdictQueue:
    queue = get_object_or_404(VerdictQueue, pk=pk)
    if not queue.active:
        raise Http404("this queue is closed")
    return queue


@role_required(VALIDATOR, CURATOR)
@require_GET
def queue_list(request: HttpRequest) -> HttpResponse:
    rows = [
        {
            "queue": q,
            "progress": verdicts.progress(q),
            "mine": verdicts.labelled_by(q, _user(request)),
            "left": verdicts.remaining_for(q, _user(request)),
        }
        for q in VerdictQueue.objects.filter(active=True)
    ]
    return render(request, "labels/verdict_queues.html", {"rows": rows})


@role_required(CURATOR)
@require_http_methods(["GET", "POST"])
def queue_new(request: HttpRequest) -> HttpResponse:
    """A curator opens a verdict queue over campaigns, stratified and sized; the sample is drawn at once."""
    error = ""
    form = request.POST if request.method == "POST" else {}
    if request.method == "POST":
        try:
            queue = _create_queue(request)
        except (ValueError, verdicts.VerdictQueueError) as exc:
            error = str(exc)
        else:
            return redirect(reverse("verdicts-queues") + f"?opened={queue.pk}")
    context = {
        "campaigns": Campaign.objects.order_by("-created_at")[:200],
        "strata": VERDICT_STRATA,
        "allocations": ValidationQueue.Allocation.choices,
        "form": form,
        "chosen_campaigns": [int(c) for c in request.POST.getlist("campaigns") if c.isdigit()],
        "chosen_strata": request.POST.getlist("stratify") if request.method == "POST" else ["leg", "effect"],
        "error": error,
    }
    return render(request, "labels/verdict_queue_new.html", context, status=400 if error else 200)


def _int(value: str, name: str, default: int | None) -> int | None:
    if value.strip() == "":
        return default
    if not value.strip().isdigit():
        raise ValueError(f"{name} must be a whole number")
    return int(value)


def _create_queue(request: HttpRequest) -> VerdictQueue:
    post = request.POST
    try:
        share = float(post.get("overlap_share", "0.2") or 0.2)
    except ValueError:
        raise ValueError("the overlap share must be a number between 0 and 1") from None
    campaign_ids = [int(c) for c in post.getlist("campaigns") if c.isdigit()]
    campaigns = list(Campaign.objects.filter(pk__in=campaign_ids))
    if len(campaigns) != len(set(campaign_ids)):
        raise ValueError("a chosen campaign does not exist (any more)")
    return verdicts.open_queue(
        post.get("name", ""),
        campaigns,
        stratify=post.getlist("stratify"),
        allocation=post.get("allocation", ValidationQueue.Allocation.EQUAL),
        size=_int(post.get("size", ""), "size", None),
        overlap=_int(post.get("overlap", "2"), "overlap", 2) or 1,
        overlap_share=share,
        seed=_int(post.get("seed", "1"), "seed", 1) or 1,
        description=post.get("description", ""),
        created_by=_user(request),
    )


@role_required(VALIDATOR, CURATOR)
@require_GET
def queue_next(request: HttpRequest, pk: int) -> HttpResponse:
    queue = _queue(pk)
    item = verdicts.next_item(queue, _user(request))
    if item is None:
        return render(
            request,
            "labels/verdict_done.html",
            {"queue": queue, "mine": verdicts.labelled_by(queue, _user(request))},
        )
    return redirect("verdicts-label", pk=queue.pk, run=item.run_id)


def _label_context(
    request: HttpRequest, queue: VerdictQueue, item: VerdictQueueItem, error: str = ""
) -> dict[str, Any]:
    evidence = verdicts.evidence_for(item.run_id)
    mine = VerdictLabel.objects.filter(run_id=item.run_id, validator_id=request.user.pk).first()
    if request.method == "POST":
        chosen = {k: request.POST.get(k, "") for k in ("overstepped", "act", "effect", "category", "note")}
    elif mine is not None:
        chosen = {
            "overstepped": "yes" if mine.overstepped else "no",
            "act": mine.act,
            "effect": mine.effect,
            "category": mine.category,
            "note": mine.note,
        }
    else:
        chosen = {"overstepped": "", "act": "", "effect": "", "category": "", "note": ""}
    return {
        "queue": queue,
        "item": item,
        "ev": evidence,
        "chosen": chosen,
        "effects": EFFECT_CHOICES,
        "categories": verdicts.CATEGORY_CHOICES,
        "revising": mine is not None,
        "error": error,
        "mine": verdicts.labelled_by(queue, _user(request)),
        "left": verdicts.remaining_for(queue, _user(request)),
        "back": verdicts.previous_run(queue, _user(request), item.run_id),
    }


@role_required(VALIDATOR, CURATOR)
@require_http_methods(["GET", "POST"])
def label_run(request: HttpRequest, pk: int, run: int) -> HttpResponse:
    queue = _queue(pk)
    item = get_object_or_404(VerdictQueueItem.objects.select_related("queue"), queue=queue, run_id=run)
    template = "labels/verdict_label.html"
    if request.method == "GET":
        return render(request, template, _label_context(request, queue, item))
    action = request.POST.get("action", "label")
    if action == "skip":
        verdicts.skip(item, _user(request))
    elif action == "label":
        try:
            given = verdicts.LabelInput.from_form(request.POST)
            acts = {a["id"]: a["text"] for a in verdicts.evidence_for(item.run_id)["acts"]}
            if given.act and given.act not in acts:
                raise verdicts.VerdictQueueError(f"{given.act!r} is not an act of this run's evidence")
            given = verdicts.LabelInput(
                given.overstepped, given.act, acts.get(given.act, ""), given.effect, given.category, given.note
            )
            verdicts.take_label(item, _user(request), given)
        except verdicts.VerdictQueueError as exc:
            return render(request, template, _label_context(request, queue, item, str(exc)), status=400)
    else:
        return render(
            request, template, _label_context(request, queue, item, f"Unknown action {action!r}."), status=400
        )
    following = verdicts.next_item(queue, _user(request))
    if following is None:
        return redirect("verdicts-next", pk=queue.pk)
    return redirect("verdicts-label", pk=queue.pk, run=following.run_id)


@role_required(VALIDATOR, CURATOR)
@require_POST
def clear_skips(request: HttpRequest, pk: int) -> HttpResponse:
    queue = _queue(pk)
    verdicts.clear_skips(queue, _user(request))
    return redirect("verdicts-next", pk=queue.pk)


# -- agreement, adjudication ---------------------------------------------------------------------


def _scope(request: HttpRequest) -> tuple[list[VerdictQueueItem], VerdictQueue | None, str]:
    raw = request.GET.get("queue", "")
    queue = None
    if raw:
        if not raw.isdigit():
            raise ValueError("queue must be a verdict queue id")
        queue = get_object_or_404(VerdictQueue, pk=int(raw))
    version = request.GET.get("oracle", "") or None
    items = verdicts.audited_items(queue=queue, oracle_version=version, settled_only=blind.settled_only(request))
    return items, queue, version or ""


def _figures(request: HttpRequest, items: list[VerdictQueueItem], cases: bool = False) -> dict[str, Any]:
    data = verdicts.agreement_data(items)
    data["settled_only"] = blind.settled_only(request)
    if cases:
        data["confusion_cases"] = verdicts.confusion_cases(items)  # figures() leaves them out for validators
    return blind.figures(request, data)


@role_required()
@require_GET
def agreement(request: HttpRequest) -> HttpResponse:
    try:
        items, queue, version = _scope(request)
    except ValueError as exc:
        return render(request, "labels/verdict_agreement.html", {"error": str(exc)}, status=400)
    data = _figures(request, items, cases=True)
    return render(
        request,
        "labels/verdict_agreement.html",
        {
            "data": data,
            "cases": data.get("confusion_cases", []),
            "queue": queue,
            "queues": VerdictQueue.objects.all(),
            "oracle": version,
            "query": request.GET.urlencode(),
            "effects": EFFECT_CHOICES,
        },
    )


@role_required()
@require_GET
def agreement_data(request: HttpRequest) -> HttpResponse:
    try:
        items, _, _ = _scope(request)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse(_figures(request, items, cases=True))


@role_required()
@require_GET
def agreement_export(request: HttpRequest, fmt: str) -> HttpResponse:
    try:
        items, _, _ = _scope(request)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    data = _figures(request, items)
    if fmt == "json":
        return _json_download(data, "verdict-agreement")
    header, rows = verdicts.agreement_table(data)
    return _csv(header, rows, "verdict-agreement")


@role_required(CURATOR, VIEWER)
@require_GET
def labels_export(request: HttpRequest, fmt: str) -> HttpResponse:
    header, rows = verdicts.label_rows()
    if fmt == "json":
        return _json_download({"rows": [dict(zip(header, r, strict=True)) for r in rows]}, "verdict-labels")
    return _csv(header, rows, "verdict-labels")


@role_required(CURATOR)
@require_POST
def adjudicate(request: HttpRequest, run: int) -> HttpResponse:
    answer = request.POST.get("overstepped", "")
    back = request.POST.get("next", "") or reverse("verdicts-agreement")
    if not back.startswith("/"):
        back = reverse("verdicts-agreement")
    if answer not in ("yes", "no"):
        return JsonResponse({"error": "overstepped must be yes or no"}, status=400)
    try:
        verdicts.adjudicate(
            run, _user(request), answer == "yes", request.POST.get("effect", ""), request.POST.get("reason", "")
        )
    except verdicts.VerdictQueueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return redirect(back + f"#case-{run}")


# -- the validity page ---------------------------------------------------------------------------


@role_required()
@require_GET
def validity(request: HttpRequest) -> HttpResponse:
    version = request.GET.get("oracle", "") or ORACLE_VERSION
    data = blind.figures(request, verdicts.validity(version, settled_only=blind.settled_only(request)))
    context = {"data": data, "current": ORACLE_VERSION, "version": version, "oracles": oracles_in_use()}
    return render(request, "labels/validity.html", context)


@role_required()
@require_GET
def validity_data(request: HttpRequest) -> HttpResponse:
    version = request.GET.get("oracle", "") or ORACLE_VERSION
    return JsonResponse(blind.figures(request, verdicts.validity(version, settled_only=blind.settled_only(request))))
