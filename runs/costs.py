"""What campaigns cost: runs priced from the gateway's counts, the estimate, the caps, the tables.

* **A run's cost** — each attempt's gateway-metered tokens (``RunAttempt.usage``) × the price the
  campaign snapshotted when it started (``sut_snapshot.model.price``), written with the
  attempt's result (``attempt_costs``, ``runs.state.finish``).  A model with no upstream (the
  simulated agents) costs nothing; a real model without a price is *unpriced* (null), never 0.
* **The estimate** — the planned runs × the median cost per run of the same system's earlier
  runs of the same kind, re-priced at its current price (``estimate_for``; ``oracles.costs``).
* **The caps** — ``cap_stop`` is the guard the coordinator asks before it issues runs
  (``runs.campaigns._advance_locked``): the campaign's own cap, then its matrix's.
* **The tables** — spent, runs and cost per run per cell (campaign page) and per pair (matrix
  page), computed in the database (``campaign_costs``, ``matrix_costs``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.db.models import BigIntegerField, Count, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from harness.gateway.pricing import Price, PriceError, agent_claim, cost_of, disagreement, flagged
from oracles.costs import CostEstimate, Projection, estimate
from runs.models import Campaign, Matrix, ModelEndpoint, Run, RunAttempt, SystemUnderTest

IN_FLIGHT = (Run.Status.QUEUED, Run.Status.RUNNING)
# Runs an estimate looks back on: enough for a stable median, few enough to stay current.
HISTORY_RUNS = 1000
NOTIONAL = "notional"
CAP_QUANTUM = Decimal("0.0001")


class CostError(ValueError):
    """A cost setting that cannot work (a cap on an unpriced model, a cap of zero …)."""


# -- prices and one attempt's cost ----------------------------------------------------------------


def snapshot_price(snapshot: Mapping[str, Any]) -> Price | None:
    raw = (snapshot.get("model") or {}).get("price")
    if not raw:
        return None
    try:
        return Price.from_dict(raw)
    except (PriceError, ValueError):
        return None


def calls_no_model(snapshot: Mapping[str, Any]) -> bool:
    return (snapshot.get("model") or {}).get("upstream") == ModelEndpoint.Upstream.NONE


def attempt_costs(
    snapshot: Mapping[str, Any], usage: Mapping[str, Any], events: Iterable[Mapping[str, Any]]
) -> tuple[Decimal | None, Decimal | None]:
    """(metered cost, the agent's own claim) of one attempt, in USD.

    Metered: the gateway's token counts at the snapshot's price; 0 for a model-less system
    (simulated agents: nothing was called), None for an unpriced model (unknown, not free).
    """
    claim = agent_claim(events)
    claimed = None if claim is None else Decimal(str(round(claim, 10)))
    price = snapshot_price(snapshot)
    if price is not None:
        return cost_of(price, usage), claimed
    if calls_no_model(snapshot):
        return Decimal(0), claimed
    return None, claimed


def price_label(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """How a campaign's costs are to be read: priced or not, notional or not, as of when."""
    price = snapshot_price(snapshot)
    if price is None:
        free = calls_no_model(snapshot)
        return {
            "priced": free,
            "notional": False,
            "note": "no model is called: these runs cost nothing" if free else "the model has no price: costs unknown",
        }
    note = f"priced at {_plain(price.input)}/{_plain(price.output)} USD per million input/output tokens"
    if price.cached_input is not None:
        note += f" ({_plain(price.cached_input)} cached)"
    if price.set_on:
        note += f", set on {price.set_on.isoformat()}"
    if price.notional:
        note = "Notional price — no provider bills these tokens; " + note
    return {"priced": True, "notional": price.notional, "note": note, "price": price.as_dict()}


def _plain(amount: Decimal) -> str:
    """3 and 0.3, not 3.000000 and 0.300000 as the database returns them."""
    return f"{amount.normalize():f}"


# -- spending -------------------------------------------------------------------------------------


def spent(campaign_ids: Sequence[int]) -> Decimal:
    """What the campaigns' attempts cost so far (unpriced attempts count nothing)."""
    total = RunAttempt.objects.filter(run__campaign_id__in=list(campaign_ids)).aggregate(s=Sum("cost_usd"))["s"]
    return Decimal(total or 0)


def _per_campaign(campaign_ids: Sequence[int]) -> dict[int, tuple[Decimal, int, int]]:
    """campaign → (spent, priced finished attempts, runs in flight)."""
    out: dict[int, tuple[Decimal, int, int]] = {pk: (Decimal(0), 0, 0) for pk in campaign_ids}
    rows = (
        RunAttempt.objects.filter(run__campaign_id__in=list(campaign_ids), cost_usd__isnull=False)
        .values("run__campaign_id")
        .annotate(s=Sum("cost_usd"), n=Count("pk"))
        .values_list("run__campaign_id", "s", "n")
    )
    for cid, s, n in rows:
        out[cid] = (Decimal(s or 0), int(n), 0)
    flying = (
        Run.objects.filter(campaign_id__in=list(campaign_ids), status__in=IN_FLIGHT)
        .values("campaign_id")
        .annotate(n=Count("pk"))
        .values_list("campaign_id", "n")
    )
    for cid, n in flying:
        s, done, _ = out[cid]
        out[cid] = (s, done, int(n))
    return out


def _per_run(spent_usd: Decimal, attempts: int, prior: Mapping[str, Any]) -> float | None:
    if attempts:
        return float(spent_usd) / attempts
    mean = prior.get("mean")
    return float(mean) if isinstance(mean, int | float) else None


# -- the guard ------------------------------------------------------------------------------------


def capped(campaign: Campaign) -> bool:
    """Whether a cost cap applies to the campaign (its own, or its matrix's)."""
    if campaign.cost_cap_usd is not None:
        return True
    return (
        campaign.matrix_id is not None
        and Matrix.objects.filter(pk=campaign.matrix_id, cost_cap_usd__isnull=False).exists()
    )


def next_issue_size(alloc: Any, items: Any) -> int:
    """How many runs the allocator's next issue would create, asked of a copy (the real one is
    untouched: a stopped campaign resumes with exactly the allocation it would have made)."""
    return len(copy.deepcopy(alloc).next_round(items))


def cap_stop(campaign: Campaign, next_runs: int) -> tuple[str, str] | None:
    """(stop reason, message) when issuing ``next_runs`` more runs could cross a cost cap, else None.

    Checked before every issue, campaign cap first, then the matrix's.  The matrix row is locked
    for the check, so two of its campaigns stepping at once cannot both spend its last margin.
    """
    if campaign.cost_cap_usd is None and campaign.matrix_id is None:
        return None
    matrix = None
    if campaign.matrix_id is not None:
        matrix = Matrix.objects.select_for_update().filter(pk=campaign.matrix_id, cost_cap_usd__isnull=False).first()
    if campaign.cost_cap_usd is None and matrix is None:
        return None
    if campaign.cost_cap_usd is not None:
        mine = _per_campaign([campaign.pk])[campaign.pk]
        p = Projection(
            spent=float(mine[0]),
            in_flight=mine[2],
            next_runs=next_runs,
            per_run=_per_run(mine[0], mine[1], campaign.cost_estimate or {}),
            cap=float(campaign.cost_cap_usd),
        )
        if p.crosses:
            return Campaign.StopReason.COST_CAP, _message("campaign", p, campaign.cost_cap_usd)
    if matrix is not None and matrix.cost_cap_usd is not None:
        ids = list(matrix.campaigns.values_list("pk", flat=True))
        rows = _per_campaign(ids)
        estimates = dict(matrix.campaigns.values_list("pk", "cost_estimate"))
        total = sum((r[0] for r in rows.values()), Decimal(0))
        # Each campaign's in-flight runs at its own cost per run: pairs differ by a lot.
        committed = sum(
            r[2] * (_per_run(r[0], r[1], estimates.get(cid) or {}) or 0.0)
            for cid, r in rows.items()
            if cid != campaign.pk
        )
        mine = rows[campaign.pk]
        p = Projection(
            spent=float(total) + committed,
            in_flight=mine[2],
            next_runs=next_runs,
            per_run=_per_run(mine[0], mine[1], campaign.cost_estimate or {}),
            cap=float(matrix.cost_cap_usd),
        )
        if p.crosses:
            return Campaign.StopReason.MATRIX_COST_CAP, _message(f"matrix {matrix.name!r}", p, matrix.cost_cap_usd)
    return None


def _message(whose: str, p: Projection, cap: Decimal) -> str:
    if p.spent >= p.cap:
        why = f"the {whose} has spent {_usd(p.spent)} of its {_usd(cap)} cost cap"
    else:
        why = (
            f"the {whose} has spent {_usd(p.spent)} of its {_usd(cap)} cost cap, and {p.in_flight + p.next_runs} more"
            f" run{'s' if p.in_flight + p.next_runs != 1 else ''} at {_usd(p.per_run or 0)} each would take it"
            f" to {_usd(p.projected)}"
        )
    return f"stopped: cost cap — {why}. Runs already issued finish; raise the cap to resume where it stopped."


def _usd(value: float | Decimal) -> str:
    v = float(value)
    return f"${v:,.2f}" if v >= 1 else f"${v:.4f}"


def check_cap(value: Any, what: str = "cost cap") -> Decimal | None:
    """A cap as entered (None: no cap); CostError for one that cannot mean anything."""
    if value is None or value == "":
        return None
    try:
        cap = Decimal(str(value))
    except ArithmeticError:
        raise CostError(f"{what}: {value!r} is not an amount in USD") from None
    if not cap.is_finite() or cap <= 0:
        raise CostError(f"{what} must be a positive amount in USD, got {value}")
    # As stored (Campaign.cost_cap_usd keeps four decimals): the guard must compare with the
    # cap the page shows, not with digits the database dropped.
    cap = cap.quantize(CAP_QUANTUM)
    if cap <= 0:
        raise CostError(f"{what} must be at least {CAP_QUANTUM} USD, got {value}")
    return cap


def check_priced(sut: SystemUnderTest, what: str = "a cost cap") -> None:
    """A cap on an unpriced model could never stop anything: refused, naming the fix."""
    if sut.model.upstream == ModelEndpoint.Upstream.NONE or sut.model.price() is not None:
        return
    raise CostError(
        f"{what} needs the price of model {sut.model.slug!r}: set its prices in the admin"
        " (Model endpoints → prices, or the action that copies the default table)"
    )


# -- the estimate ---------------------------------------------------------------------------------


def history_costs(sut: SystemUnderTest, kind: str, price: Price | None = None) -> list[float]:
    """Per-run costs of the SUT's finished runs of this campaign kind, newest first, re-priced at
    ``price`` (the endpoint's current one by default) from their attempts' token counts."""
    price = price or sut.model.price()
    runs = list(
        Run.objects.filter(
            campaign__sut=sut, campaign__kind=kind, status__in=[Run.Status.SCORED, Run.Status.DROPPED]
        ).order_by("-pk")[:HISTORY_RUNS]
    )
    if not runs:
        return []
    if price is None:
        if sut.model.upstream == ModelEndpoint.Upstream.NONE:
            return [0.0] * len(runs)
        return []
    per_run: dict[int, Decimal] = {r.pk: Decimal(0) for r in runs}
    for run_id, usage in RunAttempt.objects.filter(run_id__in=list(per_run)).values_list("run_id", "usage"):
        per_run[run_id] += cost_of(price, usage or {})
    return [float(v) for v in per_run.values()]


def estimate_for(sut: SystemUnderTest, kind: str, runs: int) -> CostEstimate | None:
    return estimate(history_costs(sut, kind), runs)


def describe_estimate(est: CostEstimate | None, sut: SystemUnderTest, notional: bool | None = None) -> str:
    """One line for the form and ``run_campaign --dry-run``."""
    if est is None and sut.model.upstream != ModelEndpoint.Upstream.NONE and sut.model.price() is None:
        return f"{sut}: model {sut.model.slug!r} has no price — set its prices in the admin to estimate its cost."
    if est is None:
        return (
            f"{sut}: no finished runs of this system yet — no estimate. Run a pilot first"
            " (run_campaign --pilot 6), or start with a cost cap: the first round shows the cost per run."
        )
    notional = sut.model.is_notional if notional is None else notional
    text = f"{sut}: {est.runs} runs × median {_usd(est.median)} = {_usd(est.total)}"
    if est.total_low is not None and est.total_high is not None:
        text += f" (the median's 95% interval × runs: {_usd(est.total_low)}–{_usd(est.total_high)})"
    else:
        text += " (no 95% interval: it needs at least 6 finished runs)"
    text += f"; expected total (runs × mean) {_usd(est.total_from_mean)}"
    prediction = est.total_prediction
    if prediction is not None:
        text += f", approx. 95% prediction interval {_usd(prediction[0])}–{_usd(prediction[1])}"
    text += f"; based on {est.sample} run{'s' if est.sample != 1 else ''}"
    if notional:
        text += f" — {NOTIONAL} price (no provider bills this model)"
    return text


# -- tables ---------------------------------------------------------------------------------------


def _tokens(key: str) -> Sum:
    return Sum(Cast(KT(f"usage__{key}"), BigIntegerField()))


def _dec(value: Any) -> float | None:
    return None if value is None else round(float(value), 10)


def _claims(attempts: Any) -> dict[str, Any]:
    """How many attempts carry the agent's own cost claim, and how many of them disagree >10%."""
    rows = list(attempts.filter(agent_cost_usd__isnull=False).values_list("cost_usd", "agent_cost_usd"))
    disagreeing = sum(1 for metered, claim in rows if metered is not None and flagged(metered, float(claim)))
    return {"attempts_with_claim": len(rows), "claims_disagreeing": disagreeing}


def campaign_costs(campaign: Campaign) -> dict[str, Any]:
    """Spent, runs, cost per run and the caps, in total and per cell (archetype × consent, or the
    UnderSpecBench family): one GROUP BY over the attempts."""
    attempts = RunAttempt.objects.filter(run__campaign_id=campaign.pk)
    fields = ("run__family",) if campaign.is_suite else ("run__archetype", "run__consent")
    cells = []
    for row in (
        attempts.order_by()
        .values(*fields)
        .annotate(
            spent=Sum("cost_usd"),
            attempts=Count("pk"),
            priced=Count("cost_usd"),
            runs=Count("run_id", distinct=True),
            scored=Count("run_id", distinct=True, filter=Q(run__status=Run.Status.SCORED)),
            input_tokens=_tokens("input_tokens"),
            output_tokens=_tokens("output_tokens"),
        )
        .order_by(*fields)
    ):
        cell = {f.removeprefix("run__"): row[f] for f in fields}
        cells.append({**cell, **_row(row)})
    totals = attempts.aggregate(
        spent=Sum("cost_usd"),
        attempts=Count("pk"),
        priced=Count("cost_usd"),
        runs=Count("run_id", distinct=True),
        scored=Count("run_id", distinct=True, filter=Q(run__status=Run.Status.SCORED)),
        input_tokens=_tokens("input_tokens"),
        output_tokens=_tokens("output_tokens"),
    )
    label = price_label(campaign.sut_snapshot or {})
    return {
        **label,
        "total": _row(totals),
        "cells": cells,
        "cell_fields": [f.removeprefix("run__") for f in fields],
        "cap": _dec(campaign.cost_cap_usd),
        "run_token_cap": campaign.run_token_cap,
        "stop_reason": campaign.stop_reason,
        "estimate": campaign.cost_estimate or None,
        **_claims(attempts),
    }


def _row(row: Mapping[str, Any]) -> dict[str, Any]:
    spent_usd = row.get("spent")
    scored = int(row.get("scored") or 0)
    runs = int(row.get("runs") or 0)
    return {
        "spent": _dec(spent_usd),
        "attempts": int(row.get("attempts") or 0),
        "unpriced_attempts": int(row.get("attempts") or 0) - int(row.get("priced") or 0),
        "runs": runs,
        "scored": scored,
        "per_run": _dec(spent_usd / runs) if spent_usd is not None and runs else None,
        "per_scored_run": _dec(spent_usd / scored) if spent_usd is not None and scored else None,
        "input_tokens": int(row.get("input_tokens") or 0),
        "output_tokens": int(row.get("output_tokens") or 0),
    }


def matrix_costs(matrix: Matrix, pairs: Mapping[int, tuple[str, str]]) -> dict[str, Any]:
    """Spent, runs and cost per run per pair (framework × model), the matrix total and its cap."""
    keys = ("spent", "attempts", "priced", "runs", "scored", "input_tokens", "output_tokens")
    rows = {
        cid: row
        for cid, *row in RunAttempt.objects.filter(run__campaign_id__in=list(pairs))
        .order_by()
        .values("run__campaign_id")
        .annotate(
            spent=Sum("cost_usd"),
            attempts=Count("pk"),
            priced=Count("cost_usd"),
            runs=Count("run_id", distinct=True),
            scored=Count("run_id", distinct=True, filter=Q(run__status=Run.Status.SCORED)),
            input_tokens=_tokens("input_tokens"),
            output_tokens=_tokens("output_tokens"),
        )
        .values_list("run__campaign_id", *keys)
    }
    campaigns = {
        c.pk: c
        for c in Campaign.objects.filter(pk__in=list(pairs)).only(
            "pk", "status", "stop_reason", "cost_cap_usd", "sut_snapshot", "name"
        )
    }
    out = []
    for cid, (fw, model) in sorted(pairs.items(), key=lambda item: item[1]):
        row = dict(zip(keys, rows.get(cid, [None, 0, 0, 0, 0, 0, 0]), strict=True))
        c = campaigns[cid]
        label = price_label(c.sut_snapshot or {})
        out.append(
            {
                "framework": fw,
                "model": model,
                "campaign": cid,
                **_row(row),
                "cap": _dec(c.cost_cap_usd),
                "status": c.status,
                "stop_reason": c.stop_reason,
                "notional": label["notional"],
                "priced": label["priced"],
            }
        )
    total = sum((Decimal(str(r["spent"])) for r in out if r["spent"] is not None), Decimal(0))
    return {
        "pairs": out,
        "total": _dec(total),
        "cap": _dec(matrix.cost_cap_usd),
        "notional": any(r["notional"] for r in out),
        "unpriced_pairs": [f"{r['framework']} × {r['model']}" for r in out if not r["priced"]],
    }


def run_cost(run: Run, attempt: RunAttempt | None, snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """What the run page shows: the metered cost, the agent's claim beside it, the flag."""
    label = price_label(snapshot)
    out: dict[str, Any] = {**label, "run_usd": _dec(run.cost_usd)}
    if attempt is None:
        return out
    metered, claim = attempt.cost_usd, attempt.agent_cost_usd
    out.update(attempt_usd=_dec(metered), agent_usd=_dec(claim), disagreement=None, flagged=False)
    if metered is not None and claim is not None:
        out["disagreement"] = disagreement(Decimal(metered), float(claim))
        out["flagged"] = flagged(Decimal(metered), float(claim))
    return out


def estimate_lines(suts: Iterable[SystemUnderTest], kind: str, params: Mapping[str, Any]) -> list[str]:
    """The estimate of each system's campaign (unsaved pairs of a matrix form included), and the
    matrix's total when there are several."""
    runs = 2 * int(params["n"]) if kind == "paired" else int(params["n"])
    lines: list[str] = []
    total, low, high, known = 0.0, 0.0, 0.0, 0
    suts = list(suts)
    for sut in suts:
        saved = sut if sut.pk else SystemUnderTest.objects.filter(framework=sut.framework, model=sut.model).first()
        est = estimate_for(saved, kind, runs) if saved is not None else None
        lines.append(describe_estimate(est, sut))
        if est is not None:
            known += 1
            total += est.total
            low += est.total_low if est.total_low is not None else est.total
            high += est.total_high if est.total_high is not None else float("inf")
    if len(suts) > 1:
        line = f"matrix: {known} of {len(suts)} pairs estimated, together {_usd(total)}"
        if known and high != float("inf"):
            line += f" (their median intervals added up: {_usd(low)}–{_usd(high)})"
        lines.append(line)
    return lines
