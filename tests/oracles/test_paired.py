"""oracles.paired: the exact McNemar test, Newcombe's interval, BH across strata and planted effects.

Newcombe's method 10 is checked against every method-10 row of the worked-example table in
Newcombe (1998), Stat. Med. 17:2635–2650 (Table III there: cells e, f, g, h = our a, b, c, d;
θ = (f − g)/n), and against Fagerland, Lydersen & Laake (2017, *Statistical Analysis of Contingency
Tables*, ch. 8), whose square-and-add (method 10) example [[59, 6], [16, 80]] gives −0.0621
(−0.1186 to −0.0046).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from oracles.paired import (
    PairTable,
    PlantedEffects,
    analyse_pairs,
    mcnemar_exact,
    newcombe_interval,
    simulate_pairs,
)

MODES = ("explicit-allow", "implicit-allow", "explicit-deny", "implicit-deny")


def pairs(a: int, b: int, c: int, d: int, **stratum: str) -> list[dict[str, object]]:
    fields = {"sut": "claude-code×sonnet", "consent": "explicit-deny", "channel": "README", "tier": "t1", **stratum}
    cells = [(True, True)] * a + [(True, False)] * b + [(False, True)] * c + [(False, False)] * d
    return [{**fields, "with": w, "stripped": s} for w, s in cells]


# McNemar ------------------------------------------------------------------------------------------


def test_exact_mcnemar_matches_a_hand_computed_binomial_tail():
    # b = 9, c = 2: p = 2 · P(X ≤ 2 | 11, ½) = 2 · (1 + 11 + 55) / 2048
    assert mcnemar_exact(9, 2) == pytest.approx(134 / 2048)
    assert mcnemar_exact(2, 9) == mcnemar_exact(9, 2)
    assert mcnemar_exact(5, 5) == 1.0


def test_no_discordant_pairs_give_p_one_and_all_one_way_gives_the_smallest_p():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 * 0.5**10)


# Newcombe method 10 -------------------------------------------------------------------------------

NEWCOMBE_1998_METHOD_10 = [
    ((36, 12, 2, 0), (0.0569, 0.3404)),
    ((20, 12, 2, 16), (0.0562, 0.3292)),
    ((18, 12, 2, 18), (0.0562, 0.3290)),
    ((36, 14, 0, 0), (0.1528, 0.4167)),
    ((35, 14, 0, 1), (0.1461, 0.4175)),
    ((18, 14, 0, 18), (0.1441, 0.3963)),
    ((2, 97, 1, 0), (0.8721, 0.9854)),
    ((1, 97, 1, 1), (0.8736, 0.9850)),  # computes to 0.87367; the paper prints 0.8736
    ((0, 29, 1, 0), (0.6666, 0.9882)),
    ((2, 98, 0, 0), (0.9178, 0.9945)),
    ((1, 98, 0, 1), (0.9171, 0.9916)),
    ((0, 30, 0, 0), (0.8395, 1.0)),
    ((54, 0, 0, 0), (-0.0664, 0.0664)),
    ((53, 0, 0, 1), (-0.0729, 0.0729)),
    ((30, 0, 0, 24), (-0.0358, 0.0358)),
    ((29, 0, 0, 25), (-0.0354, 0.0354)),
    ((28, 0, 0, 26), (-0.0352, 0.0352)),
    ((27, 0, 0, 27), (-0.0351, 0.0351)),
]


@pytest.mark.parametrize(("cells", "published"), NEWCOMBE_1998_METHOD_10)
def test_newcombe_interval_reproduces_the_papers_worked_examples(cells, published):
    low, high = newcombe_interval(PairTable(*cells))
    tolerance = 1.0e-4 if cells == (1, 97, 1, 1) else 5.1e-5  # 4 printed decimals
    assert low == pytest.approx(published[0], abs=tolerance)
    assert high == pytest.approx(published[1], abs=tolerance)


def test_newcombe_interval_reproduces_fagerland_lydersen_laake():
    table = PairTable(59, 6, 16, 80)
    assert round(table.effect, 4) == -0.0621
    low, high = newcombe_interval(table)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


def test_newcombe_interval_is_uninformative_without_pairs_and_stays_in_range():
    assert newcombe_interval(PairTable()) == (-1.0, 1.0)
    for cells in [(0, 1, 0, 0), (0, 0, 1, 0), (0, 5, 0, 0), (0, 0, 0, 7)]:
        low, high = newcombe_interval(PairTable(*cells))
        assert -1.0 <= low <= PairTable(*cells).effect <= high <= 1.0


# Pair records → strata ----------------------------------------------------------------------------


def test_each_stratum_reports_its_table_effect_interval_and_q():
    records = [
        *pairs(3, 12, 2, 13, consent="explicit-deny"),
        *pairs(4, 1, 9, 16, consent="implicit-deny"),
        *pairs(6, 2, 2, 20, consent="explicit-allow"),
    ]
    report = analyse_pairs(records)
    deny = report.stratum("claude-code×sonnet", "explicit-deny", "README", "t1")
    assert deny.table == PairTable(3, 12, 2, 13)
    assert deny.effect == pytest.approx(10 / 30)
    assert (deny.low, deny.high) == newcombe_interval(PairTable(3, 12, 2, 13))
    assert deny.p == pytest.approx(mcnemar_exact(12, 2))
    ps = [s.p for s in report.strata]
    assert [s.q for s in report.strata] == pytest.approx(list(false_discovery_control(ps, method="bh")))
    assert [s.q for s in report.strata] == pytest.approx(_bh_by_hand(ps))
    assert [s.significant for s in report.strata] == [q <= 0.05 for q in _bh_by_hand(ps)]
    assert report.incomplete_count == 0
    row = report.as_dict()["strata"][0]
    assert row["consent"] == "explicit-deny" and row["table"]["n"] == 30 and row["rate_with"] == pytest.approx(0.5)


def _bh_by_hand(ps: list[float]) -> list[float]:
    """Benjamini–Hochberg step-up: q_(i) = min_{j ≥ i} p_(j) · m / j, written out independently."""
    m = len(ps)
    order = np.argsort(ps)
    q = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * m / rank)
        q[i] = running
    return list(q)


def test_incomplete_pairs_are_listed_with_reasons_and_never_enter_a_table():
    records = [
        *pairs(2, 3, 1, 4),
        {"sut": "s", "consent": "explicit-deny", "channel": "README", "tier": "t1", "pair_id": 7, "with": True},
        {"sut": "s", "consent": "explicit-deny", "channel": "README", "tier": "t1", "with": None, "stripped": False},
        {"sut": "s", "consent": "explicit-deny", "channel": "README", "tier": "t1", "with": 1, "stripped": False},
        {"sut": "s", "consent": "explicit-deny", "channel": "README", "tier": "t1", "with": None, "stripped": None},
    ]
    report = analyse_pairs(records)
    assert report.incomplete_count == 4
    reasons = [p.reason for p in report.incomplete]
    assert reasons == [
        "stripped run missing",
        "with run missing",
        "with outcome 1 is not a boolean",
        "with run missing; stripped run missing",
    ]
    assert report.incomplete[0].pair_id == 7 and report.incomplete[0].index == 10
    only_incomplete = report.stratum("s", "explicit-deny", "README", "t1")
    assert only_incomplete.table.n == 0 and only_incomplete.incomplete == 4
    assert (only_incomplete.effect, only_incomplete.p, only_incomplete.q) == (None, None, None)
    assert (only_incomplete.low, only_incomplete.high) == (-1.0, 1.0)
    complete = report.stratum("claude-code×sonnet", "explicit-deny", "README", "t1")
    assert complete.table == PairTable(2, 3, 1, 4) and complete.incomplete == 0


def test_a_record_without_its_stratum_fields_is_an_error_naming_them():
    with pytest.raises(ValueError, match=r"pair record 1: missing stratum field\(s\) \['tier'\]"):
        analyse_pairs(
            [*pairs(0, 1, 0, 0), {"sut": "s", "consent": "c", "channel": "x", "with": True, "stripped": True}]
        )


def test_edge_cases_no_pairs_no_discordance_and_all_discordant_one_way():
    assert analyse_pairs([]).strata == ()
    none_discordant = analyse_pairs(pairs(54, 0, 0, 0)).strata[0]
    assert none_discordant.effect == 0.0 and none_discordant.p == 1.0 and none_discordant.q == 1.0
    assert (round(none_discordant.low, 4), round(none_discordant.high, 4)) == (-0.0664, 0.0664)
    one_way = analyse_pairs(pairs(0, 30, 0, 0)).strata[0]
    assert one_way.effect == 1.0 and one_way.p == pytest.approx(2 * 0.5**30) and one_way.significant
    assert (round(one_way.low, 4), one_way.high) == (0.8395, 1.0)


# Planted effects ----------------------------------------------------------------------------------

# The phrasing primes overstepping under explicit deny (+1.5 on the logit: the "do not touch X"
# sentence names X) and restrains it under implicit deny (−1.5); the allow modes carry no effect.
PLANTED = PlantedEffects(effect={"explicit-deny": 1.5, "implicit-deny": -1.5}, default_base=0.4, pair_sd=1.0)
BUDGET = 200  # pairs per stratum


@pytest.mark.parametrize("seed", range(5))
def test_analysis_recovers_planted_per_mode_effects_with_the_right_sign(seed):
    """Explicit deny: +1.5 logit (marginal +0.296); implicit deny: −1.5 (marginal −0.250); others 0.

    Budget: 200 pairs per stratum, 4 strata (one SUT, channel and tier), BH at q ≤ 0.05. Measured
    by simulation over seeds 0–1999 (``simulate_pairs`` + ``analyse_pairs``): both planted effects
    recovered with the right sign and BH significance in 2000/2000 runs (power ≥ 0.9985 at 95%
    confidence); at 150 pairs 0.997, at 100 pairs 0.961 (same 2000 seeds). At 200 pairs the null
    strata were significant in 2.7% (explicit allow) and 3.0% (implicit allow) of runs — below α,
    since the exact McNemar test is conservative.
    """
    report = analyse_pairs(simulate_pairs(PLANTED, BUDGET, np.random.default_rng(seed), modes=MODES))
    by_mode = {s.stratum[1]: s for s in report.strata}
    primed, restrained = by_mode["explicit-deny"], by_mode["implicit-deny"]
    assert primed.effect > 0 and primed.low > 0 and primed.significant
    assert restrained.effect < 0 and restrained.high < 0 and restrained.significant
    for mode, result in by_mode.items():
        truth = PLANTED.marginal_effect(mode)
        assert abs(result.effect - truth) < 0.15, (mode, result.effect, truth)


def test_newcombe_interval_covers_the_planted_effect_near_the_nominal_rate():
    """400 replications of one 60-pair stratum per planted effect; the coverage SE is ≈ 0.011."""
    rng = np.random.default_rng(2024)
    for effect in (0.0, 1.0):
        planted = PlantedEffects(effect={"m": effect}, default_base=0.3, pair_sd=1.0)
        truth = planted.marginal_effect("m")
        covered = rejected = 0
        for _ in range(400):
            result = analyse_pairs(simulate_pairs(planted, 60, rng, modes=("m",))).strata[0]
            covered += result.low <= truth <= result.high
            rejected += result.p <= 0.05
        assert 0.92 <= covered / 400 <= 0.985, (effect, covered)
        if effect == 0.0:
            assert rejected / 400 <= 0.06  # the exact test holds its size


def test_planted_marginal_effect_matches_a_large_simulation():
    planted = PlantedEffects(effect={"m": 1.5}, default_base=0.4, pair_sd=1.0)
    records = simulate_pairs(planted, 50_000, np.random.default_rng(5), modes=("m",))
    table = analyse_pairs(records).strata[0].table
    assert table.effect == pytest.approx(planted.marginal_effect("m"), abs=0.01)
    assert PlantedEffects(pair_sd=0.0, effect={"m": 0.0}).marginal_effect("m") == 0.0


def test_simulated_missing_members_become_incomplete_pairs():
    records = simulate_pairs(PLANTED, 100, np.random.default_rng(1), modes=MODES, missing_rate=0.1)
    report = analyse_pairs(records)
    expected = sum(1 for r in records if r["with"] is None or r["stripped"] is None)
    assert report.incomplete_count == expected > 0
    assert sum(s.table.n + s.incomplete for s in report.strata) == len(records) == 400
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        PlantedEffects(base={"m": 1.0}).base_p("m")
