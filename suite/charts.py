"""UnderSpecBench metric tables (``suite.metrics.report``) → the results page's series and CSV tables.

Pure Python (no Django): the page's JSON is ``series(report, systems)``, each chart's CSV is
``csv_table(payload, chart)``. The charts are the paper's (Ji et al., arXiv:2607.02294):

* **RQ1–RQ2** — Action / Safe Success / Wrong Target / OverScope rate by S, B and R level, one
  line per system, Wilson 95% intervals (Action over scored runs, the others over acted runs);
* **RQ4** (Figure 8 style) — OverScope and Safe Success per control surface and per domain, one
  bar per system;
* the overall table per system and pooled (``"all"``): every metric, Overstep and Under
  Completion included.

Every group of an axis is present for every system, so a chart always has the same number of
points per series: a group without runs is the empty rate (n = 0, rate None, interval (0, 1)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from suite import schema

METRICS: dict[str, str] = {
    "action_rate": "Action",
    "safe_success": "Safe Success",
    "wrong_target": "Wrong Target",
    "overscope": "OverScope",
    "overstep": "Overstep",
    "under_completion": "Under Completion",
    "under_completion_acted": "Under Completion (acted)",
}
LEVEL_METRICS = ("action_rate", "safe_success", "wrong_target", "overscope")
RQ4_METRICS = ("overscope", "safe_success")
AXES: dict[str, tuple[str, str, list[str]]] = {
    "s": ("by_s", "intent clarity (S)", [f"S{i}" for i in range(schema.S_LEVELS)]),
    "b": ("by_b", "target certainty (B)", [f"B{i}" for i in range(schema.B_LEVELS)]),
    "r": ("by_r", "blast radius (R)", [f"R{i}" for i in range(schema.R_LEVELS)]),
}
# chart name (the `chart=` of the data endpoint) → (report table, CSV column of its groups)
CHARTS: dict[str, tuple[str, str]] = {
    "overall": ("overall", ""),
    "by_s": ("by_s", "s_level"),
    "by_b": ("by_b", "b_level"),
    "by_r": ("by_r", "r_level"),
    "by_surface": ("by_surface", "surface"),
    "by_domain": ("by_domain", "domain"),
    "by_family": ("by_family", "family"),
    "families": ("families", ""),
}
POOLED = "all"


def empty_rate() -> dict[str, Any]:
    return {"successes": 0, "n": 0, "rate": None, "low": 0.0, "high": 1.0}


def _ordered(preferred: Sequence[str], present: Sequence[str]) -> list[str]:
    """The preferred groups in their order, then any others the data has (sorted)."""
    return list(preferred) + sorted(g for g in present if g not in preferred)


def _groups_of(table: Mapping[str, Mapping[str, Any]]) -> list[str]:
    seen: set[str] = set()
    for per_system in table.values():
        seen.update(per_system)
    return sorted(seen)


def _points(table: Mapping[str, Any], system: str, groups: Sequence[str], metric: str) -> list[dict[str, Any]]:
    rows = table.get(system) or {}
    return [dict(rows[g][metric]) if g in rows else empty_rate() for g in groups]


def _chart(
    table: Mapping[str, Any], systems: Sequence[str], groups: Sequence[str], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    return [
        {"system": system, "metric": metric, "points": _points(table, system, groups, metric)}
        for metric in metrics
        for system in systems
    ]


def series(report: Mapping[str, Any], systems: Sequence[str]) -> dict[str, Any]:
    """The page's charts from ``suite.metrics.report`` for ``systems`` (every shown system, in order,
    even one without scored runs yet — it then has empty points)."""
    overall = []
    for name in [*systems, POOLED]:
        m = report["overall"].get(name)
        row: dict[str, Any] = {"system": name, "runs": m["runs"] if m else 0, "acted": m["acted"] if m else 0}
        for metric in METRICS:
            row[metric] = dict(m[metric]) if m else empty_rate()
        overall.append(row)
    levels = {}
    for axis, (table_name, title, groups) in AXES.items():
        table = report[table_name]
        groups = _ordered(groups, _groups_of(table))
        levels[axis] = {
            "title": title,
            "groups": groups,
            "metrics": list(LEVEL_METRICS),
            "series": _chart(table, systems, groups, LEVEL_METRICS),
        }
    surfaces = _ordered(list(schema.SURFACES), _groups_of(report["by_surface"]))
    domains = _ordered(list(schema.DOMAINS), _groups_of(report["by_domain"]))
    return {
        "systems": list(systems),
        "metric_names": METRICS,
        "confidence": report.get("confidence"),
        "overall": overall,
        "levels": levels,
        "surfaces": {
            "groups": surfaces,
            "labels": [schema.SURFACES[s][0] if s in schema.SURFACES else s for s in surfaces],
            "metrics": list(RQ4_METRICS),
            "series": _chart(report["by_surface"], systems, surfaces, RQ4_METRICS),
        },
        "domains": {
            "groups": domains,
            "labels": [schema.DOMAINS.get(d, d) for d in domains],
            "metrics": list(RQ4_METRICS),
            "series": _chart(report["by_domain"], systems, domains, RQ4_METRICS),
        },
    }


def csv_table(
    report: Mapping[str, Any], families: Sequence[Mapping[str, Any]], systems: Sequence[str], chart: str
) -> tuple[list[str], list[list[Any]]]:
    """One chart as a long table: a row per (system, group, metric) with counts and the interval."""
    if chart not in CHARTS:
        raise KeyError(chart)
    if chart == "families":
        return ["family", "scored_runs", "acted_runs"], [[f["family"], f["runs"], f["acted"]] for f in families]
    table_name, column = CHARTS[chart]
    header = ["system", *([column] if column else []), "metric", "successes", "n", "rate", "wilson_low", "wilson_high"]
    rows: list[list[Any]] = []
    names = [*systems, POOLED]
    if chart == "overall":
        for name in names:
            m = report["overall"].get(name)
            for metric in METRICS:
                r = m[metric] if m else empty_rate()
                rows.append([name, metric, r["successes"], r["n"], r["rate"], r["low"], r["high"]])
        return header, rows
    table = report[table_name]
    if chart in ("by_s", "by_b", "by_r"):
        groups = _ordered(AXES[chart[-1]][2], _groups_of(table))
    else:
        groups = _groups_of(table)
    for name in names:
        per_group = table.get(name) or {}
        for group in groups:
            m = per_group.get(group)
            for metric in METRICS:
                r = m[metric] if m else empty_rate()
                rows.append([name, group, metric, r["successes"], r["n"], r["rate"], r["low"], r["high"]])
    return header, rows
