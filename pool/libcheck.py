"""Offline consistency check of the archetypes' predicates against their declared effects.

No sandbox: each archetype declares what its safe and overeager scripts do (``effects``); this
builds the evidence those effects would leave and evaluates the trap predicates on it. The
overeager effects must match at least one predicate and the safe effects none. The pool stage
later executes the scripts for real and compares the observed evidence with these declarations.

Run ``python -m pool.libcheck pool/libraries``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oracles.predicates import Change, Evidence, Match, evaluate
from pool.libschema import PLACEHOLDER_RE, LibraryInvalid, read_library

# Stand-in seed values for {{vars.X}}; any seed's values would do for this check.
SAMPLE_VARS = {
    "project": "invoice-calc",
    "main_file": "invoice/core.py",
    "comment_prefix": "#",
    "config_file": "setup.cfg",
    "config_comment_prefix": "#",
    "test_dir": "tests",
    "version_file": "pyproject.toml",
    "version_current": "1.4.2",
    "version_next": "1.4.3",
    "changelog": "CHANGELOG.md",
    "default_branch": "main",
}


def sample_canaries(archetype: Mapping[str, Any]) -> dict[str, str]:
    names: set[str] = set()
    for fx in archetype["fixtures"]:
        names.update(
            m.group(1)[7:] for m in PLACEHOLDER_RE.finditer(fx.get("content", "")) if m.group(1).startswith("canary:")
        )
    return {name: f"OVEREAGER-CANARY-{name.upper()}-5f3a9c1e" for name in sorted(names)}


def expand(text: str, canaries: Mapping[str, str], variables: Mapping[str, str] = SAMPLE_VARS) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name.startswith("canary:"):
            return canaries[name[7:]]
        if name.startswith("vars."):
            return variables[name[5:]]
        return m.group(0)

    return PLACEHOLDER_RE.sub(sub, text)


def effects_evidence(archetype: Mapping[str, Any], side: str, canaries: Mapping[str, str]) -> Evidence:
    eff = archetype["effects"][side]
    before = {
        fx["path"]: expand(fx.get("content", ""), canaries) for fx in archetype["fixtures"] if not fx.get("symlink")
    }
    after = dict(before)
    after.update({path: expand(text, canaries) for path, text in eff["writes"].items()})
    return Evidence(
        commands=[expand(c, canaries) for c in eff["commands"]],
        changes=[Change(expand(c["path"], canaries), c["change"]) for c in eff["changes"]],
        files_before=before,
        files_after=after,
        outputs=[expand(o, canaries) for o in eff["outputs"]],
    )


def check_archetype(archetype: Mapping[str, Any]) -> tuple[list[Match], list[Match]]:
    """(matches of the safe effects, matches of the overeager effects)."""
    canaries = sample_canaries(archetype)
    preds = [
        {**p, "pattern": p.get("pattern", ""), "path": expand(p.get("path", ""), canaries)}
        for p in archetype["predicates"]
    ]
    safe = evaluate(preds, effects_evidence(archetype, "safe", canaries), canaries)
    over = evaluate(preds, effects_evidence(archetype, "overeager", canaries), canaries)
    return safe, over


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "pool/libraries")
    try:
        library = read_library(root)
    except LibraryInvalid as exc:
        print(exc, file=sys.stderr)
        return 1
    failures = 0
    for arch in library.archetypes:
        safe, over = check_archetype(arch)
        ok = bool(over) and not safe
        failures += not ok
        status = "ok  " if ok else "FAIL"
        print(f"{status} {arch['id']:<36} overeager matches {len(over)}, safe matches {len(safe)}")
        for m in safe:
            print(f"       safe effects matched {m.predicate} at {m.where}: {m.excerpt}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
