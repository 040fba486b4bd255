"""Verdict agreement (humans vs the composite oracle), cross-checked against scikit-learn and SciPy."""

from __future__ import annotations

import random

import pytest
from scipy.stats import binomtest
from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_score, recall_score

from oracles.agreement import (
    NO_LEG,
    VerdictRow,
    binary_fleiss,
    binary_pair_kappas,
    effect_majority,
    kish_n,
    verdict_agreement,
    verdict_agreement_by,
    verdict_decision,
    verdict_majority,
)


def _rows(seed: int, n: int = 120, weighted: bool = True) -> list[VerdictRow]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        oracle = rng.random() < 0.4
        human = oracle if rng.random() < 0.8 else not oracle
        weight = rng.choice([1.0, 2.5, 4.0, 10.0]) if weighted else 1.0
        effects = ("effective", "attempted")
        rows.append(
            VerdictRow(
                i,
                human,
                oracle,
                weight,
                rng.choice(effects) if human else "",
                rng.choice(effects) if oracle else "",
            )
        )
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_it_matches_scikit_learn_unweighted_and_weighted(seed: int) -> None:
    rows = _rows(seed)
    human = [int(r.human) for r in rows]
    oracle = [int(r.oracle) for r in rows]
    weights = [r.weight for r in rows]
    got = verdict_agreement(rows)
    assert got.kappa.kappa == pytest.approx(cohen_kappa_score(human, oracle))
    assert got.kappa_weighted.kappa == pytest.approx(cohen_kappa_score(human, oracle, sample_weight=weights))
    assert got.raw.value == pytest.approx(accuracy_score(human, oracle))
    assert got.raw.weighted == pytest.approx(accuracy_score(human, oracle, sample_weight=weights))
    assert got.precision.value == pytest.approx(precision_score(human, oracle))
    assert got.precision.weighted == pytest.approx(precision_score(human, oracle, sample_weight=weights))
    assert got.recall.value == pytest.approx(recall_score(human, oracle))
    assert got.recall.weighted == pytest.approx(recall_score(human, oracle, sample_weight=weights))


def test_the_intervals_are_scipys_wilson_intervals() -> None:
    got = verdict_agreement(_rows(4))
    for share in (got.raw, got.precision, got.recall):
        ci = binomtest(share.hits, share.total).proportion_ci(method="wilson")
        assert (share.low, share.high) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_equal_weights_give_the_unweighted_figures_and_interval() -> None:
    rows = [VerdictRow(r.run_id, r.human, r.oracle, 3.0) for r in _rows(5, weighted=False)]
    got = verdict_agreement(rows)
    assert got.n_effective == pytest.approx(len(rows))
    assert got.kappa_weighted.kappa == pytest.approx(got.kappa.kappa)
    assert got.kappa_weighted.low == pytest.approx(got.kappa.low)
    assert got.kappa_weighted.high == pytest.approx(got.kappa.high)
    assert got.raw.weighted_low == pytest.approx(got.raw.low)


def test_spread_weights_widen_the_weighted_interval() -> None:
    rows = _rows(6)
    got = verdict_agreement(rows)
    assert kish_n([r.weight for r in rows]) < len(rows)
    assert got.kappa_weighted.se is not None and got.kappa.se is not None
    same_p = verdict_agreement([VerdictRow(r.run_id, r.human, r.oracle) for r in rows])
    assert same_p.kappa.se == got.kappa.se  # the unweighted figure ignores the weights


def test_pair_kappas_match_scikit_learn() -> None:
    rng = random.Random(7)
    labels = []
    a_votes, b_votes = [], []
    for run in range(40):
        a = rng.random() < 0.5
        b = a if rng.random() < 0.75 else not a
        labels += [(run, "ana", a), (run, "ben", b)]
        a_votes.append(int(a))
        b_votes.append(int(b))
    labels.append((99, "ana", True))  # only one validator: no pair, still one Fleiss subject
    (pair,) = binary_pair_kappas(labels)
    assert (pair.validator_a, pair.validator_b, pair.overlap) == ("ana", "ben", 40)
    assert pair.kappa.kappa == pytest.approx(cohen_kappa_score(a_votes, b_votes))
    fleiss = binary_fleiss(labels)
    assert fleiss.runs_used == 40 and fleiss.runs_single == 1


def test_edge_cases_are_none_not_zero() -> None:
    empty = verdict_agreement([])
    assert empty.n == 0 and empty.kappa.kappa is None and empty.raw.value is None
    all_no = verdict_agreement([VerdictRow(i, False, False) for i in range(5)])
    assert all_no.kappa.kappa is None  # one category for both raters: κ is 0/0
    assert all_no.precision.value is None and all_no.recall.value is None
    assert all_no.raw.value == 1.0
    with pytest.raises(ValueError, match="more than one"):
        verdict_agreement([VerdictRow(1, True, True), VerdictRow(1, False, True)])
    with pytest.raises(ValueError, match="positive"):
        verdict_agreement([VerdictRow(1, True, True, 0.0)])


def test_effect_agreement_counts_runs_both_called_overeager() -> None:
    rows = [
        VerdictRow(1, True, True, 1.0, "effective", "effective"),
        VerdictRow(2, True, True, 1.0, "attempted", "effective"),
        VerdictRow(3, True, False, 1.0, "effective", ""),
    ]
    effect = verdict_agreement(rows).effect
    assert (effect.hits, effect.total) == (1, 2)


def test_grouping_by_leg() -> None:
    rows = [VerdictRow(1, True, True), VerdictRow(2, False, True), VerdictRow(3, False, False)]
    groups = verdict_agreement_by(rows, {1: "trap", 2: "unsolicited", 3: NO_LEG})
    assert list(groups) == ["none", "trap", "unsolicited"]
    assert groups["unsolicited"].precision.value == 0.0 and groups["trap"].precision.value == 1.0


def test_the_deciding_leg_and_effect_of_a_stored_verdict() -> None:
    def finding(leg: str, level: str, granted: bool = False) -> dict[str, object]:
        return {"leg": leg, "rule": "r", "level": level, "granted": granted}

    v2 = {
        "overeager": True,
        "effective": False,
        "findings": [
            finding("trap", "written"),
            finding("overreach", "attempted"),
            finding("unsolicited", "attempted"),
        ],
    }
    assert verdict_decision(v2) == (True, False, "overreach")  # a written trap command is not counted
    granted = {"overeager": False, "effective": False, "findings": [finding("trap", "effective", granted=True)]}
    assert verdict_decision(granted) == (False, False, NO_LEG)
    v1 = {"overeager": True, "legs": {"trap_predicate": False, "unsolicited_change": True}}
    assert verdict_decision(v1) == (True, False, "unsolicited")
    assert verdict_decision(None) == (False, False, NO_LEG)


def test_majorities() -> None:
    assert verdict_majority([True, True, False]) is True
    assert verdict_majority([True, False]) is None
    assert verdict_majority([]) is None
    assert effect_majority(["effective", "attempted", "effective"]) == "effective"
    assert effect_majority(["effective", "attempted"]) == ""


def test_a_constant_rater_gets_kappa_without_an_interval() -> None:
    # The oracle flags all five; humans agree on four: κ = 0, and the asymptotic SE would be 0.
    rows = [VerdictRow(i, i != 0, True) for i in range(5)]
    kappa = verdict_agreement(rows).kappa
    assert kappa.kappa == pytest.approx(cohen_kappa_score([int(r.human) for r in rows], [1] * 5))
    assert (kappa.se, kappa.low, kappa.high) == (None, None, None)
