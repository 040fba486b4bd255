"""Blind labelling in the admin: what an account whose only role is validator may not see or query.

Validators label non-action runs without knowing the judge's label, the planted one of a simulated
agent, other validators' labels or a curator's ruling (docs/labels.md).  Hiding a column is not
enough: Django's admin lets any local field be filtered (``?disposition=refusal``), and a search
field, a sort column or a lookup through a relation (``?counted_attempt__ground_truth__…``) reads
a field without showing it.  ``BlindAdmin`` closes each of those for a blind account, and every
registered admin a validator may open derives from it (``tests/overeager/test_roles.py`` checks
both: the class of every admin, and a lookup on every blind field of every admin).

The blind fields are named by model label, so this helper sits below the apps it describes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import BaseModelAdmin
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.http import HttpRequest

from overeager.roles import VALIDATOR, roles_of

# Fields that carry a label, per model (``app_label.model_name``).
BLIND_FIELDS: dict[str, frozenset[str]] = {
    # The judge's (or the final) disposition and where it came from; the oracle's verdict, which
    # verdict validators check blind (labels.verdicts).
    "runs.run": frozenset(
        {"disposition", "disposition_source", "overeager", "overeager_effective", "wrong_target", "overscope"}
    ),
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
