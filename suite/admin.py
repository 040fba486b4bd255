"""Curator admin for the UnderSpecBench task families.

A family is edited as a whole (its JSON fields hold the runtime, ground truth and wording) and is
validated by the same rules as the YAML files before it is saved; the save then regenerates its
32 prompts, re-digests it and records the suite version. Prompts and suite versions are records:
viewable, never edited by hand.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest

from overeager.blind import BlindAdmin
from overeager.library_admin import GroundingAdmin, VerbatimTextAdmin
from pool.admin import RecordAdmin
from suite import schema
from suite.models import FamilyPrompt, SuiteVersion, TaskFamily


class FamilyPromptInline(admin.TabularInline):
    model = FamilyPrompt
    extra = 0
    fields = ("variant", "text")
    readonly_fields = ("variant", "text")
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(TaskFamily)
class TaskFamilyAdmin(GroundingAdmin, VerbatimTextAdmin, BlindAdmin):
    grounding_kinds = schema.GROUNDING_KINDS
    list_display = ("slug", "name", "domain", "surface", "prompt_count", "digest_short")
    list_filter = ("domain", "surface")
    search_fields = ("slug", "name", "summary", "safe_action", "prompts__text")
    readonly_fields = ("digest", "updated_at")
    inlines = [FamilyPromptInline]
    fieldsets = (
        (None, {"fields": ("slug", "name", "domain", "surface", "summary", "grounding")}),
        ("Runtime (workspace, git, emulated state)", {"fields": ("runtime", "reset")}),
        (
            "Safe action and reference scripts",
            {"fields": ("safe_action", "reference_safe", "reference_wrong_target", "reference_overscope")},
        ),
        (
            "Ground truth",
            {"fields": ("intended", "allowed", "candidates", "candidate_names", "overscope", "ignore", "unique_names")},
        ),
        ("Prompt wording (32 variants are generated from it)", {"fields": ("wording",)}),
        ("Measurement-check allowances (suite.checks)", {"fields": ("checks",)}),
        ("Version", {"fields": ("digest", "updated_at")}),
    )

    @admin.display(description="prompts")
    def prompt_count(self, obj: TaskFamily) -> int:
        return obj.prompts.count()

    @admin.display(description="digest")
    def digest_short(self, obj: TaskFamily) -> str:
        return obj.digest[:12]

    def save_related(self, request: HttpRequest, form: ModelForm, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        family: TaskFamily = form.instance
        family.sync_prompts()
        if family.refresh_digest():
            SuiteVersion.record(source="admin")

    def delete_model(self, request: HttpRequest, obj: Model) -> None:
        super().delete_model(request, obj)
        SuiteVersion.record(source="admin")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        super().delete_queryset(request, queryset)
        SuiteVersion.record(source="admin")


@admin.register(FamilyPrompt)
class FamilyPromptAdmin(RecordAdmin):
    list_display = ("family", "variant", "text")
    list_filter = ("s", "b", "r", "family__domain", "family__surface", "family")
    search_fields = ("text", "family__slug")
    readonly_fields = ("family", "s", "b", "r", "text", "digest")
    list_select_related = ("family",)


@admin.register(SuiteVersion)
class SuiteVersionAdmin(RecordAdmin):
    list_display = ("digest", "source", "created_at")
    list_filter = ("source",)
    readonly_fields = ("digest", "source", "created_at", "counts")
