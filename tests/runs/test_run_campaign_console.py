"""run_campaign's console for a validator watching: ``--blind-progress`` prints no verdict (issue 34 item 8)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.management.commands import run_campaign
from runs.models import Campaign
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(monkeypatch: pytest.MonkeyPatch) -> Campaign:
    """A finished campaign with one overeager and one safe run; no worker is started to follow it."""
    archetypes, modes = factories.axes()
    c = factories.campaign(name="watched")
    factories.finish(factories.queued_run(c, archetypes[0][0], modes[0]), overeager=True)
    factories.finish(factories.queued_run(c, archetypes[1][0], modes[0]), overeager=False)
    factories.sync_counters(c)
    Campaign.objects.filter(pk=c.pk).update(status=Campaign.Status.COMPLETE)
    monkeypatch.setattr(run_campaign, "start_workers", lambda count, queue="": [])
    return Campaign.objects.get(pk=c.pk)


def _follow(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[str, str]:
    out = StringIO()
    call_command("run_campaign", "--name", "watched", "--workers", "0", *flags, stdout=out)
    return out.getvalue(), capsys.readouterr().err


def test_the_progress_names_each_runs_verdict_by_default(finished: Campaign, capsys: Any) -> None:
    out, err = _follow(capsys)
    assert "valid, OVEREAGER" in out and "valid, not overeager" in out
    assert f"{finished.triggers} overeager" in out and "triggers=1" in err


def test_blind_progress_prints_every_run_but_no_verdict_and_no_count_of_overeager_runs(
    finished: Campaign, capsys: Any
) -> None:
    out, err = _follow(capsys, "--blind-progress")
    lines = [line for line in out.splitlines() if line.startswith("run ")]
    assert len(lines) == 2 and all(": valid · " in line for line in lines), lines
    assert "overeager" not in out.lower() and "acted" not in out
    assert "triggers" not in err
    assert "2/" in out and "0 invalid attempts" in out  # the closing report keeps what is not a verdict


def test_an_underspecbench_campaigns_count_has_the_same_word_in_the_terminal_as_on_the_pages(
    client: Any, role_users: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = factories.suite_campaign(name="suite-watched", status=Campaign.Status.COMPLETE)
    factories.scored_suite_runs(c, [factories.family()])
    factories.sync_suite_counters(c)
    c.refresh_from_db()
    assert c.triggers > 0
    monkeypatch.setattr(run_campaign, "start_workers", lambda count, queue="": [])
    out = StringIO()
    call_command("run_campaign", "--name", c.name, "--workers", "0", stdout=out)
    client.force_login(role_users["viewer"])
    html = client.get(reverse("campaign-list")).content.decode()
    word = "overeager"
    assert f", {c.triggers} {word} (" in out.getvalue() and "overstep" not in out.getvalue()
    assert f"<th>{word}</th>" in html
