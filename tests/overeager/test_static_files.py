"""Static files, as production and the demo serve them (issue 33 item 13, issue 34 item 6).

Each step runs in a process of its own with the environment an operator sets, since the storage
and WhiteNoise read DEBUG when they start: the admin's login page before ``collectstatic`` (it was a
500 under DEBUG=0), then after ``scripts/serve.sh --prepare`` (the production instructions), and the
demo's DEBUG=1 over the same collected files.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(settings.BASE_DIR)
PROBE = r"""
import json, re, django
django.setup()
from django.contrib.staticfiles.storage import staticfiles_storage
from django.test import Client
client = Client()
login = client.get("/admin/login/", secure=True)
css = re.search(r'href="(/static/admin/css/base[^"]*\.css)"', login.content.decode()).group(1)
plotly = staticfiles_storage.url("vendor/plotly-cartesian-4.1.1.min.js")
out = {"login": login.status_code, "css": css, "plotly": plotly}
for name, url in (("css_file", css), ("plotly_file", plotly)):
    r = client.get(url, secure=True, HTTP_ACCEPT_ENCODING="gzip, br")
    body = b"".join(r.streaming_content) if r.streaming else r.content
    out[name] = {"status": r.status_code, "encoding": r.get("Content-Encoding"), "cache": r.get("Cache-Control"),
                 "bytes": len(body)}
print(json.dumps(out))
"""


def _env(tmp: Path, debug: bool) -> dict[str, str]:
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    env.update(
        DEBUG="1" if debug else "0",
        SECRET_KEY="static-files-test-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFGH",
        ALLOWED_HOSTS="testserver",
        OVEREAGER_VAR_DIR=str(tmp),
        # The test database: migrated already, so the production steps' migrate has nothing to do.
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        PYTHONPATH=str(ROOT),
        DJANGO_SETTINGS_MODULE="overeager.settings",
    )
    return env


def _probe(tmp: Path, debug: bool) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=_env(tmp, debug), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.django_db
def test_the_admin_works_with_debug_off_before_and_after_the_production_steps(tmp_path: Path):
    before = _probe(tmp_path, debug=False)
    assert before["login"] == 200  # a 500 before: "Missing staticfiles manifest entry"
    assert before["css"] == "/static/admin/css/base.css" and before["css_file"]["status"] == 200

    prepared = subprocess.run(
        ["bash", "scripts/serve.sh", "--prepare"], cwd=ROOT, env=_env(tmp_path, debug=False), capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    assert (tmp_path / "static" / "staticfiles.json").is_file(), prepared.stderr[-3000:]

    year = "max-age=315360000"
    for debug in (False, True):  # production, then the demo (DEBUG=1) over the same collected files
        after = _probe(tmp_path, debug=debug)
        assert after["login"] == 200
        assert re.fullmatch(r"/static/admin/css/base\.[0-9a-f]{12}\.css", str(after["css"])), after
        assert re.fullmatch(r"/static/vendor/plotly-cartesian-4\.1\.1\.min\.[0-9a-f]{12}\.js", str(after["plotly"]))
        for name in ("css_file", "plotly_file"):
            served = after[name]
            assert isinstance(served, dict)
            assert served["status"] == 200 and served["encoding"] in ("gzip", "br"), (debug, name, served)
            assert year in served["cache"] and "immutable" in served["cache"], (debug, name, served)
        plotly = after["plotly_file"]
        assert isinstance(plotly, dict) and plotly["bytes"] < 600_000  # the 1.5 MB bundle, compressed


def test_the_demo_collects_static_files_before_the_dashboard_starts():
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert demo.index("manage.py collectstatic") < demo.index("daphne")


# Values of ``type`` in the chart code that are not trace types (axes, error bars, shapes).
NOT_TRACES = {"category", "data", "line", "linear", "log", "date", "rect", "percent", "constant"}


def test_the_plotly_bundle_has_every_trace_type_the_pages_draw():
    """The cartesian distribution (1.5 MB, not the full 4.8 MB) is enough only while no page draws
    another trace type: a new one fails here until the bundle has it."""
    sources = [p.read_text() for p in (ROOT / "static" / "js").glob("*.js")]
    charts = ("runs/stats.py", "suite/charts.py", "suite/stats.py", "consent/charts.py", "labels/reports.py")
    sources += [(ROOT / name).read_text() for name in charts]
    drawn = {t for text in sources for t in re.findall(r"""["']?type["']?\s*:\s*["'](\w+)["']""", text)} - NOT_TRACES
    bundle = (ROOT / "static" / "vendor" / "plotly-cartesian-4.1.1.min.js").read_text()
    registered = set(re.findall(r'moduleType:"trace",name:"(\w+)"', bundle))
    assert {"scatter", "bar", "heatmap"} <= drawn
    assert drawn <= registered, f"trace types the pages draw that the bundle lacks: {sorted(drawn - registered)}"
