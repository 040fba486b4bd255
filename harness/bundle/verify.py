"""Check a bundle against its manifest, root hash and run chains. Pure Python, one streamed pass.

Every member is read once, in storage order, and hashed as it streams; ``runs.jsonl`` and the
``events/`` files are parsed on the way (line by line) for the chain checks.  What is kept in
memory is one entry per file and one (head, steps) per run — never a file's content, except the
small header, manifest and ``ROOT``.

Problems, each naming what to look at (docs/bundles.md lists them all):

* ``format``  — no header, not a bundle, or an incompatible format version;
* ``root``    — the manifest does not hash to ``ROOT`` (or to the root the caller expected);
* ``missing`` / ``altered`` / ``extra`` — a file listed but absent, listed with another size or
  SHA-256, or present but not listed;
* ``unsafe``  — a link, a device, or a path that is absolute or climbs out of the bundle;
* ``unreadable`` — a file that is not the JSON it must be, or an archive that cannot be read;
* ``chain``   — a run whose trace steps do not hash to the chain recorded for it;
* ``limit``   — a member, the members together, or the archive's inflation ratio beyond the
  reader's ``Limits``: reading stopped there (nothing is ever written while verifying).
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.bundle.archive import CHUNK, DEFAULT_LIMITS, BundleLimitError, Limits, iter_members
from harness.bundle.format import (
    FORMAT_NAME,
    HEADER,
    MANIFEST,
    ROOT,
    RUNS,
    UNLISTED,
    BundleError,
    Chain,
    compatibility_problem,
    events_path,
    path_problem,
    root_hash,
    run_of_events_path,
    step_bytes,
)

SMALL_FILE_LIMIT = 256 << 20  # header, manifest and ROOT are read whole; refuse absurd ones
_ORDER = {
    "format": 0,
    "limit": 1,
    "root": 2,
    "unreadable": 3,
    "unsafe": 4,
    "missing": 5,
    "altered": 6,
    "extra": 7,
    "chain": 8,
}


@dataclass(frozen=True)
class Problem:
    kind: str
    path: str
    message: str
    run: str = ""
    step: int | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class Digests(Mapping[str, tuple[int, str]]):
    """path → (size, SHA-256 hex) of every member read, over the packed form the verifier keeps."""

    def __init__(self, packed: dict[str, bytes]) -> None:
        self._packed = packed

    def __getitem__(self, path: str) -> tuple[int, str]:
        packed = self._packed[path]
        return int.from_bytes(packed[32:], "big"), packed[:32].hex()

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)


@dataclass
class VerifyReport:
    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    runs: int = 0
    steps: int = 0
    root: str = ""
    header: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    # Every member as read (the listed files, manifest.json and ROOT): what an import may extract.
    members: Digests = field(default_factory=lambda: Digests({}))

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(slots=True)  # one per run
class _Events:
    head: str = ""
    steps: int = 0
    bad_step: int | None = None
    why: str = ""


def _lines(fh: _Counting, sha: Any) -> Iterator[bytes]:
    """The file's lines (without the newline), hashing every byte read, to the end of the file."""
    rest = b""
    while chunk := fh.read(CHUNK):
        sha.update(chunk)
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


def _read_all(fh: _Counting, sha: Any) -> bytes:
    data = bytearray()
    while chunk := fh.read(CHUNK):
        sha.update(chunk)
        data += chunk
        if len(data) > SMALL_FILE_LIMIT:
            raise BundleError("larger than a bundle's header or manifest can be")
    return bytes(data)


def _check_events(run: str, lines: Iterator[bytes]) -> _Events:
    out = _Events()
    chain = Chain(run)
    for number, line in enumerate(lines, 1):
        if out.bad_step is not None:
            continue  # keep reading: the file's hash needs every byte
        try:
            step = json.loads(line)
            if not isinstance(step, dict) or not isinstance(step.get("h"), str):
                raise ValueError("not an object with an 'h' member")
            recorded = step.pop("h")
            computed = chain.add(step_bytes(step))
        except ValueError as exc:
            out.bad_step, out.why = number, f"line {number} is not a chained trace step ({exc})"
            continue
        if computed != recorded:
            where = f"attempt {step.get('attempt', '?')}, seq {step.get('seq', '?')}"
            out.bad_step = number
            out.why = (
                f"step {number} ({where}) does not hash to its recorded h: "
                "that step (or the file's bytes at that line) was changed"
            )
    out.head, out.steps = chain.head, chain.steps
    return out


class _Collector:
    def __init__(self) -> None:
        self.report = VerifyReport()
        # path → SHA-256 digest + size, packed: one small bytes object per file (a campaign has ~5 per run)
        self.found: dict[str, bytes] = {}
        self.small: dict[str, bytes] = {}
        self.heads: dict[str, tuple[str, int]] = {}
        self.runs_read = False
        self.events: dict[str, _Events] = {}

    def problem(self, kind: str, path: str, message: str, run: str = "", step: int | None = None) -> None:
        self.report.problems.append(Problem(kind, path, message, run, step))

    def member(self, path: str, kind: str, opener: Callable[[], IO[bytes]]) -> None:
        unsafe = path_problem(path)
        if unsafe:
            self.problem("unsafe", path, f"{path!r}: {unsafe}; an importer would refuse it")
            return
        if kind != "file":
            self.problem("unsafe", path, f"{path}: a link or device; bundles hold regular files only")
            return
        if path in self.found:
            self.problem("extra", path, f"{path}: stored twice in the archive")
            return
        sha = hashlib.sha256()
        size = 0
        with opener() as fh:
            counting = _Counting(fh)
            try:
                if path in (HEADER, MANIFEST, ROOT):
                    self.small[path] = _read_all(counting, sha)
                elif path == RUNS:
                    self._runs(_lines(counting, sha))
                elif run_of_events_path(path):
                    self.events[run_of_events_path(path)] = _check_events(
                        run_of_events_path(path), _lines(counting, sha)
                    )
                else:
                    _drain(counting, sha)
            except BundleLimitError:
                raise  # reading stops: the rest of the archive is not inflated
            except BundleError as exc:
                self.problem("unreadable", path, f"{path}: {exc}")
                return
            size = counting.size
        self.found[path] = sha.digest() + size.to_bytes(8, "big")
        self.report.files += 1
        self.report.bytes += size

    def _runs(self, lines: Iterator[bytes]) -> None:
        self.runs_read = True
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
                run = str(record["run"]["uuid"])
                head, steps = str(record["chain"]["head"]), int(record["chain"]["steps"])
            except (ValueError, KeyError, TypeError) as exc:
                self.problem(
                    "unreadable", RUNS, f"{RUNS} line {number} is not a run record ({type(exc).__name__}: {exc})"
                )
                continue
            seen = self.heads.get(run)
            if seen is not None and seen != (head, steps):
                self.problem(
                    "chain", RUNS, f"run {run}: {RUNS} line {number} records another chain than an earlier line", run
                )
            self.heads.setdefault(run, (head, steps))


class _Counting:
    """Counts the bytes read through it (the size a tar header claims is not evidence)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        self.size += len(data)
        return data


def _drain(fh: _Counting, sha: Any) -> None:
    while chunk := fh.read(CHUNK):
        sha.update(chunk)


def verify(path: Path, expected_root: str = "", limits: Limits = DEFAULT_LIMITS) -> VerifyReport:
    """Check the bundle at ``path`` (a directory or a .tar.gz); every problem is in the report.

    Nothing is written: an archive is streamed once, under ``limits``.
    """
    started = time.perf_counter()
    c = _Collector()
    try:
        for member in iter_members(Path(path), limits):
            c.member(member.path, member.kind, member.open)
    except BundleLimitError as exc:
        c.problem("limit", str(path), str(exc))
    except BundleError as exc:
        c.problem("unreadable", str(path), str(exc))
    except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
        # Raised while reading a member's data: the compressed stream is damaged inside a file.
        c.problem(
            "unreadable",
            str(path),
            f"{path}: the archive is corrupt after {c.report.files} intact files ({type(exc).__name__}: {exc})",
        )
    _check_header(c)
    manifest = _check_root(c, expected_root)
    if manifest is not None:
        _check_files(c, manifest)
    _check_chains(c)
    c.report.members = Digests(c.found)
    c.report.seconds = time.perf_counter() - started
    c.report.problems.sort(key=lambda p: (_ORDER.get(p.kind, 9), p.path, p.step or 0))
    return c.report


def _json(c: _Collector, path: str) -> Any:
    data = c.small.get(path)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError as exc:
        c.problem("unreadable", path, f"{path} is not valid JSON ({exc})")
        return None


def _check_header(c: _Collector) -> None:
    if HEADER not in c.small:
        if HEADER not in c.found:
            c.problem("format", HEADER, f"{HEADER} is missing: this is not an Overeager bundle, or it lost its header")
        return
    header = _json(c, HEADER)
    if not isinstance(header, dict):
        return
    c.report.header = header
    if header.get("format") != FORMAT_NAME:
        c.problem("format", HEADER, f"{HEADER} names format {header.get('format')!r}, not {FORMAT_NAME!r}")
        return
    problem = compatibility_problem(header.get("format_version"))
    if problem:
        c.problem("format", HEADER, problem)


def _check_root(c: _Collector, expected_root: str) -> dict[str, Any] | None:
    manifest = _json(c, MANIFEST)
    if MANIFEST not in c.small and MANIFEST not in c.found:
        c.problem("missing", MANIFEST, f"{MANIFEST} is missing: no file can be checked against it")
    if ROOT not in c.small:
        c.problem("missing", ROOT, f"{ROOT} is missing: the manifest cannot be tied to a root hash")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        if manifest is not None:
            c.problem("unreadable", MANIFEST, f"{MANIFEST} has no file list")
        return None
    computed = root_hash(manifest)
    c.report.root = computed
    if ROOT in c.small:
        recorded = c.small[ROOT].decode("utf-8", "replace").strip()
        if recorded != computed:
            c.problem(
                "root",
                ROOT,
                f"bad root hash: {MANIFEST} hashes to {computed} but {ROOT} records {recorded}: the manifest or "
                "ROOT was altered, so the per-file results below are checked against an untrusted manifest",
            )
    if expected_root and expected_root != computed:
        c.problem("root", ROOT, f"bad root hash: the bundle's root is {computed}, not the expected {expected_root}")
    return manifest


def _check_files(c: _Collector, manifest: dict[str, Any]) -> None:
    listed: set[str] = set()
    for entry in manifest["files"]:
        try:
            path, size, sha = str(entry["path"]), int(entry["size"]), str(entry["sha256"])
        except (KeyError, TypeError, ValueError):
            c.problem("unreadable", MANIFEST, f"{MANIFEST} has a malformed entry: {str(entry)[:200]}")
            continue
        listed.add(path)
        packed = c.found.get(path)
        if packed is None:
            if not any(p.path == path for p in c.report.problems):
                c.problem("missing", path, f"{path} is listed in the manifest but missing from the bundle")
            continue
        found_sha, found_size = packed[:32].hex(), int.from_bytes(packed[32:], "big")
        if (found_size, found_sha) != (size, sha):
            detail = f"size {found_size} instead of {size}, " if found_size != size else ""
            c.problem("altered", path, f"{path} was altered: {detail}SHA-256 {found_sha} instead of {sha}")
    for path in sorted(set(c.found) - listed - set(UNLISTED)):
        c.problem("extra", path, f"{path} is in the bundle but not in the manifest")


def _check_chains(c: _Collector) -> None:
    if not c.runs_read:
        if RUNS not in c.found and not any(p.path == RUNS for p in c.report.problems):
            c.problem("missing", RUNS, f"{RUNS} is missing: no run chain can be checked")
        return
    c.report.runs = len(c.heads)
    for run, (head, steps) in sorted(c.heads.items()):
        found = c.events.get(run)
        path = events_path(run)
        if found is None:
            if steps:
                c.problem("chain", path, f"run {run}: {path} is missing but {RUNS} records {steps} trace steps", run)
            continue
        c.report.steps += found.steps
        if found.bad_step is not None:
            c.problem("chain", path, f"run {run}: chain broken in {path}: {found.why}", run, found.bad_step)
        elif (found.head, found.steps) != (head, steps):
            c.problem(
                "chain",
                path,
                f"run {run}: {path} chains {found.steps} steps to {found.head}, but {RUNS} records {steps} steps "
                f"ending at {head}: steps were added, removed or re-chained",
                run,
            )
    for run in sorted(set(c.events) - set(c.heads)):
        c.problem("chain", events_path(run), f"{events_path(run)} belongs to no run in {RUNS}", run)
