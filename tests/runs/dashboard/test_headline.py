"""One headline per campaign everywhere, with what it rests on, and weak evidence flagged (issue 34 items 1–2)."""

from __future__ import annotations

import csv
import io
import itertools
import json

import pytest
from django.core.management.base import OutputWrapper
from django.test import Client
from django.urls import reverse

from pool.models import LibraryVersion, PoolVersion
from runs import stats
from runs.management.commands.run_campaign import Command
from runs.models import Campaign, Matrix
from tests import factories

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


_seeds = itertools.count(1)


def _pool(excluded: list[str]) -> PoolVersion:
    return PoolVersion.objects.create(
        library_digest=LibraryVersion.current_digest(),
        pool_seed=next(_seeds),
        target_size=120,
        backend="bwrap",
        status=PoolVersion.Status.COMPLETE,
        report={"trap_checks": {a: {"excluded": "the task never meets this trap"} for a in excluded}},
    )


def _campaign(axes, name: str, included: tuple[int, int], excluded: tuple[int, int], **kw) -> Campaign:
    """Scored runs in two included archetypes (split) and one archetype the pool excludes."""
    archetypes, modes = axes
    c = factories.campaign(name, **kw)
    c.pool = _pool([archetypes[2][0]])
    c.save(update_fields=["pool"])
    k, n = included
    cells = {
        (archetypes[0][0], modes[0]): (k // 2, n // 2),
        (archetypes[1][0], modes[1]): (k - k // 2, n - n // 2),
        (archetypes[2][0], modes[0]): excluded,
    }
    factories.scored_runs(c, cells, dict(archetypes))
    return Campaign.objects.get(pk=c.pk)


def _report(campaign_ids: list[int]) -> str:
    out = io.StringIO()
    command = Command()
    command.stdout = OutputWrapper(out)
    command._report(campaign_ids)
    return out.getvalue()


@pytest.fixture
def seeded(axes):
    # 8 of 30 in the headline's archetypes, 40 of 50 in the excluded one: the all-runs rate
    # (48/80 = 60%) is not the headline (26.7%).
    return _campaign(axes, "one-headline", included=(8, 30), excluded=(40, 50))


def test_the_headline_leaves_out_the_excluded_archetypes_and_says_so(axes, seeded):
    archetypes, _ = axes
    head = stats.headline(seeded.pk)
    assert (head.successes, head.n, head.scored) == (8, 30, 80)
    assert head.rate == pytest.approx(8 / 30)
    assert list(head.excluded) == [archetypes[2][0]]
    assert head.basis == "30 of 80 scored runs; leaves out 1 archetype"
    assert (head.low, head.high) == pytest.approx((stats.wilson(8, 30).low, stats.wilson(8, 30).high))


def test_every_place_shows_the_same_headline(role_users, axes, seeded):
    archetypes, _ = axes
    head = stats.headline(seeded.pk)
    client = _client(role_users["viewer"])

    listing = client.get(reverse("campaign-list")).content.decode()
    page = client.get(reverse("campaign-detail", args=[seeded.pk])).content.decode()
    for html in (listing, page):
        assert head.display in html and head.basis in html
        assert archetypes[2][0] in html  # the left-out archetype is named
        assert "60.0%" not in html  # the all-archetype rate is shown nowhere

    data = json.loads(client.get(reverse("campaign-data", args=[seeded.pk])).content)
    assert data["headline"] == json.loads(json.dumps(head.as_dict()))
    # The campaign's Overall section rests on the same runs.
    assert (data["overall"]["raw"]["successes"], data["overall"]["raw"]["n"]) == (head.successes, head.n)

    response = client.get(reverse("campaign-data", args=[seeded.pk]), {"format": "csv", "chart": "headline"})
    (first,) = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert float(first["rate"]) == pytest.approx(head.rate)
    assert (int(first["n"]), int(first["scored"])) == (head.n, head.scored)
    assert first["excluded_archetypes"] == archetypes[2][0]

    terminal = _report([seeded.pk])
    assert head.display in terminal and head.basis in terminal and archetypes[2][0] in terminal
    assert "60.0%" not in terminal


def test_a_matrix_pair_reads_its_campaigns_headline(axes):
    m = Matrix.objects.create(name="one-number", framework_slugs=["fw-a", "fw-b"], model_slugs=["m-1"])
    a = _campaign(axes, "m/a", included=(8, 30), excluded=(40, 50), system=factories.sut("fw-a", "m-1"), matrix=m)
    b = _campaign(axes, "m/b", included=(20, 30), excluded=(1, 50), system=factories.sut("fw-b", "m-1"), matrix=m)
    data = stats.matrix_data(m)
    for c, fw in ((a, "fw-a"), (b, "fw-b")):
        head = stats.headline(c.pk)
        row = next(p for p in data["pairs"] if p["framework"] == fw)
        assert (row["successes"], row["n"], row["scored"]) == (head.successes, head.n, head.scored)
        assert row["rate"] == pytest.approx(head.rate)
        assert row["excluded_count"] == len(head.excluded) == 1
        assert list(data["excluded_archetypes"]) == list(head.excluded)


# -- weak evidence ------------------------------------------------------------------------------


def test_a_wide_interval_is_flagged_beside_the_number(role_users, axes, seeded, settings):
    settings.HEADLINE_MAX_WIDTH_PP = 20
    head = stats.headline(seeded.pk)  # 8/30: the Wilson interval is about 31 pp wide
    assert head.weak and head.warning == "weak evidence: interval wider than 20 pp"
    client = _client(role_users["viewer"])
    for url in (reverse("campaign-list"), reverse("campaign-detail", args=[seeded.pk])):
        assert head.warning in client.get(url).content.decode()
    assert json.loads(client.get(reverse("campaign-data", args=[seeded.pk])).content)["headline"]["weak"] is True
    assert head.warning in _report([seeded.pk])


def test_a_narrow_interval_is_not_flagged(role_users, axes, settings):
    settings.HEADLINE_MAX_WIDTH_PP = 20
    c = _campaign(axes, "many-runs", included=(200, 400), excluded=(5, 10))
    head = stats.headline(c.pk)  # 200/400: about 10 pp wide
    assert not head.weak and head.warning == ""
    client = _client(role_users["viewer"])
    for url in (reverse("campaign-list"), reverse("campaign-detail", args=[c.pk])):
        html = client.get(url).content.decode()
        assert head.display in html and "weak evidence" not in html
    assert "weak evidence" not in _report([c.pk])


def test_the_width_is_a_setting(axes, seeded, settings):
    settings.HEADLINE_MAX_WIDTH_PP = 40
    assert not stats.compute_headlines([seeded.pk])[seeded.pk].weak


@pytest.fixture
def grid(axes):
    archetypes, modes = axes
    cells = factories.planted_cells(archetypes[:3], modes[:2], per_cell=40)
    return factories.matrix(["fw-a", "fw-b"], ["m-1", "m-2"], cells, dict(archetypes), reserve=40)


def _matrix_html(role_users, m: Matrix) -> str:
    return _client(role_users["viewer"]).get(reverse("matrix-detail", args=[m.pk])).content.decode()


def test_the_matrix_page_says_when_no_contrast_is_significant(role_users, grid, monkeypatch):
    # Every contrast made non-significant: the page must say the pairs are not shown to differ.
    real = stats.reserve_contrasts

    def none_significant(*args, **kwargs):
        return [type(c)(**{**c.__dict__, "significant": False}) for c in real(*args, **kwargs)]

    monkeypatch.setattr(stats, "reserve_contrasts", none_significant)
    data = stats.matrix_data(grid)
    assert data["significant"] == 0 and data["evidence"]["contrasts"] == 6
    html = _matrix_html(role_users, grid)
    assert "None of the 6 pairwise contrasts is significant" in html
    assert html.index('id="m-evidence"') < html.index('id="heatmap"')  # near the top


def test_the_matrix_page_says_nothing_of_the_kind_when_a_contrast_is_significant(role_users, grid, monkeypatch):
    real = stats.reserve_contrasts

    def one_significant(*args, **kwargs):
        found = real(*args, **kwargs)
        return [type(c)(**{**c.__dict__, "significant": i == 0}) for i, c in enumerate(found)]

    monkeypatch.setattr(stats, "reserve_contrasts", one_significant)
    html = _matrix_html(role_users, grid)
    assert "pairwise contrasts is significant" not in html and "No pairwise contrast" not in html


def test_the_matrix_page_flags_pairs_with_wide_intervals(role_users, axes):
    archetypes, modes = axes
    m = factories.matrix(["fw-a", "fw-b"], ["m-1"], {(archetypes[0][0], modes[0]): (3, 10)}, dict(archetypes))
    data = stats.matrix_data(m)
    assert all(p["weak"] for p in data["pairs"])
    html = _matrix_html(role_users, m)
    assert "Weak evidence: 2 of 2 pair rates have a 95% interval wider than 20 pp." in html
    assert "No pairwise contrast could be computed" in html
