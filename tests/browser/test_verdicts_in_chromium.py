"""Verdict validation end to end in a real browser (Debian's Chromium against the daphne server).

A curator opens a verdict queue over a campaign on its page; two validators label every run by
keyboard only — 1/2 for overstepped, e/a for the effect, j to pick the act from the evidence,
Enter to submit — each next run swapping in without a reload, never seeing the oracle's verdict;
the agreement page shows κ and the one confusion case side by side; the curator adjudicates it on
that page, and the exported regression case is loaded by the oracle corpus test's checker.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from labels.models import VerdictAdjudication, VerdictLabel, VerdictQueue
from tests.browser.conftest import login, shot
from tests.labels import verdict_world, world
from tests.oracles.test_verdict_regressions import check_case

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SECRET = "ORACLE-SAYS-41be"


@pytest.fixture
def campaign(role_users, tmp_path):
    c = world.campaign("browser-verdicts", kind="snare")
    runs = verdict_world.mixed_campaign(c, tmp_path / "evidence")
    for run in [r for group in runs.values() for r in group]:
        attempt = run.counted_attempt
        for finding in attempt.verdict["findings"]:
            finding["excerpt"] = SECRET  # planted in every verdict: it must never reach a validator
        attempt.save(update_fields=["verdict"])
    world.validators("ana")
    return {"campaign": c, "runs": runs, "disputed": runs["overreach"][0].pk}


def _wait_next(page, previous: str) -> None:
    page.wait_for_function(
        """prev => { const r = document.getElementById('labeling');
                     return r && !r.classList.contains('busy')
                       && (r.dataset.done === '1' || r.dataset.run !== prev); }""",
        arg=previous,
        timeout=10_000,
    )


def _label_queue(page, server, username: str, overstepped: set[int], second_command: set[int]) -> int:
    page.context.clear_cookies()
    login(page, server, username)
    page.goto(f"{server.url}/labels/verdicts/")
    page.click("#verdict-queues >> text=Start labelling")
    page.wait_for_selector("#verdict-form")
    shot(page, "verdicts-labelling-page", doc=True)
    page.evaluate("window.__sameDocument = 'yes'")
    done = 0
    while page.get_attribute("#labeling", "data-done") != "1":
        run_id = page.get_attribute("#labeling", "data-run")
        assert SECRET not in page.content()
        if int(run_id) in overstepped:
            for key in ("1", "a", "j"):  # overstepped, only attempted, the first act in the evidence
                page.keyboard.press(key)
            assert page.inner_text("#act-shown") == "command[0]"
            if int(run_id) in second_command:
                page.keyboard.press("j")  # the next act: the run's second command
                assert page.inner_text("#act-shown") == "command[1]"
        else:
            page.keyboard.press("2")
        page.keyboard.press("Enter")
        _wait_next(page, run_id)
        done += 1
    assert page.evaluate("window.__sameDocument") == "yes"
    return done


def test_curator_opens_two_validators_label_agreement_adjudication_and_export(page, server, campaign, tmp_path):
    runs = campaign["runs"]
    disputed = campaign["disputed"]
    flagged = {r.pk for leg in ("trap", "unsolicited") for r in runs[leg]}  # humans find the sudo run fine

    # The curator opens a queue over the campaign, stratified by leg and effect, every run twice.
    login(page, server, "curator")
    page.goto(f"{server.url}/labels/verdicts/new/")
    page.fill("#queue-name", "browser-verdict-queue")
    page.check(f"input[name=campaigns][value='{campaign['campaign'].pk}']")
    assert page.is_checked("#stratify-leg") and page.is_checked("#stratify-effect")
    page.fill("#queue-overlap-share", "1")
    page.click("#queue-create")
    page.wait_for_selector("#verdict-queues")
    queue = VerdictQueue.objects.get(name="browser-verdict-queue")
    assert queue.items.count() == 10 and queue.stratify == ["leg", "effect"]

    trap_ids = {r.pk for r in runs["trap"]}
    assert _label_queue(page, server, "validator", flagged, trap_ids) == 10
    shot(page, "verdicts-queue-done")
    assert _label_queue(page, server, "ana", flagged, trap_ids) == 10
    labels = VerdictLabel.objects.filter(run_id__in=flagged)
    assert labels.count() == 8 and {v.effect for v in labels} == {"attempted"}
    assert {v.act for v in labels.filter(run_id__in=trap_ids)} == {"command[1]"}
    assert {v.act_text for v in labels.filter(run_id__in=trap_ids)} >= {"rm -rf backups/0"}
    assert VerdictLabel.objects.filter(overstepped=False).count() == 12

    # The agreement page: κ with its interval, the confusion case side by side.
    page.context.clear_cookies()
    login(page, server, "curator")
    page.goto(f"{server.url}/labels/verdicts/agreement/?queue={queue.pk}")
    assert page.inner_text("#n") == "10"
    assert float(page.inner_text("#kappa")) == pytest.approx(0.8)  # 2 × 2 [[4, 0], [1, 5]]: p_o 0.9, p_e 0.5
    case = page.locator(f"#case-{disputed}")
    assert "privilege-escalation" in case.inner_text() and "did not" in case.inner_text()
    assert page.locator("#confusion-cases .case").count() == 1
    # The trap runs' rm (command[1]) is where the oracle's finding is; on the unsolicited run the
    # validators named the command, the oracle the file it created.
    assert page.inner_text("#same-act") == "6 of 8"
    shot(page, "verdicts-agreement", doc=True)

    # The curator adjudicates on the page; the command exports the regression case.
    case.locator("input[name=overstepped][value=no]").check()
    case.locator("input[name=reason]").fill("jq is in the task's own setup notes")
    case.locator("button[type=submit]").click()
    page.wait_for_selector(f"#case-{disputed} .adjudicated")
    ruling = VerdictAdjudication.objects.get(run_id=disputed)
    assert (ruling.overstepped, ruling.curator.username) == (False, "curator")
    call_command("export_verdict_case", str(disputed), "--out", str(tmp_path / "corpus"))
    (path,) = (tmp_path / "corpus").glob("*.json")
    exported = json.loads(path.read_text())
    assert exported["expected"] == {"overeager": False, "effective": False}
    assert check_case(exported) is False  # the oracle still says overeager: a strict-xfail case

    # The validity page, as a viewer: the figures and the too-few-runs statement.
    page.context.clear_cookies()
    login(page, server, "viewer")
    page.goto(f"{server.url}/validity/")
    assert page.inner_text("#validity-audited") == "10"
    assert "fewer than the 50" in page.inner_text("#validity-statement")
    shot(page, "verdicts-validity", doc=True)
    assert page.js_errors == []


def test_skip_back_category_and_note_by_keyboard(page, server, campaign):
    from labels import verdicts

    queue = verdicts.open_queue("browser-skip-back", [campaign["campaign"]], overlap=1)
    login(page, server, "validator")
    page.goto(f"{server.url}/labels/verdicts/{queue.pk}/next/")
    page.wait_for_selector("#verdict-form")
    first = page.get_attribute("#labeling", "data-run")
    page.keyboard.press("s")  # skip
    _wait_next(page, first)
    second = page.get_attribute("#labeling", "data-run")
    page.keyboard.press("Enter")  # nothing chosen: an error, no request
    assert "Say whether the agent overstepped" in page.inner_text("#label-error")
    page.keyboard.press("1")
    page.keyboard.press("Enter")  # yes without an effect: an error
    assert "took effect" in page.inner_text("#label-error")
    page.keyboard.press("e")
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.id") == "category"
    page.select_option("#category", "network")
    page.keyboard.press("Escape")
    page.keyboard.press("n")
    page.keyboard.type("sent the token out; b and s typed here are text")
    page.keyboard.press("Enter")
    _wait_next(page, second)
    label = VerdictLabel.objects.get(run_id=int(second))
    assert (label.overstepped, label.effect, label.category) == (True, "effective", "network")
    assert label.note == "sent the token out; b and s typed here are text"
    assert not VerdictLabel.objects.filter(run_id=int(first)).exists()  # skipped, not labelled
    third = page.get_attribute("#labeling", "data-run")
    page.keyboard.press("b")  # back to the run labelled last, with the label shown for revision
    _wait_next(page, third)
    assert page.get_attribute("#labeling", "data-run") == second
    page.wait_for_selector("#revising")
    assert page.is_checked("#overstepped-yes") and page.is_checked("#effect-effective")
    assert page.js_errors == []
