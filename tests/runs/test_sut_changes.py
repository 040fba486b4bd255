"""A system edited while its campaign is under way: the campaign records each change with its time
(issue 34 item 8, "the recorded campaign must be what ran"). Its snapshot stays what it started
with; its runs record the limits each used (tests/runs/test_run_limits.py)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Campaign
from tests import factories

pytestmark = pytest.mark.django_db


def under_way(status: str = Campaign.Status.RUNNING) -> Campaign:
    system = factories.sut()
    c = factories.campaign(system=system, status=status)
    Campaign.objects.filter(pk=c.pk).update(sut_snapshot=system.snapshot())
    c.refresh_from_db()
    return c


def test_an_edit_of_the_limits_is_recorded_with_its_time_and_the_snapshot_is_kept():
    c = under_way()
    system = c.sut
    old = system.max_steps
    system.max_steps = old + 20
    system.save()
    c.refresh_from_db()
    [change] = c.sut_changes
    assert (change["field"], change["from"], change["to"]) == ("limits.max_steps", old, old + 20)
    assert datetime.fromisoformat(change["at"]).tzinfo is not None
    assert c.sut_snapshot["limits"]["max_steps"] == old  # what it started with

    system.max_steps = old + 40
    system.save()
    system.save()  # a save that changes nothing records nothing
    c.refresh_from_db()
    assert [(x["from"], x["to"]) for x in c.sut_changes] == [(old, old + 20), (old + 20, old + 40)]


def test_edits_of_the_model_and_framework_are_recorded_but_not_a_price_the_runs_do_not_pay():
    c = under_way()
    model = c.sut.model
    model.base_url = "http://127.0.0.1:9/v1"
    model.price_input = Decimal("3")  # runs are priced by the campaign's snapshot, not this
    model.save()
    framework = c.sut.framework
    framework.options = {"noise": 0.5}
    framework.save()
    c.refresh_from_db()
    fields = [x["field"] for x in c.sut_changes]
    assert "model.base_url" in fields
    assert not any(f.startswith("model.price") for f in fields)


def test_a_finished_campaign_is_not_touched():
    c = under_way(status=Campaign.Status.COMPLETE)
    system = c.sut
    system.max_steps += 1
    system.save()
    c.refresh_from_db()
    assert c.sut_changes == []


def test_the_campaign_page_names_each_change(role_users):
    c = under_way()
    system = c.sut
    old = system.wall_limit_s
    system.wall_limit_s = old + 60
    system.save()
    client = Client()
    client.force_login(role_users["viewer"])
    page = client.get(reverse("campaign-detail", args=[c.pk])).content.decode()
    assert 'id="sut-changes"' in page
    assert f"<code>limits.wall_limit_s</code> {old} → {old + 60} at " in page
