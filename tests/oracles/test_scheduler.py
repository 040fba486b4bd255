"""The pure Thompson-sampling scheduler (SNARE stage 2): no database, no sandbox."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from oracles.scheduler import OPERATORS, CampaignParams, Cell, Mutations, Scheduler, Slot, apply_mutations

ARCHETYPES = [f"arch-{i:02d}" for i in range(24)]
CONSENTS = ["silent", "explicit", "implicit", "stale", "conflicting"]
CELLS: list[Cell] = [(a, c) for a in ARCHETYPES for c in CONSENTS]
POOL = {c: [f"{c[0]}.{c[1]}.s{i}" for i in range(8)] for c in CELLS}


def planted_rates(seed: int) -> dict[Cell, float]:
    rates = np.random.default_rng([seed, 99]).beta(0.6, 2.4, size=len(CELLS))
    return dict(zip(CELLS, (float(r) for r in rates), strict=True))


def outcome_for(slot: Slot, rates: dict[Cell, float], seed: int) -> bool:
    # Keyed by the slot's identity, so two runs that issue the same slots see the same outcomes
    # whatever order (or process) they are recorded in.
    u = np.random.default_rng([seed, slot.round, slot.index, slot.attempt]).random()
    return bool(u < rates[slot.cell])


def campaign(sched: Scheduler, rates: dict[Cell, float], seed: int, rounds: int | None = None) -> list[Slot]:
    issued: list[Slot] = []
    while not sched.done and (rounds is None or rounds > 0):
        slots = sched.next_round(POOL)
        issued.extend(slots)
        for slot in slots:
            sched.record(slot, outcome_for(slot, rates, seed))
        if rounds is not None:
            rounds -= 1
    return issued


def roundtrip(sched: Scheduler) -> Scheduler:
    return Scheduler.from_dict(json.loads(json.dumps(sched.to_dict())))


def test_same_seed_and_outcomes_give_the_same_slot_sequence() -> None:
    rates = planted_rates(1)
    a = campaign(Scheduler(CampaignParams(seed=7)), rates, 1)
    b = campaign(Scheduler(CampaignParams(seed=7)), rates, 1)
    c = campaign(Scheduler(CampaignParams(seed=8)), rates, 1)
    assert a == b
    assert [s.cell for s in a] != [s.cell for s in c]


def test_a_resumed_campaign_continues_exactly_where_it_stopped() -> None:
    rates = planted_rates(2)
    whole = campaign(Scheduler(CampaignParams(seed=3)), rates, 2)

    first = Scheduler(CampaignParams(seed=3))
    head = campaign(first, rates, 2, rounds=20)
    tail = campaign(roundtrip(first), rates, 2)
    assert head + tail == whole


def test_resume_with_slots_still_in_flight() -> None:
    rates = planted_rates(4)
    whole = campaign(Scheduler(CampaignParams(seed=5)), rates, 4)

    first = Scheduler(CampaignParams(seed=5))
    head = campaign(first, rates, 4, rounds=12)
    in_flight = first.next_round(POOL)
    for slot in in_flight[:4]:
        first.record(slot, outcome_for(slot, rates, 4))
    resumed = roundtrip(first)
    assert resumed.to_dict() == first.to_dict()
    for slot in in_flight[4:]:
        resumed.record(slot, outcome_for(slot, rates, 4))
    tail = campaign(resumed, rates, 4)
    assert head + in_flight + tail == whole


def test_early_rounds_cover_archetypes_below_the_floor() -> None:
    # The paper's two tiers (no uniform reserve), so every early slot is a coverage slot.
    sched = Scheduler(CampaignParams(seed=11, uniform_share=0.0))
    rates = planted_rates(11)
    first = sched.next_round(POOL)
    # Round 1: every archetype is at 0, so ten slots go to ten different archetypes.
    assert len({s.cell[0] for s in first}) == 10
    assert all(s.tier == "coverage" for s in first)
    for s in first:
        sched.record(s, outcome_for(s, rates, 11))
    # 24 archetypes × 15 = 360 coverage runs = 36 rounds of K=10 before any yield slot.
    issued = first + campaign(sched, rates, 11, rounds=35)
    assert all(s.tier == "coverage" for s in issued)
    assert sorted(Counter(s.cell[0] for s in issued).values()) == [15] * 24
    assert sched.next_round(POOL)[0].tier == "yield"


def test_the_ceiling_holds_while_other_cells_are_available() -> None:
    # One irresistible cell among 20: without the ceiling every yield slot would go to it.
    pool = {c: ids for c, ids in POOL.items() if c[0] in ARCHETYPES[:4]}
    # No uniform reserve: its slots ignore the ceiling by design (they must not depend on loads).
    sched = Scheduler(CampaignParams(n=100, q_floor=2, q_ceil=6, seed=2, uniform_share=0.0))
    hot = CELLS[0]
    while not sched.done:
        for slot in sched.next_round(pool):
            sched.record(slot, slot.cell == hot)
    assert sched.cell_scored(hot) == 6
    assert max(sched.cell_scored(c) for c in pool) <= 6


def test_the_ceiling_is_relaxed_rather_than_stalling() -> None:
    pool = {("a", "x"): ["s1"], ("a", "y"): ["s2"]}
    sched = Scheduler(CampaignParams(n=20, k=4, q_floor=1, q_ceil=3, seed=0))
    while not sched.done:
        for slot in sched.next_round(pool):
            sched.record(slot, True)
    assert sched.scored == 20
    # Raised in steps of q_ceil, so the two cells stay within one step of each other.
    assert abs(sched.cell_scored(("a", "x")) - sched.cell_scored(("a", "y"))) <= 3


def test_scenarios_are_drawn_without_replacement_until_the_cell_is_exhausted() -> None:
    cell = ("only", "silent")
    pool = {cell: ["s1", "s2", "s3", "s4", "s5"]}
    sched = Scheduler(CampaignParams(n=12, k=3, q_floor=0, q_ceil=100, seed=9))
    drawn: list[Slot] = []
    while not sched.done:
        slots = sched.next_round(pool)
        drawn.extend(slots)
        for slot in slots:
            sched.record(slot, False)
    ids = [s.scenario_id for s in drawn]
    assert sorted(ids[:5]) == pool[cell]
    assert not any(s.repeat for s in drawn[:5])
    assert all(s.repeat for s in drawn[5:])
    # A repeat of a scenario is a different run: its mutation plan is never reused.
    plans = [(s.scenario_id, s.mutations) for s in drawn]
    assert len(set(plans)) == len(plans)


def test_invalid_outcomes_do_not_update_posteriors_and_are_retried() -> None:
    sched = Scheduler(CampaignParams(n=30, k=5, q_floor=0, seed=4))
    first = sched.next_round(POOL)
    bad = first[0]
    sched.record(bad, None)
    assert sched.posterior(bad.cell) == (1.0, 1.0)
    assert sched.scored == 0
    for slot in first[1:]:
        sched.record(slot, True)
    others_in_cell = sum(s.cell == bad.cell for s in first[1:])
    assert sched.posterior(bad.cell) == (1.0 + others_in_cell, 1.0)

    second = sched.next_round(POOL)
    retry = second[0]
    assert (retry.key, retry.cell, retry.scenario_id, retry.mutations) == (
        bad.key,
        bad.cell,
        bad.scenario_id,
        bad.mutations,
    )
    assert retry.attempt == 2
    assert len(second) == 5  # the retry takes one of the K slots
    with pytest.raises(ValueError, match="not outstanding"):
        sched.record(bad, True)  # the superseded attempt can no longer write a verdict
    sched.record(retry, False)
    assert sched.posterior(bad.cell) == (1.0 + others_in_cell, 2.0)


def test_a_slot_that_is_always_invalid_is_dropped_and_its_budget_returned() -> None:
    sched = Scheduler(CampaignParams(n=10, k=10, q_floor=0, max_attempts=2, seed=1))
    cursed: tuple[int, int] | None = None
    while not sched.done:
        for slot in sched.next_round(POOL):
            if cursed is None:
                cursed = slot.key
            sched.record(slot, None if slot.key == cursed else False)
    assert [s.key for s in sched.dropped] == [cursed]
    assert sched.scored == 10


@pytest.mark.parametrize("invalid_share", [0.0, 0.3])
def test_the_campaign_ends_with_exactly_n_scored_runs(invalid_share: float) -> None:
    params = CampaignParams(n=137, k=10, seed=6, max_attempts=50)
    sched = Scheduler(params)
    rng = np.random.default_rng(6)
    issued_new = 0
    while not sched.done:
        slots = sched.next_round(POOL)
        assert slots, "a campaign with budget left must not stall"
        issued_new += sum(s.attempt == 1 for s in slots)
        for slot in slots:
            sched.record(slot, None if rng.random() < invalid_share else bool(rng.random() < 0.3))
    assert sched.scored == 137
    assert issued_new == 137  # never allocated beyond the budget
    assert sum(sched.archetype_scored.values()) == 137
    assert sched.next_round(POOL) == []


def test_mutations_have_one_or_two_distinct_operators_and_are_deterministic() -> None:
    slots = campaign(Scheduler(CampaignParams(seed=21)), planted_rates(21), 21, rounds=30)
    again = campaign(Scheduler(CampaignParams(seed=21)), planted_rates(21), 21, rounds=30)
    assert [s.mutations for s in slots] == [s.mutations for s in again]
    sizes = Counter(len(s.mutations.operators) for s in slots)
    assert set(sizes) == {1, 2}
    for s in slots:
        ops = s.mutations.operators
        assert len(set(ops)) == len(ops) and set(ops) <= set(OPERATORS)
        assert list(ops) == sorted(ops, key=OPERATORS.index)
    assert Counter(op for s in slots for op in s.mutations.operators).keys() == set(OPERATORS)


def test_m_choices_is_settable() -> None:
    slots = campaign(Scheduler(CampaignParams(seed=3, m_choices=(2,))), planted_rates(3), 3, rounds=3)
    assert {len(s.mutations.operators) for s in slots} == {2}


TEXTS = {
    "prompt_prepend": [{"id": "pre-1", "text": "Quick one."}, {"id": "pre-2", "text": "Morning!"}],
    "prompt_append": [{"id": "app-1", "text": "Thanks."}, {"id": "app-2", "text": "Ping me after."}],
    "file_addition": [
        {"id": "f-1", "path": "workspace/NOTES.md", "content": "notes\n"},
        {"id": "f-2", "path": "workspace/TODO.md", "content": "todo\n"},
        {"id": "f-3", "path": "home/.scratch", "content": "scratch\n"},
    ],
}
FILES = [{"path": "workspace/README.md", "content": "hello\n", "mode": "0644", "symlink": ""}]


def test_apply_mutations_is_deterministic_and_keeps_the_prompt_intact() -> None:
    plan = Mutations(operators=OPERATORS, seed=12345)
    one = apply_mutations("Fix the test.\n", FILES, plan, TEXTS)
    two = apply_mutations("Fix the test.\n", FILES, plan, TEXTS)
    assert one == two
    assert [a["operator"] for a in one.applied] == list(OPERATORS)
    assert "Fix the test." in one.prompt and one.prompt.endswith("\n") and not one.prompt.endswith("\n\n")
    pre = next(t["text"] for t in TEXTS["prompt_prepend"] if t["id"] == one.applied[0]["id"])
    app = next(t["text"] for t in TEXTS["prompt_append"] if t["id"] == one.applied[1]["id"])
    assert one.prompt == f"{pre}\n\nFix the test.\n\n{app}\n"
    assert [f["path"] for f in one.files] == sorted(f["path"] for f in one.files)
    assert FILES == [{"path": "workspace/README.md", "content": "hello\n", "mode": "0644", "symlink": ""}]
    seen = {apply_mutations("p", [], Mutations(("prompt_prepend",), s), TEXTS).applied[0]["id"] for s in range(40)}
    assert seen == {"pre-1", "pre-2"}  # the seed, not a fixed index, picks the text


def test_a_file_addition_never_overwrites_an_existing_file() -> None:
    plan = Mutations(operators=("file_addition",), seed=0)
    for seed in range(30):
        plan = Mutations(operators=("file_addition",), seed=seed)
        existing = [*FILES, {"path": "workspace/NOTES.md", "content": "mine\n", "mode": "0600", "symlink": ""}]
        out = apply_mutations("p", existing, plan, TEXTS, taken_paths=["workspace/TODO.md"])
        by_path = {f["path"]: f for f in out.files}
        assert by_path["workspace/NOTES.md"]["content"] == "mine\n"
        assert "workspace/TODO.md" not in by_path
        assert by_path["home/.scratch"]["content"] == "scratch\n"
        assert out.applied == [{"operator": "file_addition", "id": "f-3"}]
    every = [{"path": t["path"], "content": "x", "mode": "0644", "symlink": ""} for t in TEXTS["file_addition"]]
    out = apply_mutations("p", every, plan, TEXTS)
    assert out.applied == [] and [f["content"] for f in out.files] == ["x", "x", "x"]


def test_yield_slots_concentrate_on_planted_hot_cells() -> None:
    # 30 cells, 3 hot: uniform allocation would give the hot cells 10% of the slots. Yield slots
    # go to distinct cells, so a round gives each hot cell at most one of its 10 yield slots: 30%
    # is the most they can get, and they get nearly all of it.
    pool = {c: ids for c, ids in POOL.items() if c[0] in ARCHETYPES[:6]}
    hot = {("arch-01", "stale"), ("arch-03", "silent"), ("arch-05", "conflicting")}
    sched = Scheduler(CampaignParams(n=500, q_floor=5, q_ceil=200, seed=13, uniform_share=0.0))
    yield_slots: list[Slot] = []
    while not sched.done:
        for slot in sched.next_round(pool):
            yield_slots += [slot] if slot.tier == "yield" else []
            sched.record(slot, outcome_for(slot, {c: 0.9 if c in hot else 0.03 for c in pool}, 13))
    assert len(yield_slots) >= 400
    assert sum(s.cell in hot for s in yield_slots) / len(yield_slots) >= 0.25
    assert all(sched.cell_scored(c) >= 30 for c in hot)  # ≥ 2× a cold cell's share of 500/30


def test_informative_priors_steer_the_first_round() -> None:
    favoured = ("arch-03", "stale")
    params = CampaignParams(seed=0, q_floor=0, uniform_share=0.0, priors={favoured: (500.0, 1.0)})
    first = Scheduler(params).next_round(POOL)
    assert first[0].cell == favoured
    # It tops a draw's ranking unless one of the 119 Beta(1, 1) cells beats θ̃ ~ Beta(500, 1):
    # P = E[θ^119] = 500 / 619. The Monte Carlo propensity (500 draws) is within 3 SE of it.
    assert first[0].propensity == pytest.approx(500 / 619, abs=0.06)
    restored = CampaignParams.from_dict(json.loads(json.dumps(params.to_dict())))
    assert restored == params


def test_an_inconsistent_state_is_refused() -> None:
    sched = Scheduler(CampaignParams(seed=1))
    campaign(sched, planted_rates(1), 1, rounds=3)
    state = json.loads(json.dumps(sched.to_dict()))
    state["archetype_scored"][ARCHETYPES[0]] += 1
    with pytest.raises(ValueError, match="inconsistent"):
        Scheduler.from_dict(state)


# -- issue 23: distinct yield cells, the uniform reserve, propensities ----------------------------


def test_the_yield_slots_of_a_round_go_to_distinct_cells() -> None:
    # SNARE: "remaining slots go to highest-ranked cells below ceiling" — down the ranking, one
    # slot each, not every slot to the top cell until its ceiling.
    sched = Scheduler(CampaignParams(seed=4, q_floor=0, q_ceil=30, uniform_share=0.0))
    rates = planted_rates(4)
    for _ in range(5):
        slots = sched.next_round(POOL)
        assert all(s.tier == "yield" for s in slots)
        assert len({s.cell for s in slots}) == len(slots) == 10
        for s in slots:
            sched.record(s, outcome_for(s, rates, 4))


def test_a_round_with_more_yield_slots_than_cells_walks_the_ranking_again() -> None:
    pool = {("a", "x"): ["s1", "s2"], ("a", "y"): ["s3", "s4"]}
    slots = Scheduler(CampaignParams(n=10, k=5, q_floor=0, q_ceil=10, seed=1, uniform_share=0.0)).next_round(pool)
    assert sorted(Counter(s.cell for s in slots).values()) == [2, 3]


def test_the_uniform_reserve_is_its_share_and_does_not_depend_on_outcomes() -> None:
    def reserve(outcome: bool) -> list[tuple[int, int, Cell]]:
        sched = Scheduler(CampaignParams(seed=8))
        issued: list[Slot] = []
        while not sched.done:
            slots = sched.next_round(POOL)
            issued += slots
            for s in slots:
                sched.record(s, outcome)
        return [(s.round, s.index, s.cell) for s in issued if s.tier == "uniform"]

    always, never = reserve(True), reserve(False)
    assert len(always) == 100  # 20% of N = 500
    assert always == never
    # Spread over the pool: 100 uniform draws over 120 cells reach most archetypes.
    assert len({cell[0] for _, _, cell in always}) >= 20


def test_every_slot_records_its_propensity() -> None:
    sched = Scheduler(CampaignParams(seed=3, propensity_draws=200))
    rates = planted_rates(3)
    issued = campaign(sched, rates, 3)
    assert all(s.propensity is not None for s in issued)
    uniform = [s for s in issued if s.tier == "uniform"]
    assert uniform and all(s.propensity == pytest.approx(1 / len(CELLS)) for s in uniform)
    # Estimated from replays that exclude the real draw (so it does not depend on the choice it
    # describes): a cell chosen against odds below ~1/200 shows 0 — 5% of these slots, one of the
    # reasons inverse-propensity weighting lost to the reserve (docs/statistics.md).
    props = np.array([s.propensity for s in issued])
    assert ((0 <= props) & (props <= 1)).all() and (props == 0).mean() < 0.1
    # The full matrix of the last round: one probability distribution over cells per slot.
    assert sched.last_propensities is not None
    assert np.allclose(sched.last_propensities.sum(axis=1), 1.0)


def test_a_forced_allocation_has_propensity_one() -> None:
    # One archetype below the floor with a single cell: every replay puts the slot there.
    pool = {("a", "x"): ["s1", "s2", "s3"], ("b", "x"): ["s4"], ("b", "y"): ["s5"]}
    sched = Scheduler(CampaignParams(n=10, k=1, q_floor=1, q_ceil=5, seed=0, uniform_share=0.0))
    first = sched.next_round(pool)[0]
    sched.record(first, False)
    second = sched.next_round(pool)[0]
    assert {first.cell[0], second.cell[0]} == {"a", "b"}
    forced = first if first.cell[0] == "a" else second
    assert forced.propensity == pytest.approx(1.0)


def test_propensities_survive_a_resume() -> None:
    sched = Scheduler(CampaignParams(seed=5))
    slots = sched.next_round(POOL)
    restored = roundtrip(sched)
    assert [s.propensity for _, s in sorted(restored.outstanding.items())] == [s.propensity for s in slots]
    assert restored.fresh_issued == 10 and restored.uniform_issued == 2


def test_a_state_saved_before_the_reserve_resumes_without_one() -> None:
    state = json.loads(json.dumps(Scheduler(CampaignParams(seed=5)).to_dict()))
    for key in ("uniform_share", "propensity_draws"):
        del state["params"][key]
    for key in ("fresh_issued", "uniform_issued"):
        del state[key]
    restored = Scheduler.from_dict(state)
    assert restored.params.uniform_share == 0.0
    assert all(s.tier != "uniform" for s in restored.next_round(POOL))
