"""What every bundle section is: one model family's exporter and importer, registered by name.

A section owns some files of the bundle.  Export is a generator that writes them (yielding after
each member, so a streamed HTTP response can send bytes as they are produced); import is two
steps — ``plan`` reads the section's files and the database and refuses conflicts *before any
row is written*, then ``load`` writes, inside the one transaction of the whole import.  Sections
run in registry order, which is dependency order: what a section refers to was loaded before it.
Records refer to each other by natural keys (uuids, slugs, digests); ``ImportState`` maps those
to the new database ids as sections load.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from harness.bundle.archive import BundleWriter
from harness.bundle.format import BundleError


def dumps(record: Mapping[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def write_jsonl(out: BundleWriter, path: str, records: Iterable[Mapping[str, Any]]) -> int:
    count = 0
    with out.open(path) as fh:
        for record in records:
            fh.write(dumps(record))
            count += 1
    return count


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSON Lines file, streamed; a bad line is an error naming file and line."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise BundleError(f"{path.name} line {number} is not valid JSON ({exc})") from None
            if not isinstance(record, dict):
                raise BundleError(f"{path.name} line {number} is not a JSON object")
            yield record


def read_json(path: Path, default: Any = None) -> Any:
    if not path.exists():
        return default
    try:
        return json.loads(path.read_bytes())
    except ValueError as exc:
        raise BundleError(f"{path.name} is not valid JSON ({exc})") from None


def pool_ref(library_digest: str, pool_seed: int, target_size: int) -> str:
    """A pool's natural key as one string (PoolVersion is unique on these three)."""
    return f"{library_digest}:{pool_seed}:{target_size}"


@dataclass
class ExportScope:
    """What is being exported, and what the sections report back."""

    campaign_ids: list[int]
    matrix_id: int | None = None
    counts: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)


@dataclass
class ImportState:
    root: Path
    header: dict[str, Any]
    created: Counter[str] = field(default_factory=Counter)
    present: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    # bundle natural key → local primary key (or row), filled as sections load
    suts: dict[str, Any] = field(default_factory=dict)
    matrices: dict[str, int] = field(default_factory=dict)
    library_versions: dict[str, int] = field(default_factory=dict)
    pools: dict[str, int] = field(default_factory=dict)
    candidates: dict[tuple[str, int], int] = field(default_factory=dict)
    campaigns: dict[str, int] = field(default_factory=dict)
    campaign_uuids: dict[str, str] = field(default_factory=dict)  # run uuid → campaign uuid (imported runs)
    skipped_campaigns: set[str] = field(default_factory=set)  # identical campaigns already here
    runs: dict[str, int] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    users: dict[str, int] = field(default_factory=dict)
    new_paths: list[Path] = field(default_factory=list)  # evidence folders to remove if the import fails
    plans: dict[str, int] = field(default_factory=dict)  # section → records it will create
    decisions: dict[str, Any] = field(default_factory=dict)  # what a section's plan decided, for its load


class Section:
    """One model family's part of the bundle."""

    name: ClassVar[str]
    # Position in export and import: a section may refer only to records of sections before it.
    order: ClassVar[int]
    # For docs/bundles.md and the tamper tests: the files this section writes (globs).
    files: ClassVar[tuple[str, ...]]

    def available(self) -> bool:
        """False while the app that owns the models is not installed (the section is skipped)."""
        return True

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        raise NotImplementedError

    def plan(self, state: ImportState) -> int:
        """Check the section's records against the database; return how many it would create."""
        raise NotImplementedError

    def load(self, state: ImportState) -> None:
        raise NotImplementedError


_REGISTRY: dict[str, Section] = {}


def register(section: Section) -> Section:
    if section.name in _REGISTRY:
        raise ValueError(f"bundle section {section.name!r} registered twice")
    _REGISTRY[section.name] = section
    return section


def sections() -> list[Section]:
    """Every registered section, in dependency order."""
    return sorted(_REGISTRY.values(), key=lambda s: (s.order, s.name))


def section(name: str) -> Section:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise BundleError(f"unknown bundle section {name!r}; known: {sorted(_REGISTRY)}") from None
