"""Export, verify and import stream: their memory does not grow with the size of the campaign's data.

Two synthetic campaigns, one five times the other (each attempt with its transcript and evidence
files), go through ``manage.py export_bundle`` (a .tar.gz), ``verify_bundle`` and ``import_bundle``
as separate processes, and each process's peak RSS is read from ``wait4``.  A step that loaded the
campaign whole would grow by the size of the data it holds (the members' bytes); a streamed one
grows only by its bookkeeping — one manifest entry and digest per file and one chain head per run,
a few kilobytes per run (verify holds the parsed manifest, the root of trust, whole).
"""

from __future__ import annotations

import os
import sys
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.runs.bundle import synthetic
from tests.runs.bundle.conftest import empty_install
from tests.runs.bundle.measure import measured
from tests.runs.campaigns.conftest import MANAGE, database_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SHAPE = synthetic.Shape(events=(20, 60), gateway_records=(4, 12), body_chars=(600, 1800))
SMALL, LARGE = 300, 1500
PER_RUN_BOOKKEEPING = 12_000  # bytes of RSS a step may add per run (generous: allocator slack)


def _peak_rss(*args: str, evidence: Path) -> float:
    """Run ``manage.py ARGS`` and return its peak resident set size in MB."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "EVIDENCE_DIR": str(evidence),
        "CACHE_PREFIX": f"bundle-mem-{uuid.uuid4().hex[:8]}",
    }
    code, _, rss, output = measured([sys.executable, str(MANAGE), *args], env)
    assert code == 0, output
    return rss


def test_export_verify_and_import_memory_does_not_grow_with_the_campaign(tmp_path: Path, settings: Any) -> None:
    peaks: dict[str, dict[int, float]] = {"export": {}, "verify": {}, "import": {}}
    sizes: dict[int, int] = {}
    data: dict[int, int] = {}
    for n in (SMALL, LARGE):
        c = synthetic.campaign(n, name=f"mem-{n}", shape=SHAPE)
        out = tmp_path / f"mem-{n}.tar.gz"
        source = Path(settings.EVIDENCE_DIR)
        peaks["export"][n] = _peak_rss("export_bundle", "--campaign", str(c.pk), "--out", str(out), evidence=source)
        peaks["verify"][n] = _peak_rss("verify_bundle", str(out), evidence=source)
        sizes[n] = out.stat().st_size
        # What a step that loaded the campaign whole would hold: the members' bytes, not the gzip.
        with tarfile.open(out) as tar:
            data[n] = sum(m.size for m in tar.getmembers() if m.isfile())
        empty_install(settings, tmp_path, name=f"evidence-{n}")
        peaks["import"][n] = _peak_rss("import_bundle", str(out), evidence=Path(settings.EVIDENCE_DIR))
        empty_install(settings, tmp_path, name=f"evidence-{n}-after")
    report = ", ".join(f"{step} {p[SMALL]:.0f} → {p[LARGE]:.0f} MB" for step, p in peaks.items())
    print(f"\npeak RSS, {SMALL} → {LARGE} runs ({sizes[SMALL] / 1e6:.1f} → {sizes[LARGE] / 1e6:.1f} MB): {report}")
    assert sizes[LARGE] > 4 * sizes[SMALL]
    allowed = (LARGE - SMALL) * PER_RUN_BOOKKEEPING / 1e6
    growth_of_data = (data[LARGE] - data[SMALL]) / 1e6
    for step, p in peaks.items():
        grew = p[LARGE] - p[SMALL]
        assert grew < allowed, f"{step}: {p[SMALL]:.0f} MB for {SMALL} runs, {p[LARGE]:.0f} MB for {LARGE}"
        assert grew < growth_of_data, f"{step} grew by {grew:.0f} MB, as much as the data ({growth_of_data:.0f} MB)"
