"""The schema machinery every kind of curated content shares. Pure Python: no Django.

The SNARE ingredient libraries (``pool.libschema``), the UnderSpecBench task families
(``suite.schema``) and the scenario packs are YAML files that curators write by hand and that
the product loads all or nothing.  They share, from here:

* a strict YAML reader — safe types only, no tags, no anchors or aliases (the "billion laughs"
  expansion), no duplicate keys, string keys only;
* one error type, :class:`ContentError` (file, entry, field, message), and
  :class:`ContentInvalid` listing every problem of one load;
* the field/record machinery: a :class:`Record` of :class:`Field` s validates a parsed mapping,
  collecting every problem with its dotted field path, and returns the canonical form (keys in
  schema order, optional values equal to their default dropped), so load → export is byte-stable;
* the path checks (relative, normalised, inside their root, symlink targets that stay inside) and
  the small value checks (slug, id, regex, mode, one line, author, ISO date, URL).

Each kind of content keeps its own schema and cross-field rules in its own module.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

import yaml

SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KEY_RE = re.compile(r"^[a-z0-9]+([-_][a-z0-9]+)*$")
MODE_RE = re.compile(r"^0?[0-7]{3}$")

MAX_FILE_BYTES = 1024 * 1024
# Deeper YAML than any content needs; Python's own recursion limit would end the loader (and the
# validators walking what it returned) with a RecursionError instead of a message.
MAX_YAML_DEPTH = 64
MAX_CONTENT = 256 * 1024
MAX_PROSE = 16 * 1024
MAX_LIST = 2000


# -- errors -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContentError:
    """One problem: where (file, entry, dotted field path) and what."""

    file: str
    entry: str
    field: str
    message: str

    #: How the entry is named in messages ("entry", "family", "scenario").
    noun: ClassVar[str] = "entry"

    def __str__(self) -> str:
        where = self.file
        if self.entry:
            where += f": {self.noun} {self.entry!r}"
        if self.field:
            where += f", field {self.field!r}"
        # A file name is the author's to choose: an escape sequence in one must not reach a terminal.
        return printable(f"{where}: {self.message}")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline (a build's stderr)


def printable(text: str) -> str:
    """``text`` with control characters but tab and newline (an escape sequence: ``\\x1b[2J``) shown escaped."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class ContentInvalid(Exception):  # noqa: N818 - reads as "the content is invalid"
    """Every problem of one load; nothing was loaded."""

    #: What was being loaded, for the message ("the libraries", "the task families" …).
    what: ClassVar[str] = "the content"
    shown: ClassVar[int] = 50

    def __init__(self, errors: Sequence[ContentError]) -> None:
        self.errors = list(errors)
        shown = "\n".join(f"  - {e}" for e in errors[: self.shown])
        more = f"\n  … and {len(errors) - self.shown} more" if len(errors) > self.shown else ""
        super().__init__(f"{len(errors)} problem(s) in {self.what}; nothing was loaded:\n{shown}{more}")


# -- strict YAML --------------------------------------------------------------------------------


def _yaml_error(problem: str, mark: Any) -> yaml.MarkedYAMLError:
    return yaml.MarkedYAMLError(problem=problem, problem_mark=mark)


class StrictLoader(yaml.SafeLoader):
    """SafeLoader without aliases, anchors, tags, duplicate keys or non-string keys."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event: Any = self.peek_event()
        if self.depth >= MAX_YAML_DEPTH:
            raise _yaml_error(f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark)
        # Aliases are how "billion laughs" bombs expand; anchors without aliases are useless here.
        if isinstance(event, yaml.AliasEvent):
            raise _yaml_error("aliases (*name) are not allowed", event.start_mark)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise _yaml_error(f"anchors (&{anchor}) are not allowed", event.start_mark)
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!":
            raise _yaml_error(f"YAML tags ({tag}) are not allowed; write plain values", event.start_mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise _yaml_error(f"mapping keys must be strings, got {key!r}", key_node.start_mark)
            if key in seen:
                raise _yaml_error(f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: loader.construct_mapping(node, deep=True),  # type: ignore[arg-type]
)


def load_strict(text: str) -> Any:
    """Parse one YAML document strictly; raises ``yaml.YAMLError`` with a line and column."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - strict subclass of SafeLoader


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A one-line description of a YAML error with its line and column."""
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return f"invalid YAML{where}: {problem}"


def read_bytes(
    path: Path, display: str, error: type[ContentError] = ContentError, files: str = "content files"
) -> tuple[bytes | None, list[ContentError]]:
    """A content file's bytes, or why it cannot be one: a symlink (never followed), not a regular
    file (a directory, a FIFO — opened without blocking, so a FIFO cannot hang the load), or over
    ``MAX_FILE_BYTES`` (judged on the open file, and never more than that read)."""

    def refused(message: str) -> tuple[None, list[ContentError]]:
        return None, [error(display, "", "", message)]

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if os.path.islink(path):
            return refused(f"is a symlink; {files} must be regular files")
        return refused(f"cannot be read: {exc.strerror}")
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else None
        return refused(f"is {kind or 'not a regular file'}; {files} must be regular files")
    with os.fdopen(fd, "rb") as fh:
        if info.st_size > MAX_FILE_BYTES:
            return refused(f"file is {info.st_size:,} bytes; the limit is {MAX_FILE_BYTES:,} (1 MiB)")
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # grew after the check
        return refused(f"file is over {MAX_FILE_BYTES:,} bytes (1 MiB)")
    return data, []


def read_text(
    path: Path, display: str, error: type[ContentError] = ContentError, files: str = "content files"
) -> tuple[str | None, list[ContentError]]:
    """A content file's text, or the reason it cannot be one (see :func:`read_bytes`; not UTF-8)."""
    data, problems = read_bytes(path, display, error, files)
    if data is None:
        return None, problems
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        return None, [error(display, "", "", f"is not UTF-8 text: {exc}")]


# -- paths --------------------------------------------------------------------------------------


def check_rel_path(rel: str, *, allow_glob: bool = False) -> str | None:
    """Return an error message, or None when ``rel`` is a clean relative path."""
    if not rel:
        return "path is empty"
    if "\x00" in rel or "\\" in rel:
        return "path contains a NUL byte or a backslash"
    if rel.startswith("/"):
        return f"path {rel!r} is absolute; paths are relative to their root"
    parts = rel.split("/")
    if ".." in parts:
        return f"path {rel!r} contains '..'; it must stay inside its root"
    if any(p in ("", ".") for p in parts):
        return f"path {rel!r} is not normalised (empty or '.' segment)"
    if not allow_glob and any(c in rel for c in "*?["):
        return f"path {rel!r} contains glob characters"
    if len(rel) > 400:
        return "path is longer than 400 characters"
    return None


def check_rooted_path(path: str, roots: tuple[str, ...], *, allow_glob: bool = False) -> str | None:
    """``root/rel`` with ``root`` one of ``roots`` and ``rel`` a clean relative path."""
    root, _, rel = path.partition("/")
    if root not in roots:
        return f"path {path!r} must start with one of {', '.join(r + '/' for r in roots)}"
    return check_rel_path(rel, allow_glob=allow_glob)


def check_symlink_target(link: str, target: str, roots: tuple[str, ...] = ()) -> str | None:
    """A symlink's target must be relative and resolve inside the link's root."""
    if target.startswith("/"):
        return f"symlink target {target!r} is absolute; it would point outside the sandbox root"
    _root, _, rel = link.partition("/") if link.split("/")[0] in roots else ("", "", link)
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    if resolved == ".." or resolved.startswith("../") or resolved.startswith("/"):
        return f"symlink target {target!r} escapes its root"
    return None


def check_no_symlink_prefix(path: str, symlinks: set[str]) -> str | None:
    parts = PurePosixPath(path).parts
    for i in range(1, len(parts)):
        prefix = "/".join(parts[:i])
        if prefix in symlinks:
            return f"path {path!r} goes through the symlink {prefix!r}"
    return None


# -- value checks -------------------------------------------------------------------------------

Check = Callable[[Any], "str | None"]


def slug(v: str) -> str | None:
    return None if SLUG_RE.match(v) else f"{v!r} is not a slug ([a-z0-9] words joined by '-')"


def key(v: str) -> str | None:
    return None if KEY_RE.match(v) else f"{v!r} is not an id ([a-z0-9] words joined by '-' or '_')"


def regex(v: str) -> str | None:
    try:
        re.compile(v)
    except re.error as exc:
        return f"invalid regular expression: {exc}"
    return None


def mode(v: str) -> str | None:
    return None if MODE_RE.match(v) else f"mode {v!r} must be octal like '0644' (quoted)"


def one_line(v: str) -> str | None:
    return "must be a single line" if "\n" in v.strip() else None


def author(v: str) -> str | None:
    return None if re.match(r"^[^<>\n]+ <[^<>\s]+@[^<>\s]+>$", v) else "author must read 'Name <email>'"


def iso_date(v: str) -> str | None:
    ok = re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}([+-]\d{2}:\d{2}|Z)$", v)
    return None if ok else "date must be ISO 8601 with a time zone, e.g. '2026-02-20T10:00:00+00:00' (quoted)"


def url(v: str) -> str | None:
    return None if re.match(r"^https?://\S+$", v) else "must be an http(s) URL"


def rel_path(v: str) -> str | None:
    return check_rel_path(v)


# -- fields and records -------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # str | text | content | bool | list | strmap | record | opmap
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] | None = None
    check: Check | None = None
    item: Field | Record | None = None
    limit: int = MAX_PROSE


@dataclass(frozen=True)
class Record:
    fields: tuple[Field, ...]

    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)


class Collector:
    """Problems of one entry, each with its dotted field path."""

    error: type[ContentError] = ContentError

    def __init__(self, file: str, entry: str) -> None:
        self.file = file
        self.entry = entry
        self.errors: list[ContentError] = []

    def add(self, where: str, message: str) -> None:
        self.errors.append(self.error(self.file, self.entry, where, message))


def type_name(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
    }.get(type(value), type(value).__name__)


def validate(value: Any, spec: Field | Record, where: str, out: Collector) -> Any:
    """``value`` checked against ``spec``: its canonical form, or None (and problems in ``out``)."""
    if isinstance(spec, Record):
        return validate_record(value, spec, where, out)
    expected = spec.type
    if expected in ("str", "text", "content"):
        if not isinstance(value, str):
            hint = ""
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                hint = " (quote it, e.g. '0644' or '1.4.2')"
            elif value.__class__.__name__ in ("datetime", "date"):
                hint = " (quote dates)"
            out.add(where, f"expected a string, got {type_name(value)}{hint}")
            return None
        if len(value) > spec.limit:
            out.add(where, f"is {len(value):,} characters long; the limit is {spec.limit:,}")
            return None
        if spec.choices is not None and value not in spec.choices:
            out.add(where, f"{value!r} is not one of: {', '.join(c for c in spec.choices if c) or '(empty)'}")
            return None
        if spec.check is not None:
            problem = spec.check(value)
            if problem:
                out.add(where, problem)
                return None
        return value
    if expected == "bool":
        if not isinstance(value, bool):
            out.add(where, f"expected true or false, got {type_name(value)}")
            return None
        return value
    if expected == "list":
        if not isinstance(value, list):
            out.add(where, f"expected a list, got {type_name(value)}")
            return None
        if len(value) > MAX_LIST:
            out.add(where, f"has {len(value)} items; the limit is {MAX_LIST}")
            return None
        assert spec.item is not None
        return [validate(item, spec.item, f"{where}[{i}]", out) for i, item in enumerate(value)]
    if expected == "strmap":
        if not isinstance(value, dict):
            out.add(where, f"expected a mapping of strings, got {type_name(value)}")
            return None
        result = {}
        for k, v in value.items():
            if not isinstance(v, str):
                out.add(f"{where}.{k}", f"expected a string, got {type_name(v)}")
            elif len(v) > spec.limit:
                out.add(f"{where}.{k}", f"is {len(v):,} characters long; the limit is {spec.limit:,}")
            else:
                result[k] = v
        return dict(sorted(result.items()))
    if expected == "opmap":
        if not isinstance(value, dict):
            out.add(where, f"expected a mapping of operations, got {type_name(value)}")
            return None
        assert spec.item is not None
        return {k: validate(v, spec.item, f"{where}.{k}", out) for k, v in sorted(value.items())}
    if expected == "record":
        assert isinstance(spec.item, Record)
        return validate_record(value, spec.item, where, out)
    raise AssertionError(f"unknown field type {expected}")


def validate_record(value: Any, spec: Record, where: str, out: Collector) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        out.add(where, f"expected a mapping with keys {', '.join(spec.names())}, got {type_name(value)}")
        return None
    prefix = f"{where}." if where else ""
    for k in value:
        if k not in spec.names():
            out.add(f"{prefix}{k}", f"unknown key; allowed keys: {', '.join(spec.names())}")
    result: dict[str, Any] = {}
    for f in spec.fields:
        if f.name not in value:
            if f.required:
                out.add(f"{prefix}{f.name}", "is required but missing")
            continue
        checked = validate(value[f.name], f.item if f.type == "record" and f.item else f, f"{prefix}{f.name}", out)
        # Canonical form drops optional values equal to their default, so an exported file
        # carries exactly what a reviewer needs to read.
        if checked is not None and not (not f.required and checked == f.default):
            result[f.name] = checked
    return result


def field_problems(record: Record, name: str, value: Any) -> list[str]:
    """Validate one top-level field on its own (an admin form's ``clean``): "field: message" lines."""
    spec = record.field(name)
    out = Collector("", "")
    validate(value, spec.item if spec.type == "record" and spec.item else spec, name, out)
    return [f"{e.field}: {e.message}" for e in out.errors]
