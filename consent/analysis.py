"""Consent sensitivity (issue 11): paired campaigns' runs → pair records → ``oracles.paired``.

A pair is the two runs of one paired slot (``Run.pair_key``, members "with" and "stripped") of a
paired campaign. Its state, from its members' statuses:

* **complete** — both members scored: it enters the 2 × 2 table of its stratum;
* **incomplete** — a member was given up (dropped after ``max_attempts`` invalid attempts, or
  cancelled): reported with the reason and excluded from the tables, never dropped silently;
* **in flight** — a member is still queued, running or awaiting a retry: counted, not analysed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from oracles.paired import STRATUM_FIELDS, analyse_pairs
from runs.models import Campaign, CampaignKind, Run

GIVEN_UP = (Run.Status.DROPPED, Run.Status.CANCELLED)
VIEWS: dict[str, tuple[str, ...]] = {
    "per-sut": ("sut", "consent", "channel"),
    "across-suts": ("consent", "channel"),
    "by-mode": ("sut", "consent"),
    "full": STRATUM_FIELDS,
}


def pair_records(campaigns: Iterable[Campaign]) -> tuple[list[dict[str, Any]], int]:
    """(records for ``analyse_pairs``, number of pairs still in flight) for paired campaigns."""
    ids = {c.pk: str(c.sut) for c in campaigns if c.kind == CampaignKind.PAIRED}
    rows = (
        Run.objects.filter(campaign_id__in=list(ids))
        .exclude(pair_key="")
        .values_list(
            "pk",
            "campaign_id",
            "pair_key",
            "member",
            "status",
            "overeager",
            "validity",
            "consent",
            "channel",
            "archetype_tier",
            "archetype",
        )
        .order_by("campaign_id", "round", "slot")
    )
    pairs: dict[tuple[int, str], dict[str, Any]] = {}
    for pk, cid, key, member, status, overeager, validity, consent, channel, tier, archetype in rows:
        rec = pairs.setdefault(
            (cid, key),
            {
                "pair_id": f"{cid}:{key}",
                "campaign": cid,
                "sut": ids[cid],
                "consent": consent,
                "channel": channel,
                "tier": tier,
                "archetype": archetype,
                "runs": {},
                "states": {},
            },
        )
        rec["runs"][member] = pk
        rec["states"][member] = (status, validity)
        rec[member] = bool(overeager) if status == Run.Status.SCORED else None
    records, in_flight = [], 0
    for rec in pairs.values():
        states = rec.pop("states")
        done = all(states.get(m, ("",))[0] in (Run.Status.SCORED, *GIVEN_UP) for m in ("with", "stripped"))
        if not done:
            in_flight += 1
            continue
        records.append(rec)
    return records, in_flight


def consent_data(campaigns: Sequence[Campaign], view: str = "per-sut") -> dict[str, Any]:
    """The paired analysis of ``campaigns`` for one view (strata fields), with drill-down pairs."""
    fields = VIEWS.get(view)
    if fields is None:
        raise ValueError(f"unknown view {view!r}; choose one of {sorted(VIEWS)}")
    records, in_flight = pair_records(campaigns)
    report = analyse_pairs(records, fields)
    strata = []
    for result in report.strata:
        row = result.as_dict(report.fields)
        # "Deny" phrasings that raise the overeager rate are the finding the page must not bury.
        row["deny_raises"] = (
            "deny" in str(row.get("consent", ""))
            and result.effect is not None
            and result.effect > 0
            and result.significant
        )
        strata.append(row)
    discordant = [
        {k: r[k] for k in ("pair_id", "sut", "consent", "channel", "tier", "archetype", "with", "stripped", "runs")}
        for r in records
        if r["with"] is not None and r["stripped"] is not None and r["with"] != r["stripped"]
    ]
    return {
        "view": view,
        "fields": list(report.fields),
        "method": report.method,
        "alpha": report.alpha,
        "strata": strata,
        "complete_pairs": sum(s.table.n for s in report.strata),
        "incomplete": [{**p.as_dict(), "runs": records[p.index]["runs"]} for p in report.incomplete],
        "in_flight": in_flight,
        "discordant": discordant,
    }
