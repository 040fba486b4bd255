"""Consent-sensitivity analysis (``consent.analysis.consent_data``) → the page's forest plot, tables and CSV.

Pure Python (no Django). Strata are ordered by SUT, consent mode (deny … allow, the dashboard's
order), channel and tier, and each gets a stable ``key`` (its field values joined by "|") that
ties it to its discordant and incomplete pairs, so the page can drill down from a stratum to the
pairs that moved its effect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

CHARTS = ("strata", "incomplete", "discordant")
STRATUM_COLUMNS = ("sut", "consent", "channel", "tier")


def stratum_key(values: Sequence[Any]) -> str:
    return "|".join(str(v) for v in values)


def _order(fields: Sequence[str], consent_order: Sequence[str]) -> Any:
    rank = {c: i for i, c in enumerate(consent_order)}

    def key(row: Mapping[str, Any]) -> tuple[Any, ...]:
        out: list[Any] = []
        for f in fields:
            value = row.get(f)
            out.append((rank.get(str(value), len(rank)), str(value)) if f == "consent" else (0, str(value)))
        return tuple(out)

    return key


def shape(data: Mapping[str, Any], consent_order: Sequence[str]) -> dict[str, Any]:
    """``consent_data`` with strata ordered and keyed, pairs tagged with their stratum's key."""
    fields = list(data["fields"])
    strata = []
    for row in sorted(data["strata"], key=_order(fields, consent_order)):
        values = [row[f] for f in fields]
        strata.append({**row, "key": stratum_key(values), "label": " · ".join(str(v) for v in values)})
    discordant = [
        {
            **p,
            "stratum": stratum_key([p.get(f) for f in fields]),
            # b: overeager only with the phrasing; c: only without it (oracles/paired.py PairTable)
            "cell": "b" if p["with"] and not p["stripped"] else "c",
        }
        for p in data["discordant"]
    ]
    incomplete = [{**p, "stratum_key": stratum_key(p.get("stratum") or [])} for p in data["incomplete"]]
    return {
        **data,
        "strata": strata,
        "discordant": discordant,
        "incomplete": incomplete,
        "significant": sum(1 for s in strata if s["significant"]),
        "deny_raises": [s["key"] for s in strata if s["deny_raises"]],
    }


def csv_table(data: Mapping[str, Any], chart: str) -> tuple[list[str], list[list[Any]]]:
    """One table of the page as CSV rows (``chart`` is one of CHARTS)."""
    fields = list(data["fields"])
    if chart == "strata":
        header = [
            *fields,
            "pairs",
            "a_both",
            "b_with_only",
            "c_stripped_only",
            "d_neither",
            "rate_with",
            "rate_stripped",
            "effect",
            "newcombe_low",
            "newcombe_high",
            "mcnemar_p",
            "bh_q",
            "significant",
            "deny_raises",
            "incomplete",
        ]
        rows = [
            [
                *[s[f] for f in fields],
                s["table"]["n"],
                s["table"]["a"],
                s["table"]["b"],
                s["table"]["c"],
                s["table"]["d"],
                s["rate_with"],
                s["rate_stripped"],
                s["effect"],
                s["low"],
                s["high"],
                s["p"],
                s["q"],
                s["significant"],
                s["deny_raises"],
                s["incomplete"],
            ]
            for s in data["strata"]
        ]
        return header, rows
    if chart == "incomplete":
        header = ["pair", *fields, "reason", "with_run", "stripped_run"]
        return header, [
            [p["pair_id"], *list(p.get("stratum") or []), p["reason"], p["runs"].get("with"), p["runs"].get("stripped")]
            for p in data["incomplete"]
        ]
    if chart == "discordant":
        header = [
            "pair",
            *STRATUM_COLUMNS,
            "archetype",
            "with_overeager",
            "stripped_overeager",
            "with_run",
            "stripped_run",
        ]
        return header, [
            [
                p["pair_id"],
                *[p.get(c) for c in STRATUM_COLUMNS],
                p.get("archetype"),
                p["with"],
                p["stripped"],
                p["runs"].get("with"),
                p["runs"].get("stripped"),
            ]
            for p in data["discordant"]
        ]
    raise KeyError(chart)
