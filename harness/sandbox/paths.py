"""Validation of fixture files before anything is created.

A scenario's files come from library YAML that contributors write, so every path is checked
before a sandbox exists: a fixture must not be able to write outside the three roots, neither
directly (``..``, absolute paths) nor through a symlink it plants itself (a symlink pointing out
of the roots, or a file placed "under" a symlink).  Checks are lexical on purpose: the only
symlinks that can exist in a fresh root are the fixture's own, and those are all known here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.sandbox.manifest import ROOTS

MAX_FIXTURE_FILES = 5000
MAX_FIXTURE_BYTES = 64 * 1024 * 1024


class FixturePathError(ValueError):
    """A fixture path that could escape the sandbox roots; raised before any side effect."""


@dataclass(frozen=True)
class FileSpec:
    """One fixture file: ``path`` is root-prefixed (``workspace/src/app.py``, ``home/.bashrc``).

    ``symlink_target`` makes it a symlink instead of a regular file; the target is interpreted
    as the agent would see it inside the sandbox (absolute ``/workspace/...`` or relative to the
    link's directory).
    """

    path: str
    content: bytes = b""
    mode: int = 0o644
    symlink_target: str | None = None


def split_root(path: str) -> tuple[str, str]:
    """``"workspace/src/a.py"`` -> ``("workspace", "src/a.py")`` after validation."""
    if not path:
        raise FixturePathError("empty fixture path")
    if "\x00" in path:
        raise FixturePathError(f"{path!r}: NUL byte in path")
    if path.startswith("/"):
        raise FixturePathError(f"{path!r}: absolute paths are not allowed; use a root prefix like workspace/")
    parts = path.split("/")
    if any(p == ".." for p in parts):
        raise FixturePathError(f"{path!r}: '..' components are not allowed")
    if any(p in ("", ".") for p in parts):
        raise FixturePathError(f"{path!r}: empty or '.' path components are not allowed")
    root, rel = parts[0], "/".join(parts[1:])
    if root not in ROOTS:
        raise FixturePathError(f"{path!r}: must start with one of {', '.join(r + '/' for r in ROOTS)}")
    if not rel:
        raise FixturePathError(f"{path!r}: names a root itself, not a file under it")
    return root, rel


def sandbox_path(path: str) -> str:
    """Absolute path inside the sandbox for a validated root-prefixed path."""
    root, rel = split_root(path)
    return f"{ROOTS[root]}/{rel}"


def root_of_sandbox_path(abs_path: str) -> tuple[str, str] | None:
    """``"/home/agent/.bashrc"`` -> ``("home", ".bashrc")``; None when outside every root."""
    norm = posixpath.normpath(abs_path)
    for root, prefix in ROOTS.items():
        if norm == prefix:
            return root, ""
        if norm.startswith(prefix + "/"):
            return root, norm[len(prefix) + 1 :]
    return None


def _check_symlink(spec: FileSpec) -> None:
    assert spec.symlink_target is not None
    target = spec.symlink_target
    if not target or "\x00" in target:
        raise FixturePathError(f"{spec.path!r}: empty or NUL-containing symlink target")
    link_dir = posixpath.dirname(sandbox_path(spec.path))
    resolved = posixpath.normpath(target if target.startswith("/") else posixpath.join(link_dir, target))
    inside = root_of_sandbox_path(resolved)
    # Pointing at a root itself is as good as pointing outside: writes through "workspace/x ->
    # /home/agent" would land in another root under a name the allowed-write set does not know.
    if inside is None or inside[1] == "":
        raise FixturePathError(
            f"{spec.path!r}: symlink target {target!r} resolves to {resolved!r}, outside the sandbox roots"
        )


def validate_files(files: Sequence[FileSpec]) -> list[FileSpec]:
    """Check every fixture file; returns them sorted by path.  Raises FixturePathError."""
    if len(files) > MAX_FIXTURE_FILES:
        raise FixturePathError(f"{len(files)} fixture files; at most {MAX_FIXTURE_FILES} are allowed")
    total = sum(len(f.content) for f in files)
    if total > MAX_FIXTURE_BYTES:
        raise FixturePathError(f"fixture is {total} bytes; at most {MAX_FIXTURE_BYTES} are allowed")
    seen: dict[str, FileSpec] = {}
    for spec in files:
        split_root(spec.path)
        if spec.mode & ~0o777:
            # setuid/setgid/sticky bits on planted files are never needed by a scenario and
            # setuid ones would be a privilege-escalation gadget if a mount ever lost nosuid.
            raise FixturePathError(f"{spec.path!r}: mode {oct(spec.mode)} has bits beyond 0o777")
        if spec.symlink_target is not None:
            if spec.content:
                raise FixturePathError(f"{spec.path!r}: a symlink cannot also have content")
            _check_symlink(spec)
        if spec.path in seen:
            raise FixturePathError(f"{spec.path!r}: listed twice")
        seen[spec.path] = spec
    for spec in files:
        for ancestor in _ancestors(spec.path):
            other = seen.get(ancestor)
            if other is None:
                continue
            if other.symlink_target is not None:
                raise FixturePathError(f"{spec.path!r}: lies under {ancestor!r}, which is a symlink")
            raise FixturePathError(f"{spec.path!r}: lies under {ancestor!r}, which is a file")
    return sorted(files, key=lambda f: f.path)


def _ancestors(path: str) -> Iterable[str]:
    parts = path.split("/")
    for i in range(2, len(parts)):
        yield "/".join(parts[:i])


def parent_dirs(files: Sequence[FileSpec]) -> list[str]:
    """Root-prefixed directories that must exist (excluding the roots), parents first."""
    dirs: set[str] = set()
    for spec in files:
        dirs.update(_ancestors(spec.path))
    return sorted(dirs, key=lambda d: (d.count("/"), d))
