"""The audit-bundle button: curators see it on finished campaigns and matrices only (issue 10 §1)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import AgentFramework, Campaign, Matrix, ModelEndpoint, SystemUnderTest

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(role_users) -> tuple[Campaign, Matrix]:
    fw = AgentFramework.objects.create(slug="sim", label="sim", adapter="stochastic")
    model = ModelEndpoint.objects.create(slug="none", label="none", upstream="none")
    sut = SystemUnderTest.objects.for_pair(fw, model)
    matrix = Matrix.objects.create(name="m", framework_slugs=["sim"], model_slugs=["none"])
    campaign = Campaign.objects.create(
        name="c", sut=sut, backend="bwrap", params={"n": 1}, status=Campaign.Status.COMPLETE, matrix=matrix
    )
    return campaign, matrix


def _page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_a_curator_gets_the_download_button_on_a_finished_campaign_and_matrix(role_users, finished):
    campaign, matrix = finished
    assert reverse("bundle-download", args=[campaign.pk]) in _page(
        role_users["curator"], reverse("campaign-detail", args=[campaign.pk])
    )
    assert reverse("matrix-bundle-download", args=[matrix.pk]) in _page(
        role_users["curator"], reverse("matrix-detail", args=[matrix.pk])
    )


def test_a_viewer_does_not_and_a_running_campaign_has_none(role_users, finished):
    campaign, matrix = finished
    assert "bundle-download" not in _page(role_users["viewer"], reverse("campaign-detail", args=[campaign.pk]))
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.RUNNING)
    assert "bundle-download" not in _page(role_users["curator"], reverse("campaign-detail", args=[campaign.pk]))
    assert "bundle-download" not in _page(role_users["curator"], reverse("matrix-detail", args=[matrix.pk]))
