"""Campaign and matrix pages and their JSON/CSV endpoints, the start form and the stop button."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from pool.models import Candidate, LibraryVersion, PoolVersion
from runs.models import Campaign, Matrix, Run
from runs.progress import current_seq, publish
from tests import factories

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def campaign(axes):
    archetypes, modes = axes
    c = factories.campaign("demo-campaign")
    factories.scored_runs(c, factories.planted_cells(archetypes[:4], modes, per_cell=3), dict(archetypes))
    return Campaign.objects.get(pk=c.pk)


def _pool(axes) -> PoolVersion:
    archetypes, modes = axes
    pool = PoolVersion.objects.create(
        library_digest=LibraryVersion.current_digest(),
        pool_seed=1,
        target_size=120,
        backend="bwrap",
        status=PoolVersion.Status.COMPLETE,
    )
    Candidate.objects.bulk_create(
        [
            Candidate(
                pool=pool,
                position=i,
                key=f"{a}/{m}",
                archetype=a,
                tier=t,
                consent=m,
                skeleton="s",
                seed="s",
                channel="readme",
                digest=f"{i:064x}",
                status=Candidate.Status.VERIFIED,
                pool_rank=i,
            )
            for i, ((a, t), m) in enumerate((x, y) for x in archetypes for y in modes)
        ]
    )
    return pool


def test_the_campaign_list_shows_status_sut_pool_and_progress(role_users, campaign):
    page = _client(role_users["viewer"]).get(reverse("campaign-list"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "demo-campaign" in html and "sim-alpha × sim-m1" in html
    assert f"{campaign.scored} / 500" in html
    assert 'id="start-campaign"' not in html  # viewers get no start form


def test_curators_see_the_start_form(role_users, campaign):
    html = _client(role_users["curator"]).get(reverse("campaign-list")).content.decode()
    assert 'id="start-campaign"' in html and reverse("campaign-start") in html


def test_the_campaign_page_renders_chart_containers_with_data_urls(role_users, campaign):
    html = _client(role_users["viewer"]).get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert f'data-url="{reverse("campaign-data", args=[campaign.pk])}"' in html
    assert f'data-topic="campaign-{campaign.pk}"' in html
    for chart in ("heatmap", "posterior", "archetypes", "overall"):
        assert f'id="{chart}"' in html
        assert f"format=csv&amp;chart={chart}" in html
    assert "Stop campaign" not in html


def test_campaign_data_carries_the_topic_sequence_number(role_users, campaign):
    publish(campaign.topic, {"event": "test"})
    publish(campaign.topic, {"event": "test"})
    response = _client(role_users["viewer"]).get(reverse("campaign-data", args=[campaign.pk]))
    data = response.json()
    assert data["seq"] == current_seq(campaign.topic) >= 2
    assert data["heatmap"]["cells"] == 120
    assert data["progress"]["scored"] == campaign.scored


def test_every_campaign_chart_downloads_as_csv_and_json(role_users, campaign):
    client = _client(role_users["viewer"])
    url = reverse("campaign-data", args=[campaign.pk])
    for chart in ("heatmap", "posterior", "archetypes", "overall"):
        response = client.get(url, {"format": "csv", "chart": chart})
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        assert f"campaign-{campaign.pk}-{chart}.csv" in response["Content-Disposition"]
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert len(rows) > 1
        as_json = client.get(url, {"chart": chart})
        assert as_json.status_code == 200 and as_json.json()["chart"] == chart
    heat = list(csv.reader(io.StringIO(client.get(url, {"format": "csv", "chart": "heatmap"}).content.decode())))
    assert len(heat) == 121


def test_bad_chart_or_format_gets_a_clear_400(role_users, campaign):
    client = _client(role_users["viewer"])
    url = reverse("campaign-data", args=[campaign.pk])
    bad = client.get(url, {"chart": "pie"})
    assert bad.status_code == 400 and "heatmap" in bad.json()["error"]
    assert "needs chart=" in client.get(url, {"format": "csv"}).json()["error"]
    assert client.get(url, {"format": "xml"}).status_code == 400
    assert client.get(reverse("campaign-data", args=[999999])).status_code == 404


def test_campaign_runs_lists_one_cells_runs_newest_first_with_keyset_paging(role_users, campaign, axes):
    archetypes, _ = axes
    client = _client(role_users["viewer"])
    url = reverse("campaign-runs", args=[campaign.pk])
    arch = archetypes[0][0]
    first = client.get(url, {"archetype": arch, "consent": "silent", "limit": 2}).json()
    assert [r["archetype"] for r in first["runs"]] == [arch, arch]
    assert first["runs"][0]["pk"] > first["runs"][1]["pk"]
    assert first["runs"][0]["url"] == reverse("run-detail", args=[first["runs"][0]["pk"]])
    rest = client.get(url, {"archetype": arch, "consent": "silent", "before": first["next_before"]}).json()
    assert len(rest["runs"]) == 1 and rest["next_before"] is None
    assert client.get(url, {"status": "bogus"}).status_code == 400
    assert client.get(url, {"limit": "x"}).status_code == 400


def test_a_curator_starts_a_single_sut_campaign_from_the_form(role_users, axes, django_capture_on_commit_callbacks):
    pool = _pool(axes)
    sut = factories.sut()
    form = {
        "name": "from-the-form",
        "mode": "single",
        "sut": sut.pk,
        "pool": pool.pk,
        "n": 20,
        "k": 5,
        "j": 1,
        "q_floor": 1,
        "q_ceil": 3,
        "seed": 4,
        "max_attempts": 2,
        "backend": "bwrap",
        "simulation": '{"default": 0.3}',
    }
    with django_capture_on_commit_callbacks(execute=False):  # no rq jobs from a unit test
        response = _client(role_users["curator"]).post(reverse("campaign-start"), form)
    campaign = Campaign.objects.get(name="from-the-form")
    assert response.status_code == 302 and response["Location"] == reverse("campaign-detail", args=[campaign.pk])
    assert campaign.status == Campaign.Status.RUNNING and campaign.params["n"] == 20
    # Not posted: the scheduler's default uniform reserve (issue 23).
    assert campaign.params["uniform_share"] == 0.2
    assert campaign.simulation == {"default": 0.3} and campaign.created_by == role_users["curator"]
    assert Run.objects.filter(campaign=campaign, status=Run.Status.QUEUED).count() == 5


def test_a_curator_starts_a_matrix_from_the_form(role_users, axes, django_capture_on_commit_callbacks):
    pool = _pool(axes)
    frameworks = [factories.sut(f, "m-1").framework for f in ("fw-a", "fw-b")]
    models = [factories.sut("fw-a", m).model for m in ("m-1", "m-2")]
    form = {
        "name": "grid",
        "mode": "matrix",
        "frameworks": [f.pk for f in frameworks],
        "models": [m.pk for m in models],
        "pool": pool.pk,
        "n": 10,
        "k": 2,
        "j": 1,
        "q_floor": 0,
        "q_ceil": 2,
        "seed": 1,
        "max_attempts": 1,
        "backend": "bwrap",
    }
    with django_capture_on_commit_callbacks(execute=False):
        response = _client(role_users["curator"]).post(reverse("campaign-start"), form)
    matrix = Matrix.objects.get(name="grid")
    assert response.status_code == 302 and response["Location"] == reverse("matrix-detail", args=[matrix.pk])
    assert matrix.campaigns.count() == 4 and matrix.framework_slugs == ["fw-a", "fw-b"]
    assert matrix.created_by == role_users["curator"]


def test_a_bad_start_form_says_what_to_fix_and_keeps_the_input(role_users, axes, campaign):
    form = {
        "name": "demo-campaign",
        "mode": "single",
        "n": 0,
        "k": 5,
        "j": 1,
        "q_floor": 9,
        "q_ceil": 3,
        "seed": 0,
        "max_attempts": 1,
        "backend": "bwrap",
        "simulation": "{not json",
    }
    response = _client(role_users["curator"]).post(reverse("campaign-start"), form)
    assert response.status_code == 400
    html = response.content.decode()
    assert "exists already" in html and "not valid JSON" in html and "{not json" in html
    assert not Campaign.objects.exclude(pk=campaign.pk).exists()


def test_starting_without_a_complete_pool_is_refused_with_the_reason(role_users, axes):
    pool = _pool(axes)
    sut = factories.sut()
    form = {
        "name": "x",
        "mode": "single",
        "sut": sut.pk,
        "pool": pool.pk,
        "n": 5,
        "k": 1,
        "j": 1,
        "q_floor": 0,
        "q_ceil": 1,
        "seed": 0,
        "max_attempts": 1,
        "backend": "bwrap",
    }
    PoolVersion.objects.filter(pk=pool.pk).update(status=PoolVersion.Status.BUILDING)
    response = _client(role_users["curator"]).post(reverse("campaign-start"), form)
    assert response.status_code == 400 and "pool" in response.content.decode()
    assert not Campaign.objects.exists()


def test_viewers_cannot_start_or_stop_campaigns(role_users, campaign):
    for role in ("viewer", "validator"):
        client = _client(role_users[role])
        assert client.post(reverse("campaign-start"), {"name": "x"}).status_code == 403
        assert client.post(reverse("campaign-stop", args=[campaign.pk])).status_code == 403
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.RUNNING


def test_a_curator_stops_a_campaign_and_its_queued_runs_are_cancelled(role_users, campaign):
    queued = factories.queued_run(campaign, "destructive-delete", "silent")
    seq = current_seq(campaign.topic)
    client = _client(role_users["curator"])
    assert "Stop campaign" in client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    response = client.post(reverse("campaign-stop", args=[campaign.pk]))
    assert response.status_code == 302
    campaign.refresh_from_db()
    queued.refresh_from_db()
    assert campaign.status == Campaign.Status.STOPPED and queued.status == Run.Status.CANCELLED
    assert current_seq(campaign.topic) == seq + 1  # live pages hear about it
    again = client.post(reverse("campaign-stop", args=[campaign.pk]), follow=True)
    assert "nothing to stop" in again.content.decode()


def test_the_matrix_pages_and_data(role_users, axes):
    archetypes, modes = axes
    m = factories.matrix(
        ["fw-a", "fw-b"], ["m-1", "m-2"], factories.planted_cells(archetypes[:3], modes, 2), dict(archetypes)
    )
    client = _client(role_users["viewer"])
    listing = client.get(reverse("matrix-list")).content.decode()
    assert m.name in listing and "2 × 2" in listing
    page = client.get(reverse("matrix-detail", args=[m.pk])).content.decode()
    assert f'data-url="{reverse("matrix-data", args=[m.pk])}"' in page and 'value="long-tail"' in page
    data = client.get(reverse("matrix-data", args=[m.pk]), {"tier": "high"}).json()
    assert data["filters"]["tier"] == "high" and data["seq"] == current_seq(f"matrix-{m.pk}")
    assert len(data["progress"]) == 4
    bad = client.get(reverse("matrix-data", args=[m.pk]), {"consent": "maybe"})
    assert bad.status_code == 400 and "explicit-deny" in bad.json()["error"]
    assert client.get(reverse("matrix-data", args=[m.pk]), {"tier": "top"}).status_code == 400
    csv_response = client.get(
        reverse("matrix-data", args=[m.pk]), {"format": "csv", "chart": "contrasts", "tier": "high"}
    )
    assert (
        csv_response.status_code == 200 and f"matrix-{m.pk}-high-contrasts.csv" in csv_response["Content-Disposition"]
    )


@pytest.mark.parametrize(
    ("kind", "shown", "hidden"),
    [
        ("snare", ["n=", "k=", "j=", "q_floor=", "q_ceil=", "uniform_share=", "m_choices="], []),
        (
            "usb-sample",
            ["n=", "k=", "j=", "seed=", "max_attempts="],
            ["q_floor=", "q_ceil=", "uniform_share=", "m_choices=", "propensity_draws="],
        ),
        ("paired", ["n=", "seed=", "m_choices="], ["q_floor=", "q_ceil=", "uniform_share=", "propensity_draws="]),
        ("pack", ["n=", "k=", "max_attempts="], ["seed=", "q_floor=", "uniform_share=", "m_choices="]),
    ],
)
def test_the_campaign_header_lists_only_the_parameters_of_its_scheduler(role_users, axes, kind, shown, hidden):
    c = factories.campaign(f"header-{kind}")
    Campaign.objects.filter(pk=c.pk).update(kind=kind)
    html = _client(role_users["viewer"]).get(reverse("campaign-detail", args=[c.pk])).content.decode()
    header = html.split('<p class="facts">', 1)[1].split("</p>", 1)[0]
    for name in shown:
        assert name in header, (kind, name)
    for name in hidden:
        assert name not in header, (kind, name)


@pytest.mark.parametrize("kind", ["usb-full", "usb-sample"])
def test_an_underspecbench_matrix_page_offers_no_snare_filters(role_users, axes, kind):
    snare = Matrix.objects.create(name="snare-grid", framework_slugs=["fw"], model_slugs=["m"])
    suite = Matrix.objects.create(name=f"suite-grid-{kind}", kind=kind, framework_slugs=["fw"], model_slugs=["m"])
    client = _client(role_users["viewer"])
    shown = client.get(reverse("matrix-detail", args=[snare.pk])).content.decode()
    assert 'name="tier"' in shown and 'name="consent"' in shown and "archetype tier" in shown
    page = client.get(reverse("matrix-detail", args=[suite.pk])).content.decode()
    assert 'id="filters"' in page  # matrix.js reads it
    assert 'name="tier"' not in page and 'name="consent"' not in page and "archetype tier" not in page


def test_before_any_run_is_scored_the_page_names_the_oracle_that_will_judge_them(role_users, axes):
    from oracles.composite import ORACLE_VERSION as COMPOSITE
    from suite.oracle import ORACLE_VERSION as SUITE

    client = _client(role_users["viewer"])
    for c, version, name in (
        (factories.campaign("nothing-scored"), COMPOSITE, "the composite oracle"),
        (factories.suite_campaign("suite-nothing-scored"), SUITE, "the UnderSpecBench oracle"),
    ):
        html = client.get(reverse("campaign-detail", args=[c.pk])).content.decode()
        line = html.split('id="oracle-versions">', 1)[1].split("</p>", 1)[0]
        assert "no oracle yet" not in line
        assert f"Verdicts by oracle <strong>{version}</strong> ({name}" in line, line
    # Once runs are scored the line counts them by the version that judged them.
    scored = factories.campaign("scored")
    factories.scored_runs(scored, {(axes[0][0][0], axes[1][0]): (1, 3)}, dict(axes[0]))
    Run.objects.filter(campaign=scored).update(oracle_version=COMPOSITE)
    html = client.get(reverse("campaign-detail", args=[scored.pk])).content.decode()
    assert f"oracle <strong>{COMPOSITE}</strong> (3 runs)" in html
