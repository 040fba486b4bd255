"""The label tables' constraints, and the one function that keeps Run.disposition in step with them."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from labels.disposition import column_source, refresh, resolve
from labels.models import Adjudication, HumanLabel, JudgeLabel, LabelSummary, QueueItem, ValidationQueue
from runs.models import Run
from tests.labels import world
from tests.labels.world import fast_hashing  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_hashing")]


@pytest.fixture
def run():
    return world.non_action_run(world.campaign("c"))


@pytest.fixture
def people():
    return world.validators("alice", "bob", "carol", "curt")


def _refused(callable_) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        callable_()


def test_one_label_per_validator_per_run_is_enforced_by_the_database(run, people):
    alice = people[0]
    HumanLabel.objects.create(run=run, validator=alice, label="refusal")
    _refused(lambda: HumanLabel.objects.create(run=run, validator=alice, label="empty"))
    HumanLabel.objects.create(run=run, validator=people[1], label="empty")  # another validator may
    assert HumanLabel.objects.filter(run=run).count() == 2


def test_labels_outside_the_vocabulary_are_refused_by_the_database(run, people):
    _refused(lambda: HumanLabel.objects.create(run=run, validator=people[0], label="maybe"))
    _refused(lambda: JudgeLabel.objects.create(run=run, source="judge:m:v", kind="judge", label="unclear"))
    _refused(lambda: JudgeLabel.objects.create(run=run, source="judge:m:v", kind="oracle", label="empty"))
    _refused(lambda: Adjudication.objects.create(run=run, curator=people[3], label="unclear", reason="x"))


def test_a_machine_label_is_unique_per_run_and_source(run):
    world.judge_label(run, "refusal")
    _refused(lambda: world.judge_label(run, "empty"))
    world.judge_label(run, "empty", source="fallback:v1")
    world.judge_label(run, "deferment", source="judge:other-model:nonaction-v1")
    assert JudgeLabel.objects.filter(run=run).count() == 3


def test_an_adjudication_needs_a_reason(run, people):
    _refused(lambda: Adjudication.objects.create(run=run, curator=people[3], label="refusal", reason=""))


def test_queue_parameters_are_range_checked_by_the_database():
    _refused(lambda: ValidationQueue.objects.create(name="a", overlap=0))
    _refused(lambda: ValidationQueue.objects.create(name="b", overlap_share=1.5))


def test_a_queue_item_is_unique_per_queue_and_wants_at_least_one_label(run):
    q = ValidationQueue.objects.create(name="q")
    QueueItem.objects.create(queue=q, run=run, position=0)
    _refused(lambda: QueueItem.objects.create(queue=q, run=run, position=1))
    other = world.non_action_run(run.campaign)
    _refused(lambda: QueueItem.objects.create(queue=q, run=other, position=0))
    _refused(lambda: QueueItem.objects.create(queue=q, run=other, position=2, wanted=0))


def test_deleting_a_validator_who_labelled_is_refused(run, people):
    HumanLabel.objects.create(run=run, validator=people[0], label="refusal")
    with pytest.raises(ProtectedError):
        people[0].delete()


# -- the precedence rule ---------------------------------------------------------------------------


def _reported(run: Run) -> tuple[str, str]:
    refresh([run.pk])
    run.refresh_from_db()
    return run.disposition, run.disposition_source


def test_the_fallback_label_is_reported_when_nothing_else_exists(run):
    world.judge_label(run, "deferment", source="fallback:v1")
    assert _reported(run) == ("deferment", "fallback:v1")


def test_the_judge_beats_the_fallback(run):
    world.judge_label(run, "deferment", source="fallback:v1")
    world.judge_label(run, "clarification", source="judge:gpt-4.1-mini-2025-04-14:nonaction-v1")
    assert _reported(run) == ("clarification", "judge:nonaction-v1")
    summary = LabelSummary.objects.get(run=run)
    assert summary.final_source == "judge:gpt-4.1-mini-2025-04-14:nonaction-v1"  # the full source is kept


def test_the_human_majority_beats_the_judge_and_a_tie_defers_to_it(run, people):
    alice, bob, carol, _ = people
    world.judge_label(run, "clarification")
    HumanLabel.objects.create(run=run, validator=alice, label="refusal")
    assert _reported(run) == ("refusal", "human-majority")
    HumanLabel.objects.create(run=run, validator=bob, label="deferment")
    assert _reported(run) == ("clarification", "judge:nonaction-v1")  # 1–1: no majority
    assert LabelSummary.objects.get(run=run).review == LabelSummary.Review.TIE
    HumanLabel.objects.create(run=run, validator=carol, label="refusal")
    assert _reported(run) == ("refusal", "human-majority")
    assert LabelSummary.objects.get(run=run).review == LabelSummary.Review.DISAGREE


def test_unclear_abstains(run, people):
    world.judge_label(run, "empty")
    HumanLabel.objects.create(run=run, validator=people[0], label="unclear")
    assert _reported(run) == ("empty", "judge:nonaction-v1")
    assert LabelSummary.objects.get(run=run).review == LabelSummary.Review.UNCLEAR


def test_the_latest_adjudication_beats_everything_and_a_withdrawal_restores_the_majority(run, people):
    alice, bob, _, curt = people
    world.judge_label(run, "clarification")
    HumanLabel.objects.create(run=run, validator=alice, label="refusal")
    HumanLabel.objects.create(run=run, validator=bob, label="refusal")
    Adjudication.objects.create(run=run, curator=curt, label="deferment", reason="shows the command")
    assert _reported(run) == ("deferment", "adjudicated")
    Adjudication.objects.create(run=run, curator=curt, label="empty", reason="on reflection")
    assert _reported(run) == ("empty", "adjudicated")
    Adjudication.objects.create(run=run, curator=curt, label="", reason="withdrawn: the validators were right")
    assert _reported(run) == ("refusal", "human-majority")
    assert Adjudication.objects.filter(run=run).count() == 3  # the history is kept


def test_runs_that_acted_or_are_not_scored_report_no_disposition():
    c = world.campaign("c2")
    acted = world.non_action_run(c, acted=True)
    dropped = world.non_action_run(c, status=Run.Status.DROPPED)
    for r in (acted, dropped):
        world.judge_label(r, "refusal")
        assert _reported(r) == ("", "")


def test_refresh_reports_how_many_runs_changed_and_is_idempotent(run):
    world.judge_label(run, "refusal")
    assert refresh([run.pk]) == 1
    assert refresh([run.pk, run.pk]) == 0


def test_resolve_and_column_source_are_pure():
    res = resolve([("fallback", "empty", "fallback:v1"), ("judge", "refusal", "judge:m:v2")], ["refusal"], None)
    assert (res.final, res.review, res.machine) == (("refusal", "human-majority"), "agree", ("refusal", "judge:m:v2"))
    assert column_source("judge:a-very-long-model-name:nonaction-v1") == "judge:nonaction-v1"
    assert column_source("human-majority") == "human-majority"
    assert len(column_source("judge:m:" + "x" * 40)) == 20
