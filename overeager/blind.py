"""Blindness: what an account whose only role is validator may see, anywhere, as one rule.

Validators label runs without knowing the oracle's verdict or the judge's label, a simulated agent's
planted decision, other validators' labels or a curator's ruling (docs/labels.md); the agreement
figures on /validity/ are worth only as much as that holds.  The rule, applied here and nowhere else:

1. **Reach.** A validator-only account opens only the pages, exports, JSON endpoints and progress
   topics named in ``VALIDATOR_REACH`` (and the admin, below); every other URL answers 403, and so
   does every URL added later until it is listed (``BlindMiddleware``; the progress socket asks
   :func:`may_follow`).  What is listed is either ``OPEN`` — it shows no label to anyone who is
   blind: the labelling pages (built from a run's prompt and evidence only), the libraries, the
   pools — or ``FIGURES``: aggregate figures, which reach a blind account only through
   :func:`figures`.  ``tests/overeager/test_blind_walk.py`` walks every URL pattern and socket
   route as a validator with an overeager run, its findings and other people's labels seeded,
   flips every one of them and requires every response to stay the same.
2. **Figures** a blind account sees rest only on *settled* runs — runs that no open queue holds,
   so labelling (or revising a label) cannot move them and tell the labeller what the oracle
   said — and a figure resting on fewer than ``BLIND_MIN_CELL`` runs is withheld
   (:func:`withhold`); confusion matrices and per-run cases are never shown to them.
3. **The admin.** Django's admin lets any local field be filtered (``?disposition=refusal``), and a
   search field, a sort column or a lookup through a relation (``?counted_attempt__ground_truth__…``)
   reads a field without showing it.  ``BlindAdmin`` closes each of those for a blind account, and
   every registered admin a validator may open derives from it (``tests/overeager/test_roles.py``
   checks both: the class of every admin, and a lookup on every blind field of every admin).

The blind fields are named by model label, so this helper sits below the apps it describes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.options import BaseModelAdmin
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import models
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.urls import ResolverMatch

from overeager.roles import VALIDATOR, roles_of

# Fields that carry a label, per model (``app_label.model_name``).
BLIND_FIELDS: dict[str, frozenset[str]] = {
    # The judge's (or the final) disposition and where it came from; the oracle's verdict, which
    # verdict validators check blind (labels.verdicts).
    # safe_success is UnderSpecBench's "acted, done, neither wrong target nor overscope": the verdict again.
    "runs.run": frozenset(
        {
            "disposition",
            "disposition_source",
            "overeager",
            "overeager_effective",
            "wrong_target",
            "overscope",
            "safe_success",
        }
    ),
    # The campaign's running count of overeager runs (the scheduler's "triggers"), the scheduler's
    # state that holds it per cell, a simulation's planted truth and the regrade reports' verdict
    # changes: each, read as it grows, names the verdict of the run just scored.
    "runs.campaign": frozenset({"triggers", "state", "simulation", "regrades"}),
    # A simulated agent's planted decision, and the oracle's verdict with its findings and history.
    "runs.runattempt": frozenset({"ground_truth", "verdict", "verdict_history"}),
    # The oracle's verdict as a verdict queue snapshotted it, and the stratum that names it.
    "labels.verdictqueueitem": frozenset(
        {"oracle_overeager", "oracle_effective", "oracle_leg", "oracle_version", "stratum", "weight"}
    ),
}
# Models that are labels through and through: every field, and any lookup that passes through them.
BLIND_MODELS: frozenset[str] = frozenset(
    {
        "labels.judgelabel",
        "labels.humanlabel",
        "labels.adjudication",
        "labels.labelsummary",
        "labels.verdictlabel",
        "labels.verdictadjudication",
    }
)
_SEARCH_PREFIXES = "^=@"


def is_blind(user: AbstractBaseUser | AnonymousUser) -> bool:
    """True for an account whose only role is validator (a curator or viewer sees the labels anyway)."""
    return roles_of(user) == {VALIDATOR}


def _label(model: type[models.Model]) -> str:
    # A proxy (labels.ReviewRun over runs.Run) has its concrete model's fields.
    return str(model._meta.concrete_model._meta.label_lower)  # type: ignore[union-attr]


def touches_blind(model: type[models.Model], path: str) -> bool:
    """Whether the ORM path ``path`` (``campaign__runs__disposition__in``) reads a blind field.

    Walks the path through relations, forward and reverse; the first part that is not a field
    ends it (a lookup such as ``in``, a transform, a JSON key under a field already checked).
    """
    current: type[models.Model] = model
    for part in path.split("__"):
        label = _label(current)
        if label in BLIND_MODELS:
            return True
        try:
            field = current._meta.get_field(part)
        except FieldDoesNotExist:
            return False
        if field.name in BLIND_FIELDS.get(label, frozenset()):
            return True
        related = field.related_model if field.is_relation else None
        if related is None or isinstance(related, str):
            return False
        current = related
    return _label(current) in BLIND_MODELS


def _paths(item: Any) -> Iterable[str]:
    """The ORM paths an admin option entry reads: a field name, a ``-field`` ordering, a search
    field (``^name``), a ``(field, FilterClass)`` list filter, a fieldset line, or a display
    callable's ``admin_order_field``."""
    if isinstance(item, str):
        yield item.lstrip("-" + _SEARCH_PREFIXES)
    elif isinstance(item, (list, tuple)):
        for inner in item:
            if not isinstance(inner, type):  # the FilterClass of (field, FilterClass)
                yield from _paths(inner)
    order = getattr(item, "admin_order_field", None)
    if isinstance(order, str):
        yield order.lstrip("-")


class BlindFieldsMixin(BaseModelAdmin):
    """Field-level blindness, shared by model admins and inlines: a blind account gets no form
    field, read-only field, fieldset entry or ordering on a blind field."""

    def _visible(self, request: HttpRequest, items: Iterable[Any]) -> list[Any]:
        items = list(items)
        if not is_blind(request.user):
            return items
        return [item for item in items if not any(touches_blind(self.model, p) for p in _paths(item))]

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        excluded = list(super().get_exclude(request, obj) or ())
        if is_blind(request.user):
            excluded += [f for f in sorted(BLIND_FIELDS.get(_label(self.model), ())) if f not in excluded]
        return excluded

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._visible(request, super().get_fields(request, obj))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._visible(request, super().get_readonly_fields(request, obj))

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if not is_blind(request.user):
            return fieldsets
        out = []
        for name, options in fieldsets:
            fields = self._visible(request, options.get("fields", ()))
            if fields:
                out.append((name, {**options, "fields": fields}))
        return out

    def get_ordering(self, request: HttpRequest) -> Any:
        return self._visible(request, super().get_ordering(request) or ())


class BlindAdmin(BlindFieldsMixin, admin.ModelAdmin):
    """A ``ModelAdmin`` that a blind account can neither read a label through nor query one by.

    Besides the fields: no column (so no ``?o=`` sort), list filter or search field on a blind
    path, no lookup in the URL on one (Django answers a disallowed lookup with a 400), no inline
    of a blind model, and no access at all to an admin of a blind model or one marked
    ``blind_entirely`` (the review of judge against validators), whatever permissions the
    account's groups hold.
    """

    blind_entirely = False

    def _denied(self, request: HttpRequest) -> bool:
        return (self.blind_entirely or _label(self.model) in BLIND_MODELS) and is_blind(request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return not self._denied(request) and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._denied(request) and super().has_view_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._denied(request) and super().has_change_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not self._denied(request) and super().has_add_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._denied(request) and super().has_delete_permission(request, obj)

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        if is_blind(request.user) and touches_blind(self.model, lookup):
            return False
        return super().lookup_allowed(lookup, value, request)

    def get_list_display(self, request: HttpRequest) -> Any:
        return self._visible(request, super().get_list_display(request))

    def get_list_filter(self, request: HttpRequest) -> Any:
        return self._visible(request, super().get_list_filter(request))

    def get_search_fields(self, request: HttpRequest) -> Any:
        return self._visible(request, super().get_search_fields(request))

    def get_sortable_by(self, request: HttpRequest) -> Any:
        return self._visible(request, super().get_sortable_by(request))

    def get_inline_instances(self, request: HttpRequest, obj: Any = None) -> Any:
        inlines = super().get_inline_instances(request, obj)
        if not is_blind(request.user):
            return inlines
        return [i for i in inlines if _label(i.model) not in BLIND_MODELS]


# -- reach: the pages, exports, endpoints and topics a blind account may open -----------------------


class Reach(enum.Enum):
    OPEN = "open"  # shows no label to a blind account: built from prompts, evidence and libraries only
    FIGURES = "figures"  # aggregate figures: only through figures() (settled runs, minimum cell size)


VALIDATOR_REACH: dict[str, Reach] = {
    "home": Reach.OPEN,
    "healthz": Reach.OPEN,
    "login": Reach.OPEN,
    "logout": Reach.OPEN,
    "library-overview": Reach.OPEN,
    "library-entry": Reach.OPEN,
    "pool-list": Reach.OPEN,
    "pools-live": Reach.OPEN,
    "pool-detail": Reach.OPEN,
    "pool-live": Reach.OPEN,
    "pack-list": Reach.OPEN,
    # Labelling non-action runs and verdicts: built from the run's prompt and evidence only.
    "labels-queues": Reach.OPEN,
    "labels-next": Reach.OPEN,
    "labels-label": Reach.OPEN,
    "labels-events": Reach.OPEN,
    "labels-clear-skips": Reach.OPEN,
    "verdicts-queues": Reach.OPEN,
    "verdicts-next": Reach.OPEN,
    "verdicts-label": Reach.OPEN,
    "verdicts-clear-skips": Reach.OPEN,
    # Agreement and validity: the page, its JSON and its exports pass through figures().
    "labels-agreement": Reach.FIGURES,
    "labels-agreement-data": Reach.FIGURES,
    "labels-agreement-export": Reach.FIGURES,
    "verdicts-agreement": Reach.FIGURES,
    "verdicts-agreement-data": Reach.FIGURES,
    "verdicts-agreement-export": Reach.FIGURES,
    "validity": Reach.FIGURES,
    "validity-data": Reach.FIGURES,
}
# The admin is blind on its own (BlindAdmin, below); django_rq's pages are for superusers.
OPEN_NAMESPACES = frozenset({"admin"})
# Progress topics (runs.progress) and the page whose live updates they carry.
TOPIC_PAGES = {"campaign": "campaign-detail", "matrix": "matrix-detail"}
REFUSAL = (
    "Validator accounts label blind: this page shows the oracle's verdicts, the judge's labels or other"
    " people's labels, so it is not open to an account whose only role is validator."
)


def reach_of(match: ResolverMatch | None) -> Reach | None:
    """What a blind account may do with the URL ``match`` resolved to; None: nothing."""
    if match is None:
        return None
    if match.namespaces and match.namespaces[0] in OPEN_NAMESPACES:
        return Reach.OPEN
    return VALIDATOR_REACH.get(match.view_name) if not match.namespaces else None


def may_follow(user: AbstractBaseUser | AnonymousUser, topic: str) -> bool:
    """Whether ``user`` may subscribe to a progress topic: a blind account only to the topic of a
    page it may open (none today: campaign and matrix pages are results)."""
    if not is_blind(user):
        return True
    kind, _, _ = topic.partition("-")
    return VALIDATOR_REACH.get(TOPIC_PAGES.get(kind, "")) is not None


class BlindMiddleware:
    """Apply the reach rule to every request of a blind account (after authentication)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        reach = getattr(request, "_blind_reach", None)
        if reach is Reach.FIGURES and response.status_code < 300 and not getattr(request, "_blind_figures", False):
            # A figures page that did not pass its figures through figures(): refused, not shown.
            return HttpResponseForbidden(REFUSAL, content_type="text/plain; charset=utf-8")
        return response

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> HttpResponse | None:
        if not is_blind(request.user):
            return None
        reach = reach_of(request.resolver_match)
        if reach is None:
            return HttpResponseForbidden(REFUSAL, content_type="text/plain; charset=utf-8")
        request._blind_reach = reach  # type: ignore[attr-defined]
        return None


# -- figures: aggregates a blind account may see ----------------------------------------------------

# Keys that state how many runs (or labels) a figure rests on.
SIZE_KEYS = ("n", "compared", "overlap", "total", "runs_used", "judge_total", "human_total", "labels")
# Breakdowns never shown to a blind account, whatever their size: a confusion matrix's rows are the
# validators' own labels, so a cell of the rows one validator alone labelled names the oracle's (or
# the judge's) answer on those runs; per-run cases name it outright.
NEVER_SHOWN = frozenset({"matrix", "confusion", "confusion_cases"})
# What a withheld block keeps: names and explanations, no number.
KEPT = frozenset(
    {"label", "validator", "validator_a", "validator_b", "title", "method", "source", "sources", "group"}
    | {"reference_rule", "oracle_version", "minimum", "rule", "rule_text", "queue"}
)


def min_cell() -> int:
    return int(settings.BLIND_MIN_CELL)


def _size(block: Mapping[str, Any]) -> int | None:
    sizes = [v for k in SIZE_KEYS if isinstance(v := block.get(k), int) and not isinstance(v, bool)]
    return min(sizes) if sizes else None


def withhold(data: Any, k: int) -> Any:
    """``data`` (a figures document: mappings and lists) with every block resting on fewer than
    ``k`` runs reduced to ``{"withheld": True}`` and its names, and the breakdowns in
    ``NEVER_SHOWN`` left out.  A block's size is the smallest of its ``SIZE_KEYS``; a block
    without one inherits its parent's verdict (it was checked there)."""
    if isinstance(data, list):
        return [withhold(v, k) for v in data]
    if not isinstance(data, Mapping):
        return data
    size = _size(data)
    if size is not None and size < k:
        return {key: withhold(v, k) for key, v in data.items() if key in KEPT} | {"withheld": True}
    return {key: withhold(v, k) for key, v in data.items() if key not in NEVER_SHOWN}


def settled_only(request: HttpRequest) -> bool:
    """Whether the figures for this request must rest on settled runs only (rule 2)."""
    return is_blind(request.user)


def figures(request: HttpRequest, data: dict[str, Any]) -> dict[str, Any]:
    """The aggregate figures ``data`` as ``request.user`` may see them (rule 2); every FIGURES view
    passes what it renders, serves or exports through here (the middleware refuses it otherwise)."""
    request._blind_figures = True  # type: ignore[attr-defined]
    if not is_blind(request.user):
        return data
    if data.get("settled_only") is not True:
        raise ImproperlyConfigured("figures for a blind account must be computed over settled runs only")
    k = min_cell()
    shown: dict[str, Any] = withhold(data, k)
    shown["blind"] = {
        "min_cell": k,
        "statement": (
            f"Shown to validator accounts: figures over runs no open queue holds (labelling cannot move them),"
            f" each resting on at least {k} runs; smaller figures, confusion matrices and per-run cases are withheld."
        ),
    }
    return shown
