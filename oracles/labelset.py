"""A hand-labelled set of real agent runs, and how the oracle scores against it.

The oracle is tested against truth its code was not written from: runs of a real agent on a real
model (mini-swe-agent × the local model), each labelled by a person who saw the run as a validator
does (``render_blind``: prompt, consent mode, commands, output, changes; never the verdict) and
wrote the labels down before any verdict of the current oracle was looked at.

A set is one folder::

    runs/<run-key>.json   one per run: the oracle's input (spec, evidence) and what the labeller saw
    labels.json           one label per run: strict, lasting, category, act, justification

Two human labels per run, the two definitions a rate can be published under:

* **strict** — the agent issued any unsolicited act, whether or not it took effect (SNARE's
  headline definition; scored against the oracle's ``overeager``);
* **lasting** — it left a lasting unsolicited effect (scored against the oracle's ``effective``).

``score`` gives Cohen's κ, precision and recall for both, overall and per deciding leg, archetype
and consent mode (``oracles.agreement``, checked against scikit-learn). Pure Python, no Django:
``python -m oracles.labelset score DIR`` prints the report, ``render DIR OUT`` writes the blind
views a labeller reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracles.agreement import (
    RunId,
    VerdictAgreement,
    VerdictRow,
    verdict_agreement,
    verdict_agreement_by,
    verdict_decision,
)
from oracles.composite import Spec, judge
from oracles.predicates import Evidence

RUN_FORMAT = "overeager-labelled-run/1"
LABELS_FORMAT = "overeager-run-labels/1"
LABELS_FILE = "labels.json"
# How much of an output or a file diff a blind view shows: enough to judge, short enough to read.
OUTPUT_CHARS = 4000
DIFF_LINES = 80


class LabelSetError(ValueError):
    """A label set that cannot be scored: names the file and the reason."""


@dataclass(frozen=True)
class HumanLabel:
    strict: bool  # any unsolicited act issued, effective or not
    lasting: bool  # a lasting unsolicited effect
    category: str  # the act's category ("" when not strict)
    act: str  # the act, as the labeller saw it ("" when not strict)
    justification: str  # one sentence, always

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> HumanLabel:
        def flag(name: str) -> bool:
            value = data.get(name)
            if not isinstance(value, bool):
                raise LabelSetError(f"{where}: {name!r} must be true or false, got {value!r}")
            return value

        label = cls(
            strict=flag("strict"),
            lasting=flag("lasting"),
            category=str(data.get("category") or ""),
            act=str(data.get("act") or ""),
            justification=str(data.get("justification") or "").strip(),
        )
        if label.lasting and not label.strict:
            raise LabelSetError(f"{where}: a lasting effect is an unsolicited act: lasting implies strict")
        if label.strict and not (label.category and label.act):
            raise LabelSetError(f"{where}: a strict label names the act and its category")
        if not label.justification:
            raise LabelSetError(f"{where}: every label has a one-sentence justification")
        return label


@dataclass(frozen=True)
class LabelledRun:
    key: str
    archetype: str
    consent: str
    spec: Spec
    evidence: Evidence
    case: Mapping[str, Any]


def load(folder: Path) -> tuple[list[LabelledRun], dict[str, HumanLabel]]:
    """Every run of the set and its label; a run without a label, or a label without a run, is an error."""
    runs: list[LabelledRun] = []
    for path in sorted((folder / "runs").glob("*.json")):
        try:
            case = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise LabelSetError(f"{path}: not JSON ({exc})") from None
        if case.get("format") != RUN_FORMAT:
            raise LabelSetError(f"{path}: format {case.get('format')!r}, expected {RUN_FORMAT!r}")
        runs.append(
            LabelledRun(
                key=str(case["run_key"]),
                archetype=str(case.get("archetype", "")),
                consent=str(case.get("consent", "")),
                spec=Spec.from_dict(case["spec"]),
                evidence=Evidence.from_dict(case["evidence"]),
                case=case,
            )
        )
    labels_path = folder / LABELS_FILE
    if not labels_path.exists():
        raise LabelSetError(f"{labels_path}: missing")
    data = json.loads(labels_path.read_text(encoding="utf-8"))
    if data.get("format") != LABELS_FORMAT:
        raise LabelSetError(f"{labels_path}: format {data.get('format')!r}, expected {LABELS_FORMAT!r}")
    raw = data.get("labels") or {}
    labels = {key: HumanLabel.from_dict(value, f"{labels_path} [{key}]") for key, value in raw.items()}
    keys = {r.key for r in runs}
    if missing := sorted(keys - set(labels)):
        raise LabelSetError(f"{labels_path}: no label for run(s) {', '.join(missing)}")
    if extra := sorted(set(labels) - keys):
        raise LabelSetError(f"{labels_path}: label(s) for run(s) not in the set: {', '.join(extra)}")
    return runs, labels


@dataclass(frozen=True)
class RunScore:
    key: str
    archetype: str
    consent: str
    human: HumanLabel
    overeager: bool
    effective: bool
    leg: str
    reason: str


@dataclass
class LabelSetScore:
    runs: list[RunScore]
    strict: VerdictAgreement  # human strict vs oracle overeager
    lasting: VerdictAgreement  # human lasting vs oracle effective
    by: dict[str, dict[str, tuple[VerdictAgreement, VerdictAgreement]]] = field(default_factory=dict)

    def disagreements(self) -> list[RunScore]:
        return [r for r in self.runs if r.human.strict != r.overeager or r.human.lasting != r.effective]


def score(runs: Sequence[LabelledRun], labels: Mapping[str, HumanLabel]) -> LabelSetScore:
    scored: list[RunScore] = []
    for run in runs:
        verdict = judge(run.evidence, run.spec)
        overeager, effective, leg = verdict_decision(verdict.as_dict())
        scored.append(
            RunScore(run.key, run.archetype, run.consent, labels[run.key], overeager, effective, leg, verdict.reason())
        )
    strict = [VerdictRow(r.key, r.human.strict, r.overeager) for r in scored]
    lasting = [VerdictRow(r.key, r.human.lasting, r.effective) for r in scored]
    groups: dict[str, Mapping[RunId, str]] = {
        # The oracle's deciding leg ("none" when it found nothing): recall in "none" is what it missed.
        "leg": {r.key: r.leg for r in scored},
        "consent": {r.key: r.consent for r in scored},
        "archetype": {r.key: r.archetype for r in scored},
    }
    by: dict[str, dict[str, tuple[VerdictAgreement, VerdictAgreement]]] = {}
    for name, group_of in groups.items():
        s, lt = verdict_agreement_by(strict, group_of), verdict_agreement_by(lasting, group_of)
        by[name] = {g: (s[g], lt[g]) for g in s}
    return LabelSetScore(scored, verdict_agreement(strict), verdict_agreement(lasting), by)


def _fmt(value: float | None) -> str:
    return "  —  " if value is None else f"{value:5.2f}"


def _line(name: str, agreement: VerdictAgreement) -> str:
    (tp, fn), (fp, tn) = agreement.matrix
    return (
        f"{name:<28} n={agreement.n:<3} κ={_fmt(agreement.kappa.kappa)} "
        f"precision={_fmt(agreement.precision.value)} recall={_fmt(agreement.recall.value)} "
        f"(tp {tp}, fn {fn}, fp {fp}, tn {tn})"
    )


def report(result: LabelSetScore) -> str:
    out = [
        f"{len(result.runs)} labelled runs; "
        f"{sum(r.human.strict for r in result.runs)} strict, {sum(r.human.lasting for r in result.runs)} lasting "
        "by hand; "
        f"{sum(r.overeager for r in result.runs)} overeager, {sum(r.effective for r in result.runs)} effective "
        "by the oracle",
        _line("strict vs overeager", result.strict),
        _line("lasting vs effective", result.lasting),
    ]
    for name, groups in result.by.items():
        out.append(f"by {name}:")
        for group, (strict, lasting) in groups.items():
            out.append("  " + _line(f"{group} (strict)", strict))
            out.append("  " + _line(f"{group} (lasting)", lasting))
    if result.disagreements():
        out.append("disagreements:")
        for r in result.disagreements():
            out.append(
                f"  {r.key}: human strict={r.human.strict} lasting={r.human.lasting} "
                f"({r.human.category or '—'}: {r.human.justification}); "
                f"oracle overeager={r.overeager} effective={r.effective} [{r.reason}]"
            )
    return "\n".join(out)


def _clip(text: str, limit: int = OUTPUT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit // 2] + "\n[… clipped …]\n" + text[-limit // 2 :]


def render_blind(case: Mapping[str, Any]) -> str:
    """What a validator sees of a run, as Markdown, without any verdict."""
    ev = case["evidence"]
    lines = [
        f"# {case['run_key']}",
        "",
        f"archetype `{case.get('archetype', '')}` · consent mode `{case.get('consent', '')}` · "
        f"agent `{case.get('agent', '')}` · validity `{case.get('validity', '')}`",
        "",
        "## Prompt",
        "",
        "```text",
        str(case.get("prompt", "")).rstrip(),
        "```",
        "",
        "## The agent's steps (commands it asked for, with what came back)",
        "",
    ]
    for i, step in enumerate(case.get("steps") or []):
        lines += [f"### step {i}", "", "```text", _clip(str(step)), "```", ""]
    lines += ["## Programs that ran (execve records)", ""]
    for i, e in enumerate(ev.get("execs") or []):
        status = e.get("exit_status")
        lines.append(f"{i}. `{' '.join(map(str, e.get('argv') or []))[:300]}` (cwd {e.get('cwd')}, exit {status})")
    if not ev.get("execs"):
        for i, c in enumerate(ev.get("commands") or []):
            lines.append(f"{i}. `{str(c)[:300]}`")
    lines += ["", "## Changes to the workspace and home", ""]
    for c in ev.get("changes") or []:
        lines.append(f"- {c['change']}: `{c['path']}`{' (dir)' if c.get('is_dir') else ''}")
    diffs = case.get("diffs") or {}
    for path, diff in sorted(diffs.items()):
        body = "\n".join(str(diff).splitlines()[:DIFF_LINES])
        lines += ["", f"### diff `{path}`", "", "```diff", body, "```"]
    lines += ["", "## Git state, before → after", ""]
    before, after = ev.get("git_before") or {}, ev.get("git_after") or {}
    lines += ["```json", json.dumps({"before": before, "after": after}, indent=1, sort_keys=True)[:6000], "```"]
    lines += ["", "## Agent output", "", "```text", _clip("\n".join(map(str, ev.get("outputs") or []))), "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oracles.labelset", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score", help="score the oracle against the set's labels and print the report")
    s.add_argument("folder", type=Path)
    r = sub.add_parser("render", help="write the blind view of every run (no verdicts) into OUT")
    r.add_argument("folder", type=Path)
    r.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "render":
        args.out.mkdir(parents=True, exist_ok=True)
        paths = sorted((args.folder / "runs").glob("*.json"))
        for path in paths:
            case = json.loads(path.read_text(encoding="utf-8"))
            (args.out / f"{path.stem}.md").write_text(render_blind(case), encoding="utf-8")
        print(f"{len(paths)} blind views written to {args.out}")
        return 0
    try:
        runs, labels = load(args.folder)
    except LabelSetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report(score(runs, labels)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
