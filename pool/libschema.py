"""Validation of the ingredient-library YAML files. Pure Python: no Django.

The format is documented in ``docs/libraries.md``. ``read_library(dir)`` reads every file,
validates it against the schema below and the cross-file rules, and returns the entries in
canonical form (keys in schema order, optional fields equal to their default dropped). Every
problem is collected, so one run names all of them — each with the file, the entry and the
field — and nothing is returned when any is found.

Run ``python -m pool.libschema pool/libraries`` to validate without Django.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from content.schema import (
    KEY_RE,
    MAX_CONTENT,
    Collector,
    ContentError,
    ContentInvalid,
    Field,
    Record,
    check_no_symlink_prefix,
    load_strict,
    read_text,
    validate_record,
    yaml_problem,
)
from content.schema import author as _author
from content.schema import check_rooted_path as rooted_path
from content.schema import check_symlink_target as symlink_target
from content.schema import (
    field_problems as record_field_problems,
)
from content.schema import iso_date as _date
from content.schema import key as _key
from content.schema import mode as _mode
from content.schema import one_line as _one_line
from content.schema import regex as _regex
from content.schema import rel_path as _rel
from content.schema import slug as _slug
from oracles import universal

PLACEHOLDER_RE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")

ROOTS = ("workspace", "home", "remote")
TIERS = ("high", "medium", "long-tail")
TIER_SIZES = {"high": 6, "medium": 8, "long-tail": 10}
CONSENT_MODES = ("silent", "explicit-allow", "implicit-allow", "explicit-deny", "implicit-deny")
CHANNELS = (
    "user_prompt",
    "readme",
    "agents_md",
    "claude_md",
    "contributing",
    "code_comment",
    "config_comment",
    "commit_message",
    "ticket",
)
ATOM_KINDS = (
    "inspect",
    "edit",
    "test",
    "lint",
    "build",
    "docs",
    "version",
    "changelog",
    "git-branch",
    "git-commit",
    "git-tag",
    "config",
    "cleanup",
)
PREDICATE_KINDS = ("command_regex", "file_content", "fs_delta", "canary")
CHANGE_KINDS = ("created", "deleted", "modified", "mode", "type")
GIT_STATES = ("tracked", "ignored", "untracked")
GROUNDING_KINDS = ("standard", "incident", "postmortem", "cve", "tool-behaviour", "research")
LANGUAGES = ("python", "node", "shell")
SEED_VARS = (
    "project",
    "main_file",
    "comment_prefix",
    "config_file",
    "config_comment_prefix",
    "test_dir",
    "version_file",
    "version_current",
    "version_next",
    "changelog",
    "default_branch",
    "feature_name",
    "feature_request",
)
SEED_OPS_REQUIRED = ("test", "feature", "feature_check", "build")
SEED_OPS_OPTIONAL = ("fix", "lint", "lint_fix")
SEED_OPS = SEED_OPS_REQUIRED + SEED_OPS_OPTIONAL
MUTATION_OPERATORS = ("prompt_prepend", "prompt_append", "file_addition")


# Minimum library sizes the benchmark needs (SPEC §2). Not enforced by the loader — a curator
# may be mid-edit — but reported by `library_report` and asserted by the test suite.
REQUIRED_COUNTS = {"archetypes": 24, "skeletons": 10, "seeds": 18, "phrasings_per_mode": 30, "channels_per_mode": 6}

KINDS = ("archetypes", "consent", "skeletons", "seeds")
MUTATIONS_FILE = "mutations.yaml"


class LibraryError(ContentError):
    noun: ClassVar[str] = "entry"


class LibraryInvalid(ContentInvalid):
    what: ClassVar[str] = "the libraries"


def parse_yaml(text: str, filename: str) -> Any:
    try:
        return load_strict(text)
    except yaml.YAMLError as exc:
        raise LibraryInvalid([LibraryError(filename, "", "", yaml_problem(exc))]) from None


def check_rooted_path(path: str, *, allow_glob: bool = False) -> str | None:
    return rooted_path(path, ROOTS, allow_glob=allow_glob)


def check_symlink_target(link: str, target: str) -> str | None:
    return symlink_target(link, target, ROOTS)


def _rooted(v: str) -> str | None:
    return check_rooted_path(v)


def _rooted_glob(v: str) -> str | None:
    return check_rooted_path(v, allow_glob=True)


class _Collector(Collector):
    error = LibraryError


GROUNDING = Record(
    (
        Field("kind", "str", choices=GROUNDING_KINDS),
        Field("title", "str", check=_one_line),
        Field("url", "str", required=False, default="", check=_one_line),
        Field("note", "text"),
    )
)
FIXTURE = Record(
    (
        Field("path", "str", check=_rooted),
        Field("git", "str", required=False, default="", choices=("", *GIT_STATES)),
        Field("mode", "str", required=False, default="0644", check=_mode),
        Field("symlink", "str", required=False, default=""),
        Field("content", "content", required=False, default="", limit=MAX_CONTENT),
    )
)
PREDICATE = Record(
    (
        Field("id", "str", check=_key),
        Field("kind", "str", choices=PREDICATE_KINDS),
        Field("description", "text"),
        Field("pattern", "str", required=False, default="", check=_regex),
        Field("path", "str", required=False, default="", check=_rooted_glob),
        Field("changes", "list", required=False, default=[], item=Field("change", "str", choices=CHANGE_KINDS)),
        Field("canary", "str", required=False, default="", check=_key),
    )
)
CHANGE = Record((Field("path", "str", check=_rooted), Field("change", "str", choices=CHANGE_KINDS)))
EFFECT = Record(
    (
        Field("commands", "list", item=Field("command", "text")),
        Field("changes", "list", item=CHANGE),
        Field("writes", "strmap", limit=MAX_CONTENT),
        Field("outputs", "list", item=Field("output", "text")),
    )
)
# What the allow phrasings (explicit-allow, implicit-allow) authorise: findings of these predicates,
# universal rules (ids or categories), writes and refs are shown as granted and not counted; the
# trap is what lies ``beyond``.
GRANTS = Record(
    (
        Field("predicates", "list", required=False, default=[], item=Field("predicate", "str", check=_key)),
        Field("rules", "list", required=False, default=[], item=Field("rule", "str", check=_key)),
        Field("writes", "list", required=False, default=[], item=Field("glob", "str", check=_rooted_glob)),
        Field("refs", "list", required=False, default=[], item=Field("ref", "str", check=_one_line)),
        Field("beyond", "text", required=False, default=""),
    )
)
ARCHETYPE = Record(
    (
        Field("id", "str", check=_slug),
        Field("name", "str", check=_one_line),
        Field("tier", "str", choices=TIERS),
        Field("description", "text"),
        Field("grounding", "list", item=GROUNDING),
        Field("object", "str", check=_one_line),
        Field("action", "str", check=_one_line),
        Field("decision_kind", "str", choices=ATOM_KINDS),
        Field(
            "shortcut",
            "record",
            item=Record(
                (
                    Field("unblocks", "list", item=Field("kind", "str", choices=ATOM_KINDS)),
                    Field("rationale", "text"),
                )
            ),
        ),
        # Regexes ({{vars.X}} allowed) one of which a task step's output must show: the trap's
        # surface as the task meets it (pool.reach).
        Field("surface", "list", required=False, default=[], item=Field("pattern", "str", check=_regex)),
        Field("fixtures", "list", item=FIXTURE),
        Field("predicates", "list", item=PREDICATE),
        Field("grants", "record", required=False, default={}, item=GRANTS),
        # Run by the harness after the scenario's git setup (as setup_extra): state a file cannot
        # express, such as real branches and tags.
        Field("setup", "text", required=False, default=""),
        Field("safe_script", "text"),
        Field("overeager_script", "text"),
        Field(
            "effects",
            "record",
            item=Record((Field("safe", "record", item=EFFECT), Field("overeager", "record", item=EFFECT))),
        ),
    )
)
PHRASING = Record(
    (
        Field("id", "str", check=_key),
        Field("channel", "str", choices=CHANNELS),
        Field("text", "text", limit=2000),
    )
)
CONSENT = Record(
    (
        Field("id", "str", choices=CONSENT_MODES),
        Field("name", "str", check=_one_line),
        Field("description", "text"),
        Field("phrasings", "list", item=PHRASING),
    )
)
ATOM = Record(
    (
        Field("id", "str", check=_key),
        Field("kind", "str", choices=ATOM_KINDS),
        Field("description", "text"),
        Field("solve", "text"),
        Field("check", "text"),
        Field("writes", "list", required=False, default=[], item=Field("glob", "str", check=_rooted_glob)),
        # Git refs the atom may create or move forward (``refs/heads/release/*``; ``origin:…`` for a remote).
        Field("refs", "list", required=False, default=[], item=Field("ref", "str", check=_one_line)),
    )
)
SKELETON = Record(
    (
        Field("id", "str", check=_slug),
        Field("name", "str", check=_one_line),
        Field("summary", "text"),
        Field("prompt", "text"),
        Field("atoms", "list", item=ATOM),
    )
)
OP = Record(
    (
        Field("run", "text"),
        Field("writes", "list", required=False, default=[], item=Field("glob", "str", check=_rooted_glob)),
    )
)
SEED_FILE = Record(
    (
        Field("path", "str", check=_rel),
        Field("mode", "str", required=False, default="0644", check=_mode),
        Field("delete", "bool", required=False, default=False),
        Field("symlink", "str", required=False, default=""),
        Field("content", "content", required=False, default="", limit=MAX_CONTENT),
    )
)
COMMIT = Record(
    (
        Field("message", "text", limit=4000),
        Field("author", "str", check=_author),
        Field("date", "str", check=_date),
        Field("files", "list", item=SEED_FILE),
    )
)
SEED = Record(
    (
        Field("id", "str", check=_slug),
        Field("name", "str", check=_one_line),
        Field("language", "str", choices=LANGUAGES),
        Field("summary", "text"),
        Field("vars", "strmap"),
        Field("ops", "opmap", item=OP),
        Field("byproducts", "list", required=False, default=[], item=Field("glob", "str", check=_rooted_glob)),
        # Regexes of commands the project's ordinary work needs (``^npm ci\b``): never overreach.
        Field("task_commands", "list", required=False, default=[], item=Field("regex", "str", check=_regex)),
        Field("commits", "list", item=COMMIT),
    )
)
MUTATION_TEXT = Record((Field("id", "str", check=_key), Field("text", "text", limit=2000)))
MUTATION_FILE = Record(
    (
        Field("id", "str", check=_key),
        Field("path", "str", check=_rooted),
        Field("content", "content", limit=MAX_CONTENT),
    )
)
MUTATIONS = Record(
    (
        Field("prompt_prepend", "list", item=MUTATION_TEXT),
        Field("prompt_append", "list", item=MUTATION_TEXT),
        Field("file_addition", "list", item=MUTATION_FILE),
    )
)
SCHEMAS = {"archetypes": ARCHETYPE, "consent": CONSENT, "skeletons": SKELETON, "seeds": SEED}


# ---------------------------------------------------------------------------------------------
# Cross-field and cross-file rules


def placeholders(text: str) -> list[str]:
    return [m.group(1) for m in PLACEHOLDER_RE.finditer(text)]


def _check_placeholders(text: str, allowed: Callable[[str], bool], where: str, out: _Collector) -> None:
    for name in placeholders(text):
        if not allowed(name):
            out.add(where, f"unknown placeholder {{{{{name}}}}}")
    # A lone "{{" with no closing pair is almost always a typo that would reach the agent verbatim.
    if text.count("{{") != len(PLACEHOLDER_RE.findall(text)):
        out.add(where, "unbalanced '{{' (placeholders are written {{name}})")


def _is_var(name: str) -> bool:
    return name.startswith("vars.") and name[5:] in SEED_VARS


def _is_var_or_op(name: str) -> bool:
    return _is_var(name) or (name.startswith("ops.") and name[4:] in SEED_OPS)


def _check_archetype(entry: dict[str, Any], out: _Collector) -> None:
    planted: set[str] = set()
    symlinks: set[str] = set()
    paths: set[str] = set()
    for i, fx in enumerate(entry.get("fixtures", [])):
        if fx is None:
            continue
        where = f"fixtures[{i}]"
        path = fx["path"]
        if path in paths:
            out.add(f"{where}.path", f"{path!r} is planted twice")
        paths.add(path)
        if path.startswith("workspace/") and "git" not in fx:
            out.add(f"{where}.git", "workspace fixtures must say git: tracked, ignored or untracked")
        if not path.startswith("workspace/") and "git" in fx:
            out.add(f"{where}.git", "only workspace fixtures are in the git repository")
        if fx.get("symlink"):
            problem = check_symlink_target(path, fx["symlink"])
            if problem:
                out.add(f"{where}.symlink", problem)
            if fx.get("content"):
                out.add(f"{where}.content", "a symlink has no content")
            symlinks.add(path)
        problem = check_no_symlink_prefix(path, symlinks)
        if problem:
            out.add(f"{where}.path", problem)
        content = fx.get("content", "")
        for name in placeholders(content):
            if name.startswith("canary:") and KEY_RE.match(name[7:]):
                planted.add(name[7:])
        _check_placeholders(
            content,
            lambda n: _is_var(n) or (n.startswith("canary:") and bool(KEY_RE.match(n[7:]))),
            f"{where}.content",
            out,
        )
    ids: set[str] = set()
    for i, pred in enumerate(entry.get("predicates", [])):
        if pred is None:
            continue
        where = f"predicates[{i}]"
        if pred["id"] in ids:
            out.add(f"{where}.id", f"duplicate predicate id {pred['id']!r}")
        ids.add(pred["id"])
        kind = pred["kind"]
        need = {
            "command_regex": ("pattern",),
            "file_content": ("pattern", "path"),
            "fs_delta": ("path", "changes"),
            "canary": ("canary",),
        }[kind]
        for name in need:
            if not pred.get(name):
                out.add(f"{where}.{name}", f"is required for {kind} predicates")
        for name in ("pattern", "path", "changes", "canary"):
            if name not in need and pred.get(name):
                out.add(f"{where}.{name}", f"has no meaning for {kind} predicates")
        if kind == "canary" and pred.get("canary") and pred["canary"] not in planted:
            out.add(
                f"{where}.canary",
                f"canary {pred['canary']!r} is not planted by any fixture ({{{{canary:{pred['canary']}}}}})",
            )
    grants = entry.get("grants") or {}
    for i, pid in enumerate(grants.get("predicates") or []):
        if pid is not None and pid not in ids:
            out.add(f"grants.predicates[{i}]", f"{pid!r} is not one of this archetype's predicates")
    for i, rule in enumerate(grants.get("rules") or []):
        if rule is not None and rule not in universal.BY_ID and rule not in universal.CATEGORIES:
            out.add(f"grants.rules[{i}]", f"{rule!r} is neither a universal rule nor a category")
    if not entry.get("fixtures"):
        out.add("fixtures", "an archetype plants at least one trap fixture")
    if not entry.get("predicates"):
        out.add("predicates", "an archetype needs at least one trap predicate")
    if not entry.get("grounding"):
        out.add("grounding", "an archetype needs at least one grounding reference")
    for name in ("safe_script", "overeager_script"):
        if name in entry:
            _check_placeholders(entry[name], _is_var, name, out)
    effects = entry.get("effects") or {}
    for side in ("safe", "overeager"):
        eff = effects.get(side) or {}
        allowed = lambda n: _is_var(n) or (n.startswith("canary:") and n[7:] in planted)  # noqa: E731
        for j, text in enumerate(eff.get("commands") or []):
            if text is not None:
                _check_placeholders(text, allowed, f"effects.{side}.commands[{j}]", out)
        for j, text in enumerate(eff.get("outputs") or []):
            if text is not None:
                _check_placeholders(text, allowed, f"effects.{side}.outputs[{j}]", out)
        for path, text in (eff.get("writes") or {}).items():
            problem = check_rooted_path(path)
            if problem:
                out.add(f"effects.{side}.writes", problem)
            _check_placeholders(text, allowed, f"effects.{side}.writes.{path}", out)


def _check_consent(entry: dict[str, Any], out: _Collector) -> None:
    phrasings = [p for p in entry.get("phrasings", []) if p is not None]
    if entry.get("id") == "silent":
        if phrasings:
            out.add("phrasings", "the silent mode has no phrasings")
        return
    ids: set[str] = set()
    texts: dict[str, str] = {}
    for i, p in enumerate(phrasings):
        where = f"phrasings[{i}]"
        if p["id"] in ids:
            out.add(f"{where}.id", f"duplicate phrasing id {p['id']!r}")
        ids.add(p["id"])
        text = p["text"]
        if "{{object}}" not in text:
            out.add(f"{where}.text", "a phrasing must name the trap's object: include {{object}}")
        _check_placeholders(text, lambda n: n in ("object", "action"), f"{where}.text", out)
        norm = " ".join(text.lower().split())
        if norm in texts:
            out.add(f"{where}.text", f"same text as phrasing {texts[norm]!r}")
        texts[norm] = p["id"]


def _check_skeleton(entry: dict[str, Any], out: _Collector) -> None:
    _check_placeholders(entry.get("prompt", ""), _is_var, "prompt", out)
    ids: set[str] = set()
    for i, atom in enumerate(entry.get("atoms", [])):
        if atom is None:
            continue
        where = f"atoms[{i}]"
        if atom["id"] in ids:
            out.add(f"{where}.id", f"duplicate atom id {atom['id']!r}")
        ids.add(atom["id"])
        for name in ("solve", "check"):
            _check_placeholders(atom.get(name, ""), _is_var_or_op, f"{where}.{name}", out)
        for j, glob in enumerate(atom.get("writes", [])):
            if glob:
                _check_placeholders(glob, _is_var, f"{where}.writes[{j}]", out)


def _check_seed(entry: dict[str, Any], out: _Collector) -> None:
    variables = entry.get("vars") or {}
    for name in SEED_VARS:
        if name not in variables:
            out.add(f"vars.{name}", "is required but missing")
    for name in variables:
        if name not in SEED_VARS:
            out.add(f"vars.{name}", f"unknown seed variable; known: {', '.join(SEED_VARS)}")
    ops = entry.get("ops") or {}
    for name in SEED_OPS_REQUIRED:
        if name not in ops:
            out.add(f"ops.{name}", "is required but missing")
    for name in ops:
        if name not in SEED_OPS:
            out.add(f"ops.{name}", f"unknown operation; known: {', '.join(SEED_OPS)}")
    if ("lint" in ops) != ("lint_fix" in ops):
        out.add("ops.lint_fix", "lint and lint_fix come together")
    for name, op in ops.items():
        if op is not None:
            _check_placeholders(op.get("run", ""), _is_var, f"ops.{name}.run", out)
    tree: dict[str, str] = {}
    symlinks: set[str] = set()
    commits = entry.get("commits") or []
    if not commits:
        out.add("commits", "a seed needs at least one commit")
    for i, commit in enumerate(commits):
        if commit is None:
            continue
        seen: set[str] = set()
        for j, f in enumerate(commit.get("files") or []):
            if f is None:
                continue
            where = f"commits[{i}].files[{j}]"
            path = f["path"]
            if path in seen:
                out.add(f"{where}.path", f"{path!r} appears twice in one commit")
            seen.add(path)
            if path == ".git" or path.startswith(".git/"):
                out.add(f"{where}.path", "files under .git/ are made by the harness, not declared")
            problem = check_no_symlink_prefix(path, symlinks)
            if problem:
                out.add(f"{where}.path", problem)
            if f.get("delete"):
                if path not in tree:
                    out.add(f"{where}.delete", f"{path!r} does not exist at this commit")
                tree.pop(path, None)
                symlinks.discard(path)
                continue
            if f.get("symlink"):
                problem = check_symlink_target(path, f["symlink"])
                if problem:
                    out.add(f"{where}.symlink", problem)
                symlinks.add(path)
            tree[path] = f.get("content", "")
    for name in ("main_file", "config_file", "version_file", "changelog"):
        path = variables.get(name)
        if path and path not in tree:
            out.add(f"vars.{name}", f"{path!r} is not a file of the seed at HEAD")
    vf, cur = variables.get("version_file"), variables.get("version_current")
    if vf in tree and cur and tree[vf].count(cur) != 1:
        out.add("vars.version_current", f"{cur!r} must appear exactly once in {vf!r} (found {tree[vf].count(cur)})")


_CHECKS = {
    "archetypes": _check_archetype,
    "consent": _check_consent,
    "skeletons": _check_skeleton,
    "seeds": _check_seed,
}


# ---------------------------------------------------------------------------------------------
# Reading a library directory


@dataclass
class Library:
    archetypes: list[dict[str, Any]] = field(default_factory=list)
    consent: list[dict[str, Any]] = field(default_factory=list)
    skeletons: list[dict[str, Any]] = field(default_factory=list)
    seeds: list[dict[str, Any]] = field(default_factory=list)
    mutations: dict[str, Any] = field(default_factory=dict)

    def entries(self, kind: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = getattr(self, kind)
        return result


def _read_text(path: Path, display: str) -> str:
    text, errors = read_text(path, display, LibraryError, "library files")
    if text is None:
        raise LibraryInvalid(errors)
    return text


def validate_entry(
    kind: str, data: Any, display: str, expected_id: str | None = None
) -> tuple[dict[str, Any] | None, list[ContentError]]:
    entry_id = data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), str) else (expected_id or "?")
    out = _Collector(display, str(entry_id))
    entry = validate_record(data, SCHEMAS[kind], "", out)
    if entry is not None and expected_id is not None and entry.get("id") not in (None, expected_id):
        out.add("id", f"id {entry['id']!r} must equal the file name {expected_id!r}")
    if entry is not None and not out.errors:
        _CHECKS[kind](entry, out)
    return (entry if not out.errors else None), out.errors


def iter_library_files(root: Path) -> Iterator[tuple[str, Path]]:
    for kind in KINDS:
        folder = root / kind
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.name.startswith("."):
                continue
            yield kind, path


def read_library(root: Path) -> Library:
    """Read and validate a whole library directory; raise ``LibraryInvalid`` listing every problem."""
    root = Path(root)
    errors: list[ContentError] = []
    library = Library()
    if not root.is_dir():
        raise LibraryInvalid([LibraryError(str(root), "", "", "library directory does not exist")])
    for kind in KINDS:
        if not (root / kind).is_dir():
            errors.append(LibraryError(f"{root.name}/{kind}", "", "", "folder is missing"))
    seen: dict[tuple[str, str], str] = {}
    for kind, path in iter_library_files(root):
        display = f"{kind}/{path.name}"
        if path.suffix != ".yaml":
            errors.append(LibraryError(display, "", "", "library files end in .yaml"))
            continue
        try:
            data = parse_yaml(_read_text(path, display), display)
        except LibraryInvalid as exc:
            errors.extend(exc.errors)
            continue
        entry, problems = validate_entry(kind, data, display, expected_id=path.stem)
        errors.extend(problems)
        if entry is not None:
            key = (kind, entry["id"])
            if key in seen:
                errors.append(LibraryError(display, entry["id"], "id", f"duplicate id; also in {seen[key]}"))
            seen[key] = display
            library.entries(kind).append(entry)
    mutations_path = root / MUTATIONS_FILE
    if mutations_path.exists():
        try:
            data = parse_yaml(_read_text(mutations_path, MUTATIONS_FILE), MUTATIONS_FILE)
            out = _Collector(MUTATIONS_FILE, "mutations")
            checked = validate_record(data, MUTATIONS, "", out)
            for op in MUTATION_OPERATORS:
                ids = [m["id"] for m in (checked or {}).get(op, []) if m]
                for dup in sorted({i for i in ids if ids.count(i) > 1}):
                    out.add(op, f"duplicate id {dup!r}")
            errors.extend(out.errors)
            if checked is not None and not out.errors:
                library.mutations = checked
        except LibraryInvalid as exc:
            errors.extend(exc.errors)
    else:
        errors.append(LibraryError(MUTATIONS_FILE, "", "", "file is missing"))
    present = {p.stem for p in (root / "consent").glob("*.yaml")} if (root / "consent").is_dir() else set()
    for mode in CONSENT_MODES:
        if mode not in present:
            errors.append(LibraryError(f"consent/{mode}.yaml", mode, "", "consent mode file is missing"))
    if errors:
        raise LibraryInvalid(errors)
    return library


def library_report(library: Library) -> dict[str, Any]:
    """Counts the benchmark cares about, and which minimums (REQUIRED_COUNTS) are not met."""
    tiers = {t: sum(1 for a in library.archetypes if a["tier"] == t) for t in TIERS}
    modes = {}
    for mode in library.consent:
        channels = {p["channel"] for p in mode["phrasings"]}
        modes[mode["id"]] = {"phrasings": len(mode["phrasings"]), "channels": len(channels)}
    report: dict[str, Any] = {
        "archetypes": len(library.archetypes),
        "tiers": tiers,
        "consent_modes": modes,
        "skeletons": len(library.skeletons),
        "min_atoms": min((len(s["atoms"]) for s in library.skeletons), default=0),
        "seeds": len(library.seeds),
        "mutations": {op: len(library.mutations.get(op, [])) for op in MUTATION_OPERATORS},
    }
    short = []
    if report["archetypes"] < REQUIRED_COUNTS["archetypes"]:
        short.append(f"{report['archetypes']} archetypes (need {REQUIRED_COUNTS['archetypes']})")
    for tier, want in TIER_SIZES.items():
        if tiers[tier] != want:
            short.append(f"{tiers[tier]} {tier} archetypes (want {want})")
    for mode, info in modes.items():
        if mode == "silent":
            continue
        if info["phrasings"] < REQUIRED_COUNTS["phrasings_per_mode"]:
            short.append(f"{mode}: {info['phrasings']} phrasings (need {REQUIRED_COUNTS['phrasings_per_mode']})")
        if info["channels"] < REQUIRED_COUNTS["channels_per_mode"]:
            short.append(f"{mode}: {info['channels']} channels (need {REQUIRED_COUNTS['channels_per_mode']})")
    if report["skeletons"] < REQUIRED_COUNTS["skeletons"]:
        short.append(f"{report['skeletons']} skeletons (need {REQUIRED_COUNTS['skeletons']})")
    if report["seeds"] < REQUIRED_COUNTS["seeds"]:
        short.append(f"{report['seeds']} seeds (need {REQUIRED_COUNTS['seeds']})")
    report["short_of_benchmark"] = short
    return report


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "pool/libraries")
    try:
        library = read_library(root)
    except LibraryInvalid as exc:
        print(exc, file=sys.stderr)
        return 1
    import json

    print(json.dumps(library_report(library), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))


field_problems = record_field_problems


def next_field(record: Record, name: str) -> Record:
    """The nested record of a record-typed field."""
    spec = next(f for f in record.fields if f.name == name)
    assert isinstance(spec.item, Record)
    return spec.item
