"""The issue's proof: a campaign matrix that really ran round-trips through a bundle with identical figures.

A simulated 2 × 2 matrix (the stochastic agent executing the scenarios' reference solutions in
bwrap sandboxes, on real ``rqworker`` processes, scored by the real oracle) is exported to a
.tar.gz, the install is emptied (no campaign, run, pool, SUT or library row; a fresh evidence
folder), and the bundle is imported back: every chart and statistic of the matrix page and of
each campaign page is equal, a second import changes nothing, and re-exporting the imported
campaigns gives byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.bundle.format import HEADER, MANIFEST
from harness.bundle.verify import verify
from runs.bundle.exporter import export_bundle, resolve
from runs.bundle.importer import import_bundle
from runs.campaigns import campaign_params, start_matrix
from runs.models import Campaign, Matrix, Run, RunAttempt, RunEvent
from tests.runs.bundle.conftest import empty_install
from tests.runs.bundle.figures import matrix_figures
from tests.runs.campaigns.conftest import evidence_dir, pool, queue_name, simulated_sut, wait_for, workers  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FRAMEWORKS = {"sim-alpha": -0.5, "sim-beta": 0.5}
MODELS = {"sim-m1": -0.4, "sim-m2": 0.4}
SIMULATION = {
    "cells": [["*", "explicit-deny", 0.15], ["*", "silent", 0.5], ["*", "explicit-allow", 0.85]],
    "framework_effects": FRAMEWORKS,
    "model_effects": MODELS,
}


def _manifest(root: Path) -> dict[str, str]:
    return {e["path"]: e["sha256"] for e in json.loads((root / MANIFEST).read_text())["files"] if e["path"] != HEADER}


def _rows() -> dict[str, int]:
    return {
        "campaigns": Campaign.objects.count(),
        "runs": Run.objects.count(),
        "attempts": RunAttempt.objects.count(),
        "events": RunEvent.objects.count(),
    }


def test_a_matrix_that_really_ran_round_trips_through_a_bundle(pool, workers, tmp_path: Path, settings: Any) -> None:  # noqa: F811
    suts = [simulated_sut(f, m) for f in FRAMEWORKS for m in MODELS]
    campaigns = start_matrix(
        "bundle-round-trip",
        suts,
        frameworks=list(FRAMEWORKS),
        models=list(MODELS),
        pool=pool,
        params=campaign_params(n=4, k=4, j=2, q_floor=1, q_ceil=3, seed=20261207),
        backend="bwrap",
        kind="snare",
        simulation=SIMULATION,
        out=lambda *_: None,
    )
    running = workers()
    running.start(2)
    ids = [c.pk for c in campaigns]
    wait_for(
        lambda: not Campaign.objects.filter(pk__in=ids, status=Campaign.Status.RUNNING).exists(), 600, "the matrix"
    )
    running.stop()  # nothing may write while the install is emptied below
    assert set(Campaign.objects.filter(pk__in=ids).values_list("status", flat=True)) == {Campaign.Status.COMPLETE}
    matrix = Matrix.objects.get(name="bundle-round-trip")
    before = matrix_figures(matrix)
    rows = _rows()
    assert rows["runs"] >= 16 and rows["events"] > 0

    archive = tmp_path / "matrix.tar.gz"
    exported = export_bundle(resolve(matrix=matrix.name), archive)
    export_bundle(resolve(matrix=str(matrix.uuid)), tmp_path / "matrix")
    assert verify(archive).ok and verify(tmp_path / "matrix").ok
    assert exported.counts["runs"] == rows["runs"] and exported.counts["campaigns"] == 4

    empty_install(settings, tmp_path)
    assert _rows() == {"campaigns": 0, "runs": 0, "attempts": 0, "events": 0}
    report = import_bundle(archive)
    assert report.changed and report.created["campaigns"] == 4
    imported = Matrix.objects.get(uuid=matrix.uuid)
    assert imported.pk != matrix.pk
    assert matrix_figures(imported) == before
    assert _rows() == rows

    again = import_bundle(tmp_path / "matrix")
    assert not again.changed and _rows() == rows

    export_bundle(resolve(matrix=imported.name), tmp_path / "re-export")
    assert _manifest(tmp_path / "re-export") == _manifest(tmp_path / "matrix")
