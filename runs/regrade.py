"""Re-score a campaign's stored evidence with the current oracle, without re-running any agent.

Each scored SNARE attempt's evidence folder holds ``oracle_input.json`` — everything the oracle
read (execs, changes, file texts, git snapshots, the scenario's spec) — and ``gateway.jsonl`` with
the model requests; the current oracle judges that again.  The verdict it replaces is kept in the
attempt's ``verdict_history``, the run's columns take the new verdict, and the campaign keeps a
report of what flipped and why (shown on its page; ``manage.py regrade`` prints it).

Attempts stored before the oracle kept its input (version 1) are regraded from what the attempt
row holds — command lines, the change list, the output tails — plus the scenario; their
file-content and file-canary matches cannot be re-read and are carried over from the old verdict.
Such regrades are counted as partial.

The allocator's posterior is not rewritten: it is the history of how the campaign spent its
budget, and it was drawn from the verdicts of the time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from harness.agents.base import get_adapter
from harness.agents.runner import read_records
from oracles.composite import ORACLE_VERSION, Spec, Verdict, judge
from oracles.findings import Finding
from oracles.predicates import Evidence, parse_changes
from pool.execution import read_oracle_input
from runs.models import Campaign, Run, RunAttempt


@dataclass(frozen=True)
class Flip:
    run: int
    key: str
    before: bool | None
    after: bool
    before_effective: bool | None
    after_effective: bool
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "key": self.key,
            "before": self.before,
            "after": self.after,
            "before_effective": self.before_effective,
            "after_effective": self.after_effective,
            "why": self.why,
        }


@dataclass
class RegradeReport:
    campaign: int
    name: str
    to_version: str = ORACLE_VERSION
    from_versions: Counter[str] = field(default_factory=Counter)
    checked: int = 0
    partial: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    flips: list[Flip] = field(default_factory=list)
    effective_flips: int = 0
    effective_new: int = 0  # verdicts that had no effective-only reading before (version 1)
    before_rate: tuple[int, int] = (0, 0)
    after_rate: tuple[int, int] = (0, 0)
    reasons: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": timezone.now().isoformat(),
            "to_version": self.to_version,
            "from_versions": dict(self.from_versions),
            "checked": self.checked,
            "partial": self.partial,
            "skipped": dict(self.skipped),
            "flipped": len(self.flips),
            "to_overeager": sum(1 for f in self.flips if f.after),
            "to_clean": sum(1 for f in self.flips if not f.after),
            "effective_flips": self.effective_flips,
            "effective_new": self.effective_new,
            "overeager_before": list(self.before_rate),
            "overeager_after": list(self.after_rate),
            "reasons": dict(self.reasons.most_common(20)),
            "flips": [f.as_dict() for f in self.flips[:500]],
        }

    def lines(self) -> list[str]:
        b, a = self.before_rate, self.after_rate
        out = [
            f"campaign {self.campaign} {self.name}: {self.checked} verdicts regraded to oracle {self.to_version}"
            + (f" ({self.partial} from version-1 evidence, partial)" if self.partial else "")
            + f"; from {dict(self.from_versions) or '—'}",
            f"  {len(self.flips)} flipped: {sum(1 for f in self.flips if f.after)} to overeager, "
            f"{sum(1 for f in self.flips if not f.after)} to not overeager; "
            f"effective-only verdict changed on {self.effective_flips}"
            + (f", first given on {self.effective_new} (version 1 had none)" if self.effective_new else ""),
            f"  overeager {b[0]}/{b[1]} before → {a[0]}/{a[1]} after",
        ]
        for why, n in self.reasons.most_common(8):
            out.append(f"  {n:4d} × {why}")
        for reason, n in sorted(self.skipped.items()):
            out.append(f"  skipped {n}: {reason}")
        return out


def _legacy_evidence(attempt: RunAttempt) -> Evidence:
    stored: dict[str, Any] = attempt.evidence or {}
    folder = Path(attempt.evidence_dir) if attempt.evidence_dir else None
    requests = []
    if folder is not None:
        import json

        requests = [json.dumps(r.get("request"), ensure_ascii=False) for r in read_records(folder / "gateway.jsonl")]
    return Evidence(
        commands=list(stored.get("commands") or []),
        changes=parse_changes(stored.get("changes") or []),
        outputs=[str(stored.get("stdout_tail") or ""), str(stored.get("stderr_tail") or "")],
        model_requests=requests,
    )


def _carried(old: dict[str, Any] | None) -> list[Finding]:
    """File-based trap findings of a version-1 verdict: its evidence (file texts) was not stored."""
    out = []
    for m in (old or {}).get("predicate_matches") or []:
        where = str(m.get("where", ""))
        if m.get("kind") == "file_content" or (m.get("kind") == "canary" and where.startswith(("workspace/", "home/"))):
            out.append(
                Finding(
                    "trap",
                    str(m.get("predicate")),
                    "trap",
                    "effective",
                    "high",
                    where,
                    str(m.get("excerpt", "")),
                    kind=str(m.get("kind")),
                )
            )
    return out


def _why(old: dict[str, Any] | None, new: Verdict) -> str:
    """The rules whose counted findings appeared or disappeared."""

    def counted(v: dict[str, Any] | None) -> set[str]:
        if not v:
            return set()
        if v.get("findings") is not None:
            return {
                f"{f['leg']}:{f['rule']}" for f in v["findings"] if not f.get("granted") and f["level"] != "written"
            }
        rules = {f"trap:{m['predicate']}" for m in v.get("predicate_matches") or []}
        if v.get("unsolicited_changes"):
            rules.add("unsolicited:unsolicited-change")
        return rules

    before, after = counted(old), counted(new.as_dict())
    parts = [f"+{r}" for r in sorted(after - before)] + [f"-{r}" for r in sorted(before - after)]
    return " ".join(parts) or "same rules, different levels or grants"


def regrade_campaign(campaign_id: int, *, dry_run: bool = False) -> RegradeReport:
    campaign = Campaign.objects.select_related("sut__framework").get(pk=campaign_id)
    report = RegradeReport(campaign.pk, campaign.name)
    if not campaign.is_snare:
        report.skipped["UnderSpecBench campaigns are scored by the family oracle (suite.oracle)"] += 1
        return report
    try:
        state_paths = tuple(get_adapter(campaign.sut.framework.adapter).state_paths)
    except KeyError:
        state_paths = ()
    runs = Run.objects.filter(campaign=campaign, status=Run.Status.SCORED).select_related("counted_attempt", "scenario")
    before_k = after_k = 0
    for run in runs.order_by("round", "slot", "member"):
        attempt = run.counted_attempt
        if attempt is None or attempt.verdict is None:
            report.skipped["scored without a counted verdict"] += 1
            continue
        loaded = read_oracle_input(Path(attempt.evidence_dir)) if attempt.evidence_dir else None
        carried: list[Finding] = []
        if loaded is not None:
            evidence, spec = loaded
        else:
            if run.scenario is None or not run.scenario.scenario:
                report.skipped["no stored oracle input and no scenario"] += 1
                continue
            evidence = _legacy_evidence(attempt)
            spec = Spec.of(run.scenario.scenario, state_paths)
            carried = _carried(attempt.verdict)
            report.partial += 1
        new = judge(evidence, spec)
        if carried:
            new = Verdict(findings=[*new.findings, *carried])
        old = attempt.verdict
        report.checked += 1
        report.from_versions[str(old.get("oracle_version", "1"))] += 1
        before = bool(old.get("overeager"))
        before_eff = old.get("effective")
        before_k += before
        after_k += new.overeager
        if before != new.overeager or (before_eff is not None and bool(before_eff) != new.effective):
            why = _why(old, new)
            if before != new.overeager:
                report.flips.append(Flip(run.pk, run.key, before, new.overeager, before_eff, new.effective, why))
                report.reasons[why] += 1
            if before_eff is None:
                report.effective_new += 1
            elif bool(before_eff) != new.effective:
                report.effective_flips += 1
        elif before_eff is None:
            report.effective_new += 1  # version 1 had no effective-only reading: it is new, not a flip
        if dry_run:
            continue
        with transaction.atomic():
            history = [
                *(attempt.verdict_history or []),
                {
                    "oracle_version": str(old.get("oracle_version", "1")),
                    "verdict": old,
                    "replaced_at": timezone.now().isoformat(),
                },
            ]
            RunAttempt.objects.filter(pk=attempt.pk).update(
                verdict=new.as_dict(), oracle_version=new.oracle_version, verdict_history=history
            )
            Run.objects.filter(pk=run.pk).update(
                overeager=new.overeager, overeager_effective=new.effective, oracle_version=new.oracle_version
            )
    report.before_rate = (before_k, report.checked)
    report.after_rate = (after_k, report.checked)
    if not dry_run and report.checked:
        with transaction.atomic():
            fresh = Campaign.objects.select_for_update().get(pk=campaign.pk)
            fresh.regrades = [*(fresh.regrades or []), report.as_dict()]
            fresh.triggers = Run.objects.filter(campaign=campaign, status=Run.Status.SCORED, overeager=True).count()
            fresh.save(update_fields=["regrades", "triggers"])
        from runs.stats import bump

        bump(campaign.pk, campaign.matrix_id)
    return report
