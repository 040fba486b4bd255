"""How the run page shows an UnderSpecBench verdict: the flags, the objects that decided them, and
the emulator calls that changed those objects. Pure Python (no Django).

The verdict (``suite.oracle.Verdict.as_dict``) classifies every changed object (intended,
included, consequence, ignored, candidate, overscope, collateral…) and gives one reason list per
flag; the attempt's evidence (``suite.execution.Evidence.as_dict``) holds the objects' values
before and after and the emulator service's call log, where each call lists the object ids it
changed. ``layout`` joins the two: every changed object with its before → after fields (or its
text diff) and the calls that changed it, and every call marked when it changed an object that
decided a flag — the page highlights those.
"""

from __future__ import annotations

import difflib
import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from suite.emulators.base import flatten

FLAGS: tuple[tuple[str, str], ...] = (
    ("safe_success", "Safe Success"),
    ("wrong_target", "Wrong Target"),
    ("overscope", "OverScope"),
    ("acted", "acted"),
    ("under_completion", "Under Completion"),
)
# Which flag an object's class feeds (suite.oracle.score, rules 5–7); "intended" depends on its check.
CLASS_FLAG = {
    "candidate": "wrong_target",
    "collateral-same-kind": "wrong_target",
    "overscope": "overscope",
    "collateral": "overscope",
}
FLAG_NAMES = dict(FLAGS)
META_KEYS = ("_owner", "_managed")
VALUE_CLIP = 300
MAX_FIELDS = 60
MAX_DIFF_LINES = 400


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= VALUE_CLIP else text[:VALUE_CLIP] + f"… ({len(text) - VALUE_CLIP} more)"


def _strip(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: v for k, v in value.items() if k not in META_KEYS}
    return value


def field_changes(before: Any, after: Any) -> list[dict[str, str]]:
    """Changed leaves as ``{path, before, after}`` ("—" for an absent side), text values excepted."""
    a = flatten(_strip(before)) if before is not None else {}
    b = flatten(_strip(after)) if after is not None else {}
    out = []
    for path in sorted(set(a) | set(b)):
        if path == "text":
            continue
        if path in a and path in b and a[path] == b[path]:
            continue
        out.append(
            {
                "path": path or "(value)",
                "before": _clip(a[path]) if path in a else "—",
                "after": _clip(b[path]) if path in b else "—",
            }
        )
    return out[:MAX_FIELDS]


def text_diff(before: Any, after: Any) -> list[dict[str, str]] | None:
    """A unified line diff when either side is a text object (``{"text": …}``), else None."""
    a = before.get("text") if isinstance(before, Mapping) else None
    b = after.get("text") if isinstance(after, Mapping) else None
    if a is None and b is None:
        return None
    lines = []
    for line in difflib.unified_diff((a or "").splitlines(), (b or "").splitlines(), "before", "after", lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        kind = (
            "hunk" if line.startswith("@@") else "add" if line.startswith("+") else "del" if line[:1] == "-" else "ctx"
        )
        lines.append({"kind": kind, "text": line})
    return lines[:MAX_DIFF_LINES]


def _argv_text(argv: Sequence[Any]) -> str:
    return shlex.join(str(a) for a in argv)


def layout(verdict: Mapping[str, Any] | None, evidence: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the run page's UnderSpecBench panels show, with the decisive parts marked."""
    v = verdict or {}
    ev = v.get("evidence") or {}
    before = evidence.get("objects_before") or {}
    after = evidence.get("objects_after") or {}
    calls = list(evidence.get("calls") or [])
    checks = {str(c.get("id")): c for c in ev.get("intended") or []}
    reasons = ev.get("reasons") or {}
    changed_by: dict[str, list[int]] = {}
    for call in calls:
        for oid in call.get("changed") or []:
            changed_by.setdefault(str(oid), []).append(int(call.get("seq", 0)))

    objects = []
    element_of: dict[str, str] = {}
    decisive_objects: dict[str, str] = {}  # id → why
    for i, row in enumerate(ev.get("changes") or []):
        oid = str(row.get("id"))
        cls = str(row.get("class", ""))
        flag = CLASS_FLAG.get(cls, "")
        if cls == "intended":
            check = checks.get(oid) or {}
            flag = "overscope" if not check.get("within_scope", True) else "safe_success"
        fired = bool(v.get(flag)) if flag else False
        # An intended object decides Safe Success either way (achieved or not), so it is always shown
        # as decisive; a candidate or over-scope object is decisive because its flag fired.
        decisive = cls == "intended" or fired
        element = f"object-{i}"
        element_of[oid] = element
        b, a = before.get(oid), after.get(oid)
        why = f"{oid}: {row.get('change')} ({cls}" + (f" → {FLAG_NAMES[flag]}" if flag else "") + ")"
        if decisive:
            decisive_objects[oid] = why
        objects.append(
            {
                "i": i,
                "element": element,
                "id": oid,
                "change": row.get("change"),
                "class": cls,
                "flag": flag,
                "flag_name": FLAG_NAMES.get(flag, ""),
                "fired": fired,
                "decisive": decisive,
                "owner": row.get("owner"),
                "fields": field_changes(b, a),
                "text_diff": text_diff(b, a),
                "calls": changed_by.get(oid, []),
                "check": checks.get(oid),
            }
        )

    action_seqs = {int(c.get("seq", 0)) for c in ev.get("action_calls") or [] if c.get("seq") is not None}
    call_rows = []
    for call in calls:
        seq = int(call.get("seq", 0))
        changed = [str(o) for o in call.get("changed") or []]
        reasons_of_call = [decisive_objects[o] for o in changed if o in decisive_objects]
        call_rows.append(
            {
                "seq": seq,
                "element": f"call-{seq}",
                "tool": call.get("tool"),
                # The service logs the tool's arguments; the command line is the tool plus them.
                "argv": _argv_text([call.get("tool") or "", *(call.get("argv") or [])]),
                "exit_code": call.get("exit_code"),
                "mutating": bool(call.get("mutating")),
                "dry_run": bool(call.get("dry_run")),
                "declined": bool(call.get("declined")),
                "action": seq in action_seqs,
                "changed": [{"id": o, "element": element_of.get(o, "")} for o in changed],
                "read": [str(o) for o in call.get("read") or []][:20],
                "stdout": str(call.get("stdout") or ""),
                "stderr": str(call.get("stderr") or ""),
                "decisive": bool(reasons_of_call),
                "why": reasons_of_call,
            }
        )

    flags = [
        {"key": key, "name": name, "on": bool(v.get(key)), "reasons": list(reasons.get(key) or [])}
        for key, name in FLAGS
    ]
    intended = [
        {**c, "element": element_of.get(str(c.get("id")), ""), "ok": bool(c.get("achieved") and c.get("within_scope"))}
        for c in ev.get("intended") or []
    ]
    return {
        "outcome": v.get("outcome", ""),
        "has_verdict": bool(verdict),
        "flags": flags,
        "objects": objects,
        "intended": intended,
        "calls": call_rows,
        "decisive_calls": sum(1 for c in call_rows if c["decisive"]),
        "git_actions": [
            {"action": g.get("action"), "argv": _argv_text(g.get("argv") or [])} for g in ev.get("git_actions") or []
        ],
        "unattributed": [o["id"] for o in objects if not o["calls"] and o["class"] not in ("ignored", "consequence")],
    }


def world_rows(state: Mapping[str, Any], ground_truth: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A family's initial emulated objects as rows: id, kind, the oracle's class, readable fields.

    The class is what the oracle would call a change to the object (suite.oracle.score): intended,
    candidate (→ Wrong Target), over-scope (→ OverScope), ignored — or "" (other kind: OverScope;
    the intended kind: Wrong Target), so a reader sees the target, its look-alikes and what must
    stay untouched side by side.
    """
    from suite import emulators
    from suite.oracle import id_match, object_kind

    intended = {str(i.get("id")): i for i in ground_truth.get("intended") or []}
    candidates = set(ground_truth.get("candidates") or [])
    overscope = list(ground_truth.get("overscope") or [])
    ignore = list(ground_truth.get("ignore") or [])
    rows = []
    for oid, value in emulators.objects(emulators.prepare_state(dict(state))).items():
        if oid in intended:
            cls = f"intended ({intended[oid].get('change')})"
        elif oid in candidates:
            cls = "candidate"
        elif any(id_match(g, oid) for g in ignore):
            cls = "ignored"
        elif any(id_match(g, oid) for g in overscope):
            cls = "over-scope"
        else:
            cls = ""
        leaves = flatten(_strip(value))
        fields = [{"path": k or "(value)", "value": _clip(v)} for k, v in sorted(leaves.items())]
        rows.append({"id": oid, "kind": object_kind(oid), "class": cls, "fields": fields[:MAX_FIELDS]})
    return rows
