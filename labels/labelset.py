"""Export a campaign's real agent runs as a label set (``oracles.labelset``) for hand labelling.

Each scored run with a valid counted attempt becomes ``runs/<run-key>.json``: the oracle's input
as stored in the attempt's evidence folder (so the set is scored by exactly what the oracle reads)
and what a validator sees — the prompt with its consent mode, the agent's transcript as steps, the
programs that ran, the changes and their diffs. No verdict is written into the file: the labels
are made from the blind view before anyone looks at what the oracle said.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.utils.text import slugify

from oracles.labelset import RUN_FORMAT
from pool.execution import read_oracle_input
from runs.models import Campaign, Run, RunEvent, Validity


class LabelSetExportError(ValueError):
    pass


def _steps(attempt_id: int) -> list[str]:
    """The transcript as the validator reads it: one entry per event, in order."""
    steps = []
    for event in RunEvent.objects.filter(attempt_id=attempt_id).order_by("seq"):
        data = event.data or {}
        kind = event.kind
        if kind == "command":
            body = f"$ {data.get('command', '')}"
            if data.get("output") is not None:
                body += f"\n{data.get('output')}"
            if data.get("exit_code") is not None:
                body += f"\n[exit {data.get('exit_code')}]"
        elif kind in ("message", "final_message"):
            body = f"[{data.get('role', 'assistant')}] {data.get('text', '')}"
        elif kind == "tool_call":
            body = f"[tool call] {data.get('name')}({data.get('arguments')})"
        elif kind == "usage":
            continue
        else:
            body = f"[{kind}] {json.dumps(data, ensure_ascii=False)[:2000]}"
        steps.append(body)
    return steps


def set_key(run: Run) -> str:
    """A run's name within a label set: the campaign's slug and the run's key (unique across campaigns)."""
    return f"{slugify(run.campaign.name)}-{run.key}"


def run_case(run: Run) -> dict[str, Any]:
    attempt = run.counted_attempt
    if attempt is None or not attempt.evidence_dir:
        raise LabelSetExportError(f"run {run.pk}: no counted attempt with stored evidence")
    loaded = read_oracle_input(Path(attempt.evidence_dir))
    if loaded is None:
        raise LabelSetExportError(f"run {run.pk}: {attempt.evidence_dir} holds no oracle input")
    evidence, spec = loaded
    stored = attempt.evidence or {}
    return {
        "format": RUN_FORMAT,
        "run": str(run.uuid),
        "run_key": set_key(run),
        "campaign": run.campaign.name,
        "archetype": run.archetype,
        "consent": run.consent,
        "agent": str(run.campaign.sut) if run.campaign.sut_id else "",
        "validity": attempt.validity,
        "prompt": attempt.prompt,
        "steps": _steps(attempt.pk),
        "diffs": dict(stored.get("file_diffs") or {}),
        "usage": attempt.usage or {},
        "duration_s": attempt.duration,
        "spec": spec.as_dict(),
        "evidence": evidence.to_dict(),
    }


def export_label_set(campaigns: Iterable[Campaign], folder: Path) -> tuple[list[Path], int]:
    """Write every valid scored run of the campaigns; returns the files and how many runs were invalid."""
    out = folder / "runs"
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    invalid = 0
    runs = (
        Run.objects.filter(campaign__in=list(campaigns), status=Run.Status.SCORED)
        .select_related("counted_attempt", "campaign", "campaign__sut")
        .order_by("campaign_id", "pk")
    )
    for run in runs:
        if run.counted_attempt is None or run.counted_attempt.validity != Validity.VALID:
            invalid += 1
            continue
        case = run_case(run)
        path = out / f"{case['run_key']}.json"
        path.write_text(json.dumps(case, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        written.append(path)
    return written, invalid
