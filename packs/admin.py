"""Packs in the admin: visible to every role, edited by nobody (a pack changes by re-importing its files)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html_join

from packs.models import PackScenario, ScenarioPack
from pool.admin import RecordAdmin


class PackScenarioInline(admin.TabularInline):
    model = PackScenario
    extra = 0
    can_delete = False
    fields = ("position", "slug", "title", "category", "variants", "digest")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ScenarioPack)
class ScenarioPackAdmin(RecordAdmin):
    list_display = (
        "slug",
        "version",
        "title",
        "digest_short",
        "scenario_count",
        "backend",
        "imported_at",
    )
    list_filter = ("slug", "backend")
    readonly_fields = [f.name for f in ScenarioPack._meta.fields if f.name not in ("files",)] + ["stale"]
    exclude = ("files",)
    inlines = (PackScenarioInline,)

    @admin.display(description="digest")
    def digest_short(self, obj: ScenarioPack) -> str:
        return obj.digest[:12]

    @admin.display(description="scenarios")
    def scenario_count(self, obj: ScenarioPack) -> int:
        return obj.scenarios.count()

    @admin.display(description="files since import")
    def stale(self, obj: ScenarioPack) -> str:
        # The admin shows what was imported and never reads the folder (a huge or symlinked file
        # there would cost every page view); the command compares it.
        return f"not checked here: manage.py import_scenarios --check-only {obj.source_dir}"


@admin.register(PackScenario)
class PackScenarioAdmin(RecordAdmin):
    list_display = ("slug", "pack", "title", "category", "digest_short")
    list_filter = ("pack__slug", "category")
    search_fields = ("slug", "title")
    readonly_fields = (
        "pack",
        "position",
        "slug",
        "title",
        "category",
        "digest",
        "variants",
        "sources",
        "files_shown",
        "checks",
    )
    exclude = ("data", "files")

    @admin.display(description="digest")
    def digest_short(self, obj: PackScenario) -> str:
        return obj.digest[:12]

    @admin.display(description="grounding")
    def sources(self, obj: PackScenario) -> str:
        return format_html_join(
            "",
            '<p><a href="{}" rel="noreferrer">{}</a> ({})</p>',
            ((g["url"], g["title"], g["kind"]) for g in obj.grounding),
        )

    @admin.display(description="files")
    def files_shown(self, obj: PackScenario) -> str:
        return format_html_join("", "<h3>{}</h3><pre>{}</pre>", sorted(obj.files.items()))
