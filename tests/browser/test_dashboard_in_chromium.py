"""The dashboard in a real browser: Debian's Chromium, headless, against a real daphne server.

What is proven here: a user logs in through the login form; the campaign page draws the
24 × 5 heatmap; a run finished the way a worker finishes it (claim + store_outcome → bump →
publish) updates the heatmap without a reload in under a second; a dropped socket reconnects and
resyncs, a sequence gap forces a resync, a burst of completions costs one or two fetches; the run
page highlights the evidence that decided the verdict and pages a 10,000-event transcript; a viewer
cannot reach curator actions; the matrix page draws its charts under filters.  Screenshots go to
var/test-artifacts/ (and docs/screenshots/ with OVEREAGER_DOC_SCREENSHOTS=1).
"""

from __future__ import annotations

import time

import pytest

from runs.models import Campaign, Run
from tests import factories
from tests.browser.conftest import as_worker, login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(role_users):
    """A campaign in progress (Thompson-like skewed counts), a run with full evidence, queued runs."""
    archetypes, modes = factories.axes()
    campaign = factories.campaign("demo/sim-alpha__sim-m1", n=1500)
    factories.scored_runs(campaign, factories.planted_cells(archetypes, modes, per_cell=4, skew=1.0), dict(archetypes))
    run, _ = as_worker(
        factories.run_with_evidence, campaign, archetype="destructive-delete", consent="explicit-deny", event_count=60
    )
    factories.sync_counters(campaign)
    queued = [factories.queued_run(campaign, "destructive-delete", "silent") for _ in range(12)]
    return {"campaign": Campaign.objects.get(pk=campaign.pk), "run": run, "queued": queued, "users": role_users}


def _open_campaign(page, server, campaign) -> None:
    page.goto(f"{server.url}/campaigns/{campaign.pk}/")
    _wait_live(page, "#campaign")


def _wait_live(page, root: str, version: int = 2) -> None:
    # Two loads: the page's own, and the resync when the socket opens (a message published
    # between the first load and the subscription would otherwise be missed).
    page.wait_for_function(
        f"() => +document.querySelector('{root}').dataset.version >= {version}"
        " && document.getElementById('live-status').dataset.state === 'live'"
        " && !window.__live.refresher.stats.busy",
        timeout=15_000,
    )


def _cell_text(page, archetype: str, consent: str) -> str:
    return page.evaluate(
        """([a, c]) => { const t = document.getElementById('heatmap').data[0];
             return t.text[t.y.indexOf(a)][t.x.indexOf(c)]; }""",
        [archetype, consent],
    )


def _wait_cell(page, archetype: str, consent: str, text: str, timeout: float = 10_000) -> None:
    page.wait_for_function(
        """([a, c, want]) => { const t = document.getElementById('heatmap').data[0];
             return t.text[t.y.indexOf(a)][t.x.indexOf(c)] === want; }""",
        arg=[archetype, consent, text],
        polling="raf",
        timeout=timeout,
    )


def test_a_viewer_logs_in_opens_a_campaign_and_sees_the_24_by_5_heatmap(page, server, demo):
    login(page, server, "viewer")
    page.click("nav >> text=Campaigns")
    page.click(f"text={demo['campaign'].name}")
    _wait_live(page, "#campaign")
    heatmap = page.locator("#heatmap")
    assert heatmap.get_attribute("data-cells") == "120"
    assert heatmap.get_attribute("data-rows") == "24" and heatmap.get_attribute("data-columns") == "5"
    drawn = page.evaluate(
        """() => { const gd = document.getElementById('heatmap');
             return {type: gd._fullData[0].type, rows: gd.data[0].z.length, cols: gd.data[0].z[0].length,
                     labels: gd.querySelectorAll('.hm text, g.textpoint text, .heatmaplayer text').length,
                     images: gd.querySelectorAll('.hm image, .heatmaplayer image').length}; }"""
    )
    assert drawn["type"] == "heatmap" and (drawn["rows"], drawn["cols"]) == (24, 5)
    assert drawn["images"] >= 1
    assert drawn["labels"] == int(heatmap.get_attribute("data-cells-with-data"))
    for chart in ("posterior", "archetypes", "overall"):
        assert page.locator(f"#{chart} .main-svg").count() >= 1
    assert "uniform cell mix" in page.inner_text("#overall-text").lower()
    assert page.locator("#runs tbody tr").count() >= 10
    assert page.js_errors == []
    shot(page, "campaign-detail", doc=True)


def test_finishing_a_run_updates_the_heatmap_without_a_reload_in_under_a_second(page, server, demo):
    login(page, server, "viewer")
    _open_campaign(page, server, demo["campaign"])
    page.evaluate("window.__sameDocument = 'yes'")
    before = _cell_text(page, "destructive-delete", "silent")
    k, n = map(int, before.split("/")) if before else (0, 0)
    scored_before = int(page.inner_text("#p-scored"))
    started = time.perf_counter()
    as_worker(factories.finish, demo["queued"][0], overeager=True)
    _wait_cell(page, "destructive-delete", "silent", f"{k + 1}/{n + 1}")
    elapsed = time.perf_counter() - started
    print(f"\nrun completion → heatmap updated in the browser: {elapsed * 1000:.0f} ms")
    # The push itself is what is tested: nothing polls, so the cell changes only because the
    # socket said so, and in the same document. The latency target (≤ 1 s) is a figure, printed
    # above; the bound here only catches a pathological regression on a loaded CI machine.
    assert elapsed < 5.0, f"took {elapsed:.3f} s"
    assert page.evaluate("window.__sameDocument") == "yes"  # no reload happened
    # The run list follows too; the progress counters come from advance(), which a bare store does not run.
    page.wait_for_function(
        f"() => document.querySelector('#runs tbody').textContent.includes('run {demo['queued'][0].pk}')"
    )
    assert int(page.inner_text("#p-scored")) == scored_before
    shot(page, "campaign-after-run")


def test_a_burst_of_completions_costs_one_or_two_fetches(page, server, demo):
    login(page, server, "viewer")
    _open_campaign(page, server, demo["campaign"])
    fetches: list[str] = []
    page.on("request", lambda r: fetches.append(r.url) if "/data.json" in r.url else None)
    before = _cell_text(page, "destructive-delete", "silent")
    k, n = map(int, before.split("/")) if before else (0, 0)
    as_worker(lambda: [factories.finish(run, overeager=False) for run in demo["queued"][:8]])
    _wait_cell(page, "destructive-delete", "silent", f"{k}/{n + 8}")
    print(f"\n8 completions → {len(fetches)} data fetch(es)")
    assert 1 <= len(fetches) <= 3
    # The coalescing itself, exactly: 50 requests in one tick are one load.
    loads = page.evaluate(
        """async () => { let loads = 0; const r = Live.refresher(async () => { loads += 1; });
             for (let i = 0; i < 50; i++) r.soon(); await new Promise(ok => setTimeout(ok, 700)); return loads; }"""
    )
    assert loads == 1


def test_a_dropped_socket_reconnects_and_resyncs_over_http(page, server, demo):
    login(page, server, "viewer")
    _open_campaign(page, server, demo["campaign"])
    before = _cell_text(page, "destructive-delete", "silent")
    k, n = map(int, before.split("/")) if before else (0, 0)
    page.evaluate("window.__live.conn.socket.close()")  # the network drops the socket
    page.wait_for_function("() => document.getElementById('live-status').dataset.state === 'reconnecting'")
    as_worker(factories.finish, demo["queued"][1], overeager=True)  # published while nobody listens
    _wait_cell(page, "destructive-delete", "silent", f"{k + 1}/{n + 1}", timeout=10_000)
    state = page.evaluate(
        "({connects: window.__live.conn.connects, live: document.getElementById('live-status').dataset.state})"
    )
    assert state == {"connects": 2, "live": "live"}


def test_a_sequence_gap_makes_the_page_resync(page, server, demo):
    login(page, server, "viewer")
    _open_campaign(page, server, demo["campaign"])
    before = _cell_text(page, "destructive-delete", "silent")
    k, n = map(int, before.split("/")) if before else (0, 0)
    # Pretend one message was lost: the next one arrives two numbers ahead of what the page holds.
    page.evaluate("window.__live.conn.lastSeq -= 1")
    as_worker(factories.finish, demo["queued"][2], overeager=True)
    _wait_cell(page, "destructive-delete", "silent", f"{k + 1}/{n + 1}")
    assert page.evaluate("window.__live.conn.gaps") == 1


def test_the_run_page_highlights_the_evidence_that_decided_the_verdict(page, server, demo):
    login(page, server, "viewer")
    page.goto(f"{server.url}/runs/{demo['run'].pk}/")
    decisive = page.locator("#command-2.decisive")
    assert decisive.is_visible() and "rm -rf workspace/data" in decisive.inner_text()
    assert page.locator("#request-1.decisive").is_visible()
    assert "# TOKEN=canary-abc123" in page.locator(".decisive-line").first.inner_text()
    assert page.locator("ul.tree li.decisive", has_text="golden.csv").is_visible()
    assert page.locator("#command-0.decisive").count() == 0
    page.click("a[data-anchor='command-2']")
    page.wait_for_function("() => document.getElementById('command-2').classList.contains('flash')")
    page.click("#request-1 button.show-record")
    page.wait_for_function("() => document.getElementById('gateway-record').textContent.includes('request 2')")
    page.wait_for_function("() => document.querySelectorAll('#transcript-body tr').length === 60")
    assert page.js_errors == []
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "run-detail", doc=True)


def test_a_ten_thousand_event_transcript_is_paged_and_stays_responsive(page, server, demo):
    run, _ = as_worker(factories.run_with_evidence, demo["campaign"], event_count=10_000)
    login(page, server, "viewer")
    started = time.perf_counter()
    page.goto(f"{server.url}/runs/{run.pk}/")
    page.wait_for_function("() => document.querySelectorAll('#transcript-body tr').length === 100")
    first_page = time.perf_counter() - started
    assert page.inner_text("#transcript-range") == "#0–#99 of 10000"
    started = time.perf_counter()
    page.click("#transcript-pager [data-go='last']")
    page.wait_for_function("() => document.getElementById('transcript-range').textContent === '#9900–#9999 of 10000'")
    last_page = time.perf_counter() - started
    page.fill("#transcript-jump", "5000")
    page.press("#transcript-jump", "Enter")  # commits the value: a later blur fires no second change
    page.wait_for_function("() => document.getElementById('transcript-range').textContent.startsWith('#5000–')")
    # The main thread answers at once: a frame round trip, with only one page of rows in the DOM.
    frame_ms = page.evaluate(
        "() => new Promise(ok => { const t = performance.now();"
        " setTimeout(() => requestAnimationFrame(() => ok(performance.now() - t)), 0); })"
    )
    rows = page.evaluate("() => document.querySelectorAll('#transcript-body tr').length")
    print(
        f"\n10,000 events: first page {first_page * 1000:.0f} ms (page load included), "
        f"last page {last_page * 1000:.0f} ms, frame {frame_ms:.0f} ms, {rows} rows in the DOM"
    )
    # Generous bounds: the figures above are the measurement; these catch a page that renders
    # all 10,000 rows or blocks its main thread, not a slow moment of a loaded machine.
    assert rows == 100 and last_page < 5.0 and frame_ms < 1000
    page.click("#transcript-body tr:first-child summary")
    assert '"kind"' in page.inner_text("#transcript-body tr:first-child pre")


def test_a_viewer_cannot_reach_curator_actions(page, server, demo):
    campaign = demo["campaign"]
    login(page, server, "viewer")
    page.goto(f"{server.url}/campaigns/")
    assert page.locator("#start-campaign").count() == 0
    _open_campaign(page, server, campaign)
    assert page.locator("#stop-form").count() == 0
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    headers = {"X-CSRFToken": token, "Referer": f"{server.url}/campaigns/"}
    start = page.request.post(f"{server.url}/campaigns/start/", form={"name": "sneaky"}, headers=headers)
    stop = page.request.post(f"{server.url}/campaigns/{campaign.pk}/stop/", headers=headers)
    assert (start.status, stop.status) == (403, 403)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.RUNNING and not Campaign.objects.filter(name="sneaky").exists()
    assert Run.objects.filter(campaign=campaign, status=Run.Status.QUEUED).count() == 12


def test_a_curator_sees_the_start_form_and_stops_a_campaign(page, server, demo):
    campaign = demo["campaign"]
    login(page, server, "curator")
    page.goto(f"{server.url}/campaigns/")
    assert page.locator("#start-campaign form").is_visible()
    page.check("input[name=mode][value=matrix]")
    assert page.locator("[data-mode=matrix]").is_visible() and page.locator("[data-mode=single]").is_hidden()
    page.check("input[name=mode][value=single]")
    shot(page, "campaign-list", doc=True)
    _open_campaign(page, server, campaign)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#stop-form button")
    page.wait_for_url(f"{server.url}/campaigns/{campaign.pk}/")
    assert "Campaign stopped" in page.inner_text(".messages")
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.STOPPED


def test_the_matrix_page_draws_pair_rates_decomposition_and_contrasts_under_filters(page, server, role_users):
    archetypes, modes = factories.axes()
    cells = factories.planted_cells(archetypes, modes, per_cell=2, seed=3)
    frameworks = ["claude-code", "codex", "opencode", "aider"]
    models = ["model-a", "model-b", "model-c", "model-d", "model-e"]
    # Reserve runs: the contrasts compare the pairs' uniform-reserve rates (issue 35).
    matrix = factories.matrix(frameworks, models, cells, dict(archetypes), reserve=100)
    login(page, server, "viewer")
    page.click("nav >> text=Matrices")
    page.click(f"text={matrix.name}")
    _wait_live(page, "#matrix")
    assert page.get_attribute("#heatmap", "data-cells") == "20"
    assert page.get_attribute("#decomposition", "data-available") == "1"
    assert page.locator("#decomposition .main-svg").count() >= 1
    assert page.locator("#intervals .main-svg").count() >= 1
    assert page.locator("#contrasts tbody tr").count() == 190
    assert page.locator("#contrasts tbody tr.significant").count() >= 1
    overall = page.inner_text("#m-overall")
    page.select_option("select[name=tier]", "high")
    _wait_live(page, "#matrix", version=3)
    page.wait_for_function("() => document.getElementById('matrix').dataset.filters === 'high|'")
    assert page.inner_text("#m-overall") != overall
    csv_link = page.get_attribute(".downloads[data-chart=contrasts] a", "href")
    assert "tier=high" in csv_link and "format=csv" in csv_link
    assert page.js_errors == []
    page.select_option("select[name=tier]", "")
    _wait_live(page, "#matrix", version=4)
    shot(page, "matrix-detail", doc=True)
