"""A campaign whose runs mostly never got to act stops itself and says why; every rate the command
prints has the invalid count beside it; each finished run gets a progress line (issue 18 item 2)."""

from __future__ import annotations

import dataclasses
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from harness.outcome import Validity
from runs.campaigns import advance, invalid_share_stop, progress_summary
from runs.jobs import claim, store_outcome
from runs.management.commands.run_campaign import Command as RunCampaign
from runs.management.commands.run_campaign import finished_run_lines
from runs.models import Campaign, Run
from tests import factories

pytestmark = pytest.mark.django_db
REASON = "the agent stopped on its own fatal error: mini-swe-agent stopped: RepeatedFormatError"


def _finish(c: Campaign, *, valid: bool) -> Run:
    run = factories.queued_run(c, "credential-hoarding", "explicit-deny")
    claimed = claim(run.pk)
    assert claimed is not None
    _, attempt = claimed
    result = factories.snare_result(False)
    if not valid:
        result = dataclasses.replace(
            result, validity=Validity.AGENT_ERROR, validity_reason=REASON, verdict=None, events=[], commands=[]
        )
    outcome = result.outcome()
    outcome["duration"] = 12.5
    assert store_outcome(run.pk, attempt.pk, attempt.number, outcome)
    return run


def _campaign() -> Campaign:
    return factories.campaign(n=50)


def test_a_campaign_past_the_invalid_share_stops_itself_and_says_why(settings: Any) -> None:
    settings.CAMPAIGN_MAX_INVALID_PERCENT = 20
    settings.CAMPAIGN_INVALID_MIN_ATTEMPTS = 5
    c = _campaign()
    waiting = factories.queued_run(c, "credential-hoarding", "explicit-deny")
    for valid in (True, False, False, False, False):
        _finish(c, valid=valid)
    advance(c.pk)
    c.refresh_from_db()
    assert c.status == Campaign.Status.STOPPED
    assert "4 of 5 finished attempts (80%) were invalid (agent-side fatal error 4)" in c.error
    assert "above the 20% limit" in c.error and "RepeatedFormatError" in c.error
    assert c.invalid == 4
    waiting.refresh_from_db()
    assert waiting.status == Run.Status.CANCELLED
    # The push the open campaign page gets: the reason and the count, shown without a reload.
    pushed = progress_summary(c)
    assert pushed["status"] == "stopped" and pushed["error"] == c.error and pushed["invalid_attempts"] == 4


def test_below_the_minimum_number_of_attempts_or_the_share_a_campaign_goes_on(settings: Any) -> None:
    settings.CAMPAIGN_MAX_INVALID_PERCENT = 20
    settings.CAMPAIGN_INVALID_MIN_ATTEMPTS = 5
    c = _campaign()
    for valid in (False, False):  # 100 % invalid, but only two attempts so far
        _finish(c, valid=valid)
    assert invalid_share_stop(c) is None
    for _ in range(8):  # 2 of 10 = 20 %: at the limit, not past it
        _finish(c, valid=True)
    assert invalid_share_stop(c) is None
    _finish(c, valid=False)  # 3 of 11: past it
    assert invalid_share_stop(c) is not None


def test_the_limit_at_100_percent_never_stops_a_campaign(settings: Any) -> None:
    settings.CAMPAIGN_MAX_INVALID_PERCENT = 100
    c = _campaign()
    for _ in range(6):
        _finish(c, valid=False)
    assert invalid_share_stop(c) is None


def test_the_commands_report_puts_the_invalid_count_beside_the_rate_and_the_stop_reason(settings: Any) -> None:
    settings.CAMPAIGN_INVALID_MIN_ATTEMPTS = 5
    c = _campaign()
    for valid in (True, False, False, False, False, False):
        _finish(c, valid=valid)
    advance(c.pk)
    out = StringIO()
    command = RunCampaign(stdout=out)
    command._report([c.pk])
    line = out.getvalue()
    # (The factory's runs are not the allocator's, so none counts as scored: no rate, the count still.)
    assert ", 5 invalid attempts — stopped itself: 5 of 6" in line
    # Following a stopped campaign prints its runs and returns at once.
    out = StringIO()
    call_command("run_campaign", "--name", c.name, "--workers", "0", stdout=out, stderr=StringIO())
    assert "stopped itself" in out.getvalue()


def test_each_finished_attempt_gets_a_line_with_how_it_ended_its_validity_and_commands() -> None:
    c = _campaign()
    valid = _finish(c, valid=True)
    invalid = _finish(c, valid=False)
    seen: set[int] = set()
    lines = finished_run_lines([c.pk], seen)
    assert lines[0].startswith(f"run {valid.pk} attempt 1: valid, not overeager, acted")
    assert f"run {invalid.pk} attempt 1: INVALID (agent-side fatal error): {REASON}" in lines[1]
    assert "0 commands" in lines[1] and "12.5 s" in lines[1]
    assert finished_run_lines([c.pk], seen) == []  # each attempt once


def test_harness_failures_are_retried_by_the_harness_and_do_not_count(settings: Any) -> None:
    from runs.jobs import record_infra_failure

    settings.CAMPAIGN_INVALID_MIN_ATTEMPTS = 5
    c = _campaign()
    for _ in range(3):
        _finish(c, valid=True)
    for _ in range(3):  # the sandbox failed to start: the run is re-queued, not judged
        run = factories.queued_run(c, "credential-hoarding", "explicit-deny")
        claimed = claim(run.pk)
        assert claimed is not None
        record_infra_failure(run.pk, claimed[1].number, RuntimeError("docker: engine busy"))
    assert invalid_share_stop(c) is None
