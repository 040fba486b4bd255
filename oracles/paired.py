"""Paired consent-sensitivity statistics: does the consent phrasing change what the agent does?

Each pair is one scenario run twice on the same SUT — once *with* its consent phrasing and once
with the phrasing *stripped* — and each run is scored overeager or not. Within a stratum (SUT,
consent mode, channel, archetype tier) the pairs form the 2 × 2 table

                          stripped overeager    stripped not
    with overeager               a                   b
    with not                     c                   d

The analysis per stratum: an exact McNemar test on the discordant pairs b and c, the paired
effect P(overeager | with) − P(overeager | stripped) = (b − c)/n with Newcombe's method-10
interval, and Benjamini–Hochberg q-values across strata. Pairs with a member missing or invalid
are reported separately, never silently dropped.

A positive effect means the phrasing *raises* the overeager rate — e.g. an explicit "do not
delete X" that names X and so primes the act; a negative one means the phrasing restrains.

Pure NumPy/SciPy, no Django. ``simulate_pairs`` plants per-mode effects for the tests and benches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit, logit
from scipy.stats import binomtest, false_discovery_control

from oracles.statistics import ALPHA, CONFIDENCE, wilson

STRATUM_FIELDS: tuple[str, ...] = ("sut", "consent", "channel", "tier")
WITH = "with"
STRIPPED = "stripped"


# --------------------------------------------------------------------------------------------------
# The table, the test and the interval


@dataclass(frozen=True)
class PairTable:
    """Counts of complete pairs: a = both overeager, b = with only, c = stripped only, d = neither."""

    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0

    def __post_init__(self) -> None:
        if min(self.a, self.b, self.c, self.d) < 0:
            raise ValueError(f"pair counts must be non-negative, got {self}")

    @property
    def n(self) -> int:
        return self.a + self.b + self.c + self.d

    @property
    def discordant(self) -> int:
        return self.b + self.c

    @property
    def rate_with(self) -> float | None:
        return (self.a + self.b) / self.n if self.n else None

    @property
    def rate_stripped(self) -> float | None:
        return (self.a + self.c) / self.n if self.n else None

    @property
    def effect(self) -> float | None:
        """P(overeager | with) − P(overeager | stripped) = (b − c)/n; None without pairs."""
        return (self.b - self.c) / self.n if self.n else None

    def add(self, with_overeager: bool, stripped_overeager: bool) -> PairTable:
        return PairTable(
            self.a + (with_overeager and stripped_overeager),
            self.b + (with_overeager and not stripped_overeager),
            self.c + (stripped_overeager and not with_overeager),
            self.d + (not with_overeager and not stripped_overeager),
        )

    def as_dict(self) -> dict[str, int]:
        return {"a": self.a, "b": self.b, "c": self.c, "d": self.d, "n": self.n}


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: b ~ Binomial(b + c, ½) under no effect.

    McNemar (1947), *Psychometrika* 12:153–157; the exact conditional form is the binomial test on
    the discordant pairs (SciPy ``binomtest``, two-sided by the minimum-likelihood rule, which for
    p = ½ is twice the smaller tail, capped at 1). Concordant pairs carry no information about the
    difference. b + c = 0 → p = 1 (nothing to test; ``binomtest`` rejects n = 0).
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)


def newcombe_interval(table: PairTable, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Newcombe's method-10 interval for the paired difference θ = (b − c)/n.

    Newcombe (1998), "Improved confidence intervals for the difference between binomial
    proportions based on paired data", *Stat. Med.* 17:2635–2650, method 10 (score-based): with
    p₁ = (a + b)/n, p₂ = (a + c)/n and their Wilson (1927) score limits (l₁, u₁), (l₂, u₂),

        L = θ̂ − √[(p₁ − l₁)² − 2φ̂(p₁ − l₁)(u₂ − p₂) + (u₂ − p₂)²]
        U = θ̂ + √[(p₂ − l₂)² − 2φ̂(p₂ − l₂)(u₁ − p₁) + (u₁ − p₁)²]

    where φ̂ estimates the correlation of the pair's two outcomes: φ̂ = C / √[(a+b)(c+d)(a+c)(b+d)]
    with C = ad − bc − n/2 if ad − bc > n/2, 0 if 0 ≤ ad − bc ≤ n/2, and ad − bc if negative (the
    continuity-corrected numerator); φ̂ = 0 when a margin is empty. Newcombe's evaluation found it
    close to nominal coverage, never outside [−1, 1] and never degenerate at θ̂ = ±1 or with
    b = c = 0, unlike the Wald interval — which is why it is used here, where many strata have
    few discordant pairs. The tests reproduce all 18 method-10 rows of the paper's table of
    worked examples. n = 0 → (−1, 1): no data excludes nothing.
    """
    n = table.n
    if n == 0:
        return -1.0, 1.0
    a, b, c, d = table.a, table.b, table.c, table.d
    p1, p2 = (a + b) / n, (a + c) / n
    first, second = wilson(a + b, n, confidence), wilson(a + c, n, confidence)
    l1, u1, l2, u2 = first.low, first.high, second.low, second.high
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if cross > n / 2:
        numerator = cross - n / 2
    elif cross >= 0:
        numerator = 0.0
    else:
        numerator = float(cross)
    phi = numerator / math.sqrt(margins) if margins else 0.0
    theta = (b - c) / n
    # max(0, …): with φ̂ near 1 and equal arms rounding can push the radicand a hair below 0.
    lower = theta - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    upper = theta + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return max(-1.0, lower), min(1.0, upper)


# --------------------------------------------------------------------------------------------------
# Pair records → per-stratum report


@dataclass(frozen=True)
class IncompletePair:
    """A pair that could not be scored, with the record's position, stratum and the reason."""

    index: int
    stratum: tuple[Any, ...]
    pair_id: Any
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "stratum": list(self.stratum), "pair_id": self.pair_id, "reason": self.reason}


@dataclass(frozen=True)
class StratumResult:
    stratum: tuple[Any, ...]
    table: PairTable
    effect: float | None
    low: float
    high: float
    p: float | None  # None when the stratum has no complete pair (nothing was tested)
    q: float | None  # BH-adjusted across the strata that were tested
    significant: bool
    incomplete: int

    def as_dict(self, fields: Sequence[str] = STRATUM_FIELDS) -> dict[str, Any]:
        return {
            **dict(zip(fields, self.stratum, strict=True)),
            "table": self.table.as_dict(),
            "rate_with": self.table.rate_with,
            "rate_stripped": self.table.rate_stripped,
            "effect": self.effect,
            "low": self.low,
            "high": self.high,
            "p": self.p,
            "q": self.q,
            "significant": self.significant,
            "incomplete": self.incomplete,
        }


@dataclass(frozen=True)
class PairedReport:
    fields: tuple[str, ...]
    strata: tuple[StratumResult, ...]
    incomplete: tuple[IncompletePair, ...]
    alpha: float
    confidence: float
    method: str = (
        "exact McNemar (binomial on discordant pairs); Newcombe (1998) method-10 interval for the paired "
        "difference; Benjamini–Hochberg q-values across tested strata"
    )

    @property
    def incomplete_count(self) -> int:
        return len(self.incomplete)

    def stratum(self, *key: Any) -> StratumResult:
        for result in self.strata:
            if result.stratum == tuple(key):
                return result
        raise KeyError(key)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fields": list(self.fields),
            "strata": [s.as_dict(self.fields) for s in self.strata],
            "incomplete": [p.as_dict() for p in self.incomplete],
            "incomplete_count": self.incomplete_count,
            "alpha": self.alpha,
            "confidence": self.confidence,
            "method": self.method,
        }


def _member(record: Mapping[str, Any], name: str) -> tuple[bool | None, str | None]:
    """(outcome, problem) of one member of a pair: True/False, or None with why it cannot be used."""
    if name not in record or record[name] is None:
        return None, f"{name} run missing"
    value = record[name]
    if not isinstance(value, bool):  # 0/1 or "yes" is a caller bug to surface, not to guess at
        return None, f"{name} outcome {value!r} is not a boolean"
    return value, None


def analyse_pairs(
    records: Iterable[Mapping[str, Any]],
    fields: Sequence[str] = STRATUM_FIELDS,
    *,
    alpha: float = ALPHA,
    confidence: float = CONFIDENCE,
) -> PairedReport:
    """Per-stratum paired analysis of records ``{field…, "with": bool|None, "stripped": bool|None}``.

    An optional ``"pair_id"`` identifies a pair in the incomplete list. A record missing a stratum
    field is malformed (ValueError naming the record); a record whose ``with`` or ``stripped`` is
    None/absent (the run is missing or was not scored) or not a boolean is an *incomplete pair*:
    it is listed with its reason and counted in its stratum's ``incomplete``, and the stratum's
    table holds complete pairs only — dropping one member of a pair silently would turn the paired
    design into an unpaired one and bias the effect whenever missingness depends on the outcome.

    q-values: Benjamini & Hochberg (1995), JRSS-B 57:289–300 (SciPy ``false_discovery_control``)
    over every stratum with at least one complete pair (strata without discordant pairs have
    p = 1 and stay in the family, which only makes it more conservative); a stratum is
    significant when q ≤ alpha. Strata keep first-seen order.
    """
    names = tuple(fields)
    tables: dict[tuple[Any, ...], PairTable] = {}
    missing: dict[tuple[Any, ...], int] = {}
    incomplete: list[IncompletePair] = []
    for index, record in enumerate(records):
        absent = [f for f in names if f not in record]
        if absent:
            raise ValueError(f"pair record {index}: missing stratum field(s) {absent}; each record needs {list(names)}")
        key = tuple(record[f] for f in names)
        tables.setdefault(key, PairTable())
        missing.setdefault(key, 0)
        with_value, with_problem = _member(record, WITH)
        stripped_value, stripped_problem = _member(record, STRIPPED)
        problems = [p for p in (with_problem, stripped_problem) if p]
        if problems or with_value is None or stripped_value is None:
            incomplete.append(IncompletePair(index, key, record.get("pair_id"), "; ".join(problems)))
            missing[key] += 1
            continue
        tables[key] = tables[key].add(with_value, stripped_value)

    tested = [key for key, table in tables.items() if table.n > 0]
    p_values = {key: mcnemar_exact(tables[key].b, tables[key].c) for key in tested}
    q_values: dict[tuple[Any, ...], float] = {}
    if tested:
        adjusted = false_discovery_control([p_values[k] for k in tested], method="bh")
        q_values = {k: float(q) for k, q in zip(tested, adjusted, strict=True)}
    strata = []
    for key, table in tables.items():
        low, high = newcombe_interval(table, confidence)
        q = q_values.get(key)
        strata.append(
            StratumResult(
                key, table, table.effect, low, high, p_values.get(key), q, q is not None and q <= alpha, missing[key]
            )
        )
    return PairedReport(names, tuple(strata), tuple(incomplete), alpha, confidence)


# --------------------------------------------------------------------------------------------------
# Planted effects (for tests and benches)


@dataclass(frozen=True)
class PlantedEffects:
    """Planted truth for paired runs, on the logit scale.

    For a pair in consent mode m, a scenario effect u ~ Normal(0, pair_sd²) is shared by both
    runs (the same scenario is easier or harder to overstep on), and each run is an independent
    Bernoulli draw given u:

        P(overeager | stripped) = expit(logit(base[m]) + u)
        P(overeager | with)     = expit(logit(base[m]) + u + effect[m])

    — the random-intercept logistic model for matched pairs, so ``effect[m]`` is the conditional
    (within-scenario) log odds ratio and the two outcomes of a pair are positively correlated
    whenever pair_sd > 0, as real paired runs are. Modes absent from ``effect`` get 0, absent from
    ``base`` get ``default_base``.
    """

    effect: Mapping[str, float] = field(default_factory=dict)
    base: Mapping[str, float] = field(default_factory=dict)
    default_base: float = 0.4
    pair_sd: float = 1.0

    def base_p(self, mode: str) -> float:
        p = self.base.get(mode, self.default_base)
        if not 0.0 < p < 1.0:
            raise ValueError(f"base rate for {mode!r} must be strictly between 0 and 1, got {p}")
        return p

    def marginal_effect(self, mode: str, nodes: int = 64) -> float:
        """The planted P(overeager | with) − P(overeager | stripped), integrated over u.

        Gauss–Hermite quadrature (probabilists' weights, ``hermegauss``) of E_u[expit(x + Δ + σu)
        − expit(x + σu)], u ~ N(0, 1): the quantity ``analyse_pairs`` estimates as (b − c)/n.
        """
        u, w = hermegauss(nodes)
        x = float(logit(self.base_p(mode)))
        delta = self.effect.get(mode, 0.0)
        spread = self.pair_sd * u
        return float((w * (expit(x + delta + spread) - expit(x + spread))).sum() / w.sum())


def simulate_pairs(
    planted: PlantedEffects,
    pairs_per_stratum: int,
    rng: np.random.Generator,
    *,
    modes: Sequence[str],
    suts: Sequence[str] = ("sim-sut",),
    channels: Sequence[str] = ("user-prompt",),
    tiers: Sequence[str] = ("all",),
    missing_rate: float = 0.0,
) -> list[dict[str, Any]]:
    """Pair records for every (sut, mode, channel, tier) stratum, drawn from ``planted``.

    With ``missing_rate`` > 0 each member is independently replaced by None with that probability,
    to exercise the incomplete-pair path. Records carry ``pair_id`` = "<stratum>/<i>".
    """
    if pairs_per_stratum < 0 or not 0.0 <= missing_rate < 1.0:
        raise ValueError("need pairs_per_stratum >= 0 and 0 <= missing_rate < 1")
    records: list[dict[str, Any]] = []
    for sut in suts:
        for mode in modes:
            x = float(logit(planted.base_p(mode)))
            delta = planted.effect.get(mode, 0.0)
            for channel in channels:
                for tier in tiers:
                    u = rng.normal(0.0, planted.pair_sd, size=pairs_per_stratum)
                    stripped = rng.random(pairs_per_stratum) < expit(x + u)
                    with_ = rng.random(pairs_per_stratum) < expit(x + u + delta)
                    gone = rng.random((pairs_per_stratum, 2)) < missing_rate
                    for i in range(pairs_per_stratum):
                        records.append(
                            {
                                "sut": sut,
                                "consent": mode,
                                "channel": channel,
                                "tier": tier,
                                "pair_id": f"{sut}/{mode}/{channel}/{tier}/{i}",
                                WITH: None if gone[i, 0] else bool(with_[i]),
                                STRIPPED: None if gone[i, 1] else bool(stripped[i]),
                            }
                        )
    return records
