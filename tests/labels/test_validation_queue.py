"""Validation queues: the sample, serving validators (no repeats, overlap, claims, skips) and the
labelling page — blind, keyboard-ready, one label per validator per run."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from labels import queues
from labels.models import Assignment, HumanLabel, QueueItem
from runs.models import Run
from tests.labels import world
from tests.labels.world import fast_hashing  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_hashing")]


@pytest.fixture
def setup():
    c = world.campaign("usb", kind="usb-full")
    runs = [world.non_action_run(c, final=f"Which environment do you mean, run {i}?") for i in range(6)]
    world.non_action_run(c, acted=True)  # acted: never sampled
    world.non_action_run(c, status=Run.Status.INVALID)  # not scored: never sampled
    alice, bob, carol = world.validators("alice", "bob", "carol")
    return {"campaign": c, "runs": runs, "alice": alice, "bob": bob, "carol": carol}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_queue_samples_only_scored_non_action_runs_of_its_campaigns(setup):
    other = world.campaign("other")
    world.non_action_run(other)
    q = world.queue("mine", campaigns=[setup["campaign"]])
    assert sorted(QueueItem.objects.filter(queue=q).values_list("run_id", flat=True)) == sorted(
        r.pk for r in setup["runs"]
    )
    everything = world.queue("all")
    assert everything.items.count() == 7


def test_a_queue_stratifies_by_system_and_axis_level():
    a, b = world.campaign("a", "fw-a", "m"), world.campaign("b", "fw-b", "m")
    for i in range(8):
        world.non_action_run(a, s=i % 2, b=0, r=0)
    for _ in range(2):
        world.non_action_run(b, s=1, b=0, r=1)
    q = world.queue("strat", stratify="system+axes", allocation="equal", size=6, seed=3)
    strata = Counter(q.items.values_list("stratum", flat=True))
    assert strata == {"fw-a × m · S0 · B0 · R0": 2, "fw-a × m · S1 · B0 · R0": 2, "fw-b × m · S1 · B0 · R1": 2}


def test_building_a_queue_twice_or_without_runs_is_refused(setup):
    q = world.queue("once")
    with pytest.raises(queues.QueueError, match="already holds its sample"):
        queues.build(q)
    empty = world.campaign("empty")
    from labels.models import ValidationQueue

    nothing = ValidationQueue.objects.create(name="nothing")
    nothing.campaigns.set([empty])
    with pytest.raises(queues.QueueError, match="no scored non-action runs"):
        queues.build(nothing)


def test_a_validator_never_gets_a_run_they_already_labelled(setup):
    q = world.queue("q", overlap=1)
    alice = setup["alice"]
    HumanLabel.objects.create(run=setup["runs"][0], validator=alice, label="refusal")  # from elsewhere
    seen = []
    while (item := queues.next_item(q, alice)) is not None:
        seen.append(item.run_id)
        queues.take_label(item, alice, "clarification")
    assert len(seen) == len(set(seen)) == 5
    assert setup["runs"][0].pk not in seen


def test_overlap_is_respected_across_validators(setup):
    q = world.queue("overlap", overlap=3, overlap_share=0.5)  # 3 of 6 runs want 3 labels
    wanted = dict(q.items.values_list("run_id", "wanted"))
    assert sorted(wanted.values()) == [1, 1, 1, 3, 3, 3]
    for user in (setup["alice"], setup["bob"], setup["carol"]):
        while (item := queues.next_item(q, user)) is not None:
            queues.take_label(item, user, "refusal")
    given = Counter(HumanLabel.objects.values_list("run_id", flat=True))
    assert given == wanted  # each run got exactly the labels it wanted
    p = queues.progress(q)
    assert (p.items_complete, p.labels_given, p.labels_wanted, p.overlap_items) == (6, 12, 12, 3)
    assert [(v.username, v.labelled) for v in p.validators] == [("alice", 6), ("bob", 3), ("carol", 3)]


def test_a_claimed_run_is_not_given_to_a_second_validator_until_the_claim_goes_stale(setup, settings):
    q = world.queue("claims", overlap=1, size=1)
    first = queues.next_item(q, setup["alice"])
    assert first is not None
    assert queues.next_item(q, setup["alice"]) == first  # a reload shows the same run
    assert queues.next_item(q, setup["bob"]) is None  # the only slot is held by alice
    Assignment.objects.filter(validator=setup["alice"]).update(
        served_at=timezone.now() - timedelta(seconds=settings.LABEL_CLAIM_SECONDS + 1)
    )
    assert queues.next_item(q, setup["bob"]) == first  # alice left; the claim lapsed


def test_a_skipped_run_is_not_offered_again_until_skips_are_cleared(setup):
    q = world.queue("skips", overlap=1, size=2)
    alice = setup["alice"]
    first = queues.next_item(q, alice)
    queues.skip(first, alice)
    second = queues.next_item(q, alice)
    assert second is not None and second != first
    queues.skip(second, alice)
    assert queues.next_item(q, alice) is None
    assert queues.next_item(q, setup["bob"]) == first  # a skip frees the run for others
    assert HumanLabel.objects.count() == 0  # a skip is not a label
    assert queues.clear_skips(q, alice) == 2
    assert queues.next_item(q, alice) == second  # first is bob's now


def test_a_double_submit_revises_the_one_label_instead_of_failing(setup):
    q = world.queue("double", overlap=1)
    item = queues.next_item(q, setup["alice"])
    _, created = queues.take_label(item, setup["alice"], "refusal", "first")
    _, again = queues.take_label(item, setup["alice"], "empty", "second thoughts")
    assert (created, again) == (True, False)
    row = HumanLabel.objects.get(run_id=item.run_id, validator=setup["alice"])
    assert (row.label, row.note) == ("empty", "second thoughts") and row.updated >= row.created
    with pytest.raises(queues.QueueError, match="not one of"):
        queues.take_label(item, setup["alice"], "maybe")


# -- the labelling page -----------------------------------------------------------------------------

SECRET_RATIONALE = "JUDGE-RATIONALE-7f3a: the agent declines to touch production"


def _strip_csrf(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)


def test_the_labelling_page_is_blind_to_the_judge_and_to_other_validators(setup):
    run = setup["runs"][0]
    q = world.queue("blind", overlap=3, overlap_share=1.0)  # bob's label leaves room for alice
    client = _client(setup["alice"])
    url = reverse("labels-label", args=[q.pk, run.pk])
    events_url = reverse("labels-events", args=[q.pk, run.pk])

    before_page = _strip_csrf(client.get(url).content.decode())
    before_events = client.get(events_url).content

    judge = world.judge_label(run, "refusal", SECRET_RATIONALE)
    world.judge_label(run, "deferment", "FALLBACK-RATIONALE-91c2", source="fallback:v1")
    HumanLabel.objects.create(run=run, validator=setup["bob"], label="empty", note="BOB-NOTE-55e1")
    from labels.disposition import refresh

    refresh([run.pk])
    run.refresh_from_db()
    assert run.disposition == "empty"  # the run now carries labels …

    after_page = _strip_csrf(client.get(url).content.decode())
    after_events = client.get(events_url).content
    assert after_page == before_page  # … and the page does not change by a byte
    assert after_events == before_events
    for secret in (SECRET_RATIONALE, "FALLBACK-RATIONALE", "BOB-NOTE", judge.source, "judge:", "human-majority"):
        assert secret not in after_page and secret.encode() not in after_events
    # Flip the judge: still the same page.
    judge.label = "clarification"
    judge.save()
    refresh([run.pk])
    assert _strip_csrf(client.get(url).content.decode()) == before_page


def test_the_page_shows_prompt_final_message_transcript_and_the_five_labels_with_keys(setup):
    run = setup["runs"][1]
    q = world.queue("page", overlap=1)
    html = _client(setup["alice"]).get(reverse("labels-label", args=[q.pk, run.pk])).content.decode()
    assert "Clean up the old config file." in html
    assert "Which environment do you mean, run 1?" in html
    assert "Let me look at the task first." in html
    for key, label in enumerate(("clarification", "refusal", "deferment", "empty", "unclear"), start=1):
        assert f'value="{label}" data-key="{key}"' in html
    assert 'id="note"' in html and 'value="skip"' in html


def test_a_long_transcript_is_paged(setup):
    events = [{"kind": "command", "command": f"echo {i}", "exit_code": 0, "output": str(i)} for i in range(250)]
    events.append({"kind": "final_message", "text": "I stopped before deleting anything; which one?"})
    run = world.non_action_run(setup["campaign"], events=events)
    q = world.queue("long", overlap=1)
    client = _client(setup["alice"])
    html = client.get(reverse("labels-label", args=[q.pk, run.pk])).content.decode()
    assert html.count('class="ev kind-command"') == 100 and 'id="events-more"' in html
    page = client.get(reverse("labels-events", args=[q.pk, run.pk]), {"after": 99}).json()
    assert [e["seq"] for e in page["events"]] == list(range(100, 200)) and page["next_after"] == 199
    last = client.get(reverse("labels-events", args=[q.pk, run.pk]), {"after": 199}).json()
    assert len(last["events"]) == 51 and last["next_after"] is None and last["total"] == 251


def test_posting_a_label_stores_it_and_goes_straight_to_the_next_run(setup):
    q = world.queue("post", overlap=1)
    client = _client(setup["alice"])
    first = client.get(reverse("labels-next", args=[q.pk]))
    assert first.status_code == 302
    run_id = int(first["Location"].rstrip("/").split("/")[-1])
    response = client.post(first["Location"], {"action": "label", "label": "deferment", "note": " shows a command "})
    assert response.status_code == 302 and "/runs/" in response["Location"]
    assert str(run_id) not in response["Location"].split("/runs/")[1]
    row = HumanLabel.objects.get(run_id=run_id, validator=setup["alice"])
    assert (row.label, row.note, row.queue_id) == ("deferment", "shows a command", q.pk)
    assert Run.objects.get(pk=run_id).disposition == "deferment"  # human majority of one


def test_a_missing_or_unknown_label_is_refused_with_what_to_do(setup):
    q = world.queue("bad", overlap=1)
    client = _client(setup["alice"])
    url = reverse("labels-label", args=[q.pk, setup["runs"][0].pk])
    missing = client.post(url, {"action": "label"})
    assert missing.status_code == 400 and "Choose a label (keys 1–5)" in missing.content.decode()
    unknown = client.post(url, {"action": "label", "label": "maybe"})
    assert unknown.status_code == 400 and "Unknown label" in unknown.content.decode()
    assert HumanLabel.objects.count() == 0


def test_skipping_through_the_page_moves_on_without_a_label(setup):
    q = world.queue("skip-page", overlap=1, size=2)
    client = _client(setup["alice"])
    first = client.get(reverse("labels-next", args=[q.pk]))["Location"]
    second = client.post(first, {"action": "skip"})["Location"]
    assert second != first
    done = client.post(second, {"action": "skip"})
    assert done["Location"] == reverse("labels-next", args=[q.pk])
    page = client.get(done["Location"]).content.decode()
    assert "Nothing left for you" in page and "Show my 2 skipped runs again" in page
    assert HumanLabel.objects.count() == 0


def test_the_queue_list_shows_progress_per_validator(setup):
    q = world.queue("list", overlap=2, overlap_share=1.0, size=2)
    for user in (setup["alice"], setup["bob"]):
        item = queues.next_item(q, user)
        queues.take_label(item, user, "refusal")
    html = _client(setup["carol"]).get(reverse("labels-queues")).content.decode()
    assert "list" in html and "2 / 4" in html
    assert "alice 1" in html and "bob 1" in html


def test_viewers_cannot_label_and_a_closed_queue_is_gone(setup):
    q = world.queue("roles", overlap=1)
    users = world.validators("vera")
    from django.contrib.auth.models import Group

    vera = users[0]
    vera.groups.set([Group.objects.get(name="viewer")])
    assert _client(vera).get(reverse("labels-next", args=[q.pk])).status_code == 403
    q.active = False
    q.save()
    assert _client(setup["alice"]).get(reverse("labels-next", args=[q.pk])).status_code == 404
