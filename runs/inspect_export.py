"""Export campaigns (or a matrix's) as Inspect eval logs: one ``.eval`` file per campaign.

The rows are read here; the log is built by ``harness.inspect_log`` with inspect_ai's own API
(an optional extra: requirements-inspect.txt).  Like a bundle, only finished campaigns export —
a log is a record, and a running campaign's rows still move.  The gateway's request records are
read from each attempt's evidence folder (``gateway.jsonl``), so a campaign whose evidence was
removed exports its samples without model events, and the export says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from harness.outcome import LIMIT_COLUMNS
from runs import costs
from runs.campaigns import plan_of
from runs.models import Campaign, Matrix, Run, RunAttempt, RunEvent

ACTIVE = (Campaign.Status.PENDING, Campaign.Status.RUNNING)


class ExportError(ValueError):
    pass


@dataclass
class InspectExport:
    paths: list[Path] = field(default_factory=list)
    samples: int = 0
    scored: int = 0
    warnings: list[str] = field(default_factory=list)


def resolve(campaigns: Sequence[str] = (), matrix: str | None = None) -> list[Campaign]:
    """Campaigns named by id, uuid or name, or a matrix's; refuses running ones."""
    found: list[Campaign] = []
    if matrix:
        m = _lookup(Matrix, matrix, "matrix")
        found += list(m.campaigns.order_by("pk"))
        if not found:
            raise ExportError(f"matrix {m.name!r} has no campaigns")
    for ref in campaigns:
        c = _lookup(Campaign, ref, "campaign")
        if c not in found:
            found.append(c)
    if not found:
        raise ExportError("name at least one campaign (--campaign) or a matrix (--matrix)")
    active = [c for c in found if c.status in ACTIVE]
    if active:
        names = ", ".join(f"{c.name!r} ({c.status})" for c in active)
        raise ExportError(f"still running: {names}. Wait for the campaign to finish or stop it first")
    return found


def _lookup(model: type[Campaign] | type[Matrix], ref: str, what: str) -> Any:
    text = str(ref).strip()
    qs = model._default_manager.all()
    obj = qs.filter(pk=int(text)).first() if text.isdigit() else None
    if obj is None and len(text) == 36:
        try:
            obj = qs.filter(uuid=text).first()
        except Exception:  # not a uuid after all
            obj = None
    if obj is None:
        obj = qs.filter(name=text).first()
    if obj is None:
        raise ExportError(f"no {what} with id, uuid or name {text!r}")
    return obj


def campaign_record(campaign: Campaign) -> dict[str, Any]:
    label = costs.price_label(campaign.sut_snapshot or {})
    info: dict[str, Any] = {}
    if campaign.is_suite:
        dataset, info = "underspecbench", {"suite_digest": campaign.suite_digest}
    elif campaign.pool_id:
        dataset = f"overeager-pool-{campaign.pool_id}"
        info = {"pool": campaign.pool_id, "library_digest": campaign.library_digest}
        info["digest"] = getattr(campaign.pool, "digest", "")
    else:
        dataset = campaign.kind
    return {
        "uuid": str(campaign.uuid),
        "name": campaign.name,
        "kind": campaign.kind,
        "kind_label": campaign.get_kind_display(),
        "benchmark": "underspecbench" if campaign.is_suite else "snare",
        "status": campaign.status,
        "error": campaign.error,
        "created_at": campaign.created_at.isoformat(),
        "started_at": campaign.started_at.isoformat() if campaign.started_at else None,
        "finished_at": campaign.finished_at.isoformat() if campaign.finished_at else None,
        "params": campaign.params,
        "backend": campaign.backend,
        "sut": campaign.sut_snapshot,
        "dataset": dataset,
        "dataset_info": info,
        "matrix": {"uuid": str(campaign.matrix.uuid), "name": campaign.matrix.name} if campaign.matrix else None,
        "software": campaign.software,
        "oracle_versions": campaign.oracle_versions(),
        "trigger_noun": plan_of(campaign.kind).trigger_noun,
        "costs": {
            "spent_usd": float(costs.spent([campaign.pk])),
            "cap_usd": None if campaign.cost_cap_usd is None else float(campaign.cost_cap_usd),
            **label,
        },
    }


def run_records(campaign: Campaign, warnings: list[str]) -> list[dict[str, Any]]:
    """One record per run that executed (its counted attempt, else its latest)."""
    runs = list(
        Run.objects.filter(campaign=campaign)
        .exclude(attempt=0)
        .select_related("prompt", "counted_attempt")
        .order_by("round", "slot", "member")
    )
    latest = {a.run_id: a for a in RunAttempt.objects.filter(run__campaign=campaign).order_by("run_id", "number")}
    missing = 0
    out = []
    root = Path(settings.EVIDENCE_DIR).resolve()
    for run in runs:
        attempt = run.counted_attempt or latest.get(run.pk)
        if attempt is None:
            continue
        records = _gateway_records(attempt, root)
        if records is None:
            missing += 1
            records = []
        events = list(RunEvent.objects.filter(attempt=attempt).order_by("seq").values_list("data", flat=True))
        out.append(
            {
                # "r3.s1[.with]": the run's round.slot key, which a bare "3.1" would read as a number.
                "key": f"r{run.round}.s{run.slot}" + (f".{run.member}" if run.member else ""),
                "uuid": str(run.uuid),
                "status": run.status,
                "validity": attempt.validity,
                "validity_reason": attempt.validity_reason,
                "attempt": attempt.number,
                "prompt": attempt.prompt or (run.prompt.text if run.prompt else ""),
                "verdict": attempt.verdict,
                "oracle_version": run.oracle_version or attempt.oracle_version,
                "flags": {
                    name: getattr(run, name)
                    for name in (
                        "overeager",
                        "overeager_effective",
                        "task_success",
                        "acted",
                        "safe_success",
                        "wrong_target",
                        "overscope",
                    )
                },
                "events": events,
                "commands": (attempt.evidence or {}).get("commands") or [],
                "gateway": records,
                "usage": attempt.usage or {},
                "cost_usd": None if attempt.cost_usd is None else float(attempt.cost_usd),
                "agent_cost_usd": None if attempt.agent_cost_usd is None else float(attempt.agent_cost_usd),
                "started_at": attempt.started_at.isoformat() if attempt.started_at else None,
                "finished_at": attempt.finished_at.isoformat() if attempt.finished_at else None,
                "duration": attempt.duration,
                "metadata": _cell(run),
            }
        )
    if missing:
        warnings.append(
            f"{campaign.name}: {missing} attempt(s) had no gateway records on disk; their samples have no model events"
        )
    return out


def _cell(run: Run) -> dict[str, Any]:
    fields = ("archetype", "archetype_tier", "consent", "channel", "tier", "propensity", "repeat", "pair_key")
    out: dict[str, Any] = {f: getattr(run, f) for f in fields if getattr(run, f) not in ("", None)}
    if run.family:
        out.update(
            family=run.family,
            domain=run.domain,
            surface=run.surface,
            variant=f"S{run.s_level}-B{run.b_level}-R{run.r_level}",
        )
    if run.member:
        out["member"] = run.member
    if run.mutations:
        out["mutations"] = run.mutations
    if run.limits:
        out["limits"] = {name: getattr(run, name) for name in LIMIT_COLUMNS}
    return out


def _gateway_records(attempt: RunAttempt, root: Path) -> list[dict[str, Any]] | None:
    if not attempt.evidence_dir:
        return [] if not (attempt.evidence or {}).get("gateway") else None
    path = (Path(attempt.evidence_dir) / "gateway.jsonl").resolve()
    # The folder comes from the database: never read outside EVIDENCE_DIR.
    if not path.is_relative_to(root) or not path.is_file():
        return [] if not (attempt.evidence or {}).get("gateway") else None
    records = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append(record)
    return records


def export(campaigns: Sequence[Campaign], out_dir: Path) -> InspectExport:
    from harness.inspect_log import build_log, write_log

    result = InspectExport()
    for campaign in campaigns:
        runs = run_records(campaign, result.warnings)
        log = build_log(campaign_record(campaign), runs)
        result.paths.append(write_log(log, out_dir))
        result.samples += len(runs)
        result.scored += sum(1 for r in runs if r["status"] == Run.Status.SCORED)
    return result
