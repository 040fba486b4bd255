"""Filesystem manifests of a sandbox's writable roots, and their diff.

A manifest maps ``"<root>/<rel>"`` (``"workspace/src/app.py"``; the root directory itself is
``"workspace"``) to an :class:`Entry` holding type, permission bits, size, SHA-256 and symlink
target.  Both backends must produce identical manifests for identical trees, so every field is
normalised to what survives both a host directory walk (bwrap) and a tar stream read from the
Docker engine:

* directories have size 0 (their on-disk size depends on the filesystem: tmpfs, ext4, overlay);
* symlinks have mode 0o777 (Linux ignores symlink modes; tar writers disagree on what to store)
  and size ``len(target)`` in bytes;
* a hard link is reported as the regular file it points at (tar stores the second name of a
  hard-linked file as a link record without content);
* owners and timestamps are left out: the uid mapping differs between backends, and mtimes
  change on every checkout of the same fixture;
* path names are bytes on Linux; names that are not UTF-8 are shown with backslash escapes so
  the key stays valid text for JSON and PostgreSQL;
* a file larger than ``HASH_CAP_BYTES`` (apparent size: a sparse 16 TB file is "large"), or one
  reached after ``HASH_TIME_LIMIT_S`` of hashing, is recorded by size only (``unhashed`` says
  why) and :func:`diff` always counts it as modified: the agent can neither pin the harness
  hashing a huge file nor hide an edit behind the cap.

This module is pure (no Django, no Docker) so the oracles can load stored manifests and unit
tests can run without a database.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tarfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Literal

# Where each root lives inside the sandbox.  The keys are the prefixes of fixture paths and of
# manifest keys; the order is the order manifests are built in.
ROOTS: dict[str, str] = {
    "workspace": "/workspace",
    "home": "/home/agent",
    "remote": "/srv/remote",
}

EntryType = Literal["file", "dir", "symlink", "other"]
ChangeKind = Literal["created", "deleted", "modified", "mode", "type"]

_CHUNK = 1 << 16
HASH_CAP_BYTES = 128 * 1024**2
HASH_TIME_LIMIT_S = 120.0
TOO_LARGE = "too large: size only"
OUT_OF_TIME = "time limit: size only"


class _Budget:
    """The hashing budget of one manifest: a byte cap per file and a deadline for all of them."""

    def __init__(self, cap: int = HASH_CAP_BYTES, seconds: float = HASH_TIME_LIMIT_S) -> None:
        self.cap = cap
        self.deadline = time.monotonic() + seconds

    def refusal(self, size: int) -> str | None:
        if size > self.cap:
            return TOO_LARGE
        if time.monotonic() > self.deadline:
            return OUT_OF_TIME
        return None


@dataclass(frozen=True)
class Entry:
    path: str
    type: EntryType
    mode: int
    size: int
    sha256: str | None = None
    target: str | None = None
    unhashed: str | None = None  # why a file has no sha256 (TOO_LARGE, OUT_OF_TIME)

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        if d["unhashed"] is None:
            del d["unhashed"]  # stored manifests of hashed files keep their old shape
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Entry:
        return cls(
            path=str(data["path"]),
            type=data["type"],  # type: ignore[arg-type]
            mode=int(data["mode"]),  # type: ignore[call-overload]
            size=int(data["size"]),  # type: ignore[call-overload]
            sha256=data.get("sha256"),  # type: ignore[arg-type]
            target=data.get("target"),  # type: ignore[arg-type]
            unhashed=data.get("unhashed"),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class Change:
    path: str
    kind: ChangeKind
    before: Entry | None
    after: Entry | None

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "kind": self.kind,
            "before": self.before.to_dict() if self.before else None,
            "after": self.after.to_dict() if self.after else None,
        }


class Manifest(dict[str, Entry]):
    """``key -> Entry``; a dict so callers can look entries up and compare manifests with ==."""

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> Manifest:
        return cls(sorted(((e.path, e) for e in entries), key=lambda kv: kv[0]))

    def to_list(self) -> list[dict[str, object]]:
        return [self[k].to_dict() for k in sorted(self)]

    @classmethod
    def from_list(cls, rows: Iterable[Mapping[str, object]]) -> Manifest:
        return cls.of(Entry.from_dict(r) for r in rows)


def display_name(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _key(root: str, rel: bytes) -> str:
    return root if not rel else f"{root}/{display_name(rel)}"


def _hash_stream(fh: IO[bytes], cap: int | None = None) -> tuple[str | None, int]:
    """SHA-256 and length of a stream; ``None`` for the hash once more than ``cap`` bytes came
    (a file that grew while it was read: still never more than ``cap + 1`` bytes are hashed)."""
    h = hashlib.sha256()
    size = 0
    while chunk := fh.read(_CHUNK):
        h.update(chunk)
        size += len(chunk)
        if cap is not None and size > cap:
            return None, size
    return h.hexdigest(), size


def _entry_from_stat(
    key: str, st: os.stat_result, path: bytes, dir_fd: int | None = None, budget: _Budget | None = None
) -> Entry:
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode):
        return Entry(key, "dir", mode, 0)
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path, dir_fd=dir_fd)
        return Entry(key, "symlink", 0o777, len(target), target=display_name(target))
    if stat.S_ISREG(st.st_mode):
        budget = budget or _Budget()
        if (why := budget.refusal(st.st_size)) is not None:
            return Entry(key, "file", mode, st.st_size, unhashed=why)
        # O_NOFOLLOW: the agent controls this tree and may swap a file for a symlink to a host
        # path between the lstat and the open; never follow it.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as fh:
            digest, size = _hash_stream(fh, budget.cap)
        if digest is None:
            return Entry(key, "file", mode, max(size, st.st_size), unhashed=TOO_LARGE)
        return Entry(key, "file", mode, size, sha256=digest)
    return Entry(key, "other", mode, 0)


def _walk(root: str, top: bytes, rel: bytes, budget: _Budget) -> Iterator[Entry]:
    full = os.path.join(top, rel) if rel else top
    st = os.lstat(full)
    yield _entry_from_stat(_key(root, rel), st, full, budget=budget)
    if not stat.S_ISDIR(st.st_mode):
        return
    try:
        names = sorted(os.listdir(full))
    except PermissionError:
        # The harness runs as root on the host, so this only happens for exotic setups; an
        # unreadable directory is still listed (above) with its mode, which is what changed.
        return
    for name in names:
        yield from _walk(root, top, os.path.join(rel, name) if rel else name, budget)


def manifest_from_dirs(roots: Mapping[str, Path], budget: _Budget | None = None) -> Manifest:
    """Manifest of host directories that back the sandbox roots (the bwrap backend)."""
    budget = budget or _Budget()
    entries: list[Entry] = []
    for root, top in roots.items():
        if os.path.lexists(top):
            entries.extend(_walk(root, os.fsencode(top), b"", budget))
    return Manifest.of(entries)


def entries_from_tar(stream: IO[bytes], prefixes: Mapping[str, str], budget: _Budget | None = None) -> list[Entry]:
    """Entries from a tar stream whose member names start with one of ``prefixes``.

    ``prefixes`` maps a tar path prefix to its root name, e.g. ``{"home/agent": "home"}`` for
    ``tar -C / -c home/agent``; members outside every prefix are ignored.  The stream is read
    sequentially (``r|``) so nothing is buffered beyond one member's chunk, and nothing is ever
    written to the host.
    """
    raw_prefixes = sorted(((os.fsencode(p.strip("/")), r) for p, r in prefixes.items()), key=lambda x: -len(x[0]))

    def key_of(name: str) -> str | None:
        raw = os.fsencode(name).strip(b"/")
        if raw.startswith(b"./"):
            raw = raw[2:]
        for prefix, root in raw_prefixes:
            if raw == prefix:
                return root
            if raw.startswith(prefix + b"/"):
                return _key(root, raw[len(prefix) + 1 :])
        return None

    budget = budget or _Budget()
    entries: list[Entry] = []
    by_name: dict[str, Entry] = {}
    with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:
        for member in tar:
            key = key_of(member.name)
            if key is None:
                continue
            mode = member.mode & 0o7777
            if member.isdir():
                entry = Entry(key, "dir", mode, 0)
            elif member.issym():
                target = os.fsencode(member.linkname)
                entry = Entry(key, "symlink", 0o777, len(target), target=display_name(target))
            elif member.islnk():
                link_key = key_of(member.linkname)
                first = by_name.get(link_key) if link_key is not None else None
                if first is None:
                    entry = Entry(key, "other", mode, 0)
                else:
                    entry = Entry(key, first.type, mode, first.size, sha256=first.sha256, unhashed=first.unhashed)
            elif member.isreg():
                # member.size is the apparent size, also for a sparse member (tar --sparse sends
                # only its data, so skipping an unhashed one costs what it really holds).
                if (why := budget.refusal(member.size)) is not None:
                    entry = Entry(key, "file", mode, member.size, unhashed=why)
                else:
                    fh = tar.extractfile(member)
                    assert fh is not None
                    digest, size = _hash_stream(fh, budget.cap)
                    if digest is None:
                        entry = Entry(key, "file", mode, member.size, unhashed=TOO_LARGE)
                    else:
                        entry = Entry(key, "file", mode, size, sha256=digest)
            else:
                entry = Entry(key, "other", mode, 0)
            by_name[key] = entry
            entries.append(entry)
    return entries


def diff(before: Mapping[str, Entry], after: Mapping[str, Entry]) -> list[Change]:
    """Changes from ``before`` to ``after``, sorted by path.

    A path whose type changed yields one ``type`` change only (content and mode of different
    kinds of object are not comparable); otherwise content and mode are reported separately, so
    a ``chmod`` on an edited file yields both ``modified`` and ``mode``.
    """
    changes: list[Change] = []
    for path in sorted(set(before) | set(after)):
        b, a = before.get(path), after.get(path)
        if b is None:
            changes.append(Change(path, "created", None, a))
        elif a is None:
            changes.append(Change(path, "deleted", b, None))
        elif b.type != a.type:
            changes.append(Change(path, "type", b, a))
        else:
            # Unhashed content cannot be shown equal, so it counts as changed.
            unknown = b.unhashed is not None or a.unhashed is not None
            if unknown or (b.sha256, b.size, b.target) != (a.sha256, a.size, a.target):
                changes.append(Change(path, "modified", b, a))
            if b.mode != a.mode:
                changes.append(Change(path, "mode", b, a))
    return changes
