"""The UnderSpecBench and consent pages in a real browser (Debian's Chromium against daphne).

Proven here: the results page draws every chart with one series per system and metric and the
right number of points (4 S levels, 4 B, 2 R, 9 surfaces, 4 domains) plus the RQ3 composition; a
suite run finished the way a worker finishes it (claim + store_outcome → bump → publish) updates
the charts without a reload; the family page shows its 32 prompts (R tabs, side by side) and pages
its runs, filtered by variant; a suite run's page highlights the object and the emulator call that
decided its flag; the consent page highlights a planted "deny raises" stratum, switches views,
follows a paired campaign live and drills down to a discordant pair shown side by side.
Data comes from the factories, never from real campaigns. Screenshots go to var/test-artifacts/
(and docs/screenshots/ with OVEREAGER_DOC_SCREENSHOTS=1).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from runs.models import Campaign
from tests import factories
from tests import factories as sf
from tests.browser.conftest import as_worker, login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def private_runs_queue(settings: Any) -> Iterator[str]:
    """Non-action runs enqueue their labelling job on RUNS_QUEUE: keep it off the shared queues."""
    import django_rq
    import redis

    name = f"test-h12-browser-{uuid.uuid4().hex[:8]}"
    django_rq.settings.QUEUES[name] = {"URL": settings.REDIS_URL, "DEFAULT_TIMEOUT": 60}
    settings.RUNS_QUEUE = name
    yield name
    r = redis.Redis.from_url(settings.REDIS_URL)
    keys = list(r.scan_iter(match=f"rq:*{name}*"))
    if keys:
        r.delete(*keys)
    django_rq.settings.QUEUES.pop(name, None)


def _wait_live(page, root: str, version: int = 2) -> None:
    # The page's own load and the resync when its socket(s) open.
    page.wait_for_function(
        f"() => +document.querySelector('{root}').dataset.version >= {version}"
        " && document.getElementById('live-status').dataset.state === 'live'"
        " && !window.__live.refresher.stats.busy",
        timeout=15_000,
    )


def _traces(page, element: str) -> list[dict[str, Any]]:
    return page.evaluate(
        f"""() => document.getElementById('{element}').data.map(t => ({{
              name: t.name, metric: t.meta, points: (t.orientation === 'h' ? t.y : t.x).length,
              values: (t.orientation === 'h' ? t.x : t.y), custom: t.customdata }}))"""
    )


@pytest.fixture
def suite_world(role_users):
    fams = sf.families()
    matrix = sf.suite_matrix(["sim-alpha", "sim-beta"], ["sim-m1"], fams)
    campaign = Campaign.objects.filter(matrix=matrix).order_by("pk").first()
    queued = [sf.queued_suite_run(campaign, sf.family("flag-router-canary"), "S0-B0-R0") for _ in range(2)]
    return {"matrix": matrix, "campaign": campaign, "queued": queued, "families": fams}


def test_the_results_page_draws_one_series_per_system_and_metric(page, server, suite_world):
    login(page, server, "viewer")
    page.click("nav >> text=UnderSpecBench")
    _wait_live(page, "#suite")
    assert page.inner_text("#systems-count") == "2"
    for element, levels in (("levels-s", 4), ("levels-b", 4), ("levels-r", 2)):
        traces = _traces(page, element)
        assert len(traces) == 4 * 2, element  # 4 metrics × 2 systems
        assert {t["points"] for t in traces} == {levels}
        assert {t["metric"] for t in traces} == {"action_rate", "safe_success", "wrong_target", "overscope"}
        assert page.locator(f"#{element} .main-svg").count() >= 1
    for element, groups in (("rq4-surface", 9), ("rq4-domain", 4)):
        traces = _traces(page, element)
        assert len(traces) == 2 * 2 and {t["points"] for t in traces} == {groups}
        assert {t["metric"] for t in traces} == {"overscope", "safe_success"}
    assert page.locator("#overall-table tbody tr").count() == 3  # two systems and the pooled row
    assert page.locator("#campaigns tbody tr").count() == 2
    assert page.locator("#families tbody tr").count() == len(suite_world["families"])
    assert page.locator("#definitions dt").count() == 7
    page.wait_for_function("() => document.querySelector('.composition').dataset.drawn === 's_level'")
    assert page.evaluate("() => document.querySelector('.composition').dataset.groups") == "4"
    assert page.js_errors == []
    shot(page, "suite-results", doc=True)


def test_a_run_completion_updates_the_charts_without_a_reload(page, server, suite_world):
    login(page, server, "viewer")
    page.goto(f"{server.url}/suite/")
    _wait_live(page, "#suite")
    page.evaluate("window.__sameDocument = 'yes'")
    system = str(suite_world["campaign"].sut)

    def action_s0() -> list[int]:
        return page.evaluate(
            """(system) => { const t = document.getElementById('levels-s').data
                 .find(t => t.name === system && t.meta === 'action_rate'); return t.customdata[0]; }""",
            system,
        )

    k, n = action_s0()[:2]
    started = time.perf_counter()
    as_worker(sf.finish_suite, suite_world["queued"][0], "safe")
    page.wait_for_function(
        """([system, n]) => { const t = document.getElementById('levels-s').data
             .find(t => t.name === system && t.meta === 'action_rate'); return t.customdata[0][1] === n + 1; }""",
        arg=[system, n],
        polling="raf",
        timeout=10_000,
    )
    elapsed = time.perf_counter() - started
    print(f"\nsuite run completion → RQ1 chart redrawn in the browser: {elapsed * 1000:.0f} ms")
    assert elapsed < 5.0, f"took {elapsed:.3f} s"  # a regression bound; the figure is printed above
    assert action_s0()[:2] == [k + 1, n + 1]
    assert page.evaluate("window.__sameDocument") == "yes"
    row = page.locator(f"#overall-table tr[data-system='{system}'] td").nth(1)
    assert int(row.inner_text()) == 6 * 32 + 1
    assert page.js_errors == []


def test_the_family_page_shows_its_32_prompts_and_pages_its_runs(page, server, suite_world):
    login(page, server, "viewer")
    page.goto(f"{server.url}/suite/families/")
    page.click("text=flag-router-canary")
    page.wait_for_function("() => +document.getElementById('family').dataset.loaded >= 1")
    assert page.locator("td.prompt-cell").count() == 32
    assert page.locator("td.prompt-cell:visible").count() == 16
    page.click(".tabs >> text=R1")
    assert page.locator("td.prompt-cell:visible").count() == 16
    assert page.locator("#prompt-S3-B3-R1").is_visible() and not page.locator("#prompt-S3-B3-R0").is_visible()
    page.click(".tabs >> text=side by side")
    assert page.locator("td.prompt-cell:visible").count() == 32
    # Two systems ran every prompt once, plus the two queued runs: 66 runs, 50 a page.
    assert page.locator("#family-runs tbody tr").count() == 50
    page.click("#runs-more")
    page.wait_for_function("() => document.querySelectorAll('#family-runs tbody tr').length === 66")
    assert page.locator("#runs-more").is_hidden()
    page.click("#prompt-S2-B3-R1 button.variant-runs")
    page.wait_for_function("() => +document.getElementById('family').dataset.loaded >= 3")
    variants = page.locator("#family-runs tbody tr td:nth-child(4)").all_inner_texts()
    assert variants == ["S2-B3-R1", "S2-B3-R1"]
    assert page.locator("#prompt-S2-B3-R1.selected").count() == 1
    assert page.locator("#world tbody tr").count() >= 4 and page.locator("#world .cls-candidate").count() >= 2
    assert page.js_errors == []
    shot(page, "family-detail", doc=True)


def test_a_suite_run_page_highlights_the_object_and_the_call_that_decided_it(page, server, suite_world):
    run, _ = as_worker(sf.suite_run_with_evidence, suite_world["campaign"], sf.family(), "S1-B2-R1", "wrong_target")
    login(page, server, "viewer")
    page.goto(f"{server.url}/runs/{run.pk}/")
    assert page.inner_text("#suite-outcome") == "wrong-target"
    decisive = page.locator("#changed-objects tr.decisive")
    assert decisive.count() == 1  # the candidate (Wrong Target); the intended object did not change
    assert page.locator("#emulator-calls tr.decisive").count() == 1
    page.click("#changed-objects tr[data-class='candidate'] a[data-anchor='call-1']")
    page.wait_for_function("() => document.getElementById('call-1').classList.contains('flash')")
    assert page.locator("#family-link").get_attribute("href") == "/suite/families/flag-router-canary/"
    assert page.js_errors == []
    shot(page, "suite-run-detail", doc=True)


def test_a_suite_campaign_page_shows_its_progress_metrics_and_runs(page, server, suite_world):
    campaign = suite_world["campaign"]
    login(page, server, "viewer")
    page.goto(f"{server.url}/campaigns/{campaign.pk}/")
    _wait_live(page, "#suite")
    assert page.inner_text("#p-scored") == str(6 * 32) and page.inner_text("#p-running") == "0 / 2"
    assert page.locator("#overall-table tbody tr").count() == 1  # one system: no pooled row
    assert len(_traces(page, "levels-b")) == 4 and len(_traces(page, "rq4-surface")) == 2
    assert page.locator("#suite-runs tbody tr").count() == 20
    assert page.locator("#suite-link").get_attribute("href") == f"/suite/?campaign={campaign.pk}"
    assert page.js_errors == []
    shot(page, "suite-campaign")


# -- consent sensitivity --------------------------------------------------------------------------------

STRATA = {
    ("explicit-deny", "user-prompt"): (2, 12, 0, 10),
    ("implicit-deny", "agents-md"): (3, 3, 1, 17),
    ("silent", "user-prompt"): (4, 2, 2, 16),
    ("implicit-allow", "readme"): (1, 0, 9, 14),
    ("explicit-allow", "readme"): (5, 1, 2, 16),
}


@pytest.fixture
def consent_world(role_users):
    a = sf.paired_campaign("paired-alpha")
    sf.pairs(a, STRATA)
    with_run, _ = as_worker(sf.pair_with_evidence, a)  # explicit-deny / user-prompt, discordant (b)
    sf.odd_pair(a, "silent", "user-prompt", True, "dropped")
    b = sf.paired_campaign("paired-beta", system=factories.sut("sim-beta", "sim-m1"))
    sf.pairs(b, {("explicit-deny", "user-prompt"): (2, 1, 1, 10), ("silent", "user-prompt"): (3, 1, 2, 9)})
    return {"a": a, "b": b, "pair": with_run}


def test_the_consent_page_highlights_deny_raises_and_drills_down_to_a_pair(page, server, consent_world):
    login(page, server, "viewer")
    page.click("nav >> text=Consent")
    _wait_live(page, "#consent")
    deny = page.locator("#strata tbody tr.deny-raises")
    assert deny.count() == 1
    assert "sim-alpha × sim-m1" in deny.inner_text() and "explicit-deny" in deny.inner_text()
    assert page.evaluate("() => document.getElementById('forest').dataset.deny") == "1"
    assert page.evaluate("() => +document.getElementById('forest').dataset.points") == 7
    assert page.locator("#deny-note").is_visible()
    assert page.inner_text("#c-incomplete") == "1" and page.locator("#incomplete tbody tr").count() == 1
    shot(page, "consent", doc=True)
    # Drill down: the stratum's discordant pairs, then one pair side by side.
    deny.click()
    page.wait_for_function("() => document.getElementById('discordant-filter').textContent.includes('explicit-deny')")
    assert page.locator("#discordant tbody tr").count() == 13  # 12 planted + the pair with evidence
    assert all("explicit-deny" in t for t in page.locator("#discordant tbody td:nth-child(2)").all_inner_texts())
    pair_id = f"{consent_world['a'].pk}:{consent_world['pair'].pair_key}"
    page.click(f"#discordant tr[data-pair='{pair_id}'] >> text=side by side →")
    page.wait_for_url(f"**/consent/pairs/{consent_world['a'].pk}/{consent_world['pair'].pair_key}/")
    assert page.locator(".pair-grid .member").count() == 2
    assert page.inner_text(".member-with mark.seg-del") == sf.PHRASING
    assert page.locator(".member-stripped mark").count() == 0
    page.wait_for_function("() => [...document.querySelectorAll('.transcript')].every(t => t.dataset.rows === '40')")
    assert page.locator(".member-with ol.trace li.decisive").count() == 1
    assert page.locator(".member-stripped ol.trace li.decisive").count() == 0
    assert page.js_errors == []
    shot(page, "consent-pair", doc=True)


def test_the_consent_page_switches_views_and_follows_a_paired_campaign_live(page, server, consent_world):
    login(page, server, "viewer")
    page.goto(f"{server.url}/consent/")
    _wait_live(page, "#consent")
    page.evaluate("window.__sameDocument = 'yes'")
    page.check("input[name=view][value=across-suts]")
    page.wait_for_function("() => document.getElementById('consent').dataset.view === 'across-suts'")
    assert page.locator("#strata thead th").first.inner_text() == "consent"
    assert "view=across-suts" in page.url
    before = int(page.inner_text("#c-complete"))
    started = time.perf_counter()
    as_worker(sf.pair_with_evidence, consent_world["b"], with_overeager=False, stripped_overeager=False)
    page.wait_for_function(f"() => +document.getElementById('c-complete').textContent === {before + 1}", timeout=5000)
    print(f"\npair completion → consent page updated: {(time.perf_counter() - started) * 1000:.0f} ms")
    assert page.evaluate("window.__sameDocument") == "yes"
    assert page.js_errors == []
