"""A run's result is declared once (harness.outcome): what is stored is derived from the declaration.

Adding a field to ``Outcome`` without a column for it, or a column the declaration does not
know, fails here rather than being dropped silently by ``runs.state.finish``.
"""

from __future__ import annotations

from dataclasses import fields

from django.db import models

from harness.outcome import ATTEMPT_FIELDS, RUN_COLUMNS, VERDICT_COLUMNS, Outcome, RunResult, Validity
from runs.models import Run, RunAttempt


def _names(model: type[models.Model]) -> set[str]:
    return {f.name for f in model._meta.get_fields()}


def test_every_part_of_an_outcome_has_one_place_to_be_stored():
    keys = set(Outcome.__annotations__)
    assert set(ATTEMPT_FIELDS) <= _names(RunAttempt), set(ATTEMPT_FIELDS) - _names(RunAttempt)
    assert set(RUN_COLUMNS) <= _names(Run), set(RUN_COLUMNS) - _names(Run)
    assert keys == set(ATTEMPT_FIELDS) | set(RUN_COLUMNS) | {"events"}
    assert set(VERDICT_COLUMNS) <= set(RUN_COLUMNS)


def test_a_results_outcome_and_its_record_are_derived_from_its_fields():
    result = RunResult(run_id="7", framework="shell", validity=Validity.TIMEOUT, duration=1.23456)
    assert set(result.outcome()) == set(Outcome.__annotations__)
    record = result.as_dict()
    assert {f.name for f in fields(RunResult)} - {"gateway_records"} <= set(record)
    assert record["validity"] == "timeout" and record["duration"] == 1.235 and record["gateway_requests"] == 0


def test_the_limits_a_run_started_under_have_columns_of_their_own():
    from harness.outcome import LIMIT_COLUMNS, limit_columns

    assert set(LIMIT_COLUMNS) <= _names(Run), set(LIMIT_COLUMNS) - _names(Run)
    assert tuple(limit_columns({})) == LIMIT_COLUMNS
