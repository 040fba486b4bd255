"""Admin for systems under test (curators configure them) and the run records (read-only)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from overeager.blind import BlindAdmin, BlindFieldsMixin
from pool.admin import RecordAdmin
from runs.models import AgentFramework, Campaign, Matrix, ModelEndpoint, Run, RunAttempt, SystemUnderTest


class AgentFrameworkForm(forms.ModelForm):
    adapter = forms.ChoiceField(choices=())

    class Meta:
        model = AgentFramework
        fields = ("slug", "label", "adapter", "options", "notes")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from harness.agents.base import adapter_names

        super().__init__(*args, **kwargs)
        self.fields["adapter"].choices = [(n, n) for n in adapter_names()]  # type: ignore[attr-defined]


@admin.register(AgentFramework)
class AgentFrameworkAdmin(BlindAdmin):
    form = AgentFrameworkForm
    list_display = ("slug", "label", "adapter")
    list_filter = ("adapter",)
    search_fields = ("slug", "label", "notes")


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(BlindAdmin):
    list_display = ("slug", "label", "upstream", "model", "base_url", "key_env", "prices")
    list_filter = ("upstream",)
    search_fields = ("slug", "label", "model", "base_url")
    actions = ("apply_default_prices",)
    fieldsets = (
        (None, {"fields": ("slug", "label", "upstream", "api_kinds")}),
        (
            "Provider endpoint",
            {
                "fields": ("model", "base_url", "key_env"),
                "description": "The key is never stored: name the environment variable the gateway reads it from.",
            },
        ),
        (
            "Prices",
            {
                "fields": (
                    ("price_input", "price_output"),
                    ("price_cached_input", "price_cache_write"),
                    "price_set_on",
                    "price_notional",
                    "price_source",
                ),
                "description": "USD per million tokens, as the provider lists them, and the day they held. Runs are"
                " priced from the gateway's token counts at the price a campaign snapshots when it starts; a cost cap"
                " needs one. The action “Copy prices from the default table” fills known models (check the date).",
            },
        ),
        ("Scripted upstream", {"fields": ("script",), "classes": ("collapse",)}),
        ("Notes", {"fields": ("notes",)}),
    )

    @admin.display(description="prices (USD / 1M in · out)")
    def prices(self, obj: ModelEndpoint) -> str:
        price = obj.price()
        if price is None:
            return "—"
        text = f"{price.input} · {price.output}"
        if price.set_on:
            text += f" ({price.set_on.isoformat()})"
        return text + (" notional" if price.notional else "")

    @admin.action(description="Copy prices from the default table (known models only)")
    def apply_default_prices(self, request: HttpRequest, queryset: QuerySet[ModelEndpoint]) -> None:
        priced, unknown = [], []
        for endpoint in queryset:
            if endpoint.apply_default_price():
                endpoint.save()
                priced.append(endpoint.slug)
            else:
                unknown.append(endpoint.slug)
        if priced:
            self.message_user(request, f"Prices copied from the default table for: {', '.join(priced)}.")
        if unknown:
            self.message_user(
                request,
                f"The default table has no row for: {', '.join(unknown)} (enter their prices by hand).",
                level=messages.WARNING,
            )


@admin.register(SystemUnderTest)
class SystemUnderTestAdmin(BlindAdmin):
    list_display = ("__str__", "api_kind", "max_steps", "wall_limit_s", "max_requests", "max_tokens")
    list_filter = ("framework", "model", "api_kind")
    search_fields = ("framework__slug", "model__slug")
    readonly_fields = ("uuid",)


class ReadOnlyInline(BlindFieldsMixin, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AttemptInline(ReadOnlyInline):
    model = RunAttempt
    fields = ("number", "status", "worker", "validity", "started_at", "finished_at", "error")


@admin.register(Matrix)
class MatrixAdmin(RecordAdmin):
    list_display = ("name", "kind", "created_at")
    search_fields = ("name",)


@admin.register(Campaign)
class CampaignAdmin(RecordAdmin):
    list_display = ("name", "kind", "status", "sut", "scored", "budget_display", "triggers", "created_at")
    list_filter = ("kind", "status", "backend")
    search_fields = ("name", "sut__framework__slug", "sut__model__slug")
    exclude = ("state", "mutation_texts")

    @admin.display(description="budget")
    def budget_display(self, obj: Campaign) -> int:
        return obj.budget


@admin.register(Run)
class RunAdmin(RecordAdmin):
    list_display = (
        "pk",
        "campaign",
        "round",
        "slot",
        "archetype",
        "consent",
        "family",
        "status",
        "validity",
        "overeager",
        "page",
    )
    list_filter = ("status", "validity", "overeager", "campaign__kind", "archetype_tier", "consent")
    search_fields = ("archetype", "family", "campaign__name")
    list_select_related = ("campaign",)
    inlines = [AttemptInline]
    # Validators label non-action runs blind: RecordAdmin is a BlindAdmin, which hides the
    # disposition (and refuses lookups on it) for an account whose only role is validator.

    @admin.display(description="run page")
    def page(self, obj: Run) -> str:
        return format_html('<a href="{}">open</a>', reverse("run-detail", args=[obj.pk]))


@admin.register(RunAttempt)
class RunAttemptAdmin(RecordAdmin):
    list_display = ("run", "number", "status", "validity", "worker", "started_at", "finished_at")
    list_filter = ("status", "validity")
    exclude = ("evidence",)
