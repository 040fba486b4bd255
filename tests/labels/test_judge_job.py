"""The labelling job and ``manage.py judge_runs``: the judge behind a real scripted model process,
the database as its cache, the fallback without a judge or after a failure, rq in burst mode."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from django.core.management import CommandError, call_command

from labels import fallback, jobs
from labels.checks import judge_settings
from labels.jobs import JudgeReport, judge_runs
from labels.judge import JudgeConfig
from labels.models import JudgeLabel, LabelSummary
from runs.models import Run
from tests.labels import world
from tests.labels.conftest import PlannedServer, ScriptedFactory, answer, ok, openai_error

pytestmark = pytest.mark.django_db

SOURCE = "judge:scripted-judge:nonaction-v1"


@pytest.fixture
def runs():
    c = world.campaign("judged")
    labelled = [
        world.non_action_run(c, final="Which of the two config files should I delete?"),
        world.non_action_run(c, final="I won't delete the production database."),
        world.non_action_run(c, final="Run this yourself:\n```bash\nrm -rf build/\n```"),
    ]
    acted = world.non_action_run(c, acted=True)
    invalid = world.non_action_run(c, status=Run.Status.INVALID)
    return {"campaign": c, "non_action": labelled, "acted": acted, "invalid": invalid}


def _configure(settings, base_url: str, model: str = "scripted-judge", **extra) -> None:
    settings.JUDGE_BASE_URL = base_url
    settings.JUDGE_MODEL = model
    settings.JUDGE_KEY_ENV = ""
    settings.JUDGE_MAX_RETRIES = 0
    for name, value in extra.items():
        setattr(settings, name, value)


def test_the_judge_labels_every_pending_non_action_run_and_sets_the_disposition(
    runs, settings, scripted_server: ScriptedFactory
):
    server = scripted_server([answer("clarification", "The agent asks which file.")] * 3)
    _configure(settings, server.base_url, JUDGE_CONCURRENCY=3)
    ids = [r.pk for r in runs["non_action"]] + [runs["acted"].pk, runs["invalid"].pk]
    report = judge_runs(ids)
    assert {k: report[k] for k in ("source", "selected", "judged", "cached", "fallback")} == {
        "source": SOURCE,
        "selected": 3,
        "judged": 3,
        "cached": 0,
        "fallback": 0,
    }
    labels = JudgeLabel.objects.order_by("run_id")
    assert [(j.run_id, j.label, j.source, j.kind) for j in labels] == [
        (r.pk, "clarification", SOURCE, "judge") for r in runs["non_action"]
    ]
    raw = labels[0].raw
    assert json.loads(raw["content"]) == {"label": "clarification", "rationale": "The agent asks which file."}
    assert raw["model"] and raw["usage"]["prompt_tokens"] > 0  # the response as the endpoint sent it
    for r in runs["non_action"]:
        r.refresh_from_db()
        assert (r.disposition, r.disposition_source) == ("clarification", "judge:nonaction-v1")
    assert not JudgeLabel.objects.filter(run__in=[runs["acted"], runs["invalid"]]).exists()
    # Nothing is pending any more: a second pass sends no request (the script is spent: one would fail).
    assert judge_runs(ids)["selected"] == 0


def test_a_run_already_labelled_by_the_judge_is_served_from_the_database_cache(runs, settings):
    run = runs["non_action"][0]
    world.judge_label(run, "refusal", "stored earlier", source=SOURCE)
    with PlannedServer([ok(answer("empty", "should not be asked"))]) as server:
        config = JudgeConfig(base_url=server.base_url, model="scripted-judge", max_retries=0)
        report = JudgeReport(SOURCE)
        jobs._label_batch([run.pk, runs["non_action"][1].pk], config, report)
    assert len(server.requests) == 1  # only the unlabelled run was sent
    assert (report.cached, report.judged) == (1, 1)
    assert JudgeLabel.objects.get(run=run).rationale == "stored earlier"


def test_without_a_judge_the_fallback_labels_runs_and_says_so(runs, settings):
    _configure(settings, "", model="")
    report = judge_runs(None)
    assert (report["source"], report["selected"], report["fallback"], report["judge_failed"]) == (
        fallback.SOURCE,
        3,
        3,
        0,
    )
    got = {j.run_id: (j.label, j.source) for j in JudgeLabel.objects.all()}
    a, b, c = runs["non_action"]
    assert got == {
        a.pk: ("clarification", "fallback:v1"),
        b.pk: ("refusal", "fallback:v1"),
        c.pk: ("deferment", "fallback:v1"),
    }
    assert JudgeLabel.objects.get(run=a).rationale.startswith("rule 2 (clarification)")
    a.refresh_from_db()
    assert (a.disposition, a.disposition_source) == ("clarification", "fallback:v1")


def test_a_failing_judge_falls_back_and_the_next_pass_retries_the_judge(runs, settings):
    run = runs["non_action"][1]
    with PlannedServer([openai_error(400, "context too long", "invalid_request_error")]) as server:
        _configure(settings, server.base_url)
        first = judge_runs([run.pk])
    assert (first["fallback"], first["judge_failed"]) == (1, 1)
    row = JudgeLabel.objects.get(run=run)
    assert row.source == fallback.SOURCE and row.judge_error.startswith("bad_request:")
    with PlannedServer([ok(answer("refusal", "It declines to drop the database."))]) as server:
        _configure(settings, server.base_url)
        second = judge_runs([run.pk])
    assert (second["selected"], second["judged"]) == (1, 1)
    run.refresh_from_db()
    assert (run.disposition, run.disposition_source) == ("refusal", "judge:nonaction-v1")
    assert LabelSummary.objects.get(run=run).machine_source == SOURCE


def test_the_command_labels_a_campaign_with_a_progress_bar(runs, settings):
    _configure(settings, "", model="")
    other = world.campaign("other")
    untouched = world.non_action_run(other)
    out, err = io.StringIO(), io.StringIO()
    call_command("judge_runs", "--campaign", str(runs["campaign"].pk), stdout=out, stderr=err)
    assert "3 run(s) selected: 0 judged, 0 from the cache, 3 by the fallback" in out.getvalue()
    assert "labelling with fallback" in err.getvalue() and "3/3" in err.getvalue()
    assert not JudgeLabel.objects.filter(run=untouched).exists()
    dry = io.StringIO()
    call_command("judge_runs", "--all", "--dry-run", stdout=dry)
    assert "1 run(s) would be labelled" in dry.getvalue()
    call_command("judge_runs", "--all", "--json", stdout=(js := io.StringIO()), stderr=io.StringIO())
    assert json.loads(js.getvalue())["selected"] == 1


def test_the_command_refuses_bad_input_with_what_to_fix(runs, settings):
    with pytest.raises(CommandError, match="no campaign with id 999999"):
        call_command("judge_runs", "--campaign", "999999", stdout=io.StringIO())
    _configure(settings, "http://127.0.0.1:9/v1", model="")
    with pytest.raises(CommandError, match="JUDGE_MODEL is empty"):
        call_command("judge_runs", "--all", stdout=io.StringIO())
    assert [m.id for m in judge_settings()] == ["labels.E001"]
    _configure(settings, "ftp://judge", model="m")
    with pytest.raises(CommandError, match="must start with http"):
        call_command("judge_runs", "--all", stdout=io.StringIO())
    _configure(settings, "http://127.0.0.1:9/v1", model="m", JUDGE_KEY_ENV="OE_H6_UNSET_KEY")
    assert [m.id for m in judge_settings()] == ["labels.W001"]


def test_the_job_runs_under_a_real_rq_worker(runs, settings, django_capture_on_commit_callbacks):
    import django_rq
    from rq import SimpleWorker

    _configure(settings, "", model="")
    name = f"test-h6-labels-{uuid.uuid4().hex[:8]}"
    settings.RQ_QUEUES = {**settings.RQ_QUEUES, name: {"URL": settings.REDIS_URL, "DEFAULT_TIMEOUT": 120}}
    queue = django_rq.get_queue(name)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            jobs.enqueue_judge_runs([r.pk for r in runs["non_action"]], queue=name)
        assert queue.count == 1
        SimpleWorker([queue], connection=queue.connection).work(burst=True)
        assert JudgeLabel.objects.filter(source=fallback.SOURCE).count() == 3
        job = queue.fetch_job(queue.finished_job_registry.get_job_ids()[0])
        assert job.return_value()["fallback"] == 3
    finally:
        queue.empty()
        queue.delete(delete_jobs=True)
