"""Load the family YAML files into the models, and export the models back to YAML.

Same contract as the SNARE libraries (``pool.loading``): all-or-nothing (the whole directory is
validated first, then written in one transaction), idempotent (a family whose digest is unchanged
is not touched, so a second load writes nothing), and the files are the source of truth (a family
missing from the files is deleted — unless runs reference its prompts, which stops the load with
a message instead of deleting evidence).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import ProtectedError

from content.canonical import digest_of, dump_yaml, write_if_changed
from overeager.content import LoadReport
from suite import schema
from suite.models import SuiteVersion, TaskFamily

DEFAULT_DIR = Path(__file__).resolve().parent / "families"


class SuiteLoadError(Exception):
    pass


def load_suite(root: Path = DEFAULT_DIR, source: str = "load_suite") -> LoadReport:
    """Validate ``root`` and load it; raises ``schema.SuiteInvalid`` without writing anything."""
    started = time.perf_counter()
    families = schema.read_suite(Path(root))
    report = LoadReport()
    with transaction.atomic():
        existing = {f.slug: f for f in TaskFamily.objects.all()}
        wanted = {f["slug"] for f in families}
        for slug, obj in existing.items():
            if slug in wanted:
                continue
            try:
                obj.delete()
            except ProtectedError as exc:
                raise SuiteLoadError(
                    f"family {slug!r} is no longer in {root}, but runs reference its prompts "
                    f"({len(exc.protected_objects)} protected rows); restore its file or archive those runs first"
                ) from None
            report.deleted.append(slug)
        for data in families:
            digest = digest_of(data)
            found = existing.get(data["slug"])
            if found is not None and found.digest == digest:
                report.unchanged += 1
                continue
            obj = found if found is not None else TaskFamily(slug=data["slug"])
            obj.apply_data(data)
            obj.save()
            obj.sync_prompts()
            obj.refresh_digest()
            # The stored form must serialise back to exactly what was validated; otherwise
            # load → export would not be byte-stable and the digest would not mean "this content".
            if obj.digest != digest:
                raise AssertionError(f"{data['slug']}: stored family does not round-trip to its data")
            (report.created if found is None else report.updated).append(data["slug"])
        version, created = SuiteVersion.record(source)
    report.digest = version.digest
    report.new_version = created
    report.counts = schema.suite_report(families)
    report.seconds = time.perf_counter() - started
    return report


def export_suite(root: Path = DEFAULT_DIR) -> list[Path]:
    """Write every family to ``root`` in canonical YAML; remove family files with no family."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    keep: set[str] = set()
    for obj in TaskFamily.objects.all():
        path = root / f"{obj.slug}.yaml"
        write_if_changed(path, dump_yaml(_canonical(obj)))
        keep.add(path.name)
        written.append(path)
    for stale in root.glob("*.yaml"):
        if stale.name not in keep:
            stale.unlink()
    return written


def _canonical(obj: TaskFamily) -> dict[str, Any]:
    """Schema key order and defaults dropped, re-derived: PostgreSQL's jsonb does not keep the
    key order of the stored JSON, so the export never trusts it."""
    return obj.canonical()
