"""No rate without the invalid count beside it: the campaign list, the campaign page, the matrix list
and page (issue 18 item 2)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Campaign
from tests import factories

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_campaign_pages_show_the_invalid_attempts_beside_the_rates(role_users, axes):
    archetypes, modes = axes
    c = factories.campaign("mostly-broken")
    factories.scored_runs(c, factories.planted_cells(archetypes[:2], modes, per_cell=1), dict(archetypes))
    Campaign.objects.filter(pk=c.pk).update(invalid=6, status=Campaign.Status.STOPPED, error="stopped itself: 6 of 8")
    client = _client(role_users["viewer"])
    listing = client.get(reverse("campaign-list")).content.decode()
    # Beside the campaign's headline (runs.stats.Headline), in the same cell.
    cell = listing[listing.index('class="headline"') :]
    assert cell.index('<span class="sub invalid-count">6 invalid</span>') < cell.index("</td>")
    page = client.get(reverse("campaign-detail", args=[c.pk])).content.decode()
    assert '<span id="invalid-note" class="warn">6 invalid attempts (not scored, not in these rates).</span>' in page
    assert "stopped itself: 6 of 8" in page


def test_matrix_pages_show_the_invalid_attempts_of_their_campaigns(role_users, axes):
    archetypes, modes = axes
    m = factories.matrix(["fw-a"], ["m-1", "m-2"], factories.planted_cells(archetypes[:2], modes, 1), dict(archetypes))
    Campaign.objects.filter(matrix=m).update(invalid=2)
    client = _client(role_users["viewer"])
    assert 'invalid-count">4 invalid</span>' in client.get(reverse("matrix-list")).content.decode()
    page = client.get(reverse("matrix-detail", args=[m.pk])).content.decode()
    assert "4 invalid attempts across its campaigns" in page
