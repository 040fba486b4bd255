"""Blind labelling in a real browser (Debian's Chromium, headless, against the daphne server).

A validator logs in through the login form and labels a 50-run queue with the keyboard only —
a digit chooses the label, Enter submits — each next run swapping in without a page reload;
the labels land in the database exactly as typed, and the judge's label (planted on every run)
never reaches the page. A second test skips with ``s`` and writes a note with ``n``.
"""

from __future__ import annotations

import time

import pytest

from labels.models import HumanLabel
from oracles.agreement import LABELS
from tests.browser.conftest import login, shot
from tests.labels import world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SECRET = "JUDGE-SAYS-7f3a"


@pytest.fixture
def queue50(role_users):
    c = world.campaign("browser-labels")
    for i in range(50):
        events = [
            {"kind": "message", "role": "assistant", "text": f"Run {i}: reading the deployment config."},
            {"kind": "command", "command": "kubectl get deploy -A", "exit_code": 0, "output": "api  prod  3/3"},
            {"kind": "final_message", "text": f"Run {i}: there are two clusters. Which one do you mean?"},
        ]
        run = world.non_action_run(c, prompt=f"Scale the api deployment down (task {i}).", events=events)
        world.judge_label(run, "refusal", f"{SECRET} rationale {i}")
    return world.queue("browser-50", overlap=1)


def _wait_next(page, previous: str) -> None:
    page.wait_for_function(
        """prev => { const r = document.getElementById('labeling');
                     return r && !r.classList.contains('busy')
                       && (r.dataset.done === '1' || r.dataset.run !== prev); }""",
        arg=previous,
        timeout=10_000,
    )


def test_a_validator_labels_50_runs_with_the_keyboard(page, server, queue50):
    login(page, server, "validator")
    page.click("nav >> text=Labels")
    page.click("#queues >> text=Start labelling")
    page.wait_for_selector("#label-form")
    page.evaluate("window.__sameDocument = 'yes'")
    typed: dict[int, str] = {}
    latencies = []
    started = time.perf_counter()
    for i in range(50):
        run_id = page.get_attribute("#labeling", "data-run")
        assert SECRET not in page.content()
        key = str(1 + i % len(LABELS))
        t0 = time.perf_counter()
        page.keyboard.press(key)
        page.keyboard.press("Enter")
        _wait_next(page, run_id)
        latencies.append(time.perf_counter() - t0)
        typed[int(run_id)] = LABELS[int(key) - 1]
    elapsed = time.perf_counter() - started
    latencies.sort()
    print(
        f"\n50 runs labelled with the keyboard in {elapsed:.1f} s "
        f"(per run: median {latencies[25] * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms)"
    )
    assert page.locator("#queue-done").is_visible()
    assert page.evaluate("window.__sameDocument") == "yes"  # every run swapped in without a reload
    stored = dict(HumanLabel.objects.filter(validator__username="validator").values_list("run_id", "label"))
    assert stored == typed and len(stored) == 50
    assert sorted(stored.values()).count("unclear") == 10
    assert page.js_errors == []
    assert elapsed < 150, f"50 labels took {elapsed:.1f} s"  # a regression bound; the figure is printed
    shot(page, "labels-queue-done")


def test_skip_and_note_shortcuts(page, server, queue50):
    login(page, server, "validator")
    page.goto(f"{server.url}/labels/queues/{queue50.pk}/next/")
    page.wait_for_selector("#label-form")
    shot(page, "labels-labelling-page", doc=True)
    first = page.get_attribute("#labeling", "data-run")
    page.keyboard.press("s")
    _wait_next(page, first)
    second = page.get_attribute("#labeling", "data-run")
    page.keyboard.press("Enter")  # no label chosen yet: an error, no request
    assert "Choose a label" in page.inner_text("#label-error")
    page.keyboard.press("2")
    page.keyboard.press("n")
    assert page.evaluate("document.activeElement.id") == "note"
    page.keyboard.type("declines: names no cluster")  # "s", "n" and digits typed here are text, not shortcuts
    page.keyboard.press("Enter")
    _wait_next(page, second)
    row = HumanLabel.objects.get(run_id=int(second))
    assert (row.label, row.note) == ("refusal", "declines: names no cluster")
    assert not HumanLabel.objects.filter(run_id=int(first)).exists()  # skipped, not labelled
    # Revising: the link goes back to the previous run with the label chosen.
    page.click("#revise-last")
    page.wait_for_selector("#revising")
    assert page.is_checked("#label-refusal")
    assert page.js_errors == []


def test_the_agreement_page_draws_its_charts_and_the_composition(page, server, role_users):
    from labels.disposition import refresh
    from runs.models import Run

    c = world.campaign("browser-agreement", "fw-a", "m-1")
    d = world.campaign("browser-agreement-2", "fw-b", "m-1")
    plan = [
        ("clarification", "clarification", c, 0),
        ("refusal", "refusal", c, 1),
        ("deferment", "clarification", d, 1),
        ("empty", "empty", d, 2),
        ("unclear", "refusal", c, 3),
    ]
    for human, judge, campaign, s in plan:
        run = world.non_action_run(campaign, s=s, b=0, r=0)
        world.judge_label(run, judge)
        HumanLabel.objects.create(run=run, validator=role_users["validator"], label=human)
    refresh(Run.objects.values_list("pk", flat=True))
    login(page, server, "viewer")
    page.goto(f"{server.url}/labels/agreement/")
    page.wait_for_selector("#agreement[data-drawn='1']")
    assert page.inner_text("#raw-agree") == "3" and page.inner_text("#raw-n") == "5"
    assert page.locator("#confusion-chart .main-svg").count() >= 1 and page.locator("#pr-chart .main-svg").count() >= 1
    page.wait_for_selector("#composition[data-drawn='system']")
    assert page.get_attribute("#composition", "data-total") == "5"
    bars = page.evaluate("document.querySelector('#composition .composition-chart').data.map(t => t.x.length)")
    assert bars == [2, 2, 2, 2]  # four dispositions × two systems
    page.select_option("#composition .composition-by", "s_level")
    page.wait_for_selector("#composition[data-drawn='s_level']")
    assert page.get_attribute("#composition", "data-groups") == "4"
    assert "human-majority 4" in page.inner_text("#composition .composition-sources")
    assert page.js_errors == []
    shot(page, "labels-agreement", doc=True)
