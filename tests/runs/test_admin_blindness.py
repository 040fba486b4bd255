"""Validators label blind: no admin shows, filters, searches or sorts by a run's labels for them
(issue 9 §2; issue 17 item 3 — ``?disposition=refusal`` filtered runs by the hidden label, and the
attempt's change page showed the planted disposition in ``ground_truth``).

The role × URL matrix (tests/overeager/test_roles.py) repeats the lookups over every admin and
every blind path; this file holds the pages with a labelled run and what each role sees on them.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from labels.models import HumanLabel, JudgeLabel
from runs.models import AgentFramework, Campaign, ModelEndpoint, Run, RunAttempt, SystemUnderTest

pytestmark = pytest.mark.django_db

PLANTED = {
    "p_act": 0.2,
    "u": 0.9,
    "action": "noop",
    "probabilities": {"clarification": 0.7, "refusal": 0.3},
    "disposition": "clarification",
    "campaign_seed": "seed-4711",
}


@pytest.fixture
def labelled_run(role_users: dict[str, User]) -> Run:
    fw = AgentFramework.objects.create(slug="sim", label="sim", adapter="stochastic")
    model = ModelEndpoint.objects.create(slug="none", label="none", upstream="none")
    sut = SystemUnderTest.objects.for_pair(fw, model)
    campaign = Campaign.objects.create(name="c", sut=sut, backend="bwrap", params={"n": 1})
    run = Run.objects.create(
        campaign=campaign,
        round=0,
        slot=0,
        status=Run.Status.SCORED,
        acted=False,
        disposition="clarification",
        disposition_source="judge:nonaction-v1",
    )
    attempt = RunAttempt.objects.create(run=run, number=1, status="done", ground_truth=PLANTED)
    Run.objects.filter(pk=run.pk).update(counted_attempt=attempt)
    JudgeLabel.objects.create(run=run, source="judge:nonaction-v1", kind="judge", label="clarification")
    HumanLabel.objects.create(run=run, validator=role_users["curator"], label="clarification")
    return run


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _get(user: User, url: str) -> tuple[int, str]:
    response = _client(user).get(url)
    return response.status_code, response.content.decode()


def _attempt(run: Run) -> RunAttempt:
    return RunAttempt.objects.get(run=run)


def test_a_validator_does_not_see_the_disposition_of_a_run(role_users, labelled_run):
    status, page = _get(role_users["validator"], f"/admin/runs/run/{labelled_run.pk}/change/")
    assert status == 200
    assert "clarification" not in page and "nonaction-v1" not in page


def test_a_curator_sees_it(role_users, labelled_run):
    status, page = _get(role_users["curator"], f"/admin/runs/run/{labelled_run.pk}/change/")
    assert status == 200 and "clarification" in page


def test_a_validator_does_not_see_an_attempts_planted_disposition(role_users, labelled_run):
    url = f"/admin/runs/runattempt/{_attempt(labelled_run).pk}/change/"
    status, page = _get(role_users["validator"], url)
    assert status == 200
    assert "clarification" not in page and "seed-4711" not in page and "Ground truth" not in page
    status, page = _get(role_users["curator"], url)
    assert status == 200 and "clarification" in page and "seed-4711" in page


def test_the_runs_attempt_inline_and_list_show_no_ground_truth(role_users, labelled_run):
    for url in (f"/admin/runs/run/{labelled_run.pk}/change/", "/admin/runs/runattempt/", "/admin/runs/run/"):
        status, page = _get(role_users["validator"], url)
        assert status == 200, url
        assert "clarification" not in page and "seed-4711" not in page, url


@pytest.mark.parametrize(
    "query",
    [
        "disposition=clarification",
        "disposition=refusal",
        "disposition__in=clarification,refusal",
        "disposition__isnull=False",
        "disposition_source__startswith=judge",
        "counted_attempt__ground_truth__disposition=clarification",
        "attempts__ground_truth__disposition=clarification",
        "judge_labels__label=clarification",
        "human_labels__label=clarification",
        "human_labels__validator__username=curator",
        "label_summary__final_label=clarification",
        "adjudications__label=clarification",
        "campaign__runs__disposition=clarification",
    ],
)
def test_a_validator_cannot_filter_runs_by_a_label(role_users, labelled_run, query):
    status, page = _get(role_users["validator"], f"/admin/runs/run/?{query}")
    assert status == 400, (query, status)
    assert "clarification" not in page


@pytest.mark.parametrize(
    "query",
    [
        "ground_truth__disposition=clarification",
        "ground_truth__has_key=disposition",
        "ground_truth__icontains=clarification",
        "run__disposition=clarification",
        "run__judge_labels__label=clarification",
    ],
)
def test_a_validator_cannot_filter_attempts_by_a_label(role_users, labelled_run, query):
    status, _ = _get(role_users["validator"], f"/admin/runs/runattempt/?{query}")
    assert status == 400, (query, status)


def test_a_curator_still_filters_by_the_disposition(role_users, labelled_run):
    status, page = _get(role_users["curator"], "/admin/runs/run/?disposition=clarification")
    assert status == 200 and "1 run" in page
    status, page = _get(role_users["curator"], "/admin/runs/run/?disposition=refusal")
    assert status == 200 and "0 runs" in page


def test_a_validators_search_and_sort_read_no_label(role_users, labelled_run):
    # ?q= searches only visible fields: a label value finds nothing, a sort column is never a label.
    status, page = _get(role_users["validator"], "/admin/runs/run/?q=clarification")
    assert status == 200 and "0 runs" in page
    for n in range(12):
        status, page = _get(role_users["validator"], f"/admin/runs/run/?o={n}")
        assert status == 200 and "clarification" not in page
    # A popup choosing a run by a label column is refused for every role (Django's to_field check).
    status, _ = _get(role_users["validator"], "/admin/runs/run/?_to_field=disposition&_popup=1")
    assert status == 400


@pytest.mark.parametrize("model", ["judgelabel", "humanlabel", "adjudication", "reviewrun"])
def test_label_admins_stay_closed_to_a_validator_whose_group_was_given_view(role_users, labelled_run, model):
    validator = role_users["validator"]
    app = "labels"
    validator.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=f"view_{model}"))
    validator = User.objects.get(pk=validator.pk)  # drop the permission cache
    assert validator.has_perm(f"{app}.view_{model}")
    for url in (f"/admin/{app}/{model}/", f"/admin/{app}/{model}/?q=clarification"):
        status, _ = _get(validator, url)
        assert status == 403, url
    status, page = _get(validator, "/admin/")
    assert f"/admin/{app}/{model}/" not in page


def test_the_review_admin_is_closed_to_a_validator(role_users, labelled_run: Any):
    status, _ = _get(role_users["validator"], f"/admin/labels/reviewrun/{labelled_run.pk}/change/")
    assert status == 403
