"""Curator admin for the ingredient libraries.

Every save recomputes the edited entry's digest and records the resulting library version, so a
pool built before the edit can tell that the library moved on. Digests are read-only.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from overeager.blind import BlindAdmin
from overeager.library_admin import GroundingAdmin, VerbatimTextAdmin
from pool import libschema
from pool.models import (
    Archetype,
    ArchetypeFixture,
    Atom,
    Candidate,
    ConsentMode,
    FixtureSeed,
    LibraryEntry,
    LibraryVersion,
    MutationText,
    Phrasing,
    PoolVersion,
    SeedCommit,
    SeedFile,
    Skeleton,
    TrapPredicate,
)
from pool.verify import CHECK_TITLES


def _record_edit(entry: LibraryEntry | MutationText) -> None:
    if entry.refresh_digest():
        LibraryVersion.record(source="admin")


class EntryAdmin(VerbatimTextAdmin, BlindAdmin):
    readonly_fields = ("digest", "updated_at")

    def save_related(self, request: HttpRequest, form: ModelForm, formsets: Any, change: bool) -> None:
        # Inlines are saved here, after the parent: only now is the full content known.
        super().save_related(request, form, formsets, change)
        _record_edit(form.instance)

    def delete_model(self, request: HttpRequest, obj: Model) -> None:
        super().delete_model(request, obj)
        LibraryVersion.record(source="admin")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        super().delete_queryset(request, queryset)
        LibraryVersion.record(source="admin")


class ChildAdmin(VerbatimTextAdmin, BlindAdmin):
    """Stand-alone admin for rows that normally live in an inline; edits re-digest the parent."""

    parent_field = ""

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        _record_edit(getattr(obj, self.parent_field))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        parent = getattr(obj, self.parent_field)
        super().delete_model(request, obj)
        _record_edit(parent)


class RecordAdmin(BlindAdmin):
    """Records the system writes (library versions, pools, candidates): viewable, never edited.

    A pool is evidence that campaigns point at; it is rebuilt, not changed or deleted by hand.
    """

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class FixtureInline(VerbatimTextAdmin, admin.StackedInline):
    model = ArchetypeFixture
    extra = 0
    fields = ("position", "path", "git", "mode", "symlink", "content")


class PredicateInline(VerbatimTextAdmin, admin.StackedInline):
    model = TrapPredicate
    extra = 0
    fields = ("position", "key", "kind", "description", "pattern", "path", "changes", "canary")


@admin.register(Archetype)
class ArchetypeAdmin(GroundingAdmin, EntryAdmin):
    grounding_kinds = libschema.GROUNDING_KINDS
    list_display = ("slug", "name", "tier", "decision_kind", "digest_short")
    list_filter = ("tier", "decision_kind")
    search_fields = ("slug", "name", "description", "object_phrase", "action_phrase")
    inlines = [FixtureInline, PredicateInline]
    fieldsets = (
        (None, {"fields": ("slug", "name", "tier", "description", "grounding")}),
        ("Consent templates", {"fields": ("object_phrase", "action_phrase")}),
        ("Decision point", {"fields": ("decision_kind", "shortcut_unblocks", "shortcut_rationale", "surface")}),
        ("Reference scripts", {"fields": ("setup", "safe_script", "overeager_script", "effects")}),
        ("Version", {"fields": ("digest", "updated_at")}),
    )

    @admin.display(description="digest")
    def digest_short(self, obj: Archetype) -> str:
        return obj.digest[:12]


class PhrasingInline(VerbatimTextAdmin, admin.TabularInline):
    model = Phrasing
    extra = 0
    fields = ("position", "key", "channel", "text")


@admin.register(ConsentMode)
class ConsentModeAdmin(EntryAdmin):
    list_display = ("slug", "name", "phrasing_count", "digest")
    search_fields = ("slug", "name", "phrasings__text")
    inlines = [PhrasingInline]

    @admin.display(description="phrasings")
    def phrasing_count(self, obj: ConsentMode) -> int:
        return obj.phrasings.count()


class AtomInline(VerbatimTextAdmin, admin.StackedInline):
    model = Atom
    extra = 0
    fields = ("position", "key", "kind", "description", "solve", "check_cmd", "writes")


@admin.register(Skeleton)
class SkeletonAdmin(EntryAdmin):
    list_display = ("slug", "name", "atom_count", "digest")
    search_fields = ("slug", "name", "summary", "prompt")
    inlines = [AtomInline]

    @admin.display(description="atoms")
    def atom_count(self, obj: Skeleton) -> int:
        return obj.atoms.count()


class CommitInline(VerbatimTextAdmin, admin.TabularInline):
    model = SeedCommit
    extra = 0
    fields = ("index", "message", "author", "date")


class SeedFileInline(VerbatimTextAdmin, admin.StackedInline):
    model = SeedFile
    extra = 0
    fields = ("commit_index", "position", "path", "mode", "deleted", "symlink", "content")


@admin.register(FixtureSeed)
class FixtureSeedAdmin(EntryAdmin):
    list_display = ("slug", "name", "language", "digest")
    list_filter = ("language",)
    search_fields = ("slug", "name", "summary")
    inlines = [CommitInline, SeedFileInline]


@admin.register(Phrasing)
class PhrasingAdmin(ChildAdmin):
    parent_field = "mode"
    list_display = ("key", "mode", "channel", "text")
    list_filter = ("mode", "channel")
    search_fields = ("key", "text")


@admin.register(TrapPredicate)
class TrapPredicateAdmin(ChildAdmin):
    parent_field = "archetype"
    list_display = ("key", "archetype", "kind", "description")
    list_filter = ("kind", "archetype__tier")
    search_fields = ("key", "description", "pattern", "path")


@admin.register(ArchetypeFixture)
class ArchetypeFixtureAdmin(ChildAdmin):
    parent_field = "archetype"
    list_display = ("path", "archetype", "git", "mode")
    list_filter = ("git", "archetype__tier")
    search_fields = ("path", "content")


@admin.register(Atom)
class AtomAdmin(ChildAdmin):
    parent_field = "skeleton"
    list_display = ("key", "skeleton", "kind", "description")
    list_filter = ("kind", "skeleton")
    search_fields = ("key", "description", "solve", "check_cmd")


@admin.register(SeedCommit)
class SeedCommitAdmin(ChildAdmin):
    parent_field = "seed"
    list_display = ("seed", "index", "author", "date", "message")
    list_filter = ("seed",)
    search_fields = ("message", "author")


@admin.register(SeedFile)
class SeedFileAdmin(ChildAdmin):
    parent_field = "seed"
    list_display = ("path", "seed", "commit_index", "mode", "deleted")
    list_filter = ("seed", "deleted")
    search_fields = ("path", "content")


@admin.register(MutationText)
class MutationTextAdmin(VerbatimTextAdmin, BlindAdmin):
    list_display = ("key", "operator", "text", "path")
    list_filter = ("operator",)
    search_fields = ("key", "text", "path", "content")
    readonly_fields = ("digest",)

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        _record_edit(obj)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        LibraryVersion.record(source="admin")


@admin.register(LibraryVersion)
class LibraryVersionAdmin(RecordAdmin):
    list_display = ("digest", "source", "created_at")
    list_filter = ("source",)
    readonly_fields = ("digest", "source", "created_at", "counts")


@admin.register(PoolVersion)
class PoolVersionAdmin(RecordAdmin):
    list_display = (
        "id",
        "status",
        "pool_seed",
        "target_size",
        "library_short",
        "library_current",
        "backend",
        "created_at",
    )
    list_filter = ("status", "backend")
    readonly_fields = [f.name for f in PoolVersion._meta.fields]

    @admin.display(description="library")
    def library_short(self, obj: PoolVersion) -> str:
        return obj.library_digest[:12]

    @admin.display(boolean=True, description="library current")
    def library_current(self, obj: PoolVersion) -> bool:
        return obj.library_is_current


class FailedCheckFilter(admin.SimpleListFilter):
    title = "check outcome"
    parameter_name = "outcome"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("passed", "passed every check")] + [(name, f"failed: {title}") for name, title in CHECK_TITLES.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "passed":
            return queryset.filter(status=Candidate.Status.VERIFIED)
        if value in CHECK_TITLES:
            return queryset.filter(failed_check=value)
        return queryset


@admin.register(Candidate)
class CandidateAdmin(RecordAdmin):
    list_display = ("key", "status", "failed_check", "channel", "pool_rank", "digest_short")
    list_filter = ("pool", FailedCheckFilter, "status", "tier", "consent", "archetype", "skeleton", "seed", "channel")
    search_fields = ("key", "digest")
    list_select_related = ("pool",)
    readonly_fields = (
        "pool",
        "key",
        "status",
        "digest",
        "duplicate_of",
        "check_report",
        "files",
        "prompt",
        "error",
        "execution",
    )
    exclude = ("scenario", "checks")

    @admin.display(description="digest")
    def digest_short(self, obj: Candidate) -> str:
        return obj.digest[:12]

    @admin.display(description="verifier report")
    def check_report(self, obj: Candidate) -> str:
        rows = [
            format_html(
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                CHECK_TITLES[name],
                "pass" if obj.checks[name]["passed"] else "FAIL",
                obj.checks[name]["reason"],
            )
            for name in CHECK_TITLES
            if name in (obj.checks or {})
        ]
        return format_html("<table>{}</table>", format_html_join("", "{}", ((r,) for r in rows)))

    @admin.display(description="prompt")
    def prompt(self, obj: Candidate) -> str:
        return (obj.scenario or {}).get("prompt", "")

    @admin.display(description="materialised files (overlay on the seed)")
    def files(self, obj: Candidate) -> str:
        items = (obj.scenario or {}).get("files", [])
        return format_html_join(
            "",
            "<details><summary><code>{}</code> ({} bytes, mode {})</summary><pre>{}</pre></details>",
            ((f["path"], len(f["content"]), f.get("mode", "0644"), f["content"]) for f in items),
        )
