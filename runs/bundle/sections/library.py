"""The library the campaigns' pools were built from: its version records and, when available, its entries.

A bundle can only carry the library *entries* as they are now: the database keeps no history of
them, just each state's digest (``LibraryVersion``).  So when the current library is the state a
campaign ran on, the section writes its canonical YAML export (``pool.loading.export_library``,
the same files ``load_libraries`` reads); when the library has changed since, it writes only the
digests and the export warns.  The campaign pages need the entries for their axes (every
archetype with its tier, every consent mode), so an import into an empty install loads them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.bundle.archive import BundleWriter
from harness.bundle.format import BundleError
from pool.loading import export_library, load_library
from pool.models import ENTRY_MODELS, LibraryVersion, MutationText, PoolVersion
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, Section, dumps, read_json, read_jsonl, register
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


class LibrarySection(Section):
    name = "library"
    order = 10
    files = (STATE, VERSIONS, f"{FOLDER}/<kind>/<slug>.yaml", f"{FOLDER}/mutations.yaml")

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        campaigns = Campaign.objects.filter(pk__in=scope.campaign_ids)
        wanted = set(campaigns.values_list("library_digest", flat=True))
        wanted |= set(PoolVersion.objects.filter(campaigns__in=campaigns).values_list("library_digest", flat=True))
        wanted.discard("")
        with out.open(VERSIONS) as fh:
            for v in LibraryVersion.objects.filter(digest__in=wanted).order_by("digest").values(*VERSION.names):
                fh.write(dumps(VERSION.dump(v)))
                scope.counts["library versions"] += 1
        current = LibraryVersion.current_digest()
        state: dict[str, Any] = {"digest": "", "campaign_digests": sorted(wanted), "entries": []}
        if current in wanted:
            with tempfile.TemporaryDirectory(prefix="overeager-library-") as tmp:
                for path in sorted(export_library(Path(tmp))):
                    out.add_file(f"{FOLDER}/{path.relative_to(tmp).as_posix()}", path)
                    scope.counts["library files"] += 1
                    yield
            state["digest"] = current
            state["entries"] = entry_digests()
        elif wanted:
            used = ", ".join(d[:12] for d in sorted(wanted))
            scope.warnings.append(
                f"the library changed since these campaigns ran (they used {used}, it is now {current[:12]}): "
                "the bundle records the digests only, not the entries"
            )
        out.write_bytes(STATE, dumps(state))
        yield

    def plan(self, state: ImportState) -> int:
        doc = read_json(state.root / STATE, {}) or {}
        digest = str(doc.get("digest") or "")
        load = False
        new = 0
        if digest and LibraryVersion.current_digest() != digest:
            if library_is_empty():
                load = True
                new += len(doc.get("entries") or [])
            else:
                state.warnings.append(
                    f"this install's library ({LibraryVersion.current_digest()[:12]}) is not the bundle's "
                    f"({digest[:12]}); it was left as it is, so the campaign pages draw their axes from this "
                    "install's archetypes and consent modes"
                )
        state.decisions["library.load"] = load
        state.decisions["library.digest"] = digest
        known = set(LibraryVersion.objects.values_list("digest", flat=True))
        new += sum(1 for r in read_jsonl(state.root / VERSIONS) if r.get("digest") not in known)
        return new

    def load(self, state: ImportState) -> None:
        before = set(LibraryVersion.objects.values_list("digest", flat=True))
        if state.decisions.get("library.load"):
            report = load_library(state.root / FOLDER, source="import_bundle")
            if report.digest != state.decisions["library.digest"]:
                raise BundleError(
                    f"the bundle's library files load to digest {report.digest}, not the "
                    f"{state.decisions['library.digest']} the bundle records: library/ is inconsistent"
                )
            state.created["library entries"] += len(report.created)
        for record in read_jsonl(state.root / VERSIONS):
            fields = VERSION.load(record)
            obj = LibraryVersion.objects.filter(digest=fields["digest"]).first()
            if obj is not None and obj.digest in before:
                state.present["library versions"] += 1
            else:
                if obj is None:
                    obj = LibraryVersion.objects.create(**fields)
                # Created just now (here or by load_library): take the bundle's record as it was.
                LibraryVersion.objects.filter(pk=obj.pk).update(**fields)
                state.created["library versions"] += 1
            state.library_versions[obj.digest] = obj.pk


register(LibrarySection())
