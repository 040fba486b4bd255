"""The UnderSpecBench results page, its data/CSV endpoints, caching, live topics and the suite
campaign page — on rows written by tests/factories.py."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.models import Campaign, CampaignKind, Run
from runs.progress import publish
from suite import schema
from suite.charts import CHARTS
from tests import factories
from tests import factories as sf

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_runs_queue(settings: Any) -> Iterator[str]:
    """store_outcome enqueues the labelling job of a non-action run on RUNS_QUEUE: keep it off the
    shared queues (another session's worker must never get these run ids)."""
    import django_rq
    import redis

    name = f"test-h12-{uuid.uuid4().hex[:10]}"
    django_rq.settings.QUEUES[name] = {"URL": settings.REDIS_URL, "DEFAULT_TIMEOUT": 60}
    settings.RUNS_QUEUE = name
    yield name
    r = redis.Redis.from_url(settings.REDIS_URL)
    keys = list(r.scan_iter(match=f"rq:*{name}*"))
    if keys:
        r.delete(*keys)
    django_rq.settings.QUEUES.pop(name, None)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def matrix(db):
    """A 2 × 1 suite matrix (two systems) over six committed families, every prompt once each."""
    return sf.suite_matrix(["sim-alpha", "sim-beta"], ["sim-m1"], sf.families())


def _data(client: Client, query: str = "") -> dict[str, Any]:
    response = client.get(reverse("suite-data") + query)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_results_page_renders_every_chart_container_and_the_composition(role_users, matrix):
    html = _client(role_users["viewer"]).get(reverse("suite-results")).content.decode()
    for element in (
        "overall-table",
        "rq4-surface",
        "rq4-domain",
        "levels-s",
        "levels-b",
        "levels-r",
        "families",
        "definitions",
    ):
        assert f'id="{element}"' in html, element
    ids = sorted(matrix.campaigns.values_list("pk", flat=True))
    composition = reverse("labels-composition") + "?" + "&amp;".join(f"campaign={i}" for i in ids)
    assert composition in html
    assert "adjudicated &gt; human majority &gt; judge &gt; fallback" in html
    for chart in ("overall", "by_s", "by_surface", "families", "by_family"):
        assert f"format=csv&amp;chart={chart}" in html


def test_the_results_page_states_the_suite_and_oracle_versions_and_the_infra_surface_count(role_users, db):
    from suite.changelog import read_changelog
    from suite.loading import load_suite
    from suite.oracle import ORACLE_VERSION

    load_suite()
    html = _client(role_users["viewer"]).get(reverse("suite-results")).content.decode()
    newest = read_changelog(None)[0]
    assert f'<strong id="content-version">{newest["version"]}</strong>' in html
    assert f'<strong id="oracle-version">{ORACLE_VERSION}</strong>' in html
    infra = sum(1 for f in read_suite_files() if f["surface"] == "infra-capacity-observability")
    assert f"Infrastructure, capacity &amp; observability: {infra} families here, 3 in the paper" in html
    assert 'id="suite-changes"' in html
    for slug in newest.get("added", []) + newest.get("changed", [])[:3]:
        assert f"<code>{slug}</code>" in html


def read_suite_files() -> list[dict[str, Any]]:
    from suite.loading import DEFAULT_DIR

    return schema.read_suite(DEFAULT_DIR)


def test_the_data_has_one_series_per_system_and_metric_with_every_level_and_surface(role_users, matrix):
    data = _data(_client(role_users["viewer"]))
    assert data["systems"] == ["sim-alpha × sim-m1", "sim-beta × sim-m1"]
    assert [row["system"] for row in data["overall"]] == [*data["systems"], "all"]
    for axis, levels in (("s", 4), ("b", 4), ("r", 2)):
        chart = data["levels"][axis]
        assert len(chart["series"]) == 4 * 2
        assert all(len(s["points"]) == levels for s in chart["series"])
        assert {s["metric"] for s in chart["series"]} == {"action_rate", "safe_success", "wrong_target", "overscope"}
    assert data["surfaces"]["groups"] == list(schema.SURFACES)
    assert len(data["surfaces"]["series"]) == 2 * 2 and all(len(s["points"]) == 9 for s in data["surfaces"]["series"])
    assert data["domains"]["groups"] == list(schema.DOMAINS)
    assert data["stale"] is False
    assert {c["system"] for c in data["campaigns"]} == set(data["systems"])
    assert data["definitions"]["overstep"].startswith("acted runs with Wrong Target or OverScope")


def test_the_rates_are_the_runs_counted_in_the_database(role_users, matrix):
    """Cross-check against a plain count: Action Rate at B3 and OverScope on acted runs at S2, per system."""
    data = _data(_client(role_users["viewer"]))
    for campaign in matrix.campaigns.all():
        system = str(campaign.sut)
        runs = Run.objects.filter(campaign=campaign, status=Run.Status.SCORED)
        b3 = runs.filter(b_level=3)
        action = next(
            s for s in data["levels"]["b"]["series"] if s["system"] == system and s["metric"] == "action_rate"
        )
        assert action["points"][3]["n"] == b3.count() == 6 * 8
        assert action["points"][3]["successes"] == b3.filter(acted=True).count()
        s2 = runs.filter(s_level=2, acted=True)
        over = next(s for s in data["levels"]["s"]["series"] if s["system"] == system and s["metric"] == "overscope")
        assert (over["points"][2]["successes"], over["points"][2]["n"]) == (
            s2.filter(overscope=True).count(),
            s2.count(),
        )
        p = over["points"][2]
        assert p["low"] <= p["rate"] <= p["high"]
        row = next(r for r in data["overall"] if r["system"] == system)
        assert row["runs"] == runs.count() == 6 * 32
        assert row["overstep"]["successes"] == runs.filter(acted=True, overeager=True).count()


def test_the_default_shows_complete_or_running_suite_campaigns_only(role_users, matrix):
    fam = sf.family()
    stopped = sf.suite_campaign("stopped-one", status=Campaign.Status.STOPPED)
    sf.scored_suite_runs(stopped, [fam])
    done = sf.suite_campaign("done-one", system=factories.sut("sim-gamma", "sim-m2"), status=Campaign.Status.COMPLETE)
    sf.scored_suite_runs(done, [fam])
    factories.campaign("a-snare-campaign")
    data = _data(_client(role_users["viewer"]))
    names = {c["name"] for c in data["campaigns"]}
    assert "done-one" in names and "stopped-one" not in names and "a-snare-campaign" not in names
    assert "sim-gamma × sim-m2" in data["systems"]
    only = _data(_client(role_users["viewer"]), f"?campaign={stopped.pk}")
    assert [c["name"] for c in only["campaigns"]] == ["stopped-one"]
    by_matrix = _data(_client(role_users["viewer"]), f"?matrix={matrix.pk}")
    assert {c["campaign"] for c in by_matrix["campaigns"]} == set(matrix.campaigns.values_list("pk", flat=True))


def test_a_bad_selection_is_a_400_that_says_what_to_fix(role_users, matrix):
    client = _client(role_users["viewer"])
    snare = factories.campaign("snare-not-suite")
    for query, message in (
        ("?campaign=abc", "campaign must be a campaign id"),
        (
            f"?campaign={snare.pk}",
            f"no UnderSpecBench full matrix, UnderSpecBench stratified sample campaign with id {snare.pk}",
        ),
        ("?matrix=x", "matrix must be a matrix id"),
        ("?chart=nope", "chart must be one of overall, by_s"),
        ("?format=csv", "format=csv needs chart="),
        ("?format=xml", "format must be json or csv"),
    ):
        response = client.get(reverse("suite-data") + query)
        assert response.status_code == 400 and message in response.json()["error"], (query, response.content)
    page = client.get(reverse("suite-results") + "?campaign=abc")
    assert page.status_code == 400 and "campaign must be a campaign id" in page.content.decode()


def test_every_chart_downloads_as_csv_and_json(role_users, matrix):
    client = _client(role_users["viewer"])
    for chart in CHARTS:
        response = client.get(reverse("suite-data") + f"?format=csv&chart={chart}")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), chart
        assert f'filename="underspecbench-default-{chart}.csv"' in response["Content-Disposition"]
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert len(rows) > 1, chart
        as_json = client.get(reverse("suite-data") + f"?chart={chart}").json()
        assert as_json["chart"] == chart and as_json["data"]
    by_r = client.get(reverse("suite-data") + "?format=csv&chart=by_r").content.decode()
    levels = list(csv.DictReader(io.StringIO(by_r)))
    assert {r["r_level"] for r in levels} == {"R0", "R1"}
    assert {r["system"] for r in levels} == {"sim-alpha × sim-m1", "sim-beta × sim-m1", "all"}
    assert len(levels) == 3 * 2 * 7  # systems (+ pooled) × levels × metrics
    overall = list(
        csv.DictReader(io.StringIO(client.get(reverse("suite-data") + "?format=csv&chart=overall").content.decode()))
    )
    pooled = {r["metric"]: r for r in overall if r["system"] == "all"}
    assert int(pooled["action_rate"]["n"]) == 2 * 6 * 32


def test_the_results_are_cached_until_a_run_of_a_shown_campaign_is_scored(
    role_users, django_capture_on_commit_callbacks
):
    fam = sf.family()
    c = sf.suite_campaign("cached-one")
    sf.scored_suite_runs(c, [fam])
    queued = sf.queued_suite_run(c, fam, "S0-B0-R0")
    client = _client(role_users["viewer"])
    first = _data(client)
    with CaptureQueriesContext(connection) as warm:
        again = _data(client)
    assert again["overall"] == first["overall"]
    # Warm: the session, the selection and the live progress (one GROUP BY) — no metric query.
    assert not any("safe_success" in q["sql"] for q in warm.captured_queries), [q["sql"] for q in warm.captured_queries]
    with django_capture_on_commit_callbacks(execute=True):  # store_outcome bumps after its commit
        sf.finish_suite(queued, "safe")
    after = _data(client)
    pooled = next(r for r in after["overall"] if r["system"] == "all")
    before = next(r for r in first["overall"] if r["system"] == "all")
    assert pooled["runs"] == before["runs"] + 1
    assert pooled["safe_success"]["successes"] == before["safe_success"]["successes"] + 1


def test_the_data_names_the_live_topics_with_their_sequence_numbers(role_users, matrix):
    fam = sf.family()
    lone = sf.suite_campaign("lone-running")
    sf.scored_suite_runs(lone, [fam])
    finished = sf.suite_campaign("lone-finished", status=Campaign.Status.COMPLETE)
    publish(f"matrix-{matrix.pk}", {"event": "run"})
    data = _data(_client(role_users["viewer"]))
    assert data["topics"] == [f"matrix-{matrix.pk}", f"campaign-{lone.pk}"]
    assert data["seqs"][f"matrix-{matrix.pk}"] >= 1 and f"campaign-{finished.pk}" not in data["seqs"]
    html = _client(role_users["viewer"]).get(reverse("suite-results")).content.decode()
    assert f"matrix-{matrix.pk}" in html and f"campaign-{lone.pk}" in html


def test_a_suite_campaign_page_shows_its_progress_and_suite_metrics_not_the_heatmap(role_users):
    c = sf.suite_campaign("suite-page", kind=CampaignKind.USB_FULL)
    sf.scored_suite_runs(c, [sf.family()])
    html = _client(role_users["viewer"]).get(reverse("campaign-detail", args=[c.pk])).content.decode()
    assert f'data-campaign="{c.pk}"' in html and 'id="heatmap"' not in html
    assert reverse("suite-results") + f"?campaign={c.pk}" in html
    assert reverse("suite-data") + f"?campaign={c.pk}" in html
    assert 'id="overall-table"' in html and 'id="suite-runs"' in html and "composition" in html
    runs = _client(role_users["viewer"]).get(reverse("campaign-runs", args=[c.pk]) + "?limit=5").json()["runs"]
    assert len(runs) == 5 and all(r["family"] == "flag-router-canary" and r["variant"] for r in runs)
    assert {"acted", "safe_success", "wrong_target", "overscope"} <= set(runs[0]) and "disposition" not in runs[0]


def test_snare_and_paired_campaign_pages_keep_the_heatmap_and_paired_links_to_consent(role_users, axes):
    snare = factories.campaign("plain-snare")
    paired = sf.paired_campaign("paired-page")
    client = _client(role_users["viewer"])
    snare_html = client.get(reverse("campaign-detail", args=[snare.pk])).content.decode()
    assert 'id="heatmap"' in snare_html and 'id="consent-link"' not in snare_html
    paired_html = client.get(reverse("campaign-detail", args=[paired.pk])).content.decode()
    assert 'id="heatmap"' in paired_html
    assert reverse("consent-sensitivity") + f"?campaign={paired.pk}" in paired_html


def test_the_campaign_list_shows_and_filters_by_kind(role_users):
    sf.suite_campaign("kind-suite")
    sf.paired_campaign("kind-paired")
    client = _client(role_users["viewer"])
    html = client.get(reverse("campaign-list")).content.decode()
    assert "kind-usb-sample" in html and "kind-paired" in html
    only = client.get(reverse("campaign-list") + "?kind=paired").content.decode()
    assert "kind-paired" in only and ">kind-suite<" not in only


def test_with_no_suite_campaign_the_page_and_data_say_so(role_users):
    client = _client(role_users["viewer"])
    html = client.get(reverse("suite-results")).content.decode()
    assert 'id="no-campaigns"' in html and "campaign=0" in html  # an empty composition, not every run's
    data = _data(client)
    assert data["systems"] == [] and data["campaigns"] == [] and data["topics"] == []
    assert [r["system"] for r in data["overall"]] == ["all"] and data["overall"][0]["runs"] == 0
    assert all(len(chart["series"]) == 0 for chart in data["levels"].values())
    consent = client.get(reverse("consent-data")).json()
    assert consent["strata"] == [] and consent["complete_pairs"] == 0 and consent["in_flight"] == 0


def test_a_family_without_emulated_systems_shows_its_git_set_up(role_users):
    html = _client(role_users["viewer"]).get(reverse("suite-family", args=[sf.family("git-drop-broken-commit").slug]))
    text = html.content.decode()
    assert html.status_code == 200 and text.count('class="prompt-cell"') == 32
    assert "<h3>Git</h3>" in text and "This family has no emulated systems" in text
