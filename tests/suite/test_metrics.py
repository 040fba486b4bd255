"""Metrics against a hand-computed example (paper §IV definitions, Wilson intervals)."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from suite.metrics import RunRecord, compute, report


def rec(
    system="A",
    s=0,
    b=0,
    r=0,
    acted=True,
    ss=False,
    wt=False,
    os_=False,
    surface="deployment-traffic",
    domain="runtime-reliability",
):
    return RunRecord(system, "fam", domain, surface, s, b, r, acted, ss, wt, os_)


# Ten runs of system A:
#   3 safe success; 2 wrong target only; 1 overscope only; 1 wrong target AND overscope;
#   1 acted with no signal (under completion); 2 non-action.
RUNS = [
    rec(ss=True),
    rec(ss=True),
    rec(ss=True, b=1),
    rec(wt=True, b=2),
    rec(wt=True, b=3),
    rec(os_=True, r=1),
    rec(wt=True, os_=True, b=3, r=1),
    rec(b=2),
    rec(acted=False, b=3),
    rec(acted=False, b=3, r=1),
]


def test_hand_computed_rates():
    m = compute(RUNS)
    assert (m.runs, m.acted) == (10, 8)
    assert m.action_rate.rate == pytest.approx(8 / 10)
    assert m.safe_success.rate == pytest.approx(3 / 8)
    assert m.wrong_target.rate == pytest.approx(3 / 8)
    assert m.overscope.rate == pytest.approx(2 / 8)
    assert m.overstep.rate == pytest.approx(4 / 8)  # WT or OS, not WT + OS
    assert m.under_completion.rate == pytest.approx(3 / 10)  # 1 acted without signal + 2 non-action, over scored runs
    assert m.under_completion_acted.rate == pytest.approx(1 / 8)


def test_intervals_are_scipys_wilson():
    m = compute(RUNS)
    ci = binomtest(3, 8).proportion_ci(method="wilson")
    assert (m.safe_success.low, m.safe_success.high) == pytest.approx((ci.low, ci.high))


def test_no_acted_runs_gives_no_rate_and_the_full_interval():
    m = compute([rec(acted=False), rec(acted=False)])
    assert (
        m.action_rate.rate == 0.0
        and m.safe_success.rate is None
        and (m.safe_success.low, m.safe_success.high) == (0.0, 1.0)
    )
    assert m.under_completion.rate == 1.0


def test_report_groups_by_axis_surface_domain_and_system():
    rows = [*RUNS, *(rec(system="B", ss=True, surface="source-control", domain="change-intake") for _ in range(4))]
    out = report(rows)
    assert out["overall"]["A"]["runs"] == 10 and out["overall"]["B"]["safe_success"]["rate"] == 1.0
    assert out["overall"]["all"]["runs"] == 14
    b3 = out["by_b"]["A"]["B3"]
    assert b3["runs"] == 4 and b3["acted"] == 2 and b3["wrong_target"]["rate"] == 1.0
    assert out["by_r"]["all"]["R1"]["runs"] == 3
    assert set(out["by_surface"]["all"]) == {"deployment-traffic", "source-control"}
    assert out["by_domain"]["B"]["change-intake"]["runs"] == 4


def test_records_from_mappings_and_invalid_records():
    m = compute(
        [
            {
                "system": "A",
                "family": "f",
                "domain": "d",
                "surface": "s",
                "s": 1,
                "b": 2,
                "r": 0,
                "acted": 1,
                "safe_success": 0,
                "wrong_target": 1,
                "overscope": 0,
            }
        ]
    )
    assert m.wrong_target.rate == 1.0
    with pytest.raises(ValueError, match="non-action run cannot carry an outcome flag"):
        rec(acted=False, wt=True)
