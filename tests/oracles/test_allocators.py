"""The paired and list allocators (oracles/pairing.py, oracles/listalloc.py): pure, no database."""

from __future__ import annotations

import json

import pytest

from oracles.listalloc import ListAllocator, full_items, sample_items
from oracles.pairing import PairedAllocator, PairItem
from oracles.scheduler import CampaignParams


def _pairs(strata: int = 6, per: int = 3) -> dict[tuple[str, str, str], list[PairItem]]:
    return {
        (f"arch{s}", "explicit-deny" if s % 2 else "implicit-allow", "agents_md"): [
            PairItem(kept=f"k{s}-{i}", stripped=f"t{s}-{i}") for i in range(per)
        ]
        for s in range(strata)
    }


def _drive(alloc, items, outcome=lambda slot: slot.index % 3 == 0, invalid=frozenset()):
    rounds = []
    while not alloc.done:
        slots = alloc.next_round(items)
        assert slots, "an allocator that is not done must issue work"
        rounds.append(slots)
        for s in slots:
            alloc.record(s, None if (s.key in invalid and s.attempt == 1) else outcome(s))
    return rounds


def test_a_paired_campaign_runs_both_members_of_each_pair_with_the_same_mutations():
    alloc = PairedAllocator(CampaignParams(n=6, k=3, seed=4))
    rounds = _drive(alloc, _pairs())
    assert alloc.complete_pairs == 6 and not alloc.incomplete_pairs
    slots = [s for r in rounds for s in r]
    assert len(slots) == 12
    by_pair: dict[int, list] = {}
    for s in slots:
        by_pair.setdefault(s.index // 2, []).append(s)
    for members in by_pair.values():
        with_, stripped = sorted(members, key=lambda s: s.index)
        assert with_.mutations == stripped.mutations
        assert with_.scenario_id.startswith("k") and stripped.scenario_id.startswith("t")
        assert with_.scenario_id[1:] == stripped.scenario_id[1:]  # the twin of the same scenario
    # Stratified: 6 pairs over 6 strata → one each, none drawn twice.
    assert len({alloc.pairs[i].stratum for i in by_pair}) == 6
    # Random order within pairs, seeded: both orders occur, and the same seed repeats them.
    firsts = [alloc.pairs[i].first for i in sorted(by_pair)]
    assert set(firsts) == {"with", "stripped"}
    again = PairedAllocator(CampaignParams(n=6, k=3, seed=4))
    _drive(again, _pairs())
    assert [again.pairs[i].first for i in sorted(again.pairs)] == firsts


def test_an_invalid_member_is_retried_and_a_given_up_pair_is_reported_and_replaced():
    alloc = PairedAllocator(CampaignParams(n=3, k=3, seed=1, max_attempts=2))
    items = _pairs()
    first = alloc.next_round(items)
    doomed = first[0]
    for s in first:
        alloc.record(s, None if s.key == doomed.key else True)
    retry = alloc.next_round(items)
    assert [s.key for s in retry if s.key == doomed.key] and next(s for s in retry if s.key == doomed.key).attempt == 2
    for s in retry:
        alloc.record(s, None if s.key == doomed.key else False)
    assert alloc.incomplete_pairs == [doomed.index // 2]
    while not alloc.done:
        for s in alloc.next_round(items):
            alloc.record(s, True)
    assert alloc.complete_pairs == 3 and len(alloc.pairs) == 4  # one replacement drawn


def test_paired_state_round_trips_through_json_mid_campaign():
    alloc = PairedAllocator(CampaignParams(n=5, k=2, seed=9))
    items = _pairs()
    for s in alloc.next_round(items):
        alloc.record(s, True)
    outstanding = alloc.next_round(items)
    restored = PairedAllocator.from_dict(json.loads(json.dumps(alloc.to_dict())))
    assert restored.to_dict() == alloc.to_dict()
    for s in outstanding:
        restored.record(s, False)
        alloc.record(s, False)
    assert restored.next_round(items) == alloc.next_round(items)


def test_a_paired_campaign_without_pairs_says_so():
    with pytest.raises(ValueError, match="twins"):
        PairedAllocator(CampaignParams(n=1)).next_round({})


PROMPTS = {f"fam{f}": [f"S{s}-B{b}-R{r}" for s in range(4) for b in range(4) for r in range(2)] for f in range(5)}


def test_the_full_matrix_lists_every_prompt_once():
    items = full_items(PROMPTS, seed=3)
    assert len(items) == 5 * 32 == len(set(items))
    assert items == full_items(PROMPTS, seed=3) and items != full_items(PROMPTS, seed=4)


def test_a_stratified_sample_is_balanced_over_families_and_axis_cells():
    items = sample_items(PROMPTS, 40, seed=2)
    assert len(items) == len(set(items)) == 40
    per_family = {f: sum(1 for i in items if i.startswith(f + "/")) for f in PROMPTS}
    assert set(per_family.values()) == {8}
    # Beyond one full pass every variant of a family is used before any repeats.
    big = sample_items({"f": PROMPTS["fam0"]}, 40, seed=2)
    assert len(set(big[:32])) == 32


def test_a_list_campaign_retries_invalid_runs_then_reports_them_missing():
    items = full_items({"a": ["S0-B0-R0", "S1-B0-R0", "S2-B0-R0"]}, seed=0)
    alloc = ListAllocator(CampaignParams(n=3, k=2, seed=0, max_attempts=2), items)
    while not alloc.done:
        for s in alloc.next_round():
            alloc.record(s, None if s.index == 1 else True)
    assert alloc.scored == 2 and [d.index for d in alloc.dropped] == [1]
    assert ListAllocator.from_dict(json.loads(json.dumps(alloc.to_dict()))).to_dict() == alloc.to_dict()
