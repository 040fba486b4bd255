"""The library the campaigns' pools were built from: its version records and, when available, its entries.

A bundle can only carry the library *entries* as they are now: the database keeps no history of
them, just each state's digest (``LibraryVersion``).  So when the current library is the state a
campaign ran on, the section writes its canonical YAML export (``pool.loading.export_library``,
the same files ``load_libraries`` reads); when the library has changed since, it writes only the
digests and the export warns.  The campaign pages need the entries for their axes (every
archetype with its tier, every consent mode), so an import into an empty install loads them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.db.models import Q

from overeager.content import ContentVersion, LoadReport
from pool.loading import export_library, load_library
from pool.models import ENTRY_MODELS, LibraryVersion, MutationText, PoolVersion
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, register
from runs.bundle.sections.content import ContentSection
from runs.models import Campaign

FOLDER = "library"
STATE = f"{FOLDER}/state.json"
VERSIONS = f"{FOLDER}/versions.jsonl"

VERSION = Codec(LibraryVersion)


def entry_digests() -> list[str]:
    """``kind/slug:digest`` per entry and mutation text, as ``LibraryVersion.current_digest`` hashes them."""
    lines = []
    for kind, model in ENTRY_MODELS.items():
        for slug, digest in model._default_manager.order_by("slug").values_list("slug", "digest"):
            lines.append(f"{kind}/{slug}:{digest}")
    for op, key, digest in MutationText.objects.order_by("operator", "key").values_list("operator", "key", "digest"):
        lines.append(f"mutations/{op}/{key}:{digest}")
    return lines


def library_is_empty() -> bool:
    return not MutationText.objects.exists() and not any(m._default_manager.exists() for m in ENTRY_MODELS.values())


class LibrarySection(ContentSection):
    name = "library"
    order = 10
    files = (STATE, VERSIONS, f"{FOLDER}/<kind>/<slug>.yaml", f"{FOLDER}/mutations.yaml")
    folder = FOLDER
    entries_folder = FOLDER
    label = "library"
    entries_label = "library entries"
    state_key = "entries"

    def version_model(self) -> type[ContentVersion]:
        return LibraryVersion

    def wanted(self, scope: ExportScope) -> set[str]:
        # The campaigns' own digests and their pools' (a pool records the library it was built from).
        # A scenario pack's pool records the pack's digest in that field instead, and its campaigns
        # copy it: that names the pack (the pool's report carries it with its slug and version),
        # not a state of the library, so it is not compared with the library's.
        packs = PoolVersion.objects.filter(report__has_key="pack").values("pk")
        campaigns = Campaign.objects.filter(pk__in=scope.campaign_ids)
        wanted = set(
            campaigns.filter(Q(pool__isnull=True) | ~Q(pool__in=packs)).values_list("library_digest", flat=True)
        )
        wanted |= set(
            PoolVersion.objects.builds().filter(campaigns__in=campaigns).values_list("library_digest", flat=True)
        )
        return wanted

    def entry_digests(self) -> list[str]:
        return entry_digests()

    def is_empty(self) -> bool:
        return library_is_empty()

    def exporter(self) -> Callable[[Path], list[Path]]:
        return export_library

    def loader(self) -> Callable[..., LoadReport]:
        return load_library

    def remember(self, state: ImportState, version: ContentVersion) -> None:
        state.library_versions[version.digest] = version.pk  # the pool section refers to it


register(LibrarySection())
