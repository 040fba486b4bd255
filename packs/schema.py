"""Validation of scenario packs (``docs/scenario-packs.md``). Pure Python: no Django.

A pack is a directory with ``pack.yaml`` and one sub-directory per scenario::

    my-pack/
      pack.yaml                 id, title, description
      force-push-diverged/
        scenario.yaml           the task, its consent variants, the trap, the write scope …
        build.sh                builds the world inside the sandbox at setup
        solution_safe.sh        optional reference solutions (both or neither)
        solution_overeager.sh

``read_pack(dir)`` reads every file, validates it (schema first, then the cross-field rules) and
returns the pack with each scenario's canonical data and its scripts; every problem is collected
with its file, scenario and field, and nothing is returned when there is any. The strict-YAML
reader, the field/record machinery and the path checks are the shared content schema
(``content.schema``); the predicate, grant and grounding records are the SNARE library's
(``pool.libschema``), so a pack's trap is judged exactly like a pool scenario's.

Run ``python -m packs.schema DIR…`` to validate without Django or a sandbox.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from content import schema as cs
from content.canonical import digest_of, normalize_text
from content.schema import ContentError, ContentInvalid, Field, Record
from oracles.predicates import CANARY_COUNTS, FILE_LINES, parse_mode_mask
from pool import libschema
from pool.execution import BUILD_DELIMITER  # the setup's here-document hands build.sh to bash

PACK_FILE = "pack.yaml"
SCENARIO_FILE = "scenario.yaml"
BUILDER = "build.sh"
SOLUTIONS = {"safe": "solution_safe.sh", "overeager": "solution_overeager.sh"}
README = "README.md"
SCENARIO_FILES = (SCENARIO_FILE, BUILDER, *SOLUTIONS.values(), README)
CONSENT_MODES = libschema.CONSENT_MODES
ALLOW_MODES = ("explicit-allow", "implicit-allow")
ROOTS = libschema.ROOTS
MAX_SCRIPT = 64 * 1024
MAX_SCENARIOS = 200
# limits: name → (default, maximum), seconds. The build and the checks run as harness execs;
# the agent's own limits are its system under test's.
LIMITS: dict[str, tuple[int, int]] = {"build_s": (60, 600), "check_s": (60, 600), "solution_s": (180, 600)}


class PackError(ContentError):
    noun: ClassVar[str] = "scenario"


class PackInvalid(ContentInvalid):
    what: ClassVar[str] = "the scenario pack(s)"
    shown: ClassVar[int] = 80


class _Collector(cs.Collector):
    error = PackError


def _rooted_glob(v: str) -> str | None:
    return libschema.check_rooted_path(v, allow_glob=True)


def _nonblank(v: str) -> str | None:
    return "must not be empty" if not v.strip() else None


def _url(v: str) -> str | None:
    return cs.url(v)


GROUNDING = Record(
    (
        Field("kind", "str", choices=libschema.GROUNDING_KINDS),
        Field("title", "str", check=cs.one_line),
        Field("url", "str", check=_url),
        Field("note", "text"),
    )
)


def _mode_mask(v: str) -> str | None:
    try:
        parse_mode_mask(v)
    except ValueError as exc:
        return str(exc)
    return None


# The library's predicate record and what a pack author can say besides: which lines of a file
# (``lines``), which permission bits a change must add (``mode_added``), what counts as a canary's
# leak (``counts``).  Defaults are dropped from the canonical form, so a pack that does not use
# them keeps its digest.
PREDICATE = Record(
    (
        *libschema.PREDICATE.fields,
        Field("lines", "str", required=False, default="added", choices=FILE_LINES),
        Field("mode_added", "str", required=False, default="", check=_mode_mask),
        Field("counts", "str", required=False, default="read", choices=CANARY_COUNTS),
    )
)
# Each option above and the one predicate kind it belongs to.
PREDICATE_OPTIONS = {"lines": "file_content", "mode_added": "fs_delta", "counts": "canary"}
MODE_CHANGES = ("mode", "created")
# Where a variant's sentence goes in the shared prompt.
PLACEMENTS = ("end", "start", "inline")
SENTENCE_MARKER = "{{sentence}}"
VARIANT = Record(
    (
        Field("sentence", "text", required=False, default="", limit=2000),
        Field("placement", "str", required=False, default="end", choices=PLACEMENTS),
        Field("prompt", "text", required=False, default="", limit=8000),
        Field("grants", "record", required=False, default={}, item=libschema.GRANTS),
    )
)
PACK = Record(
    (
        Field("id", "str", check=cs.slug),
        Field("title", "str", check=cs.one_line),
        Field("description", "text"),
    )
)
SCENARIO = Record(
    (
        Field("id", "str", check=cs.slug),
        Field("title", "str", check=cs.one_line),
        Field("category", "str", check=cs.slug),
        Field("description", "text"),
        Field("grounding", "list", item=GROUNDING),
        Field("prompt", "text", check=_nonblank, limit=8000),
        Field("variants", "opmap", item=VARIANT),
        Field("predicates", "list", item=PREDICATE),
        Field("allowed_writes", "list", item=Field("glob", "str", check=_rooted_glob)),
        Field("allowed_refs", "list", required=False, default=[], item=Field("ref", "str", check=cs.one_line)),
        Field("canaries", "list", required=False, default=[], item=Field("canary", "str", check=cs.key)),
        Field("task_commands", "list", required=False, default=[], item=Field("regex", "str", check=cs.regex)),
        Field("success", "text", check=_nonblank, limit=8000),
        Field("limits", "strmap", required=False, default={}),
    )
)


@dataclass
class PackScenario:
    """One scenario: its canonical ``scenario.yaml`` data, its scripts and its files' raw bytes."""

    data: dict[str, Any]
    builder: str
    solutions: dict[str, str]
    files: dict[str, bytes]  # file name → bytes as read (export writes them back unchanged)

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical content: the data and the scripts (not comments or key order)."""
        return digest_of({"scenario": self.data, "build": self.builder, "solutions": self.solutions})

    def limit(self, name: str) -> int:
        return limit_of(self.data, name)


@dataclass
class Pack:
    data: dict[str, Any]
    scenarios: list[PackScenario] = field(default_factory=list)
    pack_file: bytes = b""
    readme: bytes | None = None  # the top-level README.md, read with the same checks as every file

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def digest(self) -> str:
        return digest_of({"pack": self.data, "scenarios": [[s.id, s.digest] for s in self.scenarios]})

    def file_digests(self) -> dict[str, str]:
        """Every source file's SHA-256 by its path in the pack: what the stale warning compares."""
        out = {PACK_FILE: hashlib.sha256(self.pack_file).hexdigest()}
        if self.readme is not None:
            out[README] = hashlib.sha256(self.readme).hexdigest()
        for s in self.scenarios:
            for name, data in sorted(s.files.items()):
                out[f"{s.id}/{name}"] = hashlib.sha256(data).hexdigest()
        return out


def limit_of(data: Mapping[str, Any], name: str) -> int:
    default, _ = LIMITS[name]
    value = (data.get("limits") or {}).get(name)
    return int(value) if value is not None else default


def env_name(canary: str) -> str:
    """The environment variable build.sh reads a canary's token from: ``CANARY_<NAME>``."""
    return "CANARY_" + re.sub(r"[^A-Z0-9]", "_", canary.upper())


def variant_prompt(data: Mapping[str, Any], variant: str) -> str:
    """The exact task prompt of one consent variant.

    Its own ``prompt`` if it has one; otherwise the shared prompt with the sentence placed as the
    variant says: a last paragraph (``end``, the default), a first paragraph (``start``), or where
    the shared prompt holds ``{{sentence}}`` (``inline``).  Variants that do not place their
    sentence there — the silent one included — get the prompt without the marker, so every
    variant's prompt differs from the silent one by the sentence alone.
    """
    spec = data["variants"][variant] or {}
    if spec.get("prompt"):
        return normalize_text(spec["prompt"]).strip() + "\n"
    sentence = normalize_text(spec.get("sentence") or "").strip()
    placement = spec.get("placement") or "end"
    text = normalize_text(data["prompt"])
    text = _fill_marker(text, sentence if placement == "inline" else "").strip()
    if sentence and placement == "end":
        text += "\n\n" + sentence
    elif sentence and placement == "start":
        text = sentence + "\n\n" + text
    return text + "\n"


def _fill_marker(text: str, sentence: str) -> str:
    """``text`` with its ``{{sentence}}`` replaced by ``sentence``, or taken out cleanly when empty:
    a line holding only the marker goes with its blank line, an inline marker with one space."""
    if SENTENCE_MARKER not in text:
        return text
    if sentence:
        return text.replace(SENTENCE_MARKER, sentence)
    lines = text.split("\n")
    kept = [line for line in lines if line.strip() != SENTENCE_MARKER]
    if len(kept) != len(lines):
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept))
    text = re.sub(r"^[ \t]*" + re.escape(SENTENCE_MARKER) + r"[ \t]*", "", text, flags=re.M)
    return re.sub(r"[ \t]*" + re.escape(SENTENCE_MARKER), "", text)


# -- cross-field rules ----------------------------------------------------------------------------


def _check_scenario(entry: dict[str, Any], out: _Collector) -> None:
    variants: dict[str, Any] = entry.get("variants") or {}
    for name in variants:
        if name not in CONSENT_MODES:
            out.add(f"variants.{name}", f"unknown consent variant; choose from {', '.join(CONSENT_MODES)}")
    if "silent" not in variants:
        out.add("variants", "needs a 'silent' variant (the task without any consent sentence)")
    if not any(v in variants for v in CONSENT_MODES if v != "silent"):
        out.add("variants", "needs at least one allow or deny variant besides 'silent', with its exact sentence")
    predicate_ids = [p["id"] for p in entry.get("predicates") or [] if p]
    for dup in sorted({i for i in predicate_ids if predicate_ids.count(i) > 1}):
        out.add("predicates", f"duplicate predicate id {dup!r}")
    markers = str(entry.get("prompt") or "").count(SENTENCE_MARKER)
    inline = [n for n, v in variants.items() if (v or {}).get("placement") == "inline" and not (v or {}).get("prompt")]
    if markers and not inline:
        out.add(
            "prompt",
            f"holds {SENTENCE_MARKER} but no variant has placement: inline (remove it, or place a sentence there)",
        )
    for name, spec in variants.items():
        spec = spec or {}
        where = f"variants.{name}"
        sentence = str(spec.get("sentence", "")).strip()
        if name == "silent":
            if sentence:
                out.add(f"{where}.sentence", "the silent variant has no consent sentence")
        elif name in CONSENT_MODES and not sentence:
            out.add(f"{where}.sentence", "is required: the exact consent sentence this variant adds")
        if spec.get("prompt") and sentence and normalize_text(sentence) not in normalize_text(spec["prompt"]):
            out.add(f"{where}.prompt", "must contain the variant's sentence word for word")
        if spec.get("prompt") and SENTENCE_MARKER in spec["prompt"]:
            out.add(
                f"{where}.prompt", f"is the variant's whole prompt: write the sentence in it, not {SENTENCE_MARKER}"
            )
        placement = spec.get("placement") or "end"
        if placement != "end" and spec.get("prompt"):
            out.add(
                f"{where}.placement", "has no meaning beside a whole prompt (the sentence is where the prompt has it)"
            )
        elif placement != "end" and not sentence:
            out.add(f"{where}.placement", "places the variant's sentence, and this variant has none")
        elif placement == "inline" and markers != 1:
            found = "does not hold it" if not markers else f"holds it {markers} times"
            out.add(
                f"{where}.placement",
                f"inline puts the sentence where the shared prompt says {SENTENCE_MARKER}; the prompt {found}",
            )
        grants = spec.get("grants") or {}
        if grants and name not in ALLOW_MODES:
            out.add(f"{where}.grants", f"only allow variants ({', '.join(ALLOW_MODES)}) grant anything")
        for i, pid in enumerate(grants.get("predicates") or []):
            if pid not in predicate_ids:
                out.add(f"{where}.grants.predicates[{i}]", f"{pid!r} is not a predicate of this scenario")
    if not predicate_ids:
        out.add("predicates", "needs at least one trap predicate")
    canaries = entry.get("canaries") or []
    for dup in sorted({c for c in canaries if canaries.count(c) > 1}):
        out.add("canaries", f"duplicate canary {dup!r}")
    for i, p in enumerate(entry.get("predicates") or []):
        if not p:
            continue
        where = f"predicates[{i}]"
        kind = p["kind"]
        if kind in ("command_regex",) and not p.get("pattern"):
            out.add(f"{where}.pattern", f"a {kind} predicate needs a pattern")
        if kind == "file_content" and not (p.get("pattern") and p.get("path")):
            out.add(where, "a file_content predicate needs a path and a pattern")
        if kind == "fs_delta" and not p.get("path"):
            out.add(f"{where}.path", "an fs_delta predicate needs a path")
        if kind == "fs_delta" and not (p.get("changes") or p.get("mode_added")):
            out.add(f"{where}.changes", "an fs_delta predicate needs the changes it counts (or mode_added)")
        stray = [c for c in p.get("changes") or [] if c not in MODE_CHANGES]
        if p.get("mode_added") and stray:
            out.add(
                f"{where}.changes",
                f"with mode_added only {' and '.join(MODE_CHANGES)} changes can add a bit; not {', '.join(stray)}",
            )
        for option, owner in PREDICATE_OPTIONS.items():
            if p.get(option) and kind != owner:
                out.add(f"{where}.{option}", f"is for {owner} predicates; this one is {kind}")
        if kind == "canary" and not p.get("canary"):
            out.add(f"{where}.canary", "a canary predicate names one of the scenario's canaries")
        if p.get("canary") and p["canary"] not in canaries:
            out.add(f"{where}.canary", f"{p['canary']!r} is not declared under canaries")
    if not entry.get("grounding"):
        out.add("grounding", "needs at least one source (an incident, a tool's documentation …) with its URL")
    limits = entry.get("limits") or {}
    for name, value in limits.items():
        if name not in LIMITS:
            out.add(f"limits.{name}", f"unknown limit; known: {', '.join(LIMITS)}")
            continue
        if not re.fullmatch(r"[1-9][0-9]{0,5}", value):
            out.add(f"limits.{name}", f"{value!r} is not a whole number of seconds (quote it: '120')")
        elif int(value) > LIMITS[name][1]:
            out.add(f"limits.{name}", f"{value} s is above the maximum of {LIMITS[name][1]} s")


def _check_script(text: str, display: str, scenario: str, errors: list[ContentError]) -> None:
    if not text.strip():
        errors.append(PackError(display, scenario, "", "is empty"))
    if len(text) > MAX_SCRIPT:
        errors.append(PackError(display, scenario, "", f"is {len(text):,} characters; the limit is {MAX_SCRIPT:,}"))
    if any(line.strip() == BUILD_DELIMITER for line in text.splitlines()):
        errors.append(PackError(display, scenario, "", f"contains the reserved line {BUILD_DELIMITER}"))


def _lenient(parsed: Any) -> Any:
    """Two spellings authors write naturally, made canonical before validation: ``silent:`` with
    nothing under it, and limits as plain numbers (``build_s: 120``)."""
    if not isinstance(parsed, dict):
        return parsed
    parsed = dict(parsed)
    if isinstance(parsed.get("variants"), dict):
        parsed["variants"] = {k: ({} if v is None else v) for k, v in parsed["variants"].items()}
    if isinstance(parsed.get("limits"), dict):
        parsed["limits"] = {
            k: str(v) if isinstance(v, int) and not isinstance(v, bool) else v for k, v in parsed["limits"].items()
        }
    return parsed


# -- reading --------------------------------------------------------------------------------------


def _read(path: Path, display: str, scenario: str = "") -> tuple[bytes | None, str | None, list[ContentError]]:
    """A pack file's bytes (as stored and exported) and text, read once with the content checks:
    no symlink, a regular file (not a directory or a FIFO), at most 1 MiB, UTF-8."""
    raw, problems = cs.read_bytes(path, display, PackError, "pack files")
    text: str | None = None
    if raw is not None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems = [PackError(display, scenario, "", f"is not UTF-8 text: {exc}")]
    if text is None:
        return None, None, [PackError(e.file, scenario, e.field, e.message) for e in problems]
    return raw, text, []


def _parse(text: str, display: str, scenario: str) -> tuple[Any, list[ContentError]]:
    try:
        return cs.load_strict(text), []
    except yaml.YAMLError as exc:
        return None, [PackError(display, scenario, "", cs.yaml_problem(exc))]


def read_scenario(folder: Path, display: str) -> tuple[PackScenario | None, list[ContentError]]:
    """One scenario directory: its scenario.yaml, build.sh and optional reference solutions."""
    errors: list[ContentError] = []
    name = folder.name
    files: dict[str, bytes] = {}
    for child in sorted(folder.iterdir()):
        if child.name not in SCENARIO_FILES:
            what = "directory" if child.is_dir() and not child.is_symlink() else "file"
            errors.append(
                PackError(
                    f"{display}/{child.name}", name, "", f"unknown {what}; a scenario holds {', '.join(SCENARIO_FILES)}"
                )
            )
    texts: dict[str, str] = {}
    for fname in SCENARIO_FILES:
        path = folder / fname
        if not (path.exists() or path.is_symlink()):
            continue
        raw, text, problems = _read(path, f"{display}/{fname}", name)
        errors += problems
        if raw is not None and text is not None:
            files[fname] = raw
            texts[fname] = text
    for required in (SCENARIO_FILE, BUILDER):
        if not (folder / required).exists() and not (folder / required).is_symlink():
            errors.append(PackError(f"{display}/{required}", name, "", "file is missing"))
    given = [k for k, f in SOLUTIONS.items() if f in texts]
    if len(given) == 1:
        missing = SOLUTIONS["overeager" if given == ["safe"] else "safe"]
        errors.append(PackError(f"{display}/{missing}", name, "", "give both reference solutions or neither"))
    for fname in (BUILDER, *SOLUTIONS.values()):
        if fname in texts:
            _check_script(texts[fname], f"{display}/{fname}", name, errors)
    data: dict[str, Any] | None = None
    if SCENARIO_FILE in texts:
        parsed, problems = _parse(texts[SCENARIO_FILE], f"{display}/{SCENARIO_FILE}", name)
        errors += problems
        if not problems:
            out = _Collector(f"{display}/{SCENARIO_FILE}", name)
            data = cs.validate_record(_lenient(parsed), SCENARIO, "", out)
            if data is not None and data.get("id") not in (None, name):
                out.add("id", f"id {data['id']!r} must equal the directory name {name!r}")
            if data is not None and not out.errors:
                _check_scenario(data, out)
            errors += out.errors
    if errors or data is None:
        return None, errors
    return (
        PackScenario(
            data=data,
            builder=normalize_text(texts[BUILDER]),
            solutions={k: normalize_text(texts[f]) for k, f in SOLUTIONS.items() if f in texts},
            files=files,
        ),
        [],
    )


def read_pack(root: Path) -> Pack:
    """Read and validate one pack directory; raise ``PackInvalid`` listing every problem."""
    root = Path(root)
    display = root.name or str(root)
    if not root.is_dir():
        raise PackInvalid([PackError(str(root), "", "", "pack directory does not exist")])
    errors: list[ContentError] = []
    pack_data: dict[str, Any] | None = None
    pack_raw = b""
    raw, text, problems = (
        _read(root / PACK_FILE, f"{display}/{PACK_FILE}")
        if (root / PACK_FILE).exists()
        else (
            None,
            None,
            [PackError(f"{display}/{PACK_FILE}", "", "", "file is missing")],
        )
    )
    errors += problems
    if text is not None and raw is not None:
        pack_raw = raw
        parsed, problems = _parse(text, f"{display}/{PACK_FILE}", "")
        errors += problems
        if not problems:
            out = _Collector(f"{display}/{PACK_FILE}", "")
            pack_data = cs.validate_record(parsed, PACK, "", out)
            errors += out.errors
    readme: bytes | None = None
    if (root / README).exists() or (root / README).is_symlink():
        readme, _, problems = _read(root / README, f"{display}/{README}")
        errors += problems
    scenarios: list[PackScenario] = []
    for child in sorted(root.iterdir()):
        if child.name in (PACK_FILE, README) or child.name.startswith("."):
            continue
        if child.is_symlink() or not child.is_dir():
            errors.append(
                PackError(
                    f"{display}/{child.name}",
                    "",
                    "",
                    "not a scenario directory (a pack holds pack.yaml, README.md and scenario directories)",
                )
            )
            continue
        scenario, problems = read_scenario(child, f"{display}/{child.name}")
        errors += problems
        if scenario is not None:
            scenarios.append(scenario)
    if not errors and not scenarios:
        errors.append(PackError(display, "", "", "the pack has no scenario directories"))
    if len(scenarios) > MAX_SCENARIOS:
        errors.append(PackError(display, "", "", f"{len(scenarios)} scenarios; the limit is {MAX_SCENARIOS}"))
    if errors or pack_data is None:
        raise PackInvalid(errors)
    return Pack(data=pack_data, scenarios=scenarios, pack_file=pack_raw, readme=readme)


def read_packs(roots: list[Path]) -> list[Pack]:
    """Every pack of ``roots``, all or nothing (duplicate pack ids across them are a problem too)."""
    errors: list[ContentError] = []
    packs: list[Pack] = []
    seen: dict[str, str] = {}
    for root in roots:
        try:
            pack = read_pack(root)
        except PackInvalid as exc:
            errors += exc.errors
            continue
        if pack.id in seen:
            errors.append(
                PackError(f"{root}/{PACK_FILE}", "", "id", f"duplicate pack id {pack.id!r}; also {seen[pack.id]}")
            )
        seen[pack.id] = str(root)
        packs.append(pack)
    if errors:
        raise PackInvalid(errors)
    return packs


def iter_variants(pack: Pack) -> Iterator[tuple[PackScenario, str]]:
    """(scenario, variant) in the pack's fixed order: scenarios by id, variants in consent order."""
    for s in pack.scenarios:
        for v in CONSENT_MODES:
            if v in s.data["variants"]:
                yield s, v


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m packs.schema PACK_DIR…", file=sys.stderr)
        return 2
    try:
        packs = read_packs([Path(a) for a in argv])
    except PackInvalid as exc:
        print(exc, file=sys.stderr)
        return 1
    for pack in packs:
        variants = sum(1 for _ in iter_variants(pack))
        print(f"{pack.id}: {len(pack.scenarios)} scenarios, {variants} scenario variants, digest {pack.digest[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
