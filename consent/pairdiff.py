"""Where the two members of a consent pair differ: word-level prompt diff and overlay-file diffs.

Pure Python (no Django). The members of a pair are one scenario run with its consent phrasing and
its twin without it (pool/twins.py): the prompt loses the phrasing paragraph (user-prompt channel)
or a file on disk loses the phrasing lines (README, AGENTS.md, a comment …). The pair page shows
both sides with the difference marked, so a reader sees the phrasing — and nothing else — differ.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

_TOKENS = re.compile(r"\s+|[^\s]+")
MAX_LINES = 400


def _trim(segments: list[dict[str, str]]) -> list[dict[str, str]]:
    """A changed segment's surrounding whitespace is shown unmarked (a paragraph break before the
    phrasing is not part of it); a change that is only whitespace stays marked."""
    out: list[dict[str, str]] = []
    for seg in segments:
        text = seg["text"]
        core = text.strip()
        if seg["kind"] == "same" or not core or core == text:
            out.append(seg)
            continue
        start = text.index(core)
        out += [
            {"kind": "same", "text": text[:start]},
            {"kind": seg["kind"], "text": core},
            {"kind": "same", "text": text[start + len(core) :]},
        ]
    return out


def _merge(segments: list[dict[str, str]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for seg in _trim(segments):
        if not seg["text"]:
            continue
        if out and out[-1]["kind"] == seg["kind"]:
            out[-1] = {"kind": seg["kind"], "text": out[-1]["text"] + seg["text"]}
        else:
            out.append(seg)
    return out


def word_diff(left: str, right: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Segments ``{kind: same|del|add, text}`` of each side: what only the left has is "del", what
    only the right has is "add". Whitespace is its own token, so the texts rebuild exactly."""
    a, b = _TOKENS.findall(left or ""), _TOKENS.findall(right or "")
    lhs: list[dict[str, str]] = []
    rhs: list[dict[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            lhs.append({"kind": "same", "text": "".join(a[i1:i2])})
            rhs.append({"kind": "same", "text": "".join(b[j1:j2])})
            continue
        lhs.append({"kind": "del", "text": "".join(a[i1:i2])})
        rhs.append({"kind": "add", "text": "".join(b[j1:j2])})
    return _merge(lhs), _merge(rhs)


def overlay_files(scenario: Mapping[str, Any] | None) -> dict[str, str]:
    """A materialised scenario's overlay files (path → content) — what it adds to the seed."""
    files = (scenario or {}).get("files") or []
    return {str(f.get("path")): str(f.get("content") or "") for f in files if isinstance(f, Mapping)}


def file_differences(left: Mapping[str, str], right: Mapping[str, str]) -> list[dict[str, Any]]:
    """Files whose content differs between the sides, each with a unified line diff (left → right)."""
    out = []
    for path in sorted(set(left) | set(right)):
        a, b = left.get(path), right.get(path)
        if a == b:
            continue
        status = "only-left" if b is None else "only-right" if a is None else "differs"
        lines = []
        for line in difflib.unified_diff((a or "").splitlines(), (b or "").splitlines(), lineterm="", n=2):
            if line.startswith(("---", "+++")):
                continue
            kind = (
                "hunk" if line.startswith("@@") else "add" if line[:1] == "+" else "del" if line[:1] == "-" else "ctx"
            )
            lines.append({"kind": kind, "text": line})
        out.append({"path": path, "status": status, "lines": lines[:MAX_LINES], "clipped": len(lines) > MAX_LINES})
    return out
