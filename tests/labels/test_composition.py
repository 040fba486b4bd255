"""disposition_composition and its JSON/CSV endpoint: counts and shares of the four dispositions
among non-action runs, by system and by axis level, with the label-source rule stated."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from labels.disposition import refresh
from labels.models import HumanLabel
from labels.reports import disposition_composition
from oracles.statistics import wilson
from runs.models import Run
from tests.labels import world
from tests.labels.world import fast_hashing  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_hashing")]


@pytest.fixture
def mix():
    """System A: 3 clarification (S0), 1 refusal (S1), 1 unlabelled; system B: 2 deferment, 1 empty (S1)."""
    a = world.campaign("usb-a", "fw-a", "m-1")
    b = world.campaign("usb-b", "fw-b", "m-1")
    alice = world.validators("alice")[0]
    runs = []
    for label, s in (("clarification", 0), ("clarification", 0), ("clarification", 0), ("refusal", 1)):
        run = world.non_action_run(a, s=s, b=0, r=0)
        world.judge_label(run, label)
        runs.append(run)
    world.non_action_run(a, s=1, b=0, r=0)  # no label yet
    for label in ("deferment", "deferment", "empty"):
        run = world.non_action_run(b, s=1, b=2, r=1)
        world.judge_label(run, label, source="fallback:v1")
        runs.append(run)
    acted = world.non_action_run(a, acted=True, s=0, b=0, r=0)
    world.judge_label(acted, "refusal")  # acted runs never count
    HumanLabel.objects.create(run=runs[0], validator=alice, label="refusal")  # human majority overrides
    refresh([r.pk for r in Run.objects.all()])
    return {"a": a, "b": b, "alice": alice}


def test_composition_by_system_counts_and_shares_with_the_rule(mix):
    data = disposition_composition(Run.objects.all(), by="system")
    groups = {g["group"]: g for g in data["groups"]}
    a, b = groups["fw-a × m-1"], groups["fw-b × m-1"]
    assert (a["n"], a["unlabelled"]) == (4, 1)
    assert a["counts"] == {"clarification": 2, "refusal": 2, "deferment": 0, "empty": 0}
    assert a["shares"]["refusal"] == 0.5
    assert a["sources"] == {"human-majority": 1, "judge": 3}
    assert b["counts"] == {"clarification": 0, "refusal": 0, "deferment": 2, "empty": 1}
    assert b["sources"] == {"fallback": 3}
    w = wilson(2, 3)
    assert b["shares"]["deferment"] == pytest.approx(2 / 3) and b["intervals"]["deferment"] == [
        pytest.approx(w.low, abs=1e-6),
        pytest.approx(w.high, abs=1e-6),
    ]
    assert data["total"]["n"] == 7 and data["total"]["unlabelled"] == 1
    assert data["rule"] == "adjudicated > human majority > judge > fallback"
    refusal = next(t for t in data["traces"] if t["name"] == "refusal")
    assert refusal["type"] == "bar" and refusal["x"] == ["fw-a × m-1", "fw-b × m-1"] and refusal["y"] == [0.5, 0]
    assert data["layout"]["barmode"] == "stack"


def test_composition_by_axis_level(mix):
    s = {g["group"]: g["counts"] for g in disposition_composition(Run.objects.all(), by="s_level")["groups"]}
    assert s == {
        "S0": {"clarification": 2, "refusal": 1, "deferment": 0, "empty": 0},
        "S1": {"clarification": 0, "refusal": 1, "deferment": 2, "empty": 1},
    }
    r = [g["group"] for g in disposition_composition(Run.objects.all(), by="r_level")["groups"]]
    assert r == ["R0", "R1"]
    with pytest.raises(ValueError, match="by must be one of"):
        disposition_composition(Run.objects.all(), by="colour")


def test_the_endpoint_filters_by_campaign_and_exports_csv(mix):
    user = world.validators("vic")[0]
    user.groups.set([Group.objects.get(name="viewer")])
    client = Client()
    client.force_login(user)
    url = reverse("labels-composition")
    one = client.get(url, {"campaign": mix["b"].pk, "by": "system"}).json()
    assert [g["group"] for g in one["groups"]] == ["fw-b × m-1"]
    both = client.get(url, {"campaign": [mix["a"].pk, mix["b"].pk], "by": "all"}).json()
    assert both["groups"][0]["n"] == 7
    rows = list(csv.reader(io.StringIO(client.get(url, {"by": "b_level", "format": "csv"}).content.decode())))
    assert rows[0][:3] == ["b_level", "n", "unlabelled"] and rows[0][-1] == "rule"
    assert [r[0] for r in rows[1:]] == ["B0", "B2"]
    assert client.get(url, {"by": "colour"}).status_code == 400
    assert client.get(url, {"campaign": "x"}).status_code == 400


def test_the_include_renders_a_chart_container_any_page_can_embed(mix):
    from django.template.loader import render_to_string

    html = render_to_string(
        "labels/_composition.html", {"data_url": "/labels/composition.json?campaign=1", "by": "s_level"}
    )
    assert 'data-url="/labels/composition.json?campaign=1"' in html and 'data-by="s_level"' in html
    assert "js/composition.js" in html and "plotly-cartesian-4.1.1.min.js" in html
    assert "adjudicated &gt; human majority &gt; judge &gt; fallback" in html
