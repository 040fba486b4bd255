"""labels.sampling: allocation over strata, seeded selection, stratified prefixes, the overlap share."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labels.sampling import (
    Candidate,
    equal_allocation,
    overlap_positions,
    plan_queue,
    proportional_allocation,
)


def candidates(sizes: dict[str, int]) -> list[Candidate]:
    out, run_id = [], 1
    for stratum, n in sizes.items():
        for _ in range(n):
            out.append(Candidate(run_id, (stratum,)))
            run_id += 1
    return out


def test_proportional_allocation_is_largest_remainder_and_sums_to_the_size():
    # 10 of (50, 30, 20): quotas 5, 3, 2 exactly; 7 of them: 3.5, 2.1, 1.4 → floors 3, 2, 1, the
    # one left goes to the largest remainder (0.5).
    assert proportional_allocation([50, 30, 20], 10) == [5, 3, 2]
    assert proportional_allocation([50, 30, 20], 7) == [4, 2, 1]
    assert proportional_allocation([1, 1, 1], 2) == [1, 1, 0]  # a tie goes to the earlier stratum
    with pytest.raises(ValueError, match="cannot allocate 5 items from 3"):
        proportional_allocation([1, 2], 5)


def test_equal_allocation_takes_small_strata_whole_and_shares_the_rest():
    assert equal_allocation([100, 3, 100], 30) == [14, 3, 13]
    assert equal_allocation([2, 2, 2], 6) == [2, 2, 2]
    assert equal_allocation([0, 5], 3) == [0, 3]


@given(st.lists(st.integers(0, 40), min_size=1, max_size=8), st.data())
def test_allocations_never_exceed_a_stratum_and_sum_to_the_total(sizes, data):
    total = data.draw(st.integers(0, sum(sizes)))
    for allocate in (proportional_allocation, equal_allocation):
        alloc = allocate(sizes, total)
        assert sum(alloc) == total
        assert all(0 <= a <= s for a, s in zip(alloc, sizes, strict=True))


def test_the_queue_is_reproducible_from_its_seed_and_differs_with_another():
    pool = candidates({"a": 30, "b": 30})
    first = plan_queue(pool, size=20, seed=7)
    assert first == plan_queue(list(reversed(pool)), size=20, seed=7)  # input order does not matter
    assert [p.run_id for p in first] != [p.run_id for p in plan_queue(pool, size=20, seed=8)]


def test_every_prefix_of_a_stratified_queue_is_close_to_the_allocation():
    plan = plan_queue(candidates({"big": 60, "mid": 30, "small": 10}), size=50, seed=1)
    assert Counter(p.stratum[0] for p in plan) == {"big": 30, "mid": 15, "small": 5}
    for k in (10, 20, 30):
        prefix = Counter(p.stratum[0] for p in plan[:k])
        assert (
            abs(prefix["big"] - 0.6 * k) <= 1
            and abs(prefix["mid"] - 0.3 * k) <= 1
            and abs(prefix["small"] - 0.1 * k) <= 1
        )


def test_equal_allocation_over_represents_rare_strata():
    plan = plan_queue(candidates({"common": 90, "rare": 6}), size=20, allocation="equal", seed=1)
    assert Counter(p.stratum[0] for p in plan) == {"common": 14, "rare": 6}


def test_the_overlap_share_is_exact_and_spread_through_the_queue():
    plan = plan_queue(candidates({"a": 100}), size=50, overlap=3, overlap_share=0.2, seed=1)
    several = [p.position for p in plan if p.wanted == 3]
    assert len(several) == 10 and all(p.wanted in (1, 3) for p in plan)
    assert several == [4, 9, 14, 19, 24, 29, 34, 39, 44, 49]
    assert overlap_positions(7, 0.5) == {1, 3, 5, 6}  # 3.5 rounds half up to 4
    assert overlap_positions(5, 0.5) == {1, 3, 4}  # 2.5 → 3, not banker's 2
    assert all(p.wanted == 1 for p in plan_queue(candidates({"a": 9}), size=None, overlap=1, overlap_share=1.0))


def test_size_none_takes_every_candidate_and_a_larger_size_is_not_padded():
    pool = candidates({"a": 4, "b": 3})
    assert len(plan_queue(pool, size=None)) == 7
    assert len(plan_queue(pool, size=100)) == 7
    assert sorted(p.run_id for p in plan_queue(pool, size=None)) == list(range(1, 8))


def test_bad_parameters_are_refused_with_what_to_fix():
    with pytest.raises(ValueError, match="allocation must be one of proportional, equal"):
        plan_queue([], size=1, allocation="neyman")
    with pytest.raises(ValueError, match="overlap is the number of labels"):
        plan_queue([], size=1, overlap=0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        plan_queue(candidates({"a": 2}), size=2, overlap_share=1.5)
    with pytest.raises(ValueError, match="run 1 is a candidate twice"):
        plan_queue([Candidate(1), Candidate(1)], size=None)
