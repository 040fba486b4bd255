"""Task family pages: the list, the detail (grounding, environment, ground truth, 32 prompts with
per-variant counts) and the family's runs; dispositions hidden from validator-only accounts."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Run
from tests import factories
from tests import factories as sf

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def flags(db):
    fam = sf.family("flag-router-canary")
    sf.family("s3-block-public-artifacts")
    a = sf.suite_campaign("fam-alpha")
    sf.scored_suite_runs(a, [fam], per_variant=2, seed=3)
    b = sf.suite_campaign("fam-beta", system=factories.sut("sim-beta", "sim-m1"))
    sf.scored_suite_runs(b, [fam], per_variant=1, seed=4)
    return fam


def test_the_list_shows_domain_surface_grounding_and_run_counts(role_users, flags):
    html = _client(role_users["viewer"]).get(reverse("suite-families")).content.decode()
    assert reverse("suite-family", args=["flag-router-canary"]) in html
    assert "Runtime &amp; reliability operations" in html and "Deployment &amp; traffic control" in html
    assert "https://www.sec.gov/litigation/admin/2013/34-70694.pdf" in html  # the grounding link
    row = re.search(r'<tr data-family="flag-router-canary">(.*?)</tr>', html, re.S).group(1)
    assert "<td>96</td><td>96</td>" in row  # 32 prompts × (2 + 1) runs, all scored
    s3 = re.search(r'<tr data-family="s3-block-public-artifacts">(.*?)</tr>', html, re.S).group(1)
    assert "<td>0</td><td>0</td><td>0</td>" in s3
    filtered = (
        _client(role_users["viewer"]).get(reverse("suite-families") + "?surface=artifacts-registries").content.decode()
    )
    assert "s3-block-public-artifacts" in filtered and 'data-family="flag-router-canary"' not in filtered


def test_the_detail_shows_grounding_environment_truth_and_the_32_prompts(role_users, flags):
    html = _client(role_users["viewer"]).get(reverse("suite-family", args=["flag-router-canary"])).content.decode()
    assert html.count('class="prompt-cell"') == 32
    for variant in ("S0-B0-R0", "S3-B3-R1", "S2-B1-R0"):
        assert f'id="prompt-{variant}"' in html
    assert flags.prompts.get(s=3, b=3, r=1).text in html
    assert "SEC order against Knight Capital" in html and "docs/flags.md" in html
    # The initial world as a table, each object with the oracle's class.
    assert "flag/trading/order-router-v2/env/production" in html
    assert "cls-intended-modified" in html and "cls-candidate" in html and "cls-over-scope" in html
    assert "order-router-v2-shadow" in html and "FLAGCTL_PROJECT=trading" in html
    assert "flagctl rollout order-router --env production --percent 10 --yes" in html  # wrong-target reference
    # Per-variant counts: scored · SS · WT · OS · non-action, with dispositions for non-validators.
    runs = Run.objects.filter(family="flag-router-canary", s_level=1, b_level=2, r_level=0, status="scored")
    cell = re.search(r'id="prompt-S1-B2-R0">(.*?)</td>', html, re.S).group(1)
    assert f"{runs.count()} scored" in cell
    assert f'<span class="wt">{runs.filter(wrong_target=True).count()}</span>' in cell
    if runs.filter(acted=False).exists():
        assert "(" in cell and "/" in cell


def test_validators_cannot_open_the_family_page_or_its_runs(role_users, flags):
    """Its counts and runs carry Wrong Target, OverScope and dispositions (overeager/blind.py)."""
    validator = _client(role_users["validator"])
    for url in (
        reverse("suite-family", args=["flag-router-canary"]),
        reverse("suite-family-runs", args=["flag-router-canary"]),
    ):
        assert validator.get(url).status_code == 403
    viewer = _client(role_users["viewer"]).get(reverse("suite-family", args=["flag-router-canary"])).content.decode()
    assert "<th>disposition</th>" in viewer and "clarification / refusal / deferment / empty" in viewer


def test_the_runs_endpoint_pages_and_filters_by_variant(role_users, flags):
    url = reverse("suite-family-runs", args=["flag-router-canary"])
    client = _client(role_users["viewer"])
    first = client.get(url + "?limit=40").json()
    assert len(first["runs"]) == 40 and first["next_before"] == first["runs"][-1]["pk"]
    second = client.get(url + f"?limit=40&before={first['next_before']}").json()
    rest = client.get(url + f"?limit=40&before={second['next_before']}").json()
    assert rest["next_before"] is None
    pks = [r["pk"] for page in (first, second, rest) for r in page["runs"]]
    assert len(pks) == len(set(pks)) == 96 and pks == sorted(pks, reverse=True)
    one = client.get(url + "?variant=S2-B3-R1").json()["runs"]
    assert len(one) == 3 and {r["variant"] for r in one} == {"S2-B3-R1"}
    assert {r["system"] for r in one} == {"sim-alpha × sim-m1", "sim-beta × sim-m1"}
    non_action = [r for r in first["runs"] + second["runs"] + rest["runs"] if r["outcome"] == "non-action"]
    assert non_action and all(r["disposition"] for r in non_action)
    for query, message in (
        ("?variant=S9", "variant must look like"),
        ("?limit=0", "limit must be between"),
        ("?status=x", "status must be"),
    ):
        response = client.get(url + query)
        assert response.status_code == 400 and message in response.json()["error"]
    assert client.get(reverse("suite-family-runs", args=["no-such-family"])).status_code == 404
    assert client.get(reverse("suite-family", args=["no-such-family"])).status_code == 404
