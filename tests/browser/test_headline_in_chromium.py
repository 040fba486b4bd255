"""One headline per campaign on every page, as Chromium renders it (issue 34 items 1 and 3).

tests/runs/dashboard/test_headline.py holds the server's side (the list and detail HTML, the JSON,
the CSV, the terminal report, the matrix data) to one definition, ``runs.stats.Headline``. Here the
pages are drawn by their own JavaScript in a real browser and read back as a reader sees them:
the campaigns list, each campaign's headline row and its Overall section, and the matrix page's
heatmap, interval chart and member table, for a matrix whose pools exclude an archetype that holds
most of each campaign's overeager runs (so an all-archetype number would disagree).
"""

from __future__ import annotations

import pytest

from runs import stats
from runs.models import Matrix
from tests import factories
from tests.browser.conftest import login, shot
from tests.runs.dashboard.test_headline import _campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def matrix(role_users):
    axes = factories.axes()
    m = Matrix.objects.create(name="one-story", framework_slugs=["fw-a", "fw-b"], model_slugs=["m-1"])
    members = [
        _campaign(axes, f"one-story/{fw}", included=inc, excluded=exc, system=factories.sut(fw, "m-1"), matrix=m)
        for fw, inc, exc in (("fw-a", (8, 30), (40, 50)), ("fw-b", (20, 30), (1, 50)))
    ]
    return m, [(c, stats.headline(c.pk)) for c in members]


def _wait_drawn(page, root: str) -> None:
    page.wait_for_function(f"() => +document.querySelector('{root}').dataset.version >= 1", timeout=15_000)


def test_every_page_that_shows_a_rate_shows_the_campaigns_headline(page, server, matrix):
    m, members = matrix
    login(page, server, "viewer")

    page.goto(f"{server.url}/campaigns/")
    for campaign, head in members:
        row = page.locator(f"#campaigns tr[data-campaign='{campaign.pk}']")
        assert row.locator(".headline-rate").inner_text() == head.display
        assert head.basis in row.locator(".headline-basis").inner_text()
        assert row.locator(".headline").get_attribute("data-headline-n") == str(head.n)

    for campaign, head in members:
        page.goto(f"{server.url}/campaigns/{campaign.pk}/")
        assert page.locator("#headline .headline-rate").inner_text() == head.display
        assert head.basis in page.locator("#headline .headline-basis").inner_text()
        assert all(name in page.locator("#headline").inner_text() for name in head.excluded)
        # The Overall section, drawn from the JSON, rests on the same runs.
        page.wait_for_function("() => document.getElementById('overall-text').textContent.includes('Raw:')")
        assert f"({head.successes}/{head.n};" in page.locator("#overall-text").inner_text()

    page.goto(f"{server.url}/matrices/{m.pk}/")
    _wait_drawn(page, "#matrix")
    # [row, column, the cell's text] per heatmap cell, and [overeager, runs, scored] per interval point.
    cells = page.evaluate(
        """() => { const t = document.getElementById('heatmap').data[0];
             return t.y.flatMap((y, i) => t.x.map((x, j) => [y, x, t.text[i][j]])); }"""
    )
    points = page.evaluate(
        """() => document.getElementById('intervals').data
             .map(t => [t.name, t.customdata.map(c => [c[0], c[1], c[4]])])"""
    )
    members_table = page.locator("#members tbody tr")
    for campaign, head in members:
        fw = campaign.sut.framework.slug
        text = f"{100 * head.rate:.1f}%<br>{head.successes}/{head.n}"
        assert [fw, "m-1", text] in cells or ["m-1", fw, text] in cells, cells
        assert [fw, [[head.successes, head.n, head.scored]]] in points
        row = members_table.filter(has_text=campaign.name)
        assert row.locator(".member-rate").inner_text() == f"{head.successes} / {head.n}"
    shot(page, "matrix-one-headline")
