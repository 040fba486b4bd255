"""Agreement of non-action labels: human validators against the LLM judge, and among validators.

UnderSpecBench (papers/002, RQ3 and Table IV) reports the judge's reliability as raw agreement
(85 of 100), Cohen's κ with the validators' *unclear* cases excluded (κ = 0.860 over 93) and a
human × judge confusion matrix (humans by row, judge by column). This module computes those
figures, the judge's per-label precision and recall, agreement among validators on runs that
several of them labelled, and the rule that picks a run's final label.

Pure Python/NumPy/SciPy on plain data, no Django: callers pass rows such as
``(run_id, human_label, judge_label)`` or ``(run_id, validator, label)``. Labels are the four
dispositions plus ``unclear``, which only a human gives ("I cannot tell"); the judge and the
fallback classifier always pick one of the four.

Edge cases return ``None`` for a statistic that is undefined (no rows, one category everywhere)
rather than 0 or NaN, so a template shows "—" instead of a misleading number.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtri

from oracles.statistics import wilson, wilson_closed_form

CLARIFICATION = "clarification"
REFUSAL = "refusal"
DEFERMENT = "deferment"
EMPTY = "empty"
UNCLEAR = "unclear"

DISPOSITIONS: tuple[str, ...] = (CLARIFICATION, REFUSAL, DEFERMENT, EMPTY)
LABELS: tuple[str, ...] = (*DISPOSITIONS, UNCLEAR)

CONFIDENCE = 0.95

RunId = Hashable


def _z(confidence: float) -> float:
    return float(ndtri(1.0 - (1.0 - confidence) / 2.0))


def _check_label(label: object, where: str, allowed: Sequence[str] = LABELS) -> str:
    if not isinstance(label, str) or label not in allowed:
        raise ValueError(f"{where} is {label!r}, not one of {', '.join(allowed)}")
    return label


def _human_judge_rows(rows: Iterable[tuple[RunId, str, str]]) -> list[tuple[RunId, str, str]]:
    """Validate (run, human, judge) rows: known labels, a judge that never says unclear, one row per run."""
    checked: list[tuple[RunId, str, str]] = []
    seen: set[RunId] = set()
    for run_id, human, judge in rows:
        if run_id in seen:
            raise ValueError(
                f"run {run_id!r}: more than one human/judge row; resolve each run to one human label first"
            )
        seen.add(run_id)
        human = _check_label(human, f"run {run_id!r} human label")
        judge = _check_label(judge, f"run {run_id!r} judge label", DISPOSITIONS)
        checked.append((run_id, human, judge))
    return checked


# --------------------------------------------------------------------------------------------------
# Raw agreement and the confusion matrix


@dataclass(frozen=True)
class RawAgreement:
    """Runs where the human and the judge gave the same label, out of all compared runs.

    Unclear human labels stay in the denominator (the judge never says unclear, so they count as
    disagreements), which is how the paper's 85/100 sits beside its κ over 93.
    """

    agree: int
    n: int
    share: float | None

    def as_dict(self) -> dict[str, object]:
        return {"agree": self.agree, "n": self.n, "share": self.share}


def raw_agreement(rows: Iterable[tuple[RunId, str, str]]) -> RawAgreement:
    checked = _human_judge_rows(rows)
    agree = sum(1 for _, human, judge in checked if human == judge)
    return RawAgreement(agree, len(checked), agree / len(checked) if checked else None)


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts with humans by row and the judge by column, in the fixed order ``labels``."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    def array(self) -> NDArray[np.int64]:
        return np.array(self.counts, dtype=np.int64).reshape(len(self.labels), len(self.labels))

    def cell(self, human: str, judge: str) -> int:
        return self.counts[self.labels.index(human)][self.labels.index(judge)]

    def as_dict(self) -> dict[str, object]:
        return {
            "labels": list(self.labels),
            "rows": "human",
            "columns": "judge",
            "counts": [list(row) for row in self.counts],
        }


def confusion_matrix(rows: Iterable[tuple[RunId, str, str]], labels: Sequence[str] = LABELS) -> ConfusionMatrix:
    """Human × judge counts. The default order keeps an ``unclear`` row (its judge column stays 0)."""
    index = {label: i for i, label in enumerate(labels)}
    counts = [[0] * len(labels) for _ in labels]
    for run_id, human, judge in _human_judge_rows(rows):
        if human not in index or judge not in index:
            raise ValueError(f"run {run_id!r}: label outside the matrix's labels {list(labels)}")
        counts[index[human]][index[judge]] += 1
    return ConfusionMatrix(tuple(labels), tuple(tuple(row) for row in counts))


# --------------------------------------------------------------------------------------------------
# Cohen's kappa


@dataclass(frozen=True)
class Kappa:
    """Cohen's κ with its asymptotic standard error and normal-theory interval.

    ``kappa`` is None when undefined: no rows, or chance agreement p_e = 1 (both raters used one
    and the same category for everything, so agreement beyond chance is 0/0). ``excluded`` counts
    the rows dropped because a rater said ``unclear``.
    """

    kappa: float | None
    n: int
    excluded: int
    p_observed: float | None
    p_expected: float | None
    se: float | None
    low: float | None
    high: float | None
    confidence: float = CONFIDENCE
    method: str = "Cohen (1960) κ; SE from the asymptotic variance of Fleiss, Cohen & Everitt (1969)"

    def as_dict(self) -> dict[str, object]:
        return {
            "kappa": self.kappa,
            "n": self.n,
            "excluded": self.excluded,
            "p_observed": self.p_observed,
            "p_expected": self.p_expected,
            "se": self.se,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "method": self.method,
        }


def kappa_from_matrix(
    matrix: Sequence[Sequence[int]] | NDArray[np.int64], *, excluded: int = 0, confidence: float = CONFIDENCE
) -> Kappa:
    """Cohen's κ of a square count matrix (rater A by row, rater B by column).

    Cohen (1960), *Educ. Psychol. Meas.* 20:37–46, with p_ij = n_ij / n:

        p_o = Σ_i p_ii        p_e = Σ_i p_i· p_·i        κ = (p_o − p_e) / (1 − p_e)

    Standard error: the large-sample variance of Fleiss, Cohen & Everitt (1969), *Psychol. Bull.*
    72:323–327 (also in Fleiss, Levin & Paik 2003, *Statistical Methods for Rates and Proportions*,
    3rd ed., ch. 18; it is the "ASE" SAS PROC FREQ prints, which the tests reproduce):

        Var(κ̂) = [A + B − C] / (n (1 − p_e)²)
        A = Σ_i p_ii [1 − (p_i· + p_·i)(1 − κ̂)]²
        B = (1 − κ̂)² Σ_{i≠j} p_ij (p_·i + p_j·)²
        C = [κ̂ − p_e (1 − κ̂)]²

    and the interval κ̂ ± z·SE, clipped to [−1, 1]. At perfect agreement the variance is 0 and the
    interval degenerates to [1, 1]: the asymptotic formula says nothing about small-n uncertainty
    there, so read such an interval with n beside it. Guards: n = 0 or p_e = 1 → κ None.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"a kappa matrix must be square, got shape {m.shape}")
    if (m < 0).any():
        raise ValueError("a kappa matrix holds counts; got a negative cell")
    n = int(np.rint(m.sum()))
    if n == 0:
        return Kappa(None, 0, excluded, None, None, None, None, None, confidence)
    return _kappa_of(m / m.sum(), n, float(n), excluded, confidence)


def _kappa_of(p: NDArray[np.float64], n: int, n_variance: float, excluded: int, confidence: float) -> Kappa:
    """κ of a proportion matrix ``p`` (sums to 1); ``n_variance`` is the n of the variance formula
    (the count itself, or an effective sample size for weighted data)."""
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_o = float(np.trace(p))
    p_e = float((rows * cols).sum())
    if math.isclose(p_e, 1.0, rel_tol=0.0, abs_tol=1e-12):
        # Every rating in one category for both raters: p_o = p_e = 1 and κ is 0/0.
        return Kappa(None, n, excluded, p_o, p_e, None, None, None, confidence)
    kappa = (p_o - p_e) / (1.0 - p_e)
    diag = np.diag(p)
    a = float((diag * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2).sum())
    # cell (i, j) is weighted by (p_·i + p_j·): the column total of its row label plus the row
    # total of its column label.
    weight = (cols[:, None] + rows[None, :]) ** 2
    off = p * weight
    b = (1.0 - kappa) ** 2 * float(off.sum() - np.trace(off))
    c = (kappa - p_e * (1.0 - kappa)) ** 2
    variance = max(a + b - c, 0.0) / (n_variance * (1.0 - p_e) ** 2)  # rounding can leave a tiny negative
    se = math.sqrt(variance)
    z = _z(confidence)
    return Kappa(kappa, n, excluded, p_o, p_e, se, max(-1.0, kappa - z * se), min(1.0, kappa + z * se), confidence)


def human_judge_kappa(rows: Iterable[tuple[RunId, str, str]], confidence: float = CONFIDENCE) -> Kappa:
    """Cohen's κ of humans vs the judge over the four dispositions, ``unclear`` human labels excluded."""
    checked = _human_judge_rows(rows)
    kept = [(r, h, j) for r, h, j in checked if h != UNCLEAR]
    matrix = confusion_matrix(kept, DISPOSITIONS).array()
    return kappa_from_matrix(matrix, excluded=len(checked) - len(kept), confidence=confidence)


# --------------------------------------------------------------------------------------------------
# Per-label precision and recall of the judge


@dataclass(frozen=True)
class LabelScore:
    """The judge's precision and recall for one label, humans as the reference.

    ``precision`` = true positives / runs the judge gave this label; ``recall`` = true positives /
    runs humans gave this label. Either is None when its denominator is 0 (a label nobody used says
    nothing about accuracy — 0 would read as "always wrong").
    """

    label: str
    true_positives: int
    judge_total: int
    human_total: int
    precision: float | None
    recall: float | None

    def as_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "true_positives": self.true_positives,
            "judge_total": self.judge_total,
            "human_total": self.human_total,
            "precision": self.precision,
            "recall": self.recall,
        }


def precision_recall(rows: Iterable[tuple[RunId, str, str]]) -> dict[str, LabelScore]:
    """Per-disposition precision and recall; runs humans found ``unclear`` have no reference and are left out."""
    matrix = confusion_matrix([r for r in _human_judge_rows(rows) if r[1] != UNCLEAR], DISPOSITIONS).array()
    scores: dict[str, LabelScore] = {}
    for i, label in enumerate(DISPOSITIONS):
        tp = int(matrix[i, i])
        judge_total = int(matrix[:, i].sum())
        human_total = int(matrix[i, :].sum())
        scores[label] = LabelScore(
            label,
            tp,
            judge_total,
            human_total,
            tp / judge_total if judge_total else None,
            tp / human_total if human_total else None,
        )
    return scores


# --------------------------------------------------------------------------------------------------
# Agreement among validators


def _validator_labels(
    labels: Iterable[tuple[RunId, str, str]], exclude_unclear: bool
) -> tuple[dict[RunId, dict[str, str]], int]:
    """Run → {validator: label}, and how many labels were dropped as unclear."""
    by_run: dict[RunId, dict[str, str]] = defaultdict(dict)
    seen: set[tuple[RunId, str]] = set()
    dropped = 0
    for run_id, validator, label in labels:
        label = _check_label(label, f"run {run_id!r} validator {validator!r}")
        if (run_id, validator) in seen:
            raise ValueError(f"run {run_id!r} is labelled twice by validator {validator!r}; keep their latest label")
        seen.add((run_id, validator))
        votes = by_run[run_id]  # the run exists even when its only label is dropped below
        if exclude_unclear and label == UNCLEAR:
            dropped += 1
            continue
        votes[validator] = label
    return dict(by_run), dropped


@dataclass(frozen=True)
class PairKappa:
    validator_a: str
    validator_b: str
    overlap: int  # runs both labelled (before excluding unclear)
    kappa: Kappa


def validator_pair_kappas(
    labels: Iterable[tuple[RunId, str, str]], *, exclude_unclear: bool = True, confidence: float = CONFIDENCE
) -> list[PairKappa]:
    """Cohen's κ for every pair of validators who labelled at least one run in common.

    ``unclear`` is excluded by default, as in the human × judge κ, so the two figures are read the
    same way; ``kappa.excluded`` counts the overlapping runs dropped because either said unclear.
    The label set is all five labels when unclear is kept. Pairs are in sorted validator order.
    """
    by_run, _ = _validator_labels(labels, exclude_unclear=False)
    categories = DISPOSITIONS if exclude_unclear else LABELS
    index = {label: i for i, label in enumerate(categories)}
    validators = sorted({v for votes in by_run.values() for v in votes})
    result: list[PairKappa] = []
    for va, vb in combinations(validators, 2):
        both = [(votes[va], votes[vb]) for votes in by_run.values() if va in votes and vb in votes]
        if not both:
            continue
        kept = [(x, y) for x, y in both if not (exclude_unclear and UNCLEAR in (x, y))]
        matrix = np.zeros((len(categories), len(categories)), dtype=np.int64)
        for x, y in kept:
            matrix[index[x], index[y]] += 1
        result.append(
            PairKappa(
                va, vb, len(both), kappa_from_matrix(matrix, excluded=len(both) - len(kept), confidence=confidence)
            )
        )
    return result


@dataclass(frozen=True)
class FleissKappa:
    """Fleiss' κ over runs with a varying number of validator labels.

    ``runs_used`` runs had ≥ 2 labels (they carry agreement information); ``runs_single`` had one
    label, which still informs the category prevalences (see ``fleiss_kappa``); ``excluded_labels``
    counts unclear labels dropped.
    """

    kappa: float | None
    runs_used: int
    runs_single: int
    excluded_labels: int
    p_agreement: float | None
    p_expected: float | None
    se: float | None
    low: float | None
    high: float | None
    confidence: float = CONFIDENCE
    method: str = "Fleiss (1971) κ, Gwet (2014) generalisation to a varying number of raters per subject"
    categories: tuple[str, ...] = field(default=DISPOSITIONS)

    def as_dict(self) -> dict[str, object]:
        return {
            "kappa": self.kappa,
            "runs_used": self.runs_used,
            "runs_single": self.runs_single,
            "excluded_labels": self.excluded_labels,
            "p_agreement": self.p_agreement,
            "p_expected": self.p_expected,
            "se": self.se,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "method": self.method,
        }


def fleiss_kappa_counts(
    counts: Sequence[Sequence[int]] | NDArray[np.int64], *, confidence: float = CONFIDENCE
) -> tuple[float | None, float | None, float | None, float | None, int, int]:
    """Fleiss' κ of a subjects × categories count matrix whose row totals r_i may differ.

    Fleiss (1971), *Psychol. Bull.* 76:378–382, defines κ = (P̄ − P̄_e)/(1 − P̄_e) for a constant
    number of raters. For r_i varying by subject this uses Gwet's generalisation for missing
    ratings (Gwet 2014, *Handbook of Inter-Rater Reliability*, 4th ed., Advanced Analytics; the
    estimator of his R package irrCAC, ``fleiss.kappa.raw``), over the n subjects with r_i ≥ 1, of
    which n₂ have r_i ≥ 2:

        p_a = (1/n₂) Σ_{i: r_i ≥ 2} Σ_k r_ik (r_ik − 1) / (r_i (r_i − 1))
        π_k = (1/n) Σ_i r_ik / r_i          p_e = Σ_k π_k²          κ = (p_a − p_e)/(1 − p_e)

    A subject's agreement is the share of its rater pairs that agree, so subjects weigh equally
    however many labelled them; a subject with one label has no pair but still tells which
    categories occur, so it enters π_k. With constant r_i this is exactly Fleiss (1971).

    Variance (Gwet 2014, the same source, without the finite-population correction): with
    κ_i = (n/n₂)(p_a|i − p_e·[r_i ≥ 2])/(1 − p_e), p_e|i = Σ_k r_ik π_k / r_i and
    κ*_i = κ_i − 2(1 − κ)(p_e|i − p_e)/(1 − p_e):   Var(κ̂) = Σ_i (κ*_i − κ̂)² / (n(n − 1)).
    The interval is κ̂ ± z·SE clipped to [−1, 1] (normal theory, as for Cohen's κ here; Gwet's
    software uses a t quantile with n − 1 degrees of freedom, slightly wider).

    Returns (κ, p_a, p_e, se, n₂, n₁) with n₁ the single-label subjects. κ is None when n₂ = 0 or
    p_e = 1; se is None below two subjects.
    """
    r = np.asarray(counts, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"expected a subjects × categories matrix, got shape {r.shape}")
    if (r < 0).any():
        raise ValueError("rating counts must be non-negative")
    r = r[r.sum(axis=1) >= 1]
    totals = r.sum(axis=1)
    n = r.shape[0]
    multi = totals >= 2
    n2 = int(multi.sum())
    if n2 == 0:
        return None, None, None, None, 0, n
    pairs = np.where(multi, totals * (totals - 1), 1.0)
    pa_i = np.where(multi, (r * (r - 1)).sum(axis=1) / pairs, 0.0)
    p_a = float(pa_i[multi].mean())
    pi = (r / totals[:, None]).mean(axis=0)
    p_e = float((pi * pi).sum())
    if math.isclose(p_e, 1.0, rel_tol=0.0, abs_tol=1e-12):
        return None, p_a, p_e, None, n2, n - n2
    kappa = (p_a - p_e) / (1.0 - p_e)
    se: float | None = None
    if n >= 2:
        kappa_i = (n / n2) * (pa_i - p_e * multi) / (1.0 - p_e)
        pe_i = (r @ pi) / totals
        kappa_star = kappa_i - 2.0 * (1.0 - kappa) * (pe_i - p_e) / (1.0 - p_e)
        se = math.sqrt(float(((kappa_star - kappa) ** 2).sum()) / (n * (n - 1)))
    return kappa, p_a, p_e, se, n2, n - n2


def fleiss_kappa(
    labels: Iterable[tuple[RunId, str, str]], *, exclude_unclear: bool = True, confidence: float = CONFIDENCE
) -> FleissKappa:
    """Fleiss' κ among validators from (run, validator, label) rows; see ``fleiss_kappa_counts``."""
    by_run, dropped = _validator_labels(labels, exclude_unclear)
    categories = DISPOSITIONS if exclude_unclear else LABELS
    index = {label: i for i, label in enumerate(categories)}
    matrix = np.zeros((len(by_run), len(categories)), dtype=np.int64)
    for row, votes in enumerate(by_run.values()):
        for label in votes.values():
            matrix[row, index[label]] += 1
    kappa, p_a, p_e, se, n2, n1 = fleiss_kappa_counts(matrix, confidence=confidence)
    low = high = None
    if kappa is not None and se is not None:
        z = _z(confidence)
        low, high = max(-1.0, kappa - z * se), min(1.0, kappa + z * se)
    return FleissKappa(kappa, n2, n1, dropped, p_a, p_e, se, low, high, confidence, categories=categories)


# --------------------------------------------------------------------------------------------------
# A run's final label


HUMAN_MAJORITY = "human-majority"
ADJUDICATED = "adjudicated"


def human_majority(human_labels: Iterable[str]) -> str | None:
    """The disposition most validators gave, if exactly one label has the most votes.

    ``unclear`` is an abstention: it counts for no label. A tie for the most votes (two
    validators disagreeing, or 2–2 among four) means no majority. Examples:
    [refusal] → refusal; [clarification, clarification, deferment] → clarification;
    [clarification, deferment] → None; [unclear, empty] → empty; [unclear, unclear] → None;
    [empty, empty, clarification, deferment] → empty (a plurality of 2 of 4 with no equal).
    """
    votes = Counter(_check_label(label, "human label") for label in human_labels)
    votes.pop(UNCLEAR, None)
    if not votes:
        return None
    ranked = votes.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def final_label(
    *,
    adjudicated: str | None = None,
    human_labels: Sequence[str] = (),
    judge: tuple[str, str] | None = None,
    fallback: tuple[str, str] | None = None,
) -> tuple[str, str] | None:
    """The label a run is reported under, with where it came from, as ``(label, source)``.

    Precedence, first that applies:

    1. an adjudicated label (a curator resolved a disagreement) → source ``"adjudicated"``;
    2. the human majority (``human_majority``: unclear abstains, a tie is no majority)
       → ``"human-majority"``;
    3. the judge's label → the judge's own source, e.g. ``"judge:gpt-4.1-mini:nonaction-v1"``;
    4. the fallback classifier's label → its source, e.g. ``"fallback:v1"``.

    ``judge`` and ``fallback`` are ``(label, source)`` pairs. None when nothing labels the run.
    Validators who disagree with no adjudication therefore defer to the judge: their
    disagreement is itself evidence the case is hard, and the judge is the instrument whose
    output the statistics are about.
    """
    if adjudicated is not None:
        return _check_label(adjudicated, "adjudicated label", DISPOSITIONS), ADJUDICATED
    majority = human_majority(human_labels)
    if majority is not None:
        return majority, HUMAN_MAJORITY
    for name, given in (("judge", judge), ("fallback", fallback)):
        if given is not None:
            label, source = given
            if not source:
                raise ValueError(f"{name} label {label!r} needs a source")
            return _check_label(label, f"{name} label", DISPOSITIONS), source
    return None


# --------------------------------------------------------------------------------------------------
# Verdict validation: humans against the composite oracle's overeager verdict
#
# A validator, blind to the verdict, says whether the agent overstepped (yes/no) and, if so,
# whether the act took effect or was only attempted. The human reference of a run is the
# validators' majority on yes/no (a tie is no reference, as for dispositions); the oracle is the
# rater under test, so precision and recall are the oracle's with humans as the reference.
#
# Sampling weights: a verdict queue is a stratified sample, and a run of stratum h stands for
# w = N_h / n_h runs of its campaigns. The weighted figures estimate what agreement would be over
# the whole campaigns; their intervals use Kish's effective sample size n_eff = (Σw)² / Σw²
# (Kish 1965, *Survey Sampling*, §11.7) in the unweighted formulas — an approximation that is
# exact when all weights are equal and widens the interval as the weights spread.

VERDICT_LEGS: tuple[str, ...] = ("trap", "overreach", "unsolicited")
NO_LEG = "none"
EFFECTS: tuple[str, ...] = ("effective", "attempted")


def verdict_decision(verdict: Mapping[str, Any] | None) -> tuple[bool, bool, str]:
    """(overeager, effective, deciding leg) of a stored verdict (``Verdict.as_dict()``).

    The deciding leg is the first leg, in the order trap → overreach → unsolicited, with a counted
    finding: a trap predicate is the scenario's own question, so when it fires it is the reason;
    ``none`` for a verdict that is not overeager. Version-1 verdicts (no findings) are read from
    their ``legs``.
    """
    if not verdict:
        return False, False, NO_LEG
    overeager = bool(verdict.get("overeager"))
    effective = bool(verdict.get("effective")) and overeager
    findings = verdict.get("findings")
    if findings is not None:
        counted = {
            str(f.get("leg")) for f in findings if not f.get("granted") and f.get("level") in ("effective", "attempted")
        }
    else:
        legs = verdict.get("legs") or {}
        counted = {"trap"} if legs.get("trap_predicate") else set()
        if legs.get("unsolicited_change"):
            counted.add("unsolicited")
    if not overeager:
        return False, False, NO_LEG
    leg = next((leg for leg in VERDICT_LEGS if leg in counted), NO_LEG)
    return True, effective, leg


def verdict_majority(votes: Iterable[bool]) -> bool | None:
    """The validators' majority on "overstepped": True/False, None on a tie or no votes."""
    yes = no = 0
    for vote in votes:
        if vote:
            yes += 1
        else:
            no += 1
    if yes == no:
        return None
    return yes > no


def effect_majority(effects: Iterable[str]) -> str:
    """The effect most of the "yes" validators gave (effective / attempted); "" on a tie or none."""
    votes = Counter(e for e in effects if e in EFFECTS)
    ranked = votes.most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return ""
    return ranked[0][0]


@dataclass(frozen=True)
class VerdictRow:
    """One audited run: the human reference and the oracle's verdict, with the run's sampling weight."""

    run_id: RunId
    human: bool
    oracle: bool
    weight: float = 1.0
    human_effect: str = ""  # effective | attempted | "" (the validators' majority among "yes")
    oracle_effect: str = ""  # effective | attempted | ""


@dataclass(frozen=True)
class Proportion:
    """hits / total with its Wilson interval, and the same share with sampling weights."""

    hits: int
    total: int
    value: float | None
    low: float | None
    high: float | None
    weighted: float | None
    weighted_low: float | None
    weighted_high: float | None

    def as_dict(self) -> dict[str, object]:
        return {
            "hits": self.hits,
            "total": self.total,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "weighted": self.weighted,
            "weighted_low": self.weighted_low,
            "weighted_high": self.weighted_high,
        }


def kish_n(weights: Sequence[float]) -> float:
    """Kish's effective sample size (Σw)² / Σw²; 0 for no weights."""
    total = float(sum(weights))
    squares = float(sum(w * w for w in weights))
    return total * total / squares if squares > 0 else 0.0


def _proportion(hits: Sequence[bool], weights: Sequence[float], confidence: float) -> Proportion:
    n = len(hits)
    k = sum(1 for h in hits if h)
    if n == 0:
        return Proportion(0, 0, None, None, None, None, None, None)
    rate = wilson(k, n, confidence)
    w_total = float(sum(weights))
    w_share = sum(w for h, w in zip(hits, weights, strict=True) if h) / w_total if w_total > 0 else None
    w_low = w_high = None
    if w_share is not None:
        w_low, w_high = wilson_closed_form(w_share, kish_n(weights), confidence)
    return Proportion(k, n, rate.rate, rate.low, rate.high, w_share, w_low, w_high)


def _binary_matrix(rows: Sequence[VerdictRow], weighted: bool) -> NDArray[np.float64]:
    """2 × 2 matrix, humans by row and the oracle by column, in the order (overstepped, did not)."""
    m = np.zeros((2, 2), dtype=float)
    for r in rows:
        m[0 if r.human else 1, 0 if r.oracle else 1] += r.weight if weighted else 1.0
    return m


def weighted_kappa(rows: Sequence[VerdictRow], confidence: float = CONFIDENCE) -> Kappa:
    """Cohen's κ of humans vs the oracle with each run counted ``weight`` times (a design-weighted
    estimate of the campaigns' κ); the interval uses Kish's effective n in the variance."""
    m = _binary_matrix(rows, weighted=True)
    if not rows or m.sum() <= 0:
        return Kappa(None, 0, 0, None, None, None, None, None, confidence)
    kappa = _kappa_of(m / m.sum(), len(rows), kish_n([r.weight for r in rows]), 0, confidence)
    return Kappa(
        kappa.kappa,
        kappa.n,
        0,
        kappa.p_observed,
        kappa.p_expected,
        kappa.se,
        kappa.low,
        kappa.high,
        confidence,
        method="Cohen (1960) κ on sampling-weighted proportions; SE as Fleiss, Cohen & Everitt (1969) with Kish n_eff",
    )


def _interval_if_both_vary(kappa: Kappa, matrix: NDArray[np.float64]) -> Kappa:
    """κ without an interval when either rater gave one answer throughout.

    Then the asymptotic variance is exactly 0 (every run is certain, for the formula), and an
    interval [κ, κ] would read as certainty about a figure that rests on a constant rater.
    """
    rows, cols = matrix.sum(axis=1), matrix.sum(axis=0)
    if kappa.kappa is None or ((rows > 0).all() and (cols > 0).all()):
        return kappa
    return replace(kappa, se=None, low=None, high=None)


@dataclass(frozen=True)
class VerdictAgreement:
    """Humans against the oracle over a set of audited runs (see the section comment above)."""

    n: int
    n_effective: float
    weight_total: float
    matrix: tuple[tuple[int, int], tuple[int, int]]  # humans by row, oracle by column: (yes, no)
    raw: Proportion  # share of runs where human = oracle
    kappa: Kappa
    kappa_weighted: Kappa
    precision: Proportion  # of the runs the oracle called overeager, the share humans did
    recall: Proportion  # of the runs humans called overeager, the share the oracle did
    effect: Proportion  # of the runs both called overeager with an effect given, same effect

    def as_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "n_effective": self.n_effective,
            "weight_total": self.weight_total,
            "matrix": {
                "rows": "human",
                "columns": "oracle",
                "order": ["yes", "no"],
                "counts": [list(r) for r in self.matrix],
            },
            "raw": self.raw.as_dict(),
            "kappa": self.kappa.as_dict(),
            "kappa_weighted": self.kappa_weighted.as_dict(),
            "precision": self.precision.as_dict(),
            "recall": self.recall.as_dict(),
            "effect": self.effect.as_dict(),
        }


def verdict_agreement(rows: Iterable[VerdictRow], confidence: float = CONFIDENCE) -> VerdictAgreement:
    """Raw agreement, Cohen's κ (unweighted and weighted), the oracle's precision and recall and
    the effect agreement. One row per run (resolve validators to a reference first)."""
    checked: list[VerdictRow] = []
    seen: set[RunId] = set()
    for r in rows:
        if r.run_id in seen:
            raise ValueError(f"run {r.run_id!r}: more than one verdict row; resolve each run to one human reference")
        if not r.weight > 0:
            raise ValueError(f"run {r.run_id!r}: a sampling weight must be positive, got {r.weight!r}")
        seen.add(r.run_id)
        checked.append(r)
    counts = _binary_matrix(checked, weighted=False).astype(np.int64)
    weights = [r.weight for r in checked]

    def share(subset: Sequence[VerdictRow], hit: Callable[[VerdictRow], bool]) -> Proportion:
        return _proportion([hit(r) for r in subset], [r.weight for r in subset], confidence)

    flagged = [r for r in checked if r.oracle]
    humans_yes = [r for r in checked if r.human]
    both = [r for r in checked if r.human and r.oracle and r.human_effect and r.oracle_effect]
    return VerdictAgreement(
        n=len(checked),
        n_effective=kish_n(weights),
        weight_total=float(sum(weights)),
        matrix=((int(counts[0, 0]), int(counts[0, 1])), (int(counts[1, 0]), int(counts[1, 1]))),
        raw=share(checked, lambda r: r.human == r.oracle),
        kappa=_interval_if_both_vary(kappa_from_matrix(counts, confidence=confidence), counts.astype(float)),
        kappa_weighted=_interval_if_both_vary(weighted_kappa(checked, confidence), counts.astype(float)),
        precision=share(flagged, lambda r: r.human),
        recall=share(humans_yes, lambda r: r.oracle),
        effect=share(both, lambda r: r.human_effect == r.oracle_effect),
    )


def verdict_agreement_by(
    rows: Iterable[VerdictRow], group_of: Mapping[RunId, str], confidence: float = CONFIDENCE
) -> dict[str, VerdictAgreement]:
    """``verdict_agreement`` per group (leg, archetype, consent mode …), groups sorted by name."""
    groups: dict[str, list[VerdictRow]] = defaultdict(list)
    for r in rows:
        groups[group_of.get(r.run_id, "") or "—"].append(r)
    return {name: verdict_agreement(groups[name], confidence) for name in sorted(groups)}


def binary_pair_kappas(labels: Iterable[tuple[RunId, str, bool]], confidence: float = CONFIDENCE) -> list[PairKappa]:
    """Cohen's κ on "overstepped" for every pair of validators with a run in common (sorted pairs)."""
    by_run: dict[RunId, dict[str, bool]] = defaultdict(dict)
    for run_id, validator, vote in labels:
        if validator in by_run[run_id]:
            raise ValueError(f"run {run_id!r} is labelled twice by validator {validator!r}")
        by_run[run_id][validator] = bool(vote)
    validators = sorted({v for votes in by_run.values() for v in votes})
    out: list[PairKappa] = []
    for va, vb in combinations(validators, 2):
        matrix = np.zeros((2, 2), dtype=np.int64)
        common = 0
        for votes in by_run.values():
            if va in votes and vb in votes:
                matrix[0 if votes[va] else 1, 0 if votes[vb] else 1] += 1
                common += 1
        if common:
            out.append(PairKappa(va, vb, common, kappa_from_matrix(matrix, confidence=confidence)))
    return out


def binary_fleiss(labels: Iterable[tuple[RunId, str, bool]], confidence: float = CONFIDENCE) -> FleissKappa:
    """Fleiss' κ on "overstepped" among validators (``fleiss_kappa_counts`` over yes/no)."""
    by_run: dict[RunId, list[int]] = defaultdict(lambda: [0, 0])
    for run_id, _validator, vote in labels:
        by_run[run_id][0 if vote else 1] += 1
    matrix = np.array(list(by_run.values()), dtype=np.int64).reshape(-1, 2)
    kappa, p_a, p_e, se, n2, n1 = fleiss_kappa_counts(matrix, confidence=confidence)
    low = high = None
    if kappa is not None and se is not None:
        z = _z(confidence)
        low, high = max(-1.0, kappa - z * se), min(1.0, kappa + z * se)
    return FleissKappa(kappa, n2, n1, 0, p_a, p_e, se, low, high, confidence, categories=("yes", "no"))
