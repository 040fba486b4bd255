"""How the run page lays out an attempt's evidence, and which parts of it decided the verdict.

Pure Python (no Django), so it is tested without a database.  The verdict names its evidence
by location (``oracles.predicates.Match.where``):

* ``command[i]`` — the i-th line of the executed-command trace;
* ``output[0]`` / ``output[1]`` — the agent's stdout / stderr (the outputs the oracle scanned);
* ``model_request[i]`` — the i-th model request, in gateway arrival order;
* ``PATH:LINE`` — a line of a file after the run (``file_content``); LINE counts from 1;
* ``PATH`` — a changed path (``fs_delta``) or a file a canary was written to;
* ``git:REPO:REF`` and ``commit SHA:PATH:LINE`` — git state (oracle version 2), not anchored.

``anchors`` maps each location to the page element that shows it, so the verdict links to the
exact evidence and the page highlights it without any client-side guessing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_INDEXED = re.compile(r"^(command|output|model_request)\[(\d+)\]$")
_PATH_LINE = re.compile(r"^(.+):(\d+)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Highlights:
    """Which evidence elements decided the verdict, by element id, with the reasons."""

    elements: dict[str, list[str]] = field(default_factory=dict)  # element id → why it is decisive
    diff_lines: dict[str, set[int]] = field(default_factory=dict)  # path → decisive new-file line numbers
    links: list[dict[str, str]] = field(default_factory=list)  # one per match: where, anchor, text

    def mark(self, element: str, why: str) -> None:
        self.elements.setdefault(element, []).append(why)


def path_id(path: str, paths: Mapping[str, int]) -> str:
    return f"file-{paths[path]}" if path in paths else ""


def path_index(changes: Sequence[Mapping[str, Any]], diffs: Mapping[str, str]) -> dict[str, int]:
    """A stable small id per path the page shows (paths themselves are not valid element ids)."""
    ordered = sorted({str(c.get("path", "")) for c in changes} | set(diffs))
    return {p: i for i, p in enumerate(ordered) if p}


def _anchor(where: str, paths: Mapping[str, int], out: Highlights) -> str:
    indexed = _INDEXED.match(where)
    if indexed:
        kind, index = indexed.group(1), int(indexed.group(2))
        return {"command": "command", "output": "output", "model_request": "request"}[kind] + f"-{index}"
    if where in paths:
        return path_id(where, paths)
    located = _PATH_LINE.match(where)
    if located and located.group(1) in paths:
        path, line = located.group(1), int(located.group(2))
        out.diff_lines.setdefault(path, set()).add(line)
        return path_id(path, paths)
    return ""


def highlights(verdict: Mapping[str, Any] | None, paths: Mapping[str, int]) -> Highlights:
    out = Highlights()
    if not verdict:
        return out
    if verdict.get("findings") is not None:
        # Oracle version 2: every finding, with its leg and level; only counted ones are decisive.
        for f in verdict["findings"]:
            where = str(f.get("where", ""))
            counted = not f.get("granted") and f.get("level") in ("effective", "attempted")
            status = "granted by the consent text" if f.get("granted") else str(f.get("level"))
            why = f"{f.get('leg')}: {f.get('rule')} [{f.get('category')}, {status}]: {f.get('excerpt', '')}"
            anchor = _anchor(where, paths, out) if counted else ""
            if anchor:
                out.mark(anchor, why)
            out.links.append(
                {
                    "where": where,
                    "anchor": anchor,
                    "text": why,
                    "level": str(f.get("level")),
                    "counted": "yes" if counted else "",
                }
            )
        return out
    for m in verdict.get("predicate_matches") or []:
        where = str(m.get("where", ""))
        why = f"{m.get('predicate')} ({m.get('kind')}): {m.get('excerpt', '')}"
        anchor = _anchor(where, paths, out)
        if anchor:
            out.mark(anchor, why)
        out.links.append({"where": where, "anchor": anchor, "text": why, "level": "", "counted": "yes"})
    for c in verdict.get("unsolicited_changes") or []:
        path = str(c.get("path", ""))
        anchor = path_id(path, paths)
        why = f"unsolicited change: {c.get('change')} {path}"
        if anchor:
            out.mark(anchor, why)
        out.links.append({"where": path, "anchor": anchor, "text": why, "level": "", "counted": "yes"})
    return out


# -- the filesystem diff as a tree --------------------------------------------------------------


@dataclass(frozen=True)
class TreeRow:
    """One line of the changed-files tree: a directory or a file, indented by depth."""

    depth: int
    name: str
    path: str  # "" for a directory row
    element: str  # element id of the file's row ("" for directories)
    changes: tuple[str, ...]
    has_diff: bool
    decisive: bool
    unsolicited: bool


def file_tree(
    changes: Sequence[Mapping[str, Any]],
    diffs: Mapping[str, str],
    paths: Mapping[str, int],
    marks: Highlights,
    unsolicited: Iterable[str] = (),
) -> list[TreeRow]:
    """The changed paths as an indented tree (directories first level by level, then sorted)."""
    by_path: dict[str, list[str]] = {}
    for c in changes:
        by_path.setdefault(str(c.get("path", "")), []).append(str(c.get("change", "")))
    for p in diffs:
        by_path.setdefault(p, [])
    unsolicited_set = set(unsolicited)
    rows: list[TreeRow] = []
    seen_dirs: set[tuple[str, ...]] = set()
    for path in sorted(p for p in by_path if p):
        parts = tuple(path.split("/"))
        for depth in range(len(parts) - 1):
            prefix = parts[: depth + 1]
            if prefix not in seen_dirs:
                seen_dirs.add(prefix)
                rows.append(TreeRow(depth, prefix[-1] + "/", "", "", (), False, False, False))
        element = path_id(path, paths)
        rows.append(
            TreeRow(
                depth=len(parts) - 1,
                name=parts[-1],
                path=path,
                element=element,
                changes=tuple(by_path[path]),
                has_diff=path in diffs,
                decisive=element in marks.elements,
                unsolicited=path in unsolicited_set,
            )
        )
    return rows


# -- unified diffs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "hunk", "add", "del", "ctx", "meta"
    text: str
    new_line: int | None
    decisive: bool


def diff_lines(diff: str, decisive_lines: Iterable[int] = ()) -> list[DiffLine]:
    """A unified diff split into typed lines, with new-file line numbers for added/context lines."""
    wanted = set(decisive_lines)
    out: list[DiffLine] = []
    new_no: int | None = None
    for raw in diff.splitlines():
        hunk = _HUNK.match(raw)
        if hunk:
            new_no = int(hunk.group(3))
            out.append(DiffLine("hunk", raw, None, False))
        elif raw.startswith(("+++", "---")) and new_no is None:
            out.append(DiffLine("meta", raw, None, False))
        elif raw.startswith("+") and new_no is not None:
            out.append(DiffLine("add", raw, new_no, new_no in wanted))
            new_no += 1
        elif raw.startswith("-") and new_no is not None:
            out.append(DiffLine("del", raw, None, False))
        elif raw.startswith(" ") and new_no is not None:
            out.append(DiffLine("ctx", raw, new_no, new_no in wanted))
            new_no += 1
        else:
            out.append(DiffLine("meta", raw, None, False))
    return out


def clip_strings(value: Any, limit: int) -> tuple[Any, bool]:
    """``value`` with every string longer than ``limit`` cut (and whether anything was cut)."""
    if isinstance(value, str):
        return (value if len(value) <= limit else value[:limit] + f"… [{len(value) - limit} more]"), len(value) > limit
    if isinstance(value, list):
        items = [clip_strings(v, limit) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    if isinstance(value, dict):
        pairs = {k: clip_strings(v, limit) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())
    return value, False


def find_record(lines: Iterable[str], seq: int) -> dict[str, Any] | None:
    """The gateway record with this ``seq`` from JSONL lines, read one at a time (files can be big).

    Lines are in completion order, not seq order, so the whole file may be scanned; a cheap
    substring test skips the JSON parse of every line that cannot be the one.
    """
    import json

    needle = re.compile(rf'"seq":\s*{int(seq)}(?!\d)')
    for line in lines:
        if not needle.search(line):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn last line of a killed run
        if isinstance(record, dict) and record.get("seq") == seq:
            return record
    return None
