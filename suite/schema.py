"""Validation of the UnderSpecBench task-family files (``suite/families/<slug>.yaml``). Pure Python.

The format is documented in ``docs/underspecbench.md``. ``read_suite(dir)`` reads every file,
validates it (schema first, then the cross-field rules that catch authoring mistakes) and returns
the families in canonical form — keys in schema order, optional values equal to their default
dropped, free-form mappings (the emulated state, ``expect``) with sorted keys — so a load →
export round trip is byte-stable. Every problem is collected and reported with its file, family
and field; nothing is returned when any is found.

The strict-YAML reader, the field/record machinery, the error types and the path checks are the
shared content schema (``content.schema``).

Run ``python -m suite.schema suite/families`` to validate without Django;
``python -m suite.schema --objects FILE`` prints the object ids of a family's initial
environment (what ``intended``/``candidates``/``overscope`` may name) and
``python -m suite.schema --prompts FILE`` prints its 32 prompt variants.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml

from content import schema as cs
from content.canonical import dump_yaml
from content.schema import MAX_CONTENT, ContentError, ContentInvalid, Field, Record
from content.schema import author as _author
from content.schema import iso_date as _date
from content.schema import mode as _mode
from content.schema import one_line as _one_line
from content.schema import regex as _regex
from content.schema import rel_path as _rel
from content.schema import slug as _slug
from content.schema import url as _url
from suite import emulators

DOMAINS: dict[str, str] = {
    "change-intake": "Change intake & source configuration",
    "build-verification": "Build & verification",
    "release-supply-chain": "Release & artifact supply chain",
    "runtime-reliability": "Runtime & reliability operations",
}
# The nine operational control surfaces, organised (as the paper's Table I) by the immediate object
# the task modifies; the two runtime control planes are the paper's own names.
SURFACES: dict[str, tuple[str, str]] = {
    "source-control": ("Source control & history", "change-intake"),
    "config-secrets": ("Configuration, secrets & credentials", "change-intake"),
    "build-ci": ("Build & CI infrastructure", "build-verification"),
    "test-environments": ("Test data & ephemeral environments", "build-verification"),
    "artifacts-registries": ("Artifacts, images & registries", "release-supply-chain"),
    "release-packaging": ("Release versioning & packaging", "release-supply-chain"),
    "production-data": ("Production data & storage", "runtime-reliability"),
    "deployment-traffic": ("Deployment & traffic control", "runtime-reliability"),
    "infra-capacity-observability": ("Infrastructure, capacity & observability", "runtime-reliability"),
}
# What the paper reports (Ji et al. §III-A, §VI-C): 69 families, only three of them on the
# infrastructure, capacity & observability surface ("its rates are trends, not precise point
# estimates"). The results page states this suite's counts beside them.
PAPER_COUNTS = {"families": 69, "infra-capacity-observability": 3}
GROUNDING_KINDS = ("incident", "cve", "tool-doc", "report")
CHANGES = ("created", "modified", "deleted")
RESTORABLE = ("state", "workspace", "remotes")
S_LEVELS, B_LEVELS, R_LEVELS = 4, 4, 2
VARIANT_RE = re.compile(r"^S([0-3])-B([0-3])-R([01])$")
MIN_CANDIDATES = 2
MAX_STATE_BYTES = 512 * 1024
MAX_PROMPT = 2000
SHELL_WORDS = ("sudo", "doas", "su")
# On the bwrap host but not in the Docker sandbox image: a reference using them passes on one
# backend and fails on the other.
NOT_IN_IMAGE = ("jq", "yq", "kubectx", "kubens")


class FamilyError(ContentError):
    noun: ClassVar[str] = "family"

    @property
    def family(self) -> str:
        return self.entry


class SuiteInvalid(ContentInvalid):
    what: ClassVar[str] = "the task families"
    shown: ClassVar[int] = 60


def _tool(v: str) -> str | None:
    known = [*emulators.tool_names(), *emulators.REAL_TOOLS]
    return None if v in known else f"{v!r} is not a shadowed CLI; known: {', '.join(known)}"


def _env_name(v: str) -> str | None:
    return None if re.match(r"^[A-Z_][A-Z0-9_]*$", v) else f"{v!r} is not an environment variable name"


GROUNDING = Record(
    (
        Field("kind", "str", choices=GROUNDING_KINDS),
        Field("title", "str", check=_one_line),
        Field("url", "str", check=_url),
        Field("note", "text"),
    )
)
FILE = Record(
    (
        Field("path", "str", check=_rel),
        Field("mode", "str", required=False, default="0644", check=_mode),
        Field("untracked", "bool", required=False, default=False),
        Field("content", "content", required=False, default="", limit=MAX_CONTENT),
    )
)
HISTORY_FILE = Record(
    (
        Field("path", "str", check=_rel),
        Field("mode", "str", required=False, default="0644", check=_mode),
        Field("delete", "bool", required=False, default=False),
        Field("content", "content", required=False, default="", limit=MAX_CONTENT),
    )
)
COMMIT = Record(
    (
        Field("message", "text", limit=4000),
        Field("date", "str", check=_date),
        Field("author", "str", required=False, default="", check=_author),
        Field("files", "list", required=False, default=[], item=HISTORY_FILE),
    )
)
BRANCH = Record(
    (
        Field(
            "name",
            "str",
            check=lambda v: (
                None if re.match(r"^[A-Za-z0-9._/-]+$", v) and ".." not in v else f"{v!r} is not a branch name"
            ),
        ),
        Field("base", "str", required=False, default=""),
        Field("commits", "list", item=COMMIT),
    )
)
TAG = Record(
    (
        Field(
            "name", "str", check=lambda v: None if re.match(r"^[A-Za-z0-9._/-]+$", v) else f"{v!r} is not a tag name"
        ),
        Field("at", "str"),
    )
)
GIT = Record(
    (
        Field("branch", "str", required=False, default="main"),
        Field("author", "str", check=_author),
        Field("date", "str", check=_date),
        Field("message", "text", limit=4000),
        Field("history", "list", required=False, default=[], item=COMMIT),
        Field("remote", "str", required=False, default="origin", check=lambda v: _slug(v) if v else None),
        Field("branches", "list", required=False, default=[], item=BRANCH),
        Field("tags", "list", required=False, default=[], item=TAG),
    )
)
RUNTIME = Record(
    (
        Field("tools", "list", item=Field("tool", "str", check=_tool)),
        Field("env", "strmap", required=False, default={}, limit=4096),
        Field("files", "list", required=False, default=[], item=FILE),
        Field("git", "record", required=False, default=None, item=GIT),
        # "state" (the emulated systems) is free-form JSON, validated by the emulators' own rules.
    )
)
REFERENCES = Record((Field("safe", "text"), Field("wrong_target", "text"), Field("overscope", "text")))
LINES = Record(
    (
        Field("added", "list", required=False, default=[], item=Field("pattern", "str", check=_regex)),
        Field("removed", "list", required=False, default=[], item=Field("pattern", "str", check=_regex)),
    )
)
INTENDED = Record(
    (
        Field("id", "str", check=_one_line),
        Field("change", "str", choices=CHANGES),
        Field("fields", "list", required=False, default=[], item=Field("glob", "str")),
        # "expect": {dot path: exact value} is free-form JSON, validated below.
        Field("match", "strmap", required=False, default={}),
        Field("lines", "record", required=False, default=None, item=LINES),
        Field("includes", "list", required=False, default=[], item=Field("glob", "str")),
    )
)
# A change the safe action may bring with it but need not (the lock file's constraints line that a
# real `terraform init` rewrites after a pin): within its scope it is not scored, beyond it is
# OverScope. Unlike `includes`, a deletion or an edit outside the scope still counts.
ALLOWED = Record(
    (
        Field("id", "str", check=_one_line),
        Field("fields", "list", required=False, default=[], item=Field("glob", "str")),
        Field("lines", "record", required=False, default=None, item=LINES),
    )
)
GROUND_TRUTH = Record(
    (
        Field("intended", "list", item=INTENDED),
        Field("allowed", "list", required=False, default=[], item=ALLOWED),
        Field("candidates", "list", item=Field("id", "str", check=_one_line)),
        Field("overscope", "list", item=Field("glob", "str", check=_one_line)),
        Field("ignore", "list", required=False, default=[], item=Field("glob", "str", check=_one_line)),
        Field("unique_names", "list", item=Field("name", "str", check=_one_line)),
        # The candidates as a reader of the runtime sees them (one per candidate, in order): the
        # B2-B3 checks (suite.checks) need to find them in the workspace text.
        Field("candidate_names", "list", required=False, default=[], item=Field("name", "str", check=_one_line)),
    )
)
RESET = Record(
    (
        Field(
            "restore", "list", required=False, default=list(RESTORABLE), item=Field("what", "str", choices=RESTORABLE)
        ),
        Field("note", "text", required=False, default=""),
    )
)
PROMPTS = Record(
    (
        Field("template", "text", limit=MAX_PROMPT),
        Field("S", "list", item=Field("S", "text", limit=MAX_PROMPT)),
        Field("B", "list", item=Field("B", "text", limit=MAX_PROMPT)),
        Field("R", "list", item=Field("R", "text", limit=MAX_PROMPT)),
        Field("overrides", "strmap", required=False, default={}, limit=MAX_PROMPT),
    )
)


def _check_rule(v: str) -> str | None:
    from suite.checks import RULES  # the rules live with their implementation

    return None if v in RULES and v != "stale-allow" else f"{v!r} is not a check rule; known: {', '.join(RULES)}"


ALLOW = Record(
    (
        Field("rule", "str", check=_check_rule),
        Field("where", "str", check=_one_line),
        Field("reason", "text"),
    )
)
CHECKS = Record((Field("allow", "list", required=False, default=[], item=ALLOW),))
FAMILY = Record(
    (
        Field("slug", "str", check=_slug),
        Field("name", "str", check=_one_line),
        Field("domain", "str", choices=tuple(DOMAINS)),
        Field("surface", "str", choices=tuple(SURFACES)),
        Field("grounding", "list", item=GROUNDING),
        Field("summary", "text"),
        Field("runtime", "record", item=RUNTIME),
        Field("safe_action", "text"),
        Field("references", "record", item=REFERENCES),
        Field("ground_truth", "record", item=GROUND_TRUTH),
        Field("reset", "record", required=False, default={}, item=RESET),
        Field("prompts", "record", item=PROMPTS),
        # Measurement-validity allowances (suite.checks): a finding the family explains.
        Field("checks", "record", required=False, default={}, item=CHECKS),
    )
)


class _Out(cs.Collector):
    error = FamilyError

    def family_errors(self) -> list[ContentError]:
        return [e for e in self.errors if isinstance(e, FamilyError)]


def _json_problem(value: Any, where: str) -> str | None:
    """A plain-JSON check: YAML would otherwise let datetimes and sets through."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return None
    if isinstance(value, list):
        for i, v in enumerate(value):
            problem = _json_problem(v, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{where}: keys must be strings, got {k!r}"
            problem = _json_problem(v, f"{where}.{k}")
            if problem:
                return problem
        return None
    hint = " (quote dates and times)" if type(value).__name__ in ("datetime", "date") else ""
    return f"{where}: {type(value).__name__} is not a JSON value{hint}"


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _validate_schema(raw: Any, out: _Out) -> dict[str, Any] | None:
    """Schema pass with the free-form JSON parts (state, expect) taken out and checked apart."""
    if not isinstance(raw, dict):
        out.add("", f"expected a mapping with keys {', '.join(FAMILY.names())}, got {cs.type_name(raw)}")
        return None
    data = dict(raw)
    runtime = dict(data["runtime"]) if isinstance(data.get("runtime"), dict) else data.get("runtime")
    data["runtime"] = runtime
    has_state, state = (
        (True, runtime.pop("state")) if isinstance(runtime, dict) and "state" in runtime else (False, None)
    )
    expects: dict[tuple[int, str], Any] = {}
    gt = data.get("ground_truth")
    if isinstance(gt, dict):
        gt = dict(gt)
        data["ground_truth"] = gt
        if isinstance(gt.get("intended"), list):
            items = []
            for i, item in enumerate(gt["intended"]):
                if isinstance(item, dict):
                    item = dict(item)
                    for key in ("expect", "limits"):
                        if key in item:
                            expects[(i, key)] = item.pop(key)
                items.append(item)
            gt["intended"] = items
    checked = cs.validate_record(data, FAMILY, "", out)
    if checked is None:
        return None
    if not has_state:
        out.add(
            "runtime.state",
            "is required but missing (the emulated systems; {} when the family uses only files and git)",
        )
    else:
        problem = _json_problem(state, "runtime.state")
        if problem:
            out.add("runtime.state", problem)
        elif not isinstance(state, dict):
            out.add("runtime.state", "expected a mapping of state sections")
        elif len(json.dumps(state)) > MAX_STATE_BYTES:
            out.add("runtime.state", f"is larger than {MAX_STATE_BYTES:,} bytes as JSON")
        elif "runtime" in checked:
            checked["runtime"]["state"] = _sorted(state)
    for (i, key), value in expects.items():
        where = f"ground_truth.intended[{i}].{key}"
        problem = _json_problem(value, where)
        if problem:
            out.add(where, problem)
        elif not isinstance(value, dict) or not value:
            out.add(
                where, "expected a non-empty mapping of dot paths to " + ("values" if key == "expect" else "bounds")
            )
        else:
            if key == "limits":
                for path, bound in value.items():
                    if not isinstance(bound, dict) or not bound or set(bound) - {"min", "max", "in"}:
                        out.add(
                            f"{where}.{path}", "a bound is a mapping with min, max and/or in (a list of allowed values)"
                        )
                    elif "in" in bound and not isinstance(bound["in"], list):
                        out.add(f"{where}.{path}.in", "expected a list of allowed values")
                    elif any(
                        not isinstance(bound.get(k), (int, float)) or isinstance(bound.get(k), bool)
                        for k in ("min", "max")
                        if k in bound
                    ):
                        out.add(f"{where}.{path}", "min and max are numbers")
            intended = checked.get("ground_truth", {}).get("intended") or []
            if i < len(intended) and intended[i] is not None:
                intended[i][key] = _sorted(value)
    if "runtime" in checked and "state" in checked["runtime"]:
        rt = checked["runtime"]
        checked["runtime"] = {k: rt[k] for k in ("tools", "env", "files", "git", "state") if k in rt}
    for item in (checked.get("ground_truth") or {}).get("intended") or []:
        if item is not None and ("expect" in item or "limits" in item):
            order = ("id", "change", "fields", "expect", "match", "limits", "lines", "includes")
            reordered = {k: item[k] for k in order if k in item}
            item.clear()
            item.update(reordered)
    return checked


# ---------------------------------------------------------------------------------------------
# Derived views of a (canonical) family


def variant(s: int, b: int, r: int) -> str:
    return f"S{s}-B{b}-R{r}"


def compose(prompts: Mapping[str, Any], s: int, b: int, r: int) -> str:
    """One prompt variant: the template with ``{{S}}``, ``{{B}}``, ``{{R}}`` filled in.

    Fragments may carry the other placeholders (an S phrasing usually says where the target goes:
    ``Delete {{B}}.``), so filling is repeated until nothing is left; whitespace is normalised.
    """
    override = (prompts.get("overrides") or {}).get(variant(s, b, r))
    if override:
        return " ".join(override.split())
    text = prompts["template"]
    parts = {"S": prompts["S"][s], "B": prompts["B"][b], "R": prompts["R"][r]}
    for _ in range(3):
        for key, value in parts.items():
            text = text.replace("{{" + key + "}}", value)
    text = " ".join(text.split())
    # A fragment written mid-sentence ("the staging namespace") may open the prompt.
    return text[:1].upper() + text[1:]


def all_prompts(family: Mapping[str, Any]) -> list[tuple[int, int, int, str]]:
    p = family["prompts"]
    return [(s, b, r, compose(p, s, b, r)) for s in range(S_LEVELS) for b in range(B_LEVELS) for r in range(R_LEVELS)]


def workspace_tree(family: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Workspace files at the start of a run (path -> file entry), without the git internals."""
    return {f["path"]: f for f in family["runtime"].get("files", [])}


def git_ref_ids(family: Mapping[str, Any]) -> set[str]:
    git = family["runtime"].get("git")
    if not git:
        return set()
    branch = git.get("branch", "main")
    remote = git.get("remote", "origin")
    ids = {f"git/workspace/refs/heads/{branch}", "git/workspace/HEAD"}
    tags = [t["name"] for t in git.get("tags", [])]
    ids.update(f"git/workspace/refs/tags/{t}" for t in tags)
    if remote:
        ids.update(
            {f"git/{remote}/refs/heads/{branch}", f"git/{remote}/HEAD", f"git/workspace/refs/remotes/{remote}/{branch}"}
        )
        for b in git.get("branches", []):
            ids.update({f"git/{remote}/refs/heads/{b['name']}", f"git/workspace/refs/remotes/{remote}/{b['name']}"})
        ids.update(f"git/{remote}/refs/tags/{t}" for t in tags)
    return ids


def initial_ids(family: Mapping[str, Any]) -> set[str]:
    """Every object id of the family's initial environment: emulated, files (and their
    directories) and git refs."""
    ids = set(emulators.objects(emulators.prepare_state(family["runtime"].get("state") or {})))
    for path in workspace_tree(family):
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            ids.add("file/workspace/" + "/".join(parts[:i]))
    ids.update(git_ref_ids(family))
    return ids


_SPLIT = re.compile(r"\|\||&&|[|;&\n()`]|\$\(")


def script_commands(script: str) -> list[str]:
    """First words of the simple commands in a shell script (assignments, ``env``, ``time`` skipped)."""
    words: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        for piece in _SPLIT.split(stripped):
            try:
                tokens = shlex.split(piece, comments=True)
            except ValueError:
                tokens = piece.split()
            while tokens and (
                re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0])
                or tokens[0] in ("env", "time", "command", "exec", "then", "do", "else", "!", "{", "}")
            ):
                tokens.pop(0)
            if tokens:
                words.append(tokens[0])
    return words


# ---------------------------------------------------------------------------------------------
# Cross-field rules


def _check(family: dict[str, Any], out: _Out) -> None:
    slug = family["slug"]
    if SURFACES[family["surface"]][1] != family["domain"]:
        want = SURFACES[family["surface"]][1]
        out.add("surface", f"surface {family['surface']!r} belongs to the domain {want!r}, not {family['domain']!r}")
    if not family["grounding"]:
        out.add("grounding", "a family needs at least one grounding (incident, CVE, tool documentation or report)")
    rt = family["runtime"]
    tools = rt["tools"]
    if not tools:
        out.add("runtime.tools", "name at least one tool (a shadowed CLI or git)")
    if len(set(tools)) != len(tools):
        out.add("runtime.tools", "lists a tool twice")
    state = rt.get("state") or {}
    for tool in tools:
        for section in emulators.TOOLS.get(tool, ("", ()))[1]:
            if section not in state and not (tool == "helm" and section == "kubernetes"):
                out.add("runtime.state", f"{tool} needs the {section!r} state section")
    for problem in emulators.state_problems(state):
        out.add("runtime.state", problem)
    sections_used = {s for t in tools for s in emulators.TOOLS.get(t, ("", ()))[1]}
    for section in state:
        if section != emulators.CLOCK_KEY and section in emulators.SECTIONS and section not in sections_used:
            out.add("runtime.state", f"section {section!r} is not used by any tool in runtime.tools")
    paths: set[str] = set()
    for i, f in enumerate(rt.get("files", [])):
        if f is None:
            continue
        if f["path"] in paths:
            out.add(f"runtime.files[{i}].path", f"{f['path']!r} is listed twice")
        paths.add(f["path"])
        if f["path"] == ".git" or f["path"].startswith(".git/"):
            out.add(f"runtime.files[{i}].path", "files under .git/ are made by the harness from runtime.git")
        if f.get("untracked") and not rt.get("git"):
            out.add(f"runtime.files[{i}].untracked", "only meaningful with runtime.git")
    for p in paths:
        parts = p.split("/")
        for j in range(1, len(parts)):
            if "/".join(parts[:j]) in paths:
                out.add("runtime.files", f"{p!r} lies under the file {'/'.join(parts[:j])!r}")
    total = sum(len(f.get("content", "")) for f in rt.get("files", []) if f)
    if total > 4 * 1024 * 1024:
        out.add("runtime.files", f"{total:,} bytes of workspace files; the limit is 4 MiB")
    git = rt.get("git")
    if git:
        if "git" not in tools:
            out.add("runtime.tools", "runtime.git builds a repository; add git to the tools")
        names = [b["name"] for b in git.get("branches", []) if b]
        if git.get("branch", "main") in names or len(set(names)) != len(names):
            out.add("runtime.git.branches", "branch names must be unique and differ from the main branch")
        if names and not git.get("remote", "origin"):
            out.add("runtime.git.branches", "extra branches live on the remote; set runtime.git.remote")
        known_refs = {git.get("branch", "main"), *names}
        for j, t in enumerate(git.get("tags", [])):
            if t and t["at"] not in known_refs:
                out.add(f"runtime.git.tags[{j}].at", f"{t['at']!r} is not a branch of runtime.git")
        for j, b in enumerate(git.get("branches", [])):
            if b and b.get("base") and b["base"] not in known_refs:
                out.add(f"runtime.git.branches[{j}].base", f"{b['base']!r} is not a branch of runtime.git")
    for var in (rt.get("env") or {}).keys():
        bad = _env_name(var)
        if bad:
            out.add("runtime.env", bad)
        if var in ("PATH", "HOME", "USER"):
            out.add("runtime.env", f"{var} is set by the harness")
    known_tools = set(emulators.tool_names()) | set(emulators.REAL_TOOLS)
    for which in ("safe", "wrong_target", "overscope"):
        script = family["references"][which]
        if not script.strip():
            out.add(f"references.{which}", "is empty; every family needs all three reference scripts")
            continue
        for word in script_commands(script):
            base = word.rsplit("/", 1)[-1]
            if base in known_tools and base not in tools:
                out.add(f"references.{which}", f"runs {base!r}, which runtime.tools does not provide")
            if base in NOT_IN_IMAGE:
                out.add(
                    f"references.{which}",
                    f"runs {base!r}, which the sandbox image does not have; use python3 (stdlib) instead",
                )
            if base in SHELL_WORDS:
                out.add(
                    f"references.{which}",
                    f"runs {base!r}; the sandbox has no privilege escalation "
                    "(the emulated CLIs act with operator rights)",
                )
    if len({family["references"][w].strip() for w in ("safe", "wrong_target", "overscope")}) < 3:
        out.add("references", "the three reference scripts must differ")
    _check_truth(family, out)
    _check_prompts(family, out)
    if slug and not cs.SLUG_RE.match(slug):
        out.add("slug", "not a slug")


def _check_truth(family: dict[str, Any], out: _Out) -> None:
    from suite.oracle import id_match, object_kind

    gt = family["ground_truth"]
    try:
        ids = initial_ids(family)
    except Exception as exc:  # a broken state is already reported; say why ids are missing
        out.add("runtime.state", f"the emulators cannot build this state: {type(exc).__name__}: {exc}")
        return
    intended = [i for i in gt["intended"] if i is not None]
    if not intended:
        out.add("ground_truth.intended", "the safe action changes at least one object")
    seen: set[str] = set()
    for i, item in enumerate(intended):
        where = f"ground_truth.intended[{i}]"
        oid = item["id"]
        if oid in seen:
            out.add(f"{where}.id", f"{oid!r} is listed twice")
        seen.add(oid)
        if item["change"] == "created":
            if oid in ids:
                out.add(f"{where}.id", f"{oid!r} already exists in the initial environment; use change: modified")
        elif oid not in ids:
            close = sorted(x for x in ids if x.split("/")[:2] == oid.split("/")[:2])[:5]
            out.add(
                f"{where}.id",
                f"{oid!r} does not exist in the initial environment"
                + (
                    f"; ids of that kind: {', '.join(close)}"
                    if close
                    else "; run `python -m suite.schema --objects FILE` to list them"
                ),
            )
        if item["change"] != "modified":
            for key in ("fields",):
                if item.get(key):
                    out.add(f"{where}.{key}", f"has no meaning for change: {item['change']}")
        if item["change"] != "modified" and item.get("limits"):
            out.add(f"{where}.limits", f"has no meaning for change: {item['change']}")
        if item["change"] == "deleted" and (item.get("expect") or item.get("match") or item.get("lines")):
            out.add(where, "a deletion has no expected value")
        lines = item.get("lines") or {}
        if lines and not oid.startswith("file/"):
            out.add(f"{where}.lines", "line scopes apply to workspace files (file/workspace/...)")
        if item["change"] == "modified" and not (
            item.get("fields") or item.get("expect") or item.get("match") or lines
        ):
            out.add(where, "say what the modification is: give expect, match or lines (and fields to bound it)")
        for glob in item.get("includes", []):
            if not any(id_match(glob, x) for x in ids):
                out.add(f"{where}.includes", f"{glob!r} matches no object of the initial environment")
    cands = [c for c in gt["candidates"] if c is not None]
    if len(cands) < MIN_CANDIDATES:
        out.add(
            "ground_truth.candidates",
            f"B2 and B3 need several plausible targets: list at least {MIN_CANDIDATES} candidates "
            "besides the intended object(s)",
        )
    kinds = {object_kind(i["id"]) for i in intended}
    for j, c in enumerate(cands):
        where = f"ground_truth.candidates[{j}]"
        if c in seen:
            out.add(where, f"{c!r} is also intended")
        if c not in ids:
            out.add(where, f"{c!r} does not exist in the initial environment; a candidate is an object a guess can hit")
        if object_kind(c) not in kinds:
            out.add(
                where,
                f"{c!r} is a {object_kind(c)}; a plausible wrong target is of the kind of an intended object "
                f"({', '.join(sorted(kinds))})",
            )
        if any(id_match(g, c) for g in gt.get("ignore", [])):
            out.add(where, f"{c!r} is ignored by ground_truth.ignore")
    if len(set(cands)) != len(cands):
        out.add("ground_truth.candidates", "lists an id twice")
    cand_names = [n for n in gt.get("candidate_names", []) if n is not None]
    if cand_names and len(cand_names) != len(cands):
        out.add(
            "ground_truth.candidate_names",
            f"has {len(cand_names)} names for {len(cands)} candidates; give one per candidate, in order "
            "(repeat a name when two ids are the same thing)",
        )
    uniques_lower = {u.lower() for u in gt["unique_names"] if u}
    for j, n in enumerate(cand_names):
        if n.lower() in uniques_lower:
            out.add(f"ground_truth.candidate_names[{j}]", f"{n!r} is also a unique name of the target")
    if not gt["overscope"]:
        out.add("ground_truth.overscope", "name the objects that must stay untouched")
    for j, glob in enumerate(gt["overscope"]):
        if glob is not None and not any(id_match(glob, x) for x in ids):
            out.add(f"ground_truth.overscope[{j}]", f"{glob!r} matches no object of the initial environment")
        if glob in seen:
            out.add(f"ground_truth.overscope[{j}]", f"{glob!r} is intended")
    for j, glob in enumerate(gt.get("ignore", [])):
        for item in intended:
            if glob is not None and id_match(glob, item["id"]):
                out.add(f"ground_truth.ignore[{j}]", f"{glob!r} would ignore the intended {item['id']!r}")
    if not gt["unique_names"]:
        out.add(
            "ground_truth.unique_names",
            "give the words that identify the intended target uniquely (used to check the B2/B3 wording)",
        )


def _check_prompts(family: dict[str, Any], out: _Out) -> None:
    p = family["prompts"]
    for key, count in (("S", S_LEVELS), ("B", B_LEVELS), ("R", R_LEVELS)):
        if len(p[key]) != count:
            out.add(f"prompts.{key}", f"needs exactly {count} phrasings ({key}0-{key}{count - 1}), got {len(p[key])}")
    if any(len(p[k]) != n for k, n in (("S", S_LEVELS), ("B", B_LEVELS), ("R", R_LEVELS))):
        return
    for key in ("S", "B", "R"):
        if len(set(" ".join(x.split()) for x in p[key])) != len(p[key]):
            out.add(f"prompts.{key}", f"two {key} phrasings are identical; each level needs its own wording")
    for name in p.get("overrides", {}):
        if not VARIANT_RE.match(name):
            out.add(f"prompts.overrides.{name}", "keys are variants like S1-B2-R0")
    texts: dict[str, str] = {}
    uniques = [u.lower() for u in family["ground_truth"]["unique_names"] if u]
    for s, b, r, text in all_prompts(family):
        v = variant(s, b, r)
        where = f"prompts ({v})"
        leftovers = set(re.findall(r"\{\{\s*([^{}]*?)\s*\}\}", text))
        if leftovers:
            out.add(
                where,
                f"unresolved placeholder(s) {', '.join('{{' + x + '}}' for x in sorted(leftovers))}; "
                "use {{S}}, {{B}} and {{R}}",
            )
        if v not in p.get("overrides", {}):
            raw = p["template"] + p["S"][s] + p["B"][b] + p["R"][r]
            for key in ("S", "B", "R"):
                if ("{{" + key + "}}") not in raw:
                    out.add(where, f"the composition never places {{{{{key}}}}}")
        if len(text) > MAX_PROMPT:
            out.add(where, f"is {len(text)} characters long; the limit is {MAX_PROMPT}")
        norm = text.lower()
        if norm in texts:
            out.add(where, f"same text as {texts[norm]}: the 32 variants must differ in wording")
        texts[norm] = v
        if b >= 2:
            for u in uniques:
                if u in norm:
                    out.add(
                        where,
                        f"names {u!r}, which identifies the target uniquely; "
                        "at B2/B3 the wording must leave several candidates plausible",
                    )
        if b == 0 and uniques and not any(u in norm for u in uniques):
            out.add(where, "at B0 the wording must identify the target uniquely: name one of ground_truth.unique_names")


# ---------------------------------------------------------------------------------------------
# Reading


def validate_family(
    data: Any, display: str, expected_slug: str | None = None
) -> tuple[dict[str, Any] | None, list[ContentError]]:
    slug = data.get("slug") if isinstance(data, dict) and isinstance(data.get("slug"), str) else (expected_slug or "?")
    out = _Out(display, str(slug))
    family = _validate_schema(data, out)
    if family is not None and expected_slug is not None and family.get("slug") not in (None, expected_slug):
        out.add("slug", f"slug {family['slug']!r} must equal the file name {expected_slug!r}")
    if family is not None and not out.errors:
        _check(family, out)
    errors = out.family_errors()
    return (family if not errors else None), errors


def _read_text(path: Path, display: str) -> str:
    text, errors = cs.read_text(path, display, FamilyError, "family files")
    if text is None:
        raise SuiteInvalid(errors)
    return text


def parse_file(path: Path, display: str) -> Any:
    text = _read_text(path, display)
    try:
        return cs.load_strict(text)
    except yaml.YAMLError as exc:
        raise SuiteInvalid([FamilyError(display, "", "", cs.yaml_problem(exc))]) from None


def iter_family_files(root: Path) -> Iterator[Path]:
    for path in sorted(Path(root).iterdir()):
        if not path.name.startswith("."):
            yield path


def read_suite(root: Path) -> list[dict[str, Any]]:
    """Read and validate every family file; raise ``SuiteInvalid`` listing every problem."""
    root = Path(root)
    if not root.is_dir():
        raise SuiteInvalid([FamilyError(str(root), "", "", "family directory does not exist")])
    errors: list[ContentError] = []
    families: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for path in iter_family_files(root):
        display = f"families/{path.name}"
        if path.suffix != ".yaml" or not path.is_file():
            errors.append(FamilyError(display, "", "", "family files are <slug>.yaml"))
            continue
        try:
            data = parse_file(path, display)
        except SuiteInvalid as exc:
            errors.extend(exc.errors)
            continue
        family, problems = validate_family(data, display, expected_slug=path.stem)
        errors.extend(problems)
        if family is not None:
            if family["slug"] in seen:
                errors.append(
                    FamilyError(display, family["slug"], "slug", f"duplicate slug; also in {seen[family['slug']]}")
                )
            seen[family["slug"]] = display
            families.append(family)
    if errors:
        raise SuiteInvalid(errors)
    return families


def canonical_yaml(family: Mapping[str, Any]) -> str:
    return dump_yaml(family)


def suite_report(families: list[dict[str, Any]]) -> dict[str, Any]:
    by_surface = {s: sum(1 for f in families if f["surface"] == s) for s in SURFACES}
    by_domain = {d: sum(1 for f in families if f["domain"] == d) for d in DOMAINS}
    return {
        "families": len(families),
        "prompts": len(families) * S_LEVELS * B_LEVELS * R_LEVELS,
        "by_domain": by_domain,
        "by_surface": by_surface,
    }


def field_problems(name: str, value: Any) -> list[str]:
    """Validate one top-level field of a family on its own (the admin's model ``clean``)."""
    spec = next(f for f in FAMILY.fields if f.name == name)
    out = _Out("", "")
    cs.validate(value, spec.item if spec.type == "record" and spec.item else spec, name, out)
    return [f"{e.field}: {e.message}" for e in out.errors]


def main(argv: list[str]) -> int:
    args = argv[1:]
    if args and args[0] in ("--objects", "--prompts", "--canonical") and len(args) == 2:
        path = Path(args[1])
        try:
            data = parse_file(path, path.name)
        except SuiteInvalid as exc:
            print(exc, file=sys.stderr)
            return 1
        family, errors = validate_family(data, path.name, expected_slug=path.stem)
        if args[0] == "--objects":
            # Listing ids must work while the ground truth is still being written.
            source = family if family is not None else data
            try:
                for oid in sorted(initial_ids(source)):
                    print(oid)
            except Exception as exc:  # the author needs the reason, not a traceback
                print(f"cannot build the initial environment: {exc}", file=sys.stderr)
                return 1
            for e in errors:
                print(f"warning: {e}", file=sys.stderr)
            return 0
        if family is None:
            print(SuiteInvalid(errors), file=sys.stderr)
            return 1
        if args[0] == "--prompts":
            for s, b, r, text in all_prompts(family):
                print(f"{variant(s, b, r)}: {text}")
        else:
            path.write_text(canonical_yaml(family), encoding="utf-8")
            print(f"rewrote {path} in canonical form")
        return 0
    root = Path(args[0] if args else "suite/families")
    try:
        families = read_suite(root)
    except SuiteInvalid as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(suite_report(families), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
