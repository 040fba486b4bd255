"""The agreement page, its data and its exports against a hand-computed example.

Twelve non-action runs, three validators, one judge (C = clarification, R = refusal,
D = deferment, E = empty, U = unclear):

    run  alice bob carol  reference   judge
    1    C     C          C           C
    2    C                C           C
    3    C     C          C           C
    4    C                C           C
    5    C                C           D
    6    R     R          R           R
    7    R                R           R
    8    D     D   C      D           D        (majority of three)
    9    E                E           E
    10   U     U          unclear     R        (kept in raw agreement, excluded from κ)
    11   C     R          — tie —     C        (left out: tied)
    12   D                D           —        (no judge label: left out)

By hand: raw agreement 8/10. κ over the 9 clear runs: p_o = 8/9; human marginals C 5, R 2, D 1,
E 1, judge marginals C 4, R 2, D 2, E 1 (of 9) → p_e = (20 + 4 + 2 + 1)/81 = 1/3, κ = (8/9 − 1/3)
/ (2/3) = 5/6. Judge precision C 4/4, R 2/2, D 1/2, E 1/1; recall C 4/5, R, D, E 1.
alice · bob overlap on runs 1, 3, 6, 8, 10, 11; without run 10 (unclear): (C,C) (C,C) (R,R)
(D,D) (C,R) → p_o = 4/5, p_e = (3·2 + 1·2 + 1·1)/25 = 9/25, κ = (11/25)/(16/25) = 11/16.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from labels.disposition import refresh
from labels.models import Adjudication, HumanLabel
from oracles import agreement as pure
from tests.labels import world
from tests.labels.world import fast_hashing  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_hashing")]

L = {"C": "clarification", "R": "refusal", "D": "deferment", "E": "empty", "U": "unclear"}
TABLE = [
    ("CC-", "C"), ("C--", "C"), ("CC-", "C"), ("C--", "C"), ("C--", "D"), ("RR-", "R"), ("R--", "R"),
    ("DDC", "D"), ("E--", "E"), ("UU-", "R"), ("CR-", "C"), ("D--", None),
]  # fmt: skip


@pytest.fixture
def example():
    c = world.campaign("agreement")
    alice, bob, carol = world.validators("alice", "bob", "carol")
    curator = world.validators("curt")[0]
    curator.groups.set([Group.objects.get(name="curator")])
    viewer = world.validators("vera")[0]
    viewer.groups.set([Group.objects.get(name="viewer")])
    runs = []
    for humans, judge in TABLE:
        run = world.non_action_run(c)
        for validator, code in zip((alice, bob, carol), humans, strict=True):
            if code != "-":
                HumanLabel.objects.create(run=run, validator=validator, label=L[code])
        if judge:
            world.judge_label(run, L[judge], "judged")
        runs.append(run)
    # An adjudication changes the reported label but never the agreement figures.
    Adjudication.objects.create(run=runs[4], curator=curator, label="deferment", reason="the judge was right")
    refresh([r.pk for r in runs])
    return {"runs": runs, "alice": alice, "curator": curator, "viewer": viewer, "campaign": c}


def _get(user, name: str, params=None, args=()):
    client = Client()
    client.force_login(user)
    return client.get(reverse(name, args=args), params or {})


def test_the_figures_equal_the_hand_computed_example(example):
    data = _get(example["viewer"], "labels-agreement-data").json()
    assert data["source"] == "judge:scripted-judge:nonaction-v1"
    assert (data["runs_with_human_labels"], data["human_labels"], data["compared"]) == (12, 19, 10)
    assert (data["tied"], data["no_machine_label"]) == (1, 1)
    assert data["raw_agreement"] == {"agree": 8, "n": 10, "share": 0.8}
    k = data["kappa"]
    assert (k["n"], k["excluded"]) == (9, 1)
    assert k["kappa"] == pytest.approx(5 / 6, abs=1e-6)
    assert (k["p_observed"], k["p_expected"]) == (pytest.approx(8 / 9, abs=1e-6), pytest.approx(1 / 3, abs=1e-6))
    assert data["confusion"]["counts"] == [[4, 0, 1, 0], [0, 2, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]]
    pr = {r["label"]: (r["precision"], r["recall"]) for r in data["precision_recall"]}
    assert pr == {"clarification": (1.0, 0.8), "refusal": (1.0, 1.0), "deferment": (0.5, 1.0), "empty": (1.0, 1.0)}
    pairs = {(p["validator_a"], p["validator_b"]): p for p in data["validator_pairs"]}
    ab = pairs[("alice", "bob")]
    assert (ab["overlap"], ab["n"], ab["excluded"]) == (6, 5, 1)
    assert ab["kappa"] == pytest.approx(11 / 16, abs=1e-6)
    assert pairs[("alice", "carol")]["kappa"] == 0.0 and pairs[("bob", "carol")]["overlap"] == 1


def test_the_figures_equal_the_pure_module_and_a_numpy_cross_check(example):
    data = _get(example["viewer"], "labels-agreement-data").json()
    rows = []
    for i, (humans, judge) in enumerate(TABLE):
        votes = [L[h] for h in humans if h != "-"]
        majority = pure.human_majority(votes)
        reference = majority or ("unclear" if all(v == "unclear" for v in votes) else None)
        if reference and judge:
            rows.append((i, reference, L[judge]))
    kappa = pure.human_judge_kappa(rows)
    assert data["kappa"]["kappa"] == pytest.approx(kappa.kappa, abs=1e-6)
    assert data["kappa"]["se"] == pytest.approx(kappa.se, abs=1e-6)
    assert data["raw_agreement"]["share"] == pure.raw_agreement(rows).share
    # NumPy, from the label vectors: p_o = mean(h = j), p_e = Σ_k P(h = k) P(j = k).
    h = np.array([r[1] for r in rows if r[1] != "unclear"])
    j = np.array([r[2] for r in rows if r[1] != "unclear"])
    p_o = float(np.mean(h == j))
    p_e = sum(float(np.mean(h == k)) * float(np.mean(j == k)) for k in pure.DISPOSITIONS)
    assert data["kappa"]["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-6)
    human_rows = [
        (i, name, L[code]) for i, (humans, _) in enumerate(TABLE)
        for name, code in zip(("alice", "bob", "carol"), humans, strict=True) if code != "-"
    ]  # fmt: skip
    fleiss = pure.fleiss_kappa(human_rows)
    assert data["fleiss"]["kappa"] == pytest.approx(fleiss.kappa, abs=1e-6)
    assert data["fleiss"]["runs_used"] == fleiss.runs_used


def test_the_page_shows_the_numbers_and_the_rule(example):
    html = _get(example["viewer"], "labels-agreement").content.decode()
    assert 'id="raw-agreement">0.800<' in html and 'id="raw-agree">8<' in html and 'id="raw-n">10<' in html
    assert 'id="kappa">0.833<' in html and 'id="kappa-n">9<' in html and 'id="kappa-excluded">1<' in html
    assert 'id="tied">1<' in html and 'id="no-machine">1<' in html
    assert '<tr data-human="clarification"><th>clarification</th><td>4</td><td>0</td><td>1</td><td>0</td></tr>' in html
    assert 'class="precision">0.500<' in html
    assert "adjudicated &gt; human majority &gt; judge &gt; fallback" in html
    assert "plotly-cartesian-4.1.1.min.js" in html and "js/agreement.js" in html
    # A validator-only account sees the figures over at least BLIND_MIN_CELL (10) runs: the raw
    # agreement over 10, not κ over 9, nor the confusion matrix (overeager/blind.py).
    blind = _get(example["alice"], "labels-agreement").content.decode()
    assert 'id="raw-agreement">0.800<' in blind and 'id="kappa">—<' in blind
    assert 'data-human="clarification"' not in blind
    assert "each resting on at least 10 runs" in blind


def test_the_page_can_use_the_fallback_as_the_machine_and_limit_itself_to_a_queue(example):
    first = example["runs"][0]
    world.judge_label(first, "empty", source="fallback:v1")
    data = _get(example["viewer"], "labels-agreement-data", {"source": "fallback:v1"}).json()
    assert (data["compared"], data["raw_agreement"]["agree"]) == (1, 0)
    q = world.queue("subset", campaigns=[example["campaign"]], size=3, seed=1)
    scoped = _get(example["viewer"], "labels-agreement-data", {"queue": q.pk}).json()
    assert scoped["runs_with_human_labels"] == 3
    bad = _get(example["viewer"], "labels-agreement-data", {"source": "judge:nobody:v0"})
    assert bad.status_code == 400 and "no machine labels from source" in bad.json()["error"]


def _csv_rows(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_the_agreement_tables_export_as_csv_and_json(example):
    viewer = example["viewer"]
    summary = dict(_csv_rows(_get(viewer, "labels-agreement-export", {"table": "summary"}, args=["csv"]))[1:])
    assert summary["raw_agreement_share"] == "0.8" and summary["kappa"] == "0.833333"
    assert summary["kappa_excluded_unclear"] == "1" and summary["tied_runs_left_out"] == "1"
    confusion = _csv_rows(_get(viewer, "labels-agreement-export", {"table": "confusion"}, args=["csv"]))
    assert confusion[0] == ["human \\ judge", "clarification", "refusal", "deferment", "empty"]
    assert confusion[5] == ["unclear", "0", "1", "0", "0"]
    pairs = _csv_rows(_get(viewer, "labels-agreement-export", {"table": "validator_pairs"}, args=["csv"]))
    assert pairs[1][:6] == ["alice", "bob", "6", "5", "1", "0.6875"]
    response = _get(viewer, "labels-agreement-export", args=["json"])
    assert response["Content-Disposition"] == 'attachment; filename="agreement.json"'
    assert response.json()["kappa"] == _get(viewer, "labels-agreement-data").json()["kappa"]
    missing = _get(viewer, "labels-agreement-export", args=["csv"])
    assert missing.status_code == 400 and "table= one of summary" in missing.json()["error"]


def test_the_label_exports_hold_every_label_and_the_reported_one(example):
    viewer = example["viewer"]
    rows = _csv_rows(_get(viewer, "labels-export", args=["labels", "csv"]))
    assert rows[0] == ["run", "campaign", "kind", "by", "label", "text", "created", "updated"]
    kinds = [r[2] for r in rows[1:]]
    assert (kinds.count("judge"), kinds.count("human"), kinds.count("adjudication")) == (11, 19, 1)
    per_run = _get(viewer, "labels-export", args=["runs", "json"]).json()
    assert per_run["rule"] == "adjudicated > human majority > judge > fallback"
    by_run = {r["run"]: r for r in per_run["rows"]}
    fifth = by_run[example["runs"][4].pk]
    assert (fifth["human_majority"], fifth["machine_label"], fifth["adjudicated"]) == (
        "clarification",
        "deferment",
        "deferment",
    )
    assert (fifth["final_label"], fifth["final_source"]) == ("deferment", "adjudicated")
    tied = by_run[example["runs"][10].pk]
    assert (tied["review"], tied["final_source"]) == ("tie", "judge:scripted-judge:nonaction-v1")
    runs_csv = _csv_rows(_get(example["curator"], "labels-export", args=["runs", "csv"]))
    assert len(runs_csv) == 13


def test_validators_cannot_download_per_run_labels(example):
    # The per-run exports carry the judge's labels: a validator-only account would be unblinded.
    for table in ("labels", "runs"):
        assert _get(example["alice"], "labels-export", args=[table, "csv"]).status_code == 403
    html = _get(example["alice"], "labels-agreement").content.decode()
    assert "export/labels.csv" not in html
