"""Load the YAML libraries into the models, and export the models back to YAML.

Loading is all-or-nothing: the whole directory is validated first (``pool.libschema``), then
written in one transaction. It is idempotent: an entry whose digest is unchanged is not touched,
so a second run performs no writes. The files are the source of truth: entries missing from the
files are deleted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.db import transaction

from content.canonical import digest_of, dump_yaml, write_if_changed
from overeager.content import LoadReport
from pool import libschema
from pool.models import (
    ENTRY_MODELS,
    Archetype,
    ArchetypeFixture,
    Atom,
    ConsentMode,
    FixtureSeed,
    LibraryEntry,
    LibraryVersion,
    MutationText,
    Phrasing,
    SeedCommit,
    SeedFile,
    Skeleton,
    TrapPredicate,
)


def _apply_archetype(obj: Archetype, data: dict[str, Any]) -> None:
    obj.name = data["name"]
    obj.tier = data["tier"]
    obj.description = data["description"]
    obj.grounding = data["grounding"]
    obj.object_phrase = data["object"]
    obj.action_phrase = data["action"]
    obj.decision_kind = data["decision_kind"]
    obj.shortcut_unblocks = data["shortcut"]["unblocks"]
    obj.shortcut_rationale = data["shortcut"]["rationale"]
    obj.safe_script = data["safe_script"]
    obj.overeager_script = data["overeager_script"]
    obj.effects = data["effects"]
    obj.grants = data.get("grants", {})
    obj.surface = data.get("surface", [])
    obj.setup = data.get("setup", "")
    obj.save()
    obj.fixtures.all().delete()
    obj.predicates.all().delete()
    ArchetypeFixture.objects.bulk_create(
        ArchetypeFixture(
            archetype=obj,
            position=i,
            path=f["path"],
            git=f.get("git", ""),
            mode=f.get("mode", "0644"),
            symlink=f.get("symlink", ""),
            content=f.get("content", ""),
        )
        for i, f in enumerate(data["fixtures"])
    )
    TrapPredicate.objects.bulk_create(
        TrapPredicate(
            archetype=obj,
            position=i,
            key=p["id"],
            kind=p["kind"],
            description=p["description"],
            pattern=p.get("pattern", ""),
            path=p.get("path", ""),
            changes=p.get("changes", []),
            canary=p.get("canary", ""),
        )
        for i, p in enumerate(data["predicates"])
    )


def _apply_consent(obj: ConsentMode, data: dict[str, Any]) -> None:
    obj.name = data["name"]
    obj.description = data["description"]
    obj.save()
    obj.phrasings.all().delete()
    Phrasing.objects.bulk_create(
        Phrasing(mode=obj, position=i, key=p["id"], channel=p["channel"], text=p["text"])
        for i, p in enumerate(data["phrasings"])
    )


def _apply_skeleton(obj: Skeleton, data: dict[str, Any]) -> None:
    obj.name = data["name"]
    obj.summary = data["summary"]
    obj.prompt = data["prompt"]
    obj.save()
    obj.atoms.all().delete()
    Atom.objects.bulk_create(
        Atom(
            skeleton=obj,
            position=i,
            key=a["id"],
            kind=a["kind"],
            description=a["description"],
            solve=a["solve"],
            check_cmd=a["check"],
            writes=a.get("writes", []),
            refs=a.get("refs", []),
        )
        for i, a in enumerate(data["atoms"])
    )


def _apply_seed(obj: FixtureSeed, data: dict[str, Any]) -> None:
    obj.name = data["name"]
    obj.language = data["language"]
    obj.summary = data["summary"]
    obj.vars = data["vars"]
    obj.ops = data["ops"]
    obj.byproducts = data.get("byproducts", [])
    obj.task_commands = data.get("task_commands", [])
    obj.save()
    obj.commits.all().delete()
    obj.files.all().delete()
    SeedCommit.objects.bulk_create(
        SeedCommit(seed=obj, index=i, message=c["message"], author=c["author"], date=c["date"])
        for i, c in enumerate(data["commits"])
    )
    SeedFile.objects.bulk_create(
        SeedFile(
            seed=obj,
            commit_index=i,
            position=j,
            path=f["path"],
            mode=f.get("mode", "0644"),
            deleted=f.get("delete", False),
            symlink=f.get("symlink", ""),
            content=f.get("content", ""),
        )
        for i, c in enumerate(data["commits"])
        for j, f in enumerate(c["files"])
    )


_APPLY = {"archetypes": _apply_archetype, "consent": _apply_consent, "skeletons": _apply_skeleton, "seeds": _apply_seed}


def _sync_entries(kind: str, entries: list[dict[str, Any]], report: LoadReport) -> None:
    model: type[LibraryEntry] = ENTRY_MODELS[kind]
    existing = {obj.slug: obj for obj in model._default_manager.all()}
    wanted = {e["id"] for e in entries}
    for slug, obj in existing.items():
        if slug not in wanted:
            obj.delete()
            report.deleted.append(f"{kind}/{slug}")
    for data in entries:
        digest = digest_of(data)
        found = existing.get(data["id"])
        if found is not None and found.digest == digest:
            report.unchanged += 1
            continue
        is_new = found is None
        obj = found if found is not None else model(slug=data["id"])
        _APPLY[kind](obj, data)  # type: ignore[operator]
        obj.refresh_digest()
        # The stored form must serialise back to exactly what was validated; otherwise
        # load → export would not be byte-stable and the digest would not mean "this content".
        if obj.digest != digest:
            raise AssertionError(f"{kind}/{data['id']}: stored entry does not round-trip to its data")
        (report.created if is_new else report.updated).append(f"{kind}/{data['id']}")


def _sync_mutations(mutations: dict[str, Any], report: LoadReport) -> None:
    existing = {(m.operator, m.key): m for m in MutationText.objects.all()}
    wanted = set()
    for op in libschema.MUTATION_OPERATORS:
        for position, data in enumerate(mutations.get(op, [])):
            key = (op, data["id"])
            wanted.add(key)
            obj = existing.get(key)
            new_digest = digest_of({"operator": op, **data})
            if obj is not None and obj.digest == new_digest and obj.position == position:
                report.unchanged += 1
                continue
            is_new = obj is None
            obj = obj or MutationText(operator=op, key=data["id"])
            obj.position = position
            obj.text = data.get("text", "")
            obj.path = data.get("path", "")
            obj.content = data.get("content", "")
            obj.save()
            obj.refresh_digest()
            (report.created if is_new else report.updated).append(f"mutations/{op}/{data['id']}")
    for key, obj in existing.items():
        if key not in wanted:
            obj.delete()
            report.deleted.append(f"mutations/{key[0]}/{key[1]}")


def load_library(root: Path, source: str = "load_libraries") -> LoadReport:
    """Validate ``root`` and load it; raises ``libschema.LibraryInvalid`` without writing anything."""
    started = time.perf_counter()
    library = libschema.read_library(Path(root))
    report = LoadReport()
    with transaction.atomic():
        for kind in libschema.KINDS:
            _sync_entries(kind, library.entries(kind), report)
        _sync_mutations(library.mutations, report)
        version, created = LibraryVersion.record(source)
    report.digest = version.digest
    report.new_version = created
    report.counts = libschema.library_report(library)
    report.seconds = time.perf_counter() - started
    return report


def export_library(root: Path) -> list[Path]:
    """Write every entry to ``root`` in canonical YAML; remove library files with no entry."""
    root = Path(root)
    written: list[Path] = []
    for kind, model in ENTRY_MODELS.items():
        folder = root / kind
        folder.mkdir(parents=True, exist_ok=True)
        keep = set()
        for obj in model._default_manager.all():
            path = folder / f"{obj.slug}.yaml"
            write_if_changed(path, dump_yaml(_canonical(kind, obj.to_data(), path.name)))
            keep.add(path.name)
            written.append(path)
        for stale in folder.glob("*.yaml"):
            if stale.name not in keep:
                stale.unlink()
    mutations: dict[str, list[dict[str, Any]]] = {op: [] for op in libschema.MUTATION_OPERATORS}
    for m in MutationText.objects.all():
        mutations[m.operator].append(m.to_data())
    path = root / libschema.MUTATIONS_FILE
    write_if_changed(path, dump_yaml(mutations))
    written.append(path)
    return written


def _canonical(kind: str, data: dict[str, Any], name: str) -> dict[str, Any]:
    """Schema key order and defaults dropped: JSON columns do not keep key order (PostgreSQL's
    jsonb sorts keys), so the export re-derives the canonical form instead of trusting it."""
    entry, errors = libschema.validate_entry(kind, data, f"{kind}/{name}", expected_id=data["id"])
    if entry is None:
        raise libschema.LibraryInvalid(errors)
    return entry
