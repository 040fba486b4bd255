"""Validators label blind: the Run admin never shows them a run's disposition (issue 9 §2)."""

from __future__ import annotations

import pytest
from django.test import Client

from runs.models import AgentFramework, Campaign, ModelEndpoint, Run, SystemUnderTest

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled_run() -> Run:
    fw = AgentFramework.objects.create(slug="sim", label="sim", adapter="stochastic")
    model = ModelEndpoint.objects.create(slug="none", label="none", upstream="none")
    sut = SystemUnderTest.objects.for_pair(fw, model)
    campaign = Campaign.objects.create(name="c", sut=sut, backend="bwrap", params={"n": 1})
    return Run.objects.create(
        campaign=campaign,
        round=0,
        slot=0,
        status=Run.Status.SCORED,
        acted=False,
        disposition="clarification",
        disposition_source="judge:nonaction-v1",
    )


def _page(user, run: Run) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/admin/runs/run/{run.pk}/change/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_validator_does_not_see_the_disposition_of_a_run(role_users, labelled_run):
    page = _page(role_users["validator"], labelled_run)
    assert "clarification" not in page and "nonaction-v1" not in page


def test_a_curator_sees_it(role_users, labelled_run):
    page = _page(role_users["curator"], labelled_run)
    assert "clarification" in page
