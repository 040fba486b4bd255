"""oracles.agreement: κ, confusion matrix, precision/recall, validator agreement and the final-label rule.

Published figures reproduced here:
* SAS PROC FREQ's simple-kappa example (as quoted by statsmodels' test suite): κ = 0.4842, ASE 0.1380,
  95% CI 0.2137–0.7547 — the Fleiss–Cohen–Everitt asymptotic SE.
* Gwet (2014), *Handbook of Inter-Rater Reliability*, 4th ed.: the 3×3 abstractors table (κ = 0.796,
  CI 0.680–0.913 with a t(99) quantile), the 4×4 diagnosis table (κ = 0.432, SE 0.046) and the
  12-unit, 4-rater table with missing ratings (Fleiss κ = 0.76117, p_a = 0.81818, p_e = 0.23872,
  SE = 0.15302), as reported by Gwet's irrCAC package.
* Fleiss (1971): 30 patients × 6 psychiatrists, κ = 0.430 (R irr: 0.4302445).
* UnderSpecBench Table IV: 85/100 raw agreement, κ = 0.860 over 93 after 7 unclear — on a matrix
  reconstructed to be consistent with those three figures (the summary gives no cells).
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest
from scipy.stats import t as student_t

from oracles.agreement import (
    CLARIFICATION,
    DEFERMENT,
    DISPOSITIONS,
    EMPTY,
    LABELS,
    REFUSAL,
    UNCLEAR,
    confusion_matrix,
    final_label,
    fleiss_kappa,
    fleiss_kappa_counts,
    human_judge_kappa,
    human_majority,
    kappa_from_matrix,
    precision_recall,
    raw_agreement,
    validator_pair_kappas,
)


def rows_from_matrix(matrix: dict[tuple[str, str], int], start: int = 0) -> list[tuple[str, str, str]]:
    rows = []
    for (human, judge), count in matrix.items():
        for _ in range(count):
            rows.append((f"run-{start + len(rows)}", human, judge))
    return rows


# A hand-computed example, 10 runs:       judge: clar  def  empty
#                               human clar        4    1    0
#                               human def         1    2    0
#                               human empty       0    0    2
HAND = {
    (CLARIFICATION, CLARIFICATION): 4,
    (CLARIFICATION, DEFERMENT): 1,
    (DEFERMENT, CLARIFICATION): 1,
    (DEFERMENT, DEFERMENT): 2,
    (EMPTY, EMPTY): 2,
}


def test_kappa_matches_a_hand_computed_example():
    # p_o = 8/10; row and column totals (5, 3, 2) → p_e = (25 + 9 + 4)/100 = 0.38;
    # κ = (0.8 − 0.38)/(1 − 0.38) = 0.42/0.62 = 21/31, so 1 − κ = 10/31.
    # Fleiss–Cohen–Everitt variance, in units of 1/961 (= 1/31²):
    #   A = 0.4·21² + 0.2·25² + 0.2·27²  (diagonal: 1 − (p_i· + p_·i)(1 − κ) = 21/31, 25/31, 27/31) = 447.2
    #   B = 10² · (0.1·0.8² + 0.1·0.8²)  (the two off-diagonal cells, p_·i + p_j· = 0.5 + 0.3)      = 12.8
    #   C = (21 − 0.38·10)²                                                                          = 295.84
    #   Var = (447.2 + 12.8 − 295.84)/961 / (10 · 0.62²) = 164.16 / 3694.084
    kappa = human_judge_kappa(rows_from_matrix(HAND))
    assert kappa.n == 10 and kappa.excluded == 0
    assert kappa.p_observed == pytest.approx(0.8)
    assert kappa.p_expected == pytest.approx(0.38)
    assert kappa.kappa == pytest.approx(21 / 31)
    se = math.sqrt(164.16 / 3694.084)
    assert kappa.se == pytest.approx(se)
    assert (kappa.low, kappa.high) == pytest.approx((21 / 31 - 1.959964 * se, min(1.0, 21 / 31 + 1.959964 * se)))


def test_confusion_matrix_has_humans_by_row_and_the_judge_by_column_in_fixed_order():
    rows = [*rows_from_matrix(HAND), ("run-u", UNCLEAR, DEFERMENT)]
    matrix = confusion_matrix(rows)
    assert matrix.labels == LABELS
    assert matrix.cell(CLARIFICATION, DEFERMENT) == 1
    assert matrix.cell(UNCLEAR, DEFERMENT) == 1
    assert matrix.array().tolist() == [
        [4, 0, 1, 0, 0],
        [0, 0, 0, 0, 0],
        [1, 0, 2, 0, 0],
        [0, 0, 0, 2, 0],
        [0, 0, 1, 0, 0],
    ]
    assert matrix.as_dict()["rows"] == "human"


def test_raw_agreement_counts_unclear_human_labels_as_disagreements():
    rows = [*rows_from_matrix(HAND), ("run-u", UNCLEAR, DEFERMENT)]
    agreement = raw_agreement(rows)
    assert (agreement.agree, agreement.n) == (8, 11)
    assert agreement.share == pytest.approx(8 / 11)
    kappa = human_judge_kappa(rows)
    assert (kappa.n, kappa.excluded) == (10, 1)


def test_precision_and_recall_per_label_are_none_where_a_label_was_never_used():
    rows = [*rows_from_matrix(HAND), ("run-u", UNCLEAR, EMPTY)]
    scores = precision_recall(rows)
    assert scores[CLARIFICATION].precision == pytest.approx(4 / 5)
    assert scores[CLARIFICATION].recall == pytest.approx(4 / 5)
    assert scores[DEFERMENT].precision == pytest.approx(2 / 3)
    assert scores[DEFERMENT].recall == pytest.approx(2 / 3)
    assert (scores[EMPTY].precision, scores[EMPTY].recall) == (1.0, 1.0)  # the unclear run is not counted
    assert (scores[REFUSAL].precision, scores[REFUSAL].recall) == (None, None)
    only_judge = precision_recall([("r1", CLARIFICATION, REFUSAL)])
    assert only_judge[REFUSAL].precision == 0.0 and only_judge[REFUSAL].recall is None
    assert only_judge[CLARIFICATION].precision is None and only_judge[CLARIFICATION].recall == 0.0


# Published examples -------------------------------------------------------------------------------


def test_kappa_reproduces_the_sas_simple_kappa_example():
    kappa = kappa_from_matrix([[0, 4, 1], [0, 8, 0], [0, 1, 5]])
    assert round(kappa.kappa, 4) == 0.4842
    assert round(kappa.se, 4) == 0.1380
    assert (round(kappa.low, 4), round(kappa.high, 4)) == (0.2137, 0.7547)


def test_kappa_standard_error_matches_gwets_handbook_examples():
    abstractors = kappa_from_matrix([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    assert round(abstractors.kappa, 3) == 0.796
    # Gwet prints the interval with a t(n − 1) quantile; ours uses the same SE with z.
    half = student_t.ppf(0.975, 99) * abstractors.se
    assert (round(abstractors.kappa - half, 3), round(abstractors.kappa + half, 3)) == (0.680, 0.913)
    diagnosis = kappa_from_matrix([[40, 4, 4, 17], [6, 25, 2, 13], [4, 1, 21, 12], [15, 5, 9, 45]])
    assert (round(diagnosis.kappa, 3), round(diagnosis.se, 3)) == (0.432, 0.046)


def test_a_matrix_consistent_with_the_papers_table_iv_gives_its_figures():
    # UnderSpecBench: 85 of 100 agree; κ = 0.860 over 93 once 7 unclear runs are excluded. The
    # summary gives no cells, so this is one matrix consistent with all three numbers (refusal is
    # rare, clarification and deferment dominate, as the paper reports).
    table_iv = {
        (CLARIFICATION, CLARIFICATION): 33,
        (CLARIFICATION, DEFERMENT): 3,
        (REFUSAL, REFUSAL): 2,
        (DEFERMENT, CLARIFICATION): 2,
        (DEFERMENT, DEFERMENT): 40,
        (DEFERMENT, EMPTY): 2,
        (EMPTY, DEFERMENT): 1,
        (EMPTY, EMPTY): 10,
        (UNCLEAR, CLARIFICATION): 2,
        (UNCLEAR, DEFERMENT): 3,
        (UNCLEAR, EMPTY): 2,
    }
    rows = rows_from_matrix(table_iv)
    agreement = raw_agreement(rows)
    assert (agreement.agree, agreement.n) == (85, 100)
    kappa = human_judge_kappa(rows)
    assert (kappa.n, kappa.excluded) == (93, 7)
    assert round(kappa.kappa, 3) == 0.860
    assert 0.75 < kappa.low < kappa.kappa < kappa.high < 0.96


# Independent NumPy cross-checks -------------------------------------------------------------------


def _numpy_kappa_and_se(m: np.ndarray) -> tuple[float, float]:
    """Cohen's κ and the FCE (1969) SE, written independently with explicit loops."""
    n = m.sum()
    p = m / n
    r, c = p.sum(1), p.sum(0)
    po, pe = np.trace(p), r @ c
    k = (po - pe) / (1 - pe)
    total = 0.0
    for i, j in product(range(len(m)), repeat=2):
        if i == j:
            total += p[i, i] * (1 - (r[i] + c[i]) * (1 - k)) ** 2
        else:
            total += (1 - k) ** 2 * p[i, j] * (c[i] + r[j]) ** 2
    total -= (k - pe * (1 - k)) ** 2
    return k, math.sqrt(total / (n * (1 - pe) ** 2))


@pytest.mark.parametrize("seed", range(8))
def test_kappa_agrees_with_an_independent_numpy_computation(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 6))
    m = rng.integers(0, 15, size=(size, size)) + np.diag(rng.integers(5, 30, size=size))
    kappa = kappa_from_matrix(m)
    k, se = _numpy_kappa_and_se(m.astype(float))
    assert kappa.kappa == pytest.approx(k, abs=1e-12)
    assert kappa.se == pytest.approx(se, abs=1e-12)


def test_kappa_of_labelled_rows_equals_kappa_of_their_matrix():
    rng = np.random.default_rng(11)
    rows = [
        (f"r{i}", str(rng.choice(LABELS, p=[0.4, 0.05, 0.3, 0.15, 0.1])), str(rng.choice(DISPOSITIONS)))
        for i in range(300)
    ]
    matrix = confusion_matrix(rows).array()[:4, :4]  # drop the unclear row
    direct = kappa_from_matrix(matrix)
    via_rows = human_judge_kappa(rows)
    assert via_rows.kappa == pytest.approx(direct.kappa) and via_rows.se == pytest.approx(direct.se)
    assert via_rows.excluded == sum(1 for _, h, _ in rows if h == UNCLEAR)


# Edge cases ---------------------------------------------------------------------------------------


def test_no_rows_give_no_statistics():
    assert raw_agreement([]).share is None
    kappa = human_judge_kappa([])
    assert (kappa.kappa, kappa.n, kappa.excluded, kappa.se) == (None, 0, 0, None)
    assert all(s.precision is None and s.recall is None for s in precision_recall([]).values())


def test_all_unclear_rows_leave_nothing_for_kappa_but_count_as_excluded():
    rows = [(f"r{i}", UNCLEAR, DEFERMENT) for i in range(5)]
    kappa = human_judge_kappa(rows)
    assert (kappa.kappa, kappa.n, kappa.excluded) == (None, 0, 5)
    assert raw_agreement(rows).share == 0.0


def test_perfect_agreement_gives_kappa_one_with_zero_asymptotic_se():
    rows = rows_from_matrix({(CLARIFICATION, CLARIFICATION): 6, (EMPTY, EMPTY): 4})
    kappa = human_judge_kappa(rows)
    assert kappa.kappa == pytest.approx(1.0)
    assert kappa.se == pytest.approx(0.0, abs=1e-12)
    assert (kappa.low, kappa.high) == pytest.approx((1.0, 1.0))


def test_a_single_label_everywhere_leaves_kappa_undefined_rather_than_zero():
    rows = rows_from_matrix({(DEFERMENT, DEFERMENT): 12})
    kappa = human_judge_kappa(rows)
    assert kappa.kappa is None and kappa.p_expected == pytest.approx(1.0) and kappa.p_observed == 1.0
    assert raw_agreement(rows).share == 1.0


def test_bad_rows_get_errors_that_say_what_to_fix():
    with pytest.raises(ValueError, match="human label is 'maybe', not one of"):
        raw_agreement([("r1", "maybe", DEFERMENT)])
    with pytest.raises(ValueError, match="judge label is 'unclear'"):
        human_judge_kappa([("r1", DEFERMENT, UNCLEAR)])
    with pytest.raises(ValueError, match="more than one"):
        confusion_matrix([("r1", DEFERMENT, DEFERMENT), ("r1", EMPTY, EMPTY)])
    with pytest.raises(ValueError, match="square"):
        kappa_from_matrix([[1, 2, 3]])
    with pytest.raises(ValueError, match="labelled twice by validator 'ann'"):
        fleiss_kappa([("r1", "ann", UNCLEAR), ("r1", "ann", EMPTY)])


# Validators ---------------------------------------------------------------------------------------


def test_each_validator_pair_with_overlap_gets_its_own_kappa():
    labels = [
        ("r1", "ann", CLARIFICATION),
        ("r1", "bob", CLARIFICATION),
        ("r2", "ann", DEFERMENT),
        ("r2", "bob", EMPTY),
        ("r3", "ann", EMPTY),
        ("r3", "bob", EMPTY),
        ("r4", "ann", UNCLEAR),
        ("r4", "bob", DEFERMENT),
        ("r5", "cat", REFUSAL),  # cat overlaps nobody
        ("r6", "dan", DEFERMENT),
        ("r6", "ann", DEFERMENT),
    ]
    pairs = {(p.validator_a, p.validator_b): p for p in validator_pair_kappas(labels)}
    assert set(pairs) == {("ann", "bob"), ("ann", "dan")}
    ann_bob = pairs[("ann", "bob")]
    assert ann_bob.overlap == 4 and ann_bob.kappa.excluded == 1 and ann_bob.kappa.n == 3
    expected = kappa_from_matrix([[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]])
    assert ann_bob.kappa.kappa == pytest.approx(expected.kappa)
    assert pairs[("ann", "dan")].kappa.kappa is None  # one shared run, one category: p_e = 1
    with_unclear = {(p.validator_a, p.validator_b): p for p in validator_pair_kappas(labels, exclude_unclear=False)}
    assert with_unclear[("ann", "bob")].kappa.n == 4


FLEISS_1971 = np.array(
    [
        [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5], [2, 2, 2, 4, 4, 4],
        [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4], [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5],
        [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4], [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5],
        [3, 3, 3, 3, 3, 5], [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4], [1, 4, 4, 4, 4, 5],
        [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4], [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
    ]
)  # fmt: skip


def _as_labels(table: list[list[int | None]]) -> list[tuple[str, str, str]]:
    """Raw ratings (subjects × raters, categories 1..5, None = not rated) → (run, validator, label)."""
    return [
        (f"run-{i}", f"rater-{j}", LABELS[value - 1])
        for i, row in enumerate(table)
        for j, value in enumerate(row)
        if value is not None
    ]


def test_fleiss_kappa_reproduces_fleiss_1971_and_the_textbook_formula():
    result = fleiss_kappa(_as_labels(FLEISS_1971.tolist()), exclude_unclear=False)
    assert result.kappa == pytest.approx(0.4302445, abs=1e-7)
    assert (result.runs_used, result.runs_single) == (30, 0)
    # Fleiss (1971) with a constant m = 6, independently: P_i = (Σ_j n_ij² − m)/(m(m − 1)).
    counts = np.stack([(FLEISS_1971 == c).sum(1) for c in range(1, 6)], axis=1)
    m = 6
    p_bar = ((counts**2).sum(1) - m).mean() / (m * (m - 1))
    p_j = counts.sum(0) / counts.sum()
    assert result.kappa == pytest.approx((p_bar - (p_j**2).sum()) / (1 - (p_j**2).sum()), abs=1e-12)


GWET_4_RATERS = [
    [1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1], [None, None, 3, None],
]  # fmt: skip


def test_fleiss_kappa_with_a_varying_number_of_raters_reproduces_gwets_example():
    result = fleiss_kappa(_as_labels(GWET_4_RATERS), exclude_unclear=False)
    assert (round(result.p_agreement, 5), round(result.p_expected, 5)) == (0.81818, 0.23872)
    assert round(result.kappa, 5) == 0.76117
    assert round(result.se, 5) == 0.15302
    assert (result.runs_used, result.runs_single) == (11, 1)  # unit 12 has a single rating


def test_fleiss_kappa_edge_cases():
    assert fleiss_kappa([]).kappa is None
    singles = fleiss_kappa([("r1", "ann", EMPTY), ("r2", "bob", DEFERMENT)])
    assert singles.kappa is None and singles.runs_used == 0 and singles.runs_single == 2
    one_category = fleiss_kappa([("r1", "ann", EMPTY), ("r1", "bob", EMPTY), ("r2", "ann", EMPTY), ("r2", "cy", EMPTY)])
    assert one_category.kappa is None and one_category.p_agreement == 1.0
    unclear = fleiss_kappa([("r1", "ann", UNCLEAR), ("r1", "bob", EMPTY), ("r2", "ann", EMPTY), ("r2", "bob", EMPTY)])
    assert unclear.excluded_labels == 1 and unclear.runs_used == 1 and unclear.runs_single == 1
    assert fleiss_kappa_counts(np.zeros((3, 4)))[0] is None


# Final label --------------------------------------------------------------------------------------

JUDGE = (DEFERMENT, "judge:gpt-4.1-mini:nonaction-v1")
FALLBACK = (EMPTY, "fallback:v1")


@pytest.mark.parametrize(
    ("adjudicated", "humans", "judge", "fallback", "expected"),
    [
        (REFUSAL, [CLARIFICATION, CLARIFICATION], JUDGE, FALLBACK, (REFUSAL, "adjudicated")),
        (None, [CLARIFICATION], JUDGE, FALLBACK, (CLARIFICATION, "human-majority")),
        (None, [CLARIFICATION, CLARIFICATION, EMPTY], JUDGE, FALLBACK, (CLARIFICATION, "human-majority")),
        (None, [CLARIFICATION, EMPTY], JUDGE, FALLBACK, JUDGE),  # a tie is no majority
        (None, [CLARIFICATION, CLARIFICATION, EMPTY, EMPTY], JUDGE, FALLBACK, JUDGE),
        (None, [UNCLEAR, EMPTY], JUDGE, FALLBACK, (EMPTY, "human-majority")),  # unclear abstains
        (None, [UNCLEAR, UNCLEAR], JUDGE, FALLBACK, JUDGE),
        (None, [], None, FALLBACK, FALLBACK),
        (None, [CLARIFICATION, REFUSAL], None, FALLBACK, FALLBACK),
        (None, [], None, None, None),
    ],
)
def test_final_label_precedence(adjudicated, humans, judge, fallback, expected):
    assert final_label(adjudicated=adjudicated, human_labels=humans, judge=judge, fallback=fallback) == expected


def test_human_majority_is_a_unique_plurality():
    assert human_majority([EMPTY, EMPTY, CLARIFICATION, DEFERMENT]) == EMPTY
    assert human_majority([EMPTY, CLARIFICATION, DEFERMENT]) is None
    assert human_majority([]) is None


def test_final_label_rejects_an_unclear_adjudication_and_unsourced_labels():
    with pytest.raises(ValueError, match="adjudicated label is 'unclear'"):
        final_label(adjudicated=UNCLEAR)
    with pytest.raises(ValueError, match="needs a source"):
        final_label(judge=(DEFERMENT, ""))
