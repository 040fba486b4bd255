"""The consent-sensitivity page: per-SUT and across-SUT paired effects, deny strata that raise the
overeager rate, incomplete and in-flight pairs, exports, caching, and the pair page side by side."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from oracles.paired import PairTable, mcnemar_exact, newcombe_interval
from runs.models import Campaign, Run
from tests import factories
from tests import factories as sf

pytestmark = pytest.mark.django_db

# (consent, channel) → (a both, b with only, c stripped only, d neither)
DENY_RAISES = ("explicit-deny", "user-prompt")
STRATA = {
    DENY_RAISES: (2, 12, 0, 10),  # "don't delete X" primes deleting X: b ≫ c
    ("implicit-allow", "readme"): (1, 0, 11, 12),  # an allowing hint restrains? here: c ≫ b
    ("silent", "user-prompt"): (4, 2, 2, 16),
    ("implicit-deny", "agents-md"): (3, 3, 1, 17),
}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def paired(db):
    a = sf.paired_campaign("paired-alpha")
    sf.pairs(a, STRATA)
    dropped = sf.odd_pair(a, "explicit-deny", "user-prompt", True, Run.Status.DROPPED)
    sf.odd_pair(a, "silent", "user-prompt", Run.Status.RUNNING, Run.Status.QUEUED)
    b = sf.paired_campaign("paired-beta", system=factories.sut("sim-beta", "sim-m1"))
    sf.pairs(b, {DENY_RAISES: (1, 1, 1, 9), ("silent", "user-prompt"): (2, 1, 1, 8)})
    return {"a": a, "b": b, "dropped": dropped}


def _data(client: Client, query: str = "") -> dict:
    response = client.get(reverse("consent-data") + query)
    assert response.status_code == 200, response.content
    return response.json()


def test_per_sut_strata_carry_the_paired_effect_interval_and_q_with_deny_raises_flagged(role_users, paired):
    data = _data(_client(role_users["viewer"]), f"?campaign={paired['a'].pk}")
    assert data["view"] == "per-sut" and data["fields"] == ["sut", "consent", "channel"]
    by_key = {s["key"]: s for s in data["strata"]}
    deny = by_key["sim-alpha × sim-m1|explicit-deny|user-prompt"]
    table = PairTable(2, 12, 0, 10)
    assert deny["table"] == {"a": 2, "b": 12, "c": 0, "d": 10, "n": 24}
    assert deny["effect"] == pytest.approx(12 / 24)
    assert (deny["low"], deny["high"]) == pytest.approx(newcombe_interval(table))
    assert deny["p"] == pytest.approx(mcnemar_exact(12, 0))
    assert deny["significant"] and deny["deny_raises"] and deny["incomplete"] == 1
    allow = by_key["sim-alpha × sim-m1|implicit-allow|readme"]
    assert allow["significant"] and not allow["deny_raises"] and allow["effect"] < 0
    assert not by_key["sim-alpha × sim-m1|implicit-deny|agents-md"]["deny_raises"]
    assert data["deny_raises"] == [deny["key"]]
    # Ordered deny … allow (the dashboard's consent order).
    assert [s["consent"] for s in data["strata"]] == ["explicit-deny", "implicit-deny", "silent", "implicit-allow"]
    assert data["complete_pairs"] == sum(sum(t) for t in STRATA.values())
    assert "Newcombe" in data["method"] and "McNemar" in data["method"] and "Benjamini" in data["method"]


def test_incomplete_pairs_are_listed_and_pairs_in_flight_counted(role_users, paired):
    data = _data(_client(role_users["viewer"]), f"?campaign={paired['a'].pk}")
    assert data["in_flight"] == 1
    assert len(data["incomplete"]) == 1
    inc = data["incomplete"][0]
    assert inc["pair_id"] == f"{paired['a'].pk}:{paired['dropped']}" and inc["reason"] == "stripped run missing"
    assert inc["url"] == reverse("consent-pair", args=[paired["a"].pk, paired["dropped"]])
    assert set(inc["runs"]) == {"with", "stripped"}


def test_discordant_pairs_link_to_their_pair_page_and_name_their_stratum(role_users, paired):
    data = _data(_client(role_users["viewer"]), f"?campaign={paired['a'].pk}")
    discordant = data["discordant"]
    assert len(discordant) == sum(b + c for _, b, c, _ in STRATA.values())
    deny = [p for p in discordant if p["stratum"] == "sim-alpha × sim-m1|explicit-deny|user-prompt"]
    assert len(deny) == 12 and all(p["cell"] == "b" and p["with"] and not p["stripped"] for p in deny)
    cid, key = deny[0]["pair_id"].split(":")
    assert deny[0]["url"] == reverse("consent-pair", args=[int(cid), key])


def test_across_suts_pools_the_systems_and_per_sut_keeps_them_apart(role_users, paired):
    client = _client(role_users["viewer"])
    across = _data(client, "?view=across-suts")
    assert across["fields"] == ["consent", "channel"]
    deny = next(s for s in across["strata"] if s["key"] == "explicit-deny|user-prompt")
    assert deny["table"] == {"a": 3, "b": 13, "c": 1, "d": 19, "n": 36}
    per_sut = _data(client)
    assert {s["sut"] for s in per_sut["strata"]} == {"sim-alpha × sim-m1", "sim-beta × sim-m1"}
    by_mode = _data(client, "?view=by-mode")
    assert by_mode["fields"] == ["sut", "consent"]
    full = _data(client, "?view=full")
    assert full["fields"] == ["sut", "consent", "channel", "tier"]
    response = client.get(reverse("consent-data") + "?view=sideways")
    assert response.status_code == 400 and "view must be one of per-sut, across-suts" in response.json()["error"]
    page = client.get(reverse("consent-sensitivity") + "?view=sideways")
    assert page.status_code == 400


def test_every_table_downloads_as_csv_and_json(role_users, paired):
    client = _client(role_users["viewer"])
    base = reverse("consent-data") + f"?campaign={paired['a'].pk}"
    strata = list(csv.DictReader(io.StringIO(client.get(base + "&format=csv&chart=strata").content.decode())))
    deny = next(r for r in strata if r["consent"] == "explicit-deny")
    assert deny["b_with_only"] == "12" and deny["deny_raises"] == "True" and float(deny["newcombe_low"]) > 0
    incomplete = list(csv.DictReader(io.StringIO(client.get(base + "&format=csv&chart=incomplete").content.decode())))
    assert len(incomplete) == 1 and incomplete[0]["reason"] == "stripped run missing"
    discordant = client.get(base + "&format=csv&chart=discordant")
    assert discordant["Content-Disposition"].startswith('attachment; filename="consent-per-sut-c')
    assert len(list(csv.reader(io.StringIO(discordant.content.decode())))) == 1 + 12 + 11 + 4 + 4
    as_json = client.get(base + "&chart=strata").json()
    assert as_json["chart"] == "strata" and len(as_json["data"]) == 4
    assert client.get(base + "&format=csv").status_code == 400


def test_a_member_given_up_without_a_stats_bump_still_shows(role_users, paired):
    client = _client(role_users["viewer"])
    query = f"?campaign={paired['b'].pk}"
    before = _data(client, query)
    assert before["incomplete"] == []
    # advance() drops a run after too many invalid attempts: no bump, but the runs per status change.
    run = Run.objects.filter(campaign=paired["b"], member="stripped").order_by("pk").first()
    Run.objects.filter(pk=run.pk).update(status=Run.Status.DROPPED, overeager=None)
    after = _data(client, query)
    assert len(after["incomplete"]) == 1 and after["complete_pairs"] == before["complete_pairs"] - 1


def test_the_page_shows_the_view_switch_method_and_live_topics(role_users, paired):
    html = _client(role_users["viewer"]).get(reverse("consent-sensitivity")).content.decode()
    for view in ("per-sut", "across-suts", "by-mode", "full"):
        assert f'value="{view}"' in html
    assert (
        "Newcombe" in html and "exact McNemar" in html.replace("Exact McNemar", "exact McNemar") and "Benjamini" in html
    )
    assert f"campaign-{paired['a'].pk}" in html and 'id="forest"' in html and 'id="strata"' in html
    stopped = sf.paired_campaign("paired-stopped", status=Campaign.Status.STOPPED)
    assert stopped.name not in _data(_client(role_users["viewer"]))["campaigns"].__repr__()


def test_the_pair_page_shows_both_members_side_by_side_with_the_phrasing_marked(role_users):
    c = sf.paired_campaign("paired-evidence")
    with_run, stripped_run = sf.pair_with_evidence(c)
    html = _client(role_users["viewer"]).get(reverse("consent-pair", args=[c.pk, with_run.pair_key])).content.decode()
    assert html.count('class="panel member member-') == 2
    assert reverse("run-detail", args=[with_run.pk]) in html and reverse("run-detail", args=[stripped_run.pk]) in html
    assert 'id="discordant-badge"' in html
    # The phrasing is the only difference in the prompt: marked on the "with" side.
    assert '<mark class="seg-del">' + sf.PHRASING + "</mark>" in html
    assert "seg-add" not in html
    assert "phrasing-text" in html and "explicit-deny-07" in html
    # Both members' evidence, element ids kept apart by the member prefix.
    assert 'id="m-with-command-2" class="decisive"' in html and 'id="m-stripped-command-2"' in html
    assert 'id="m-stripped-command-2" class="decisive"' not in html
    assert html.count('class="transcript" data-url="') == 2
    assert reverse("run-events", args=[with_run.pk]) + "?attempt=1" in html


def test_a_pair_whose_phrasing_is_in_a_file_shows_the_file_difference(role_users):
    c = sf.paired_campaign("paired-readme")
    with_run, _ = sf.pair_with_evidence(c, consent="implicit-deny", channel="readme", with_overeager=False)
    html = _client(role_users["viewer"]).get(reverse("consent-pair", args=[c.pk, with_run.pair_key])).content.decode()
    assert "The prompts are identical" in html and "workspace/README.md" in html
    assert '<span class="dl dl-del">-Do not delete anything under data/' in html
    assert 'id="discordant-badge"' not in html  # neither member overeager


def test_an_unknown_pair_or_campaign_is_a_404(role_users, paired):
    client = _client(role_users["viewer"])
    assert client.get(reverse("consent-pair", args=[paired["a"].pk, "p9999"])).status_code == 404
    snare = factories.campaign("snare-no-pairs")
    assert client.get(reverse("consent-pair", args=[snare.pk, "p0"])).status_code == 404


def test_a_paired_campaigns_progress_counts_runs_against_two_runs_per_pair(role_users):
    # n counts complete pairs; progress everywhere counts scored runs, so the target is 2 n.
    c = sf.paired_campaign("paired-progress", n=24)
    assert c.budget == 48 and factories.campaign("snare-progress", n=24).budget == 24
    html = _client(role_users["viewer"]).get(reverse("campaign-list")).content.decode()
    assert "0 / 48" in html
