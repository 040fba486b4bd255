"""Curator review in the admin: the disagreement filter, adjudication with a reason through the
real change form, the kept history, the precedence rule on the pages, and who may do what."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from labels.disposition import refresh
from labels.models import Adjudication, HumanLabel
from runs.models import Run
from tests.labels import world
from tests.labels.world import fast_hashing  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_hashing")]

RULE = "adjudicated &gt; human majority &gt; judge &gt; fallback"


class FormFields(HTMLParser):
    """The fields a browser would submit from the page's main form (the admin change form)."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, str] = {}
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        name = a.get("name")
        if tag == "input" and name and a.get("type") not in ("submit", "button", "checkbox", "radio"):
            self.data[name] = a.get("value") or ""
        elif tag == "input" and name and a.get("type") in ("checkbox", "radio") and "checked" in a:
            self.data[name] = a.get("value") or "on"
        elif tag == "textarea" and name:
            self._textarea = name
            self.data[name] = ""
        elif tag == "select" and name:
            self._select = name
            self.data.setdefault(name, "")
        elif tag == "option" and self._select and "selected" in a:
            self.data[self._select] = a.get("value") or ""

    def handle_data(self, data):
        if self._textarea:
            self.data[self._textarea] += data

    def handle_endtag(self, tag):
        if tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None


def fields_of(html: str) -> dict[str, str]:
    parser = FormFields()
    parser.feed(html)
    return parser.data


@pytest.fixture
def review():
    c = world.campaign("review")
    alice, bob = world.validators("alice", "bob")
    curt = world.validators("curt")[0]
    curt.groups.set([Group.objects.get(name="curator")])
    vera = world.validators("vera")[0]
    vera.groups.set([Group.objects.get(name="viewer")])
    disagree = world.non_action_run(c, final="I'll leave the deletion to you: `rm -rf data/`.")
    agree = world.non_action_run(c)
    tie = world.non_action_run(c)
    unlabelled = world.non_action_run(c)
    world.judge_label(disagree, "refusal", "The agent declines.")
    world.judge_label(agree, "clarification")
    world.judge_label(tie, "empty")
    world.judge_label(unlabelled, "empty")
    for run, labels in (
        (disagree, ["deferment", "deferment"]),
        (agree, ["clarification"]),
        (tie, ["refusal", "empty"]),
    ):
        for user, label in zip((alice, bob), labels, strict=False):
            HumanLabel.objects.create(run=run, validator=user, label=label)
    refresh([disagree.pk, agree.pk, tie.pk, unlabelled.pk])
    return {
        "disagree": disagree,
        "agree": agree,
        "tie": tie,
        "unlabelled": unlabelled,
        "curt": curt,
        "vera": vera,
        "alice": alice,
    }


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _changelist(client: Client, **params) -> str:
    return client.get(reverse("admin:labels_reviewrun_changelist"), params).content.decode()


def _listed(html: str, run: Run) -> bool:
    return f'href="/admin/labels/reviewrun/{run.pk}/change/' in html


def test_the_disagreement_filter_finds_judge_vs_majority_and_ties(review):
    client = _client(review["curt"])
    disagree = _changelist(client, review="disagree")
    assert _listed(disagree, review["disagree"]) and not _listed(disagree, review["agree"])
    assert not _listed(disagree, review["tie"]) and not _listed(disagree, review["unlabelled"])
    tie = _changelist(client, review="tie")
    assert _listed(tie, review["tie"]) and not _listed(tie, review["disagree"])
    assert _listed(_changelist(client, review="no-human"), review["unlabelled"])
    everything = _changelist(client)
    assert RULE in everything  # the rule is stated where reported labels appear
    assert "deferment ×2" in everything and "deferment ← human-majority" in everything


def _adjudicate(client: Client, run: Run, label: str, reason: str):
    url = reverse("admin:labels_reviewrun_change", args=[run.pk])
    page = client.get(url)
    assert page.status_code == 200
    data = fields_of(page.content.decode())
    total = int(data["adjudications-TOTAL_FORMS"])
    new = total - 1  # the blank row for the next ruling
    data[f"adjudications-{new}-label"] = label
    data[f"adjudications-{new}-reason"] = reason
    data["_continue"] = "Save and continue editing"
    return client.post(url, data)


def test_a_curator_adjudicates_with_a_reason_and_the_history_is_kept(review):
    client = _client(review["curt"])
    run = review["disagree"]
    before = Run.objects.get(pk=run.pk)
    response = _adjudicate(client, run, "deferment", "It hands the rm command to the user.")
    assert response.status_code == 302, response.content.decode()[:3000]
    run.refresh_from_db()
    assert (run.disposition, run.disposition_source) == ("deferment", "adjudicated")
    assert _adjudicate(client, run, "refusal", "Re-read: it declines first.").status_code == 302
    run.refresh_from_db()
    assert run.disposition == "refusal"
    rows = list(
        Adjudication.objects.filter(run=run)
        .order_by("created", "id")
        .values_list("label", "reason", "curator__username")
    )
    assert rows == [
        ("deferment", "It hands the rm command to the user.", "curt"),
        ("refusal", "Re-read: it declines first.", "curt"),
    ]
    page = client.get(reverse("admin:labels_reviewrun_change", args=[run.pk])).content.decode()
    assert "It hands the rm command to the user." in page and "Re-read: it declines first." in page  # history shown
    assert "refusal ← adjudicated" in page and RULE in page
    assert "The agent declines." in page  # the curator sees the judge's rationale
    # A withdrawal (blank label) restores the human majority.
    assert _adjudicate(client, run, "", "Withdrawn: the validators' reading stands.").status_code == 302
    run.refresh_from_db()
    assert (run.disposition, run.disposition_source) == ("deferment", "human-majority")
    assert Adjudication.objects.filter(run=run).count() == 3
    # The run row itself was not rewritten by the admin.
    after = Run.objects.get(pk=run.pk)
    assert (after.status, after.recorded, after.attempt) == (before.status, before.recorded, before.attempt)


def test_an_adjudication_without_a_reason_or_with_nothing_to_withdraw_is_refused(review):
    client = _client(review["curt"])
    run = review["agree"]
    no_reason = _adjudicate(client, run, "refusal", "")
    assert no_reason.status_code == 200 and "This field is required" in no_reason.content.decode()
    nothing = _adjudicate(client, run, "", "withdraw what?")
    assert nothing.status_code == 200 and "no adjudicated label to withdraw" in nothing.content.decode()
    assert not Adjudication.objects.filter(run=run).exists()


def test_viewers_see_the_review_read_only_and_validators_not_at_all(review):
    run = review["disagree"]
    url = reverse("admin:labels_reviewrun_change", args=[run.pk])
    viewer = _client(review["vera"])
    assert viewer.get(url).status_code == 200
    assert viewer.post(url, fields_of(viewer.get(url).content.decode())).status_code == 403
    validator = _client(review["alice"])
    assert validator.get(url).status_code == 403
    assert validator.get(reverse("admin:labels_judgelabel_changelist")).status_code == 403
    assert validator.get(reverse("admin:labels_humanlabel_changelist")).status_code == 403
    assert not Adjudication.objects.exists()


def test_a_curator_builds_a_queue_in_the_admin_and_its_sample_is_then_frozen(review):
    from labels.models import ValidationQueue

    client = _client(review["curt"])
    url = reverse("admin:labels_validationqueue_add")
    data = fields_of(client.get(url).content.decode())
    data.update(
        name="first pass",
        campaigns=str(review["disagree"].campaign_id),
        stratify="system",
        allocation="proportional",
        size="3",
        overlap="2",
        overlap_share="0.34",
        seed="5",
        active="on",
    )
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    queue = ValidationQueue.objects.get(name="first pass")
    assert queue.created_by == review["curt"]
    assert queue.items.count() == 3 and queue.items.filter(wanted=2).count() == 1
    change = client.get(reverse("admin:labels_validationqueue_change", args=[queue.pk])).content.decode()
    assert 'name="size"' not in change and "sim-alpha × sim-m1 (3)" in change  # frozen, strata shown
    empty = world.campaign("no-runs-here")
    data.update(name="empty", campaigns=str(empty.pk))
    refused = client.post(url, data)
    assert refused.status_code == 200 and "no scored non-action runs" in refused.content.decode()
    assert not ValidationQueue.objects.filter(name="empty").exists()
    assert _client(review["alice"]).get(url).status_code == 403
