"""Campaign aggregates: counted in the database, right against the statistics module, cached per generation."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from oracles.statistics import NO_RESERVE, RESERVE, wilson
from runs import stats
from runs.models import Campaign, Run
from tests import factories

pytestmark = pytest.mark.django_db


def _campaign_with(axes, cells):
    archetypes, _ = axes
    c = factories.campaign()
    factories.scored_runs(c, cells, dict(archetypes))
    return Campaign.objects.get(pk=c.pk)


def test_the_heatmap_has_a_cell_for_every_archetype_and_consent_mode(axes):
    archetypes, modes = axes
    c = _campaign_with(axes, {(archetypes[0][0], modes[0]): (2, 5)})
    hm = stats.campaign_data(c)["heatmap"]
    assert len(hm["y"]) == 24 and len(hm["x"]) == 5
    assert hm["cells"] == 120 and hm["cells_with_data"] == 1
    assert len(hm["z"]) == 24 and all(len(row) == 5 for row in hm["z"])
    # High-tier archetypes first, in the deny → allow consent order.
    assert hm["tiers"][0] == "high" and hm["tiers"][-1] == "long-tail"
    assert hm["x"] == list(stats.CONSENT_ORDER)


def test_cells_carry_counts_rates_and_wilson_intervals(axes):
    archetypes, _ = axes
    arch = archetypes[3][0]
    c = _campaign_with(axes, {(arch, "silent"): (3, 12), (arch, "explicit-deny"): (0, 4)})
    hm = stats.campaign_data(c)["heatmap"]
    i = hm["y"].index(arch)
    j = hm["x"].index("silent")
    k, n, low, high = hm["customdata"][i][j]
    assert (k, n) == (3, 12) and hm["z"][i][j] == 0.25
    ref = wilson(3, 12)
    assert low == pytest.approx(ref.low, abs=1e-4) and high == pytest.approx(ref.high, abs=1e-4)
    empty = hm["x"].index("implicit-allow")
    assert hm["z"][i][empty] is None and hm["customdata"][i][empty][:2] == [0, 0]


def test_per_archetype_and_overall_rates_match_the_statistics_module(axes):
    archetypes, modes = axes
    cells = factories.planted_cells(archetypes[:6], modes, per_cell=7)
    c = _campaign_with(axes, cells)
    data = stats.campaign_data(c)
    first = archetypes[0][0]
    row = next(r for r in data["archetypes"] if r["archetype"] == first)
    k = sum(v[0] for (a, _), v in cells.items() if a == first)
    assert (row["successes"], row["n"]) == (k, 7 * 5)
    assert row["low"] == pytest.approx(wilson(k, 35).low)
    assert data["overall"]["raw"]["n"] == 6 * 5 * 7
    assert data["overall"]["cells_without_data"] == 120 - 30
    untouched = next(r for r in data["archetypes"] if r["archetype"] == archetypes[-1][0])
    assert untouched["rate"] is None and untouched["n"] == 0


def test_posterior_means_come_from_the_allocator_state(axes):
    archetypes, _ = axes
    arch = archetypes[0][0]
    c = _campaign_with(axes, {(arch, "silent"): (4, 6)})
    pm = stats.campaign_data(c)["posterior_means"]
    i, j = pm["y"].index(arch), pm["x"].index("silent")
    assert pm["z"][i][j] == round(5 / 8, 4)  # Beta(1 + 4, 1 + 2)
    assert pm["z"][i][pm["x"].index("explicit-allow")] == 0.5  # untouched cell: the Beta(1, 1) prior


def test_the_query_count_does_not_grow_with_the_number_of_runs(axes):
    archetypes, modes = axes

    def queries_for(per_cell: int) -> int:
        c = _campaign_with(axes, factories.planted_cells(archetypes, modes, per_cell=per_cell, seed=per_cell))
        with CaptureQueriesContext(connection) as ctx:
            stats.campaign_data(c)
        return len(ctx.captured_queries)

    small, large = queries_for(1), queries_for(20)
    # 7: one more for the pool's headline exclusions (its report), on a cache miss only.
    assert small == large <= 7


def test_aggregates_are_cached_until_a_run_of_the_campaign_is_written(axes):
    archetypes, _ = axes
    arch = archetypes[0][0]
    c = _campaign_with(axes, {(arch, "silent"): (1, 2)})
    stats.campaign_data(c)
    factories.scored_runs(c, {(arch, "silent"): (1, 1)}, dict(archetypes))
    with CaptureQueriesContext(connection) as ctx:
        cached = stats.campaign_data(c)
    # Served from the cache: no GROUP BY over runs, and the new run is not counted yet.
    assert not any("GROUP BY" in q["sql"] and "overeager" in q["sql"] for q in ctx.captured_queries)
    i, j = cached["heatmap"]["y"].index(arch), cached["heatmap"]["x"].index("silent")
    assert cached["heatmap"]["customdata"][i][j][:2] == [1, 2]
    stats.bump(c.pk, None)
    fresh = stats.campaign_data(c)
    assert fresh["heatmap"]["customdata"][i][j][:2] == [2, 3]


def test_a_stored_outcome_bumps_the_generation(axes, django_capture_on_commit_callbacks):
    c = factories.campaign()
    before = stats.generation("campaign", c.pk)
    with django_capture_on_commit_callbacks(execute=True):
        factories.run_with_evidence(c)
    assert stats.generation("campaign", c.pk) == before + 1


def test_progress_is_read_live_not_from_the_cache(axes):
    archetypes, _ = axes
    c = _campaign_with(axes, {(archetypes[0][0], "silent"): (1, 2)})
    stats.campaign_data(c)
    Campaign.objects.filter(pk=c.pk).update(scored=77, round=9)
    c.refresh_from_db()
    assert stats.campaign_data(c)["progress"]["scored"] == 77
    assert stats.campaign_data(c)["progress"]["runs_by_status"] == {"scored": 2}


def test_csv_tables_for_every_campaign_chart(axes):
    archetypes, _ = axes
    c = _campaign_with(axes, {(archetypes[0][0], "silent"): (1, 2)})
    data = stats.campaign_data(c)
    header, rows = stats.rows_for_csv(data, "heatmap")
    assert header[:5] == ["archetype", "tier", "consent", "overeager", "scored"] and len(rows) == 120
    arch, tier = archetypes[0]
    assert [arch, tier, "silent", 1, 2, 0.5] in [r[:6] for r in rows]
    assert len(stats.rows_for_csv(data, "posterior")[1]) == 120
    assert len(stats.rows_for_csv(data, "archetypes")[1]) == 24
    assert [r[0] for r in stats.rows_for_csv(data, "overall")[1]] == [
        "raw (as sampled)",
        "uniform cell mix",
        "lasting effect only (as sampled)",
    ]
    with pytest.raises(KeyError):
        stats.rows_for_csv(data, "contrasts")


def test_concurrent_readers_of_a_cold_aggregate_compute_it_once(axes):
    import threading

    calls = []

    def slow() -> dict:
        calls.append(1)
        import time

        time.sleep(0.3)
        return {"v": 1}

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(stats.cached("campaign", 999, "x", slow))) for _ in range(5)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [{"v": 1}] * 5
    assert len(calls) == 1


def test_while_one_reader_recomputes_the_others_get_the_previous_generation_flagged_stale(axes):
    from django.core.cache import cache

    archetypes, _ = axes
    arch = archetypes[0][0]
    c = _campaign_with(axes, {(arch, "silent"): (1, 2)})
    assert stats.campaign_data(c)["stale"] is False
    factories.scored_runs(c, {(arch, "silent"): (1, 1)}, dict(archetypes))
    stats.bump(c.pk, None)
    lock = f"stats:campaign:{c.pk}:{stats.generation('campaign', c.pk)}:aggregates:computing"
    cache.add(lock, 1, 10)  # another reader is computing the new generation
    stale = stats.campaign_data(c)
    i, j = stale["heatmap"]["y"].index(arch), stale["heatmap"]["x"].index("silent")
    assert stale["stale"] is True and stale["heatmap"]["customdata"][i][j][:2] == [1, 2]
    cache.delete(lock)
    fresh = stats.campaign_data(c)
    assert fresh["stale"] is False and fresh["heatmap"]["customdata"][i][j][:2] == [2, 3]


# -- issue 23: the uniform-mix rate under adaptive allocation -------------------------------------


def test_the_uniform_mix_rate_comes_from_the_uniform_reserve_runs_only(axes):
    archetypes, modes = axes
    hot, cold = (archetypes[0][0], modes[0]), (archetypes[1][0], modes[1])
    c = factories.campaign()
    # Adaptive runs piled on the hot cell; re-weighting them would give (27/30 + 0/2) / 2 = 45%.
    factories.scored_runs(c, {hot: (27, 30), cold: (0, 2)}, dict(archetypes), tier="yield")
    factories.scored_runs(c, {hot: (2, 4), cold: (1, 16)}, dict(archetypes), tier="uniform")
    data = stats.campaign_data(Campaign.objects.get(pk=c.pk))
    uniform = data["overall"]["uniform"]
    ref = wilson(3, 20)
    assert uniform["rate"] == pytest.approx(0.15) and uniform["reserve_runs"] == 20
    assert (uniform["low"], uniform["high"]) == pytest.approx((ref.low, ref.high))
    assert data["overall"]["method"] == RESERVE
    assert data["overall"]["raw"]["n"] == 52


def test_a_campaign_without_reserve_runs_shows_no_uniform_mix_rate_and_says_why(axes):
    archetypes, modes = axes
    c = _campaign_with(axes, {(archetypes[0][0], modes[0]): (5, 9)})
    overall = stats.campaign_data(c)["overall"]
    assert overall["uniform"]["rate"] is None and overall["method"] == NO_RESERVE
    assert stats.rows_for_csv(stats.campaign_data(c), "overall")[1][1][-1] == NO_RESERVE


def test_every_rate_on_the_campaign_page_names_its_estimator(axes):
    archetypes, modes = axes
    data = stats.campaign_data(_campaign_with(axes, {(archetypes[0][0], modes[0]): (1, 3)}))
    assert data["heatmap"]["estimator"] == stats.CELL_RATE
    assert {r["estimator"] for r in data["archetypes"]} == {stats.ARCHETYPE_RATE}
    assert data["overall"]["raw_method"] == stats.AS_SAMPLED
    header, rows = stats.rows_for_csv(data, "overall")
    assert header[-1] == "estimator" and rows[0][-1] == stats.AS_SAMPLED


def test_the_lasting_effect_rate_stands_beside_the_headline(axes):
    # Issue 19.4: the headline counts attempts too; the effective-only rate counts only verdicts
    # with a lasting effect, and is shown (and downloadable) next to it.
    archetypes, modes = axes
    c = _campaign_with(axes, {(archetypes[0][0], modes[0]): (4, 10)})
    Run.objects.filter(campaign=c).update(overeager_effective=False)
    overeager = Run.objects.filter(campaign=c, overeager=True).order_by("pk")
    Run.objects.filter(pk__in=list(overeager.values_list("pk", flat=True)[:1])).update(overeager_effective=True)
    o = stats.campaign_aggregates(c.pk)["overall"]
    assert (o["raw"]["successes"], o["raw"]["n"]) == (4, 10)
    assert (o["effective"]["successes"], o["effective"]["n"]) == (1, 10)
    assert o["effective_method"] == stats.EFFECTIVE_RATE
    _, rows = stats.rows_for_csv(stats.campaign_data(c), "overall")
    assert rows[2][0] == "lasting effect only (as sampled)" and rows[2][1] == 0.1


def test_cell_counts_count_whole_cells_on_an_ordered_queryset(axes):
    archetypes, modes = axes
    cell = (archetypes[0][0], modes[0])
    c = _campaign_with(axes, {cell: (1, 2)})
    # Ordered by pk, every run is a value of its own: the ordering must not split the cell.
    assert Run.objects.filter(campaign=c).order_by("pk").cell_counts() == {cell: (1, 2)}
