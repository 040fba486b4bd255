"""A campaign of the demo's system, exported as an Inspect log, opens in Inspect's own viewer.

The demo's shell agent × scripted model (``manage.py demo_setup``, with its notional price) runs
a small UnderSpecBench sample in bwrap sandboxes through the real gateway; ``export_inspect``
writes the log; ``inspect view`` serves it on a loopback port and Debian's Chromium opens it:
the sample list shows every run with its verdict, and a run's transcript shows its model calls
and commands.  Screenshots: var/test-artifacts/inspect-view-*.png (docs/screenshots/ with
OVEREAGER_DOC_SCREENSHOTS=1).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from runs.campaigns import campaign_params, start_campaign
from runs.models import Campaign, CampaignKind, ModelEndpoint, Run, SystemUnderTest
from tests.browser.conftest import ARTIFACTS, _free_port, as_worker, login, shot
from tests.runs.campaigns.conftest import queue_name  # noqa: F401 - the run queue of this test alone
from tests.runs.scripted_campaign import drive, load_suite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def inspect_cli() -> str:
    found = Path(sys.executable).with_name("inspect")
    if not found.exists():
        pytest.fail(f"{found} is missing: pip install -r requirements-inspect.txt (inspect_ai, an optional extra)")
    return str(found)


@pytest.fixture
def exported(queue_name, tmp_path):  # noqa: F811
    load_suite()
    call_command("demo_setup", verbosity=0)
    sut = SystemUnderTest.objects.get(framework__slug="shell", model__slug="scripted-demo")
    assert ModelEndpoint.objects.get(slug="scripted-demo").is_notional
    campaign = start_campaign(
        name="demo-shell-suite",
        sut=sut,
        pool=None,
        params=campaign_params(n=3, k=3, j=1, seed=4),
        backend="bwrap",
        kind=CampaignKind.USB_SAMPLE,
    )
    campaign = as_worker(drive, campaign.pk)
    assert campaign.status == Campaign.Status.COMPLETE, campaign.error
    out = tmp_path / "inspect"
    call_command("export_inspect", campaign=[campaign.name], out=out, verbosity=0)
    return {"campaign": campaign, "dir": out}


@pytest.fixture
def viewer(exported):
    port = _free_port()
    log = ARTIFACTS / "inspect-view.log"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [
                inspect_cli(),
                "view",
                "start",
                "--log-dir",
                str(exported["dir"]),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            cwd=settings.BASE_DIR,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"inspect view did not come up on {url}:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_an_exported_demo_campaign_opens_in_inspect_view_listing_its_runs(page, viewer, exported):
    runs = list(Run.objects.filter(campaign=exported["campaign"]).select_related("counted_attempt").order_by("slot"))
    ids = [f"r{r.round}.s{r.slot}" for r in runs]
    page.goto(viewer)
    # One log in the directory: the viewer opens it at its sample list.
    for sample_id in ids:
        page.get_by_text(sample_id, exact=True).first.wait_for(timeout=30_000)
    body = page.inner_text("body")
    assert "overeager/usb-sample" in body and "scripted/scripted-demo" in body
    for run in runs:
        assert run.counted_attempt.verdict["outcome"] in body  # the verdict column
    shot(page, "inspect-view-demo-campaign", doc=True, full_page=False)

    page.get_by_text(ids[0], exact=True).first.click()
    page.get_by_text("TRANSCRIPT", exact=False).first.wait_for(timeout=30_000)
    page.get_by_text("TRANSCRIPT", exact=False).first.click()
    page.get_by_text("ls -la", exact=False).first.wait_for(timeout=30_000)  # the command the script ran
    shot(page, "inspect-view-demo-run", doc=True, full_page=False)
    # The viewer asks for optional files a log directory may hold (a flow config): 404s, not faults.
    assert not [e for e in page.js_errors if not e.startswith(("404 ", "Failed to load resource"))], page.js_errors
    shutil.copytree(exported["dir"], ARTIFACTS / "inspect-logs", dirs_exist_ok=True)


def test_the_campaign_page_shows_its_cost_per_cell_labelled_notional(page, server, exported, role_users):
    campaign = exported["campaign"]
    login(page, server, "viewer")
    page.goto(f"{server.url}/campaigns/{campaign.pk}/")
    page.wait_for_function("() => Number(document.getElementById('costs').dataset.loaded || 0) > 0")
    families = set(Run.objects.filter(campaign=campaign).values_list("family", flat=True))
    assert page.locator("#costs-cells tbody tr").count() == len(families)
    label = page.inner_text("#costs-label")
    assert label.startswith("Notional price — no provider bills these tokens; priced at 3/15 USD"), label
    spent = page.inner_text("#c-spent")
    assert spent.startswith("$") and float(spent[1:]) > 0
    # The page's own script drives the panel along with its other tables (static/js/suite.js).
    page.wait_for_function("() => document.querySelectorAll('#suite-runs tbody tr').length === 3")
    assert not [e for e in page.js_errors if "404" not in e], page.js_errors
    shot(page, "campaign-costs", doc=True)
