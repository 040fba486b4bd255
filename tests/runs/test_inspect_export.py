"""Campaigns and matrices as Inspect logs, from the database (runs.inspect_export): which runs
become samples, what is refused, and what the export reads and never reads."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from inspect_ai.analysis import samples_df
from inspect_ai.log import read_eval_log

from runs.inspect_export import ExportError, export, resolve
from runs.models import Campaign, Matrix, Run, RunAttempt
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def evidence(settings: Any, tmp_path: Path) -> Path:
    settings.EVIDENCE_DIR = tmp_path / "evidence"
    return settings.EVIDENCE_DIR


def finished(name: str, matrix: Matrix | None = None, overeager: tuple[bool, ...] = (True, False)) -> Campaign:
    c = factories.campaign(name, system=factories.sut("sim-alpha", name.replace("/", "-")), matrix=matrix)
    for flag in overeager:
        factories.run_with_evidence(c, overeager=flag, event_count=12)
    factories.queued_run(c, "destructive-delete", "silent")  # cancelled before it ran: no sample
    Campaign.objects.filter(pk=c.pk).update(status=Campaign.Status.COMPLETE)
    c.refresh_from_db()
    return c


def test_a_matrix_exports_one_log_per_campaign_with_a_sample_per_run_that_ran(tmp_path: Path) -> None:
    matrix = Matrix.objects.create(name="mx", framework_slugs=["sim-alpha"], model_slugs=["a", "b"])
    finished("mx/a", matrix, (True, False))
    finished("mx/b", matrix, (False,))
    out = StringIO()
    call_command("export_inspect", matrix="mx", out=tmp_path / "logs", stdout=out)
    assert "2 Inspect log(s): 3 samples, 3 scored" in out.getvalue()
    df = samples_df(str(tmp_path / "logs"))
    assert len(df) == 3 and sorted(df["score_verdict"]) == ["not overeager", "not overeager", "overeager"]
    assert set(df["metadata_archetype"]) == {"destructive-delete"}
    logs = [read_eval_log(str(p)) for p in sorted((tmp_path / "logs").glob("*.eval"))]
    assert {log.eval.task_display_name for log in logs} == {"mx/a", "mx/b"}
    assert all(log.eval.metadata["overeager"]["campaign"]["matrix"]["name"] == "mx" for log in logs)
    # The factories' gateway records are not full provider bodies: shown as text, not dropped.
    sample = next(s for log in logs for s in log.samples or [])
    assert [e.event for e in sample.events].count("model") == 2


def test_running_campaigns_and_unknown_names_are_refused() -> None:
    c = factories.campaign("busy")
    with pytest.raises(ExportError, match="still running: 'busy'"):
        resolve([c.name])
    with pytest.raises(ExportError, match="no campaign with id, uuid or name 'nope'"):
        resolve(["nope"])
    with pytest.raises(CommandError, match="name at least one campaign"):
        call_command("export_inspect", out="/tmp/unused")


def test_an_evidence_folder_outside_evidence_dir_is_never_read(tmp_path: Path) -> None:
    """The folder comes from the database: a row pointing elsewhere must not make the export read
    (and publish) another file."""
    c = finished("escape", overeager=(True,))
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "gateway.jsonl").write_text('{"seq": 1, "api": "openai-chat", "request": "TOP-SECRET", "status": 200}\n')
    RunAttempt.objects.filter(run__campaign=c).update(evidence_dir=str(secret))
    result = export([c], tmp_path / "logs")
    assert "had no gateway records on disk" in result.warnings[0]
    assert b"TOP-SECRET" not in b"".join(p.read_bytes() for p in result.paths)
    log = read_eval_log(str(result.paths[0]))
    assert [e.event for e in log.samples[0].events if e.event == "model"] == []


def test_an_invalid_run_is_a_sample_with_an_error_and_no_score(tmp_path: Path) -> None:
    c = finished("with-invalid", overeager=(True,))
    run = Run.objects.filter(campaign=c, status=Run.Status.SCORED).first()
    Run.objects.filter(pk=run.pk).update(status=Run.Status.DROPPED, overeager=None)
    RunAttempt.objects.filter(run=run).update(validity="timeout", validity_reason="no output for 300 s")
    df = samples_df(str(export([c], tmp_path / "logs").paths[0]))
    assert len(df) == 1 and ("score_verdict" not in df.columns or df["score_verdict"].isna().all())
    assert df["error"].iloc[0] == "not scored: timeout — no output for 300 s"
