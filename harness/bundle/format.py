"""The audit-bundle format: version and compatibility, the manifest, the root hash, the run chains.

Pure Python (no Django), so the rules a bundle is checked against are unit-tested without a
database and could be re-implemented by a third party from docs/bundles.md alone.

* **Manifest** (``manifest.json``): every file of the bundle except the manifest itself and
  ``ROOT``, with its size and SHA-256.  The **root hash** is ``content.canonical.digest_of`` of the
  whole manifest document (SHA-256 over its canonical JSON) and is written to ``ROOT``; a reader
  who trusts the root (published beside the results) trusts every byte the manifest lists.
* **Run chain**: per run, h_0 = SHA-256(run uuid as ASCII), h_i = SHA-256(h_{i-1} ‖ step_i) over
  the run's trace steps — its transcript events, every attempt in attempt-number order, each in
  ``seq`` order — where h_{i-1} is the 32 raw digest bytes and step_i the step's JSON with sorted
  keys and no whitespace (``step_bytes``).  Each line of ``events/<run>.jsonl`` stores its h_i and
  ``runs.jsonl`` stores the head h_n and n, so a verifier names the first step that was changed
  and notices steps added, removed or re-chained after the fact.

Why the chain does not use ``content.canonical.canonical_json``: that form folds line endings and
Unicode normalisation on purpose (two library files that differ only in how an editor saved them
are the same entry), so two transcripts differing in exactly those bytes would hash alike.  A trace
is evidence, not a curated text: every recorded character counts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from content.canonical import canonical_json, digest_of

FORMAT_NAME = "overeager-bundle"
# MAJOR.MINOR.  A minor bump only adds optional fields or files a reader of the same major may
# ignore; anything a reader must understand to import correctly bumps the major.
FORMAT_VERSION = "1.0"

HEADER = "bundle.json"
MANIFEST = "manifest.json"
ROOT = "ROOT"
RUNS = "runs.jsonl"
EVENTS_DIR = "events"
EVIDENCE_DIR = "evidence"
UNLISTED = (MANIFEST, ROOT)  # the only files the manifest does not list

_VERSION = re.compile(r"^(\d+)\.(\d+)$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class BundleError(ValueError):
    """The bundle cannot be written, read or imported as asked; the message says what to fix."""


# -- versions -----------------------------------------------------------------------------------


def parse_version(text: str) -> tuple[int, int]:
    match = _VERSION.match(str(text))
    if not match:
        raise BundleError(f"bundle format version {text!r} is not MAJOR.MINOR")
    return int(match.group(1)), int(match.group(2))


def compatibility_problem(found: Any, ours: str = FORMAT_VERSION) -> str:
    """Empty when this install reads a bundle of format ``found``; otherwise why not.

    The rule: the same major version, and a minor no newer than ours.  An older minor lacks only
    optional parts; a newer minor may carry fields this install would silently drop, so it is
    refused rather than imported incompletely.
    """
    major, minor = parse_version(ours)
    try:
        f_major, f_minor = parse_version(found)
    except BundleError as exc:
        return f"{exc}; this install reads bundle format {major}.x (up to {ours})"
    if f_major != major:
        if f_major > major:
            return (
                f"the bundle is format {found}, this install reads format {major}.x (up to {ours}): "
                "it was written by a newer Overeager — upgrade this install to import it"
            )
        return (
            f"the bundle is format {found}, this install reads format {major}.x (up to {ours}): "
            f"format {f_major} bundles cannot be imported by this version"
        )
    if f_minor > minor:
        return (
            f"the bundle is format {found}, this install reads format {major}.x up to {ours}: "
            "it was written by a newer Overeager — upgrade this install to import it"
        )
    return ""


# -- hashing ------------------------------------------------------------------------------------


def step_bytes(step: Mapping[str, Any]) -> bytes:
    """A trace step's bytes for the chain: JSON, sorted keys, no whitespace, UTF-8."""
    return json.dumps(step, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def chain_start(run_uuid: str) -> str:
    return hashlib.sha256(run_uuid.encode("ascii")).hexdigest()


def chain_next(previous: str, encoded_step: bytes) -> str:
    return hashlib.sha256(bytes.fromhex(previous) + encoded_step).hexdigest()


class Chain:
    """A run's hash chain, fed one step at a time."""

    def __init__(self, run_uuid: str) -> None:
        self.head = chain_start(run_uuid)
        self.steps = 0

    def add(self, encoded_step: bytes) -> str:
        self.head = chain_next(self.head, encoded_step)
        self.steps += 1
        return self.head


def chain_of(run_uuid: str, steps: Iterable[Mapping[str, Any]]) -> tuple[str, int]:
    """(head, n) of a run's chain over ``steps``."""
    chain = Chain(run_uuid)
    for step in steps:
        chain.add(step_bytes(step))
    return chain.head, chain.steps


def chained_line(chain: Chain, step: Mapping[str, Any]) -> bytes:
    """Add ``step`` to ``chain``; return its line of ``events/<run>.jsonl`` (the step plus its ``h``)."""
    if "h" in step or not step:
        raise BundleError("a trace step is a non-empty object without an 'h' member")
    encoded = step_bytes(step)
    h = chain.add(encoded)
    # Appended, not re-encoded: the line's other members are byte for byte the chained step.  A
    # reader still re-encodes the parsed step (verify does), so member order carries no meaning.
    return encoded[:-1] + b',"h":"' + h.encode() + b'"}\n'


@dataclass(frozen=True, slots=True)  # one per file: a 10,000-run bundle has ~55,000
class FileEntry:
    path: str
    size: int
    sha256: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


def manifest_document(entries: Iterable[FileEntry], counts: Mapping[str, int]) -> dict[str, Any]:
    files = sorted((e.as_dict() for e in entries), key=lambda e: e["path"])
    return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "counts": dict(counts), "files": files}


def root_hash(manifest: Mapping[str, Any]) -> str:
    return digest_of(manifest)


def write_manifest(out: Any, entries: Iterable[FileEntry], counts: Mapping[str, int]) -> str:
    """Write ``manifest_document(entries, counts)`` to ``out`` and return its root hash.

    The file holds one file entry per line (readable, diffable); the root is SHA-256 over the
    document's canonical JSON, fed piece by piece as the entries are written, so a large manifest
    is never built as one object or string.  ``root_hash(json.load(manifest))`` is the same value.
    """
    ordered = sorted(entries, key=lambda e: e.path)
    tally = dict(sorted(counts.items()))
    sha = hashlib.sha256(b'{"counts":' + canonical_json(tally).encode() + b',"files":[')
    out.write(
        b'{"format":' + json.dumps(FORMAT_NAME).encode() + b',"format_version":' + json.dumps(FORMAT_VERSION).encode()
        + b',"counts":' + json.dumps(tally).encode() + b',"files":['
    )  # fmt: skip
    for i, entry in enumerate(ordered):
        item = entry.as_dict()
        sha.update((b"," if i else b"") + canonical_json(item).encode())
        out.write((b",\n" if i else b"\n") + json.dumps(item, ensure_ascii=False).encode())
    out.write(b"\n]}\n")
    sha.update(
        b'],"format":' + canonical_json(FORMAT_NAME).encode()
        + b',"format_version":' + canonical_json(FORMAT_VERSION).encode() + b"}"
    )  # fmt: skip
    return sha.hexdigest()


# -- paths --------------------------------------------------------------------------------------


def path_problem(path: str) -> str:
    """Empty when ``path`` is a safe bundle-relative path (importers write files under it)."""
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        return "not a relative POSIX path"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' component"
    return ""


def events_path(run_uuid: str) -> str:
    return f"{EVENTS_DIR}/{run_uuid}.jsonl"


def evidence_path(attempt_uuid: str, relative: str) -> str:
    return f"{EVIDENCE_DIR}/{attempt_uuid}/{relative}"


def run_of_events_path(path: str) -> str:
    """The run uuid an ``events/<uuid>.jsonl`` path names, or empty."""
    if not path.startswith(EVENTS_DIR + "/") or not path.endswith(".jsonl"):
        return ""
    name = path[len(EVENTS_DIR) + 1 : -len(".jsonl")]
    return name if _UUID.match(name) else ""
