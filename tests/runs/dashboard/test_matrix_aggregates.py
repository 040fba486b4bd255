"""Matrix aggregates: pair rates with intervals, decomposition, reserve z-test/BH contrasts, filters."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from oracles.statistics import NO_RESERVE, RESERVE, RESERVE_Z, Counts, pairwise_contrasts, reserve_contrasts, wilson
from runs import stats
from runs.models import Run
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def grid(axes):
    archetypes, modes = axes
    cells = factories.planted_cells(archetypes[:8], modes, per_cell=3)
    m = factories.matrix(["fw-a", "fw-b"], ["m-1", "m-2", "m-3"], cells, dict(archetypes))
    return m, archetypes, modes


def _pair_counts(matrix, **filters):
    out = {}
    for c in matrix.campaigns.select_related("sut__framework", "sut__model"):
        qs = Run.objects.filter(campaign=c).scored().filter(**filters)
        out[(c.sut.framework.slug, c.sut.model.slug)] = Counts(qs.filter(overeager=True).count(), qs.count())
    return out


def test_the_pair_heatmap_follows_the_matrix_order_with_wilson_intervals(grid):
    m, _, _ = grid
    data = stats.matrix_data(m)
    hm = data["heatmap"]
    assert hm["y"] == ["fw-a", "fw-b"] and hm["x"] == ["m-1", "m-2", "m-3"]
    truth = _pair_counts(m)
    k, n, low, high, *_ = hm["customdata"][1][2]
    assert Counts(k, n) == truth[("fw-b", "m-3")]
    assert (low, high) == pytest.approx((wilson(k, n).low, wilson(k, n).high))
    assert len(data["pairs"]) == 6 and data["overall"]["n"] == sum(c.n for c in truth.values())


def _with_reserves(matrix, archetypes, modes, plan):
    """Add uniform-tier (reserve) runs to the matrix's campaigns: ``plan`` is (overeager, runs) per campaign."""
    campaigns = list(matrix.campaigns.order_by("pk"))
    for campaign, (k, n) in zip(campaigns, plan, strict=False):
        factories.scored_runs(campaign, {(archetypes[0][0], modes[0]): (k, n)}, dict(archetypes), tier="uniform")
        stats.bump(campaign.pk, matrix.pk)
    return campaigns


def _reserve_counts(matrix):
    return _pair_counts(matrix, tier="uniform")


def test_contrasts_are_reserve_z_tests_with_bh_q_values_sorted_by_q(grid):
    m, archetypes, modes = grid
    _with_reserves(m, archetypes, modes, [(10, 100), (30, 100), (12, 90), (25, 110), (11, 100), (40, 120)])
    data = stats.matrix_data(m)
    expected = reserve_contrasts(_reserve_counts(m))
    assert len(data["contrasts"]) == len(expected) == 15
    qs = [c["q"] for c in data["contrasts"]]
    assert qs == sorted(qs)
    assert sorted(c["q"] for c in data["contrasts"]) == pytest.approx(sorted(c.q for c in expected))
    assert data["significant"] == sum(c.significant for c in expected) > 0
    assert data["contrast_method"] == RESERVE_Z and data["contrast_excluded"] == []
    # The rates compared are the reserve's, not the as-sampled totals Fisher used to test.
    row = next(c for c in data["contrasts"] if {c["n_a"], c["n_b"]} == {100, 120} and c["rate_b"] == 40 / 120)
    assert row["rate_a"] in (0.10, 0.11)
    fisher = pairwise_contrasts(_pair_counts(m))
    assert sorted(c["p"] for c in data["contrasts"]) != pytest.approx(sorted(c.p for c in fisher))


def test_pairs_without_reserve_runs_are_named_and_left_out_of_the_contrasts(grid):
    m, archetypes, modes = grid
    campaigns = _with_reserves(m, archetypes, modes, [(10, 100), (30, 100), (12, 90)])
    data = stats.matrix_data(m)
    assert len(data["contrasts"]) == 3  # C(3, 2): only the pairs with a reserve
    compared = {c["a"] for c in data["contrasts"]} | {c["b"] for c in data["contrasts"]}
    missing = [f"{c.sut.framework.slug} × {c.sut.model.slug}" for c in campaigns[3:]]
    assert data["contrast_excluded"] == sorted(missing) and not compared & set(missing)


def test_a_matrix_without_any_reserve_shows_no_contrasts(grid):
    m, _, _ = grid
    data = stats.matrix_data(m)
    assert data["contrasts"] == [] and data["significant"] == 0 and len(data["contrast_excluded"]) == 6


def test_the_decomposition_needs_every_pair_and_gives_three_shares(grid, axes):
    m, archetypes, _ = grid
    d = stats.matrix_data(m)["decomposition"]
    assert d["available"] and [s["name"] for s in d["shares"]] == ["framework", "model", "interaction"]
    assert sum(s["corrected"] for s in d["shares"]) == pytest.approx(1.0)
    # A matrix with a pair that has no scored runs says why it cannot be decomposed.
    partial = factories.matrix(["x", "y"], ["p", "q"], {(archetypes[0][0], "silent"): (1, 3)}, dict(archetypes))
    Run.objects.filter(
        campaign__matrix=partial, campaign__sut__framework__slug="y", campaign__sut__model__slug="q"
    ).delete()
    d = stats.matrix_data(partial)["decomposition"]
    assert not d["available"] and "3 of 4 pairs" in d["reason"]


def test_filters_restrict_every_chart_to_the_tier_and_consent_mode(grid):
    m, _, _ = grid
    data = stats.matrix_data(m, tier="high", consent="silent")
    truth = _pair_counts(m, archetype_tier="high", consent="silent")
    k, n = data["heatmap"]["customdata"][0][0][:2]
    assert Counts(k, n) == truth[("fw-a", "m-1")] and n > 0
    assert data["filters"] == {"tier": "high", "consent": "silent"}
    assert data["overall"]["n"] == sum(c.n for c in truth.values()) < stats.matrix_data(m)["overall"]["n"]


def test_matrix_aggregates_are_one_group_by_and_cached(grid):
    m, _, _ = grid
    with CaptureQueriesContext(connection) as cold:
        stats.matrix_data(m)
    with CaptureQueriesContext(connection) as warm:
        stats.matrix_data(m)
    group_bys = [q for q in cold.captured_queries if "GROUP BY" in q["sql"]]
    assert len(group_bys) == 1
    assert len(warm.captured_queries) == 1  # the member campaigns (live progress), nothing else
    stats.bump(m.campaigns.first().pk, m.pk)
    with CaptureQueriesContext(connection) as after_bump:
        stats.matrix_data(m)
    assert any("GROUP BY" in q["sql"] for q in after_bump.captured_queries)


def test_csv_tables_for_every_matrix_chart(grid):
    m, archetypes, modes = grid
    _with_reserves(m, archetypes, modes, [(10, 100)] * 6)
    data = stats.matrix_data(m)
    header, rows = stats.rows_for_csv(data, "heatmap", "matrix")
    assert header[:4] == ["framework", "model", "successes", "n"] and len(rows) == 6
    assert len(stats.rows_for_csv(data, "contrasts", "matrix")[1]) == 15
    assert [r[0] for r in stats.rows_for_csv(data, "decomposition", "matrix")[1]] == [
        "framework",
        "model",
        "interaction",
    ]
    with pytest.raises(KeyError):
        stats.rows_for_csv(data, "posterior", "matrix")


# -- issue 23 -------------------------------------------------------------------------------------


def test_a_pairs_uniform_mix_rate_comes_from_its_reserve_runs(grid):
    m, archetypes, modes = grid
    campaign = m.campaigns.select_related("sut__framework", "sut__model").order_by("pk").first()
    factories.scored_runs(campaign, {(archetypes[0][0], modes[0]): (3, 10)}, dict(archetypes), tier="uniform")
    stats.bump(campaign.pk, m.pk)
    data = stats.matrix_data(m)
    pair = (campaign.sut.framework.slug, campaign.sut.model.slug)
    row = next(r for r in data["pairs"] if (r["framework"], r["model"]) == pair)
    assert row["uniform_rate"] == pytest.approx(0.3) and row["uniform_runs"] == 10
    assert row["uniform_method"] == RESERVE
    others = [r for r in data["pairs"] if (r["framework"], r["model"]) != pair]
    assert all(r["uniform_rate"] is None and r["uniform_method"] == NO_RESERVE for r in others)
    assert data["heatmap"]["estimator"] == stats.AS_SAMPLED and data["heatmap"]["uniform_estimator"] == RESERVE


# -- issue 35 -------------------------------------------------------------------------------------


def test_the_decomposition_interval_is_withheld_with_its_reason_below_200_runs_per_pair(grid):
    m, archetypes, modes = grid
    d = stats.matrix_data(m)["decomposition"]
    # 120 runs per pair: the shares are shown, their interval is not, and the page says why.
    assert (
        d["available"]
        and "under 200" in d["interval_withheld"]
        and "decomposition_calibration" in d["interval_withheld"]
    )
    assert all(s["corrected"] is not None and s["low"] is None and s["high"] is None for s in d["shares"])
    for campaign in m.campaigns.all():
        factories.scored_runs(campaign, {(archetypes[0][0], modes[0]): (20, 100)}, dict(archetypes))
        stats.bump(campaign.pk, m.pk)
    d = stats.matrix_data(m)["decomposition"]
    assert d["interval_withheld"] == "" and d["warning"] == ""
    assert all(0.0 <= s["low"] <= s["high"] <= 1.0 for s in d["shares"])


def test_a_four_by_five_matrix_with_reserves_flags_its_planted_differences(axes):
    # The browser test's matrix: framework effects 0.5–1.7× and model effects 0.7–1.3× planted,
    # 100 reserve runs per pair; the reserve test finds some of those differences after BH.
    archetypes, modes = axes
    cells = factories.planted_cells(archetypes, modes, per_cell=2, seed=3)
    frameworks = ["claude-code", "codex", "opencode", "aider"]
    models = ["model-a", "model-b", "model-c", "model-d", "model-e"]
    m = factories.matrix(frameworks, models, cells, dict(archetypes), reserve=100)
    data = stats.matrix_data(m)
    assert len(data["contrasts"]) == 190 and data["significant"] >= 1
    assert {c["n_a"] for c in data["contrasts"]} == {100}
    assert data["decomposition"]["available"] and data["decomposition"]["interval_withheld"] == ""
