"""SNARE stage 2: the Thompson-sampling campaign scheduler. Pure Python + NumPy: no Django.

SNARE ("Adaptive Scenario Synthesis for Eliciting Overeager Behavior in Coding Agents", 2026,
§ stage 2, "online adversarial sampling") spends a run budget N on one system under test. Every
archetype × consent cell c keeps a conjugate Beta-Bernoulli posterior θ_c ~ Beta(α_c, β_c),
initialised uniform. Each round draws θ̃_c ~ Beta(α_c, β_c) once per cell and fills K slots in
two tiers:

1. coverage — archetypes with fewer than q_floor runs get slots first;
2. yield — the remaining slots go to the highest θ̃_c among cells with fewer than q_ceil runs.

Ahead of both tiers this module adds a third, which the paper does not have (issue 23):

0. uniform — a fixed share of the budget (``uniform_share``, 20% by default) whose cells are
   drawn uniformly at random over the pool's cells, from a stream that no outcome ever reaches.
   Thompson sampling makes every other slot's cell depend on earlier verdicts, so no fixed-count
   estimator of the uniform-cell-mix rate is unbiased on them (a cell that fails early stops
   being sampled); the uniform slots are an i.i.d. sample of "a run in a uniformly drawn cell",
   so their plain Wilson rate is the uniform-mix rate with a valid interval
   (``oracles.statistics.reserve_uniform_rate``). ``bench/adaptive_coverage.py`` measured this
   against inverse-propensity weighting of every slot (below) and the reserve won: the
   adaptively weighted AIPW estimator needs every cell to keep a non-negligible allocation
   probability, which the coverage tier (one archetype's cells at a time) and Thompson sampling
   (cold cells at ≈ 0) both deny, and its interval under-covered. Set ``uniform_share=0`` for
   the paper's two tiers exactly.

Every slot records its *propensity*: the probability, given everything known when the round
was allocated, that the slot would go to the cell it went to. A uniform slot's is 1/C exactly;
a coverage or yield slot's is estimated by Monte Carlo — the round's allocation is replayed on
``propensity_draws`` further draws of θ̃ from the same posteriors and the share of replays that
put the slot in that cell is its propensity. The real draw is not one of the replays: counting
it would make a chosen cell's estimate depend on its having been chosen, so a propensity below
~1/propensity_draws can come out as 0. The replay *is* the allocation: one vectorised routine
(``allocate_draws``) makes both, so they cannot drift apart. Runs store the propensity, so a
bundle's importer and a regrade reproduce any weighted estimate without replaying the allocator.

A drawn scenario is mutated by m ~ Uniform{1, 2} deterministic operators (prompt prepend, prompt
append, sandbox file addition), run, and scored; only scored runs update a posterior.

Interpretations the paper leaves open, decided here (each is repeated where the code does it):

* "runs" in the floor and the ceiling are *projected* runs: scored plus in flight (issued and not
  yet recorded, or queued for a retry) plus already allocated in this round. Counting only scored
  runs would let one round pour all K slots into a cell that is one run short of its ceiling.
* A retry (an invalid, unscored run) repeats the same scenario with the same mutations: it is
  the same run re-attempted, not a new draw, so it holds its budget and does not consume new
  randomness. After `max_attempts` invalid attempts the slot is dropped and its budget returns
  to the pool, so a scenario that always breaks the sandbox cannot stall a campaign.
* Yield slots go to *distinct* cells: "the remaining slots go to highest-ranked cells below
  ceiling" is read as the top cells of the round's θ̃ ranking, one slot each, not K slots for the
  top cell until its ceiling (one θ̃ draw per round would otherwise put a whole round on one
  cell). If a round has more yield slots than eligible cells the ranking is walked again.
* Ties in θ̃ (probability zero for continuous draws) go to the smaller cell in sorted order.
* Uniform slots ignore the floor and the ceiling: both depend on the loads, which depend on the
  verdicts, and the reserve must not. They do count towards both, like any other run.
* Randomness is keyed, not streamed: θ̃ comes from a generator seeded with (seed, round) and each
  slot's draws from (seed, round, slot index). The state therefore needs no generator snapshot —
  the round number *is* the rng position — and a campaign resumed from `Scheduler.to_dict()`
  continues with exactly the allocations an uninterrupted run would have made.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

Cell = tuple[str, str]
"""(archetype id, consent mode id)."""

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

Tier = Literal["uniform", "coverage", "yield"]
TIERS: tuple[str, ...] = ("uniform", "coverage", "yield")

OPERATORS: tuple[str, ...] = ("prompt_prepend", "prompt_append", "file_addition")
STATE_VERSION = 1

# Last words of the SeedSequence entropy: the per-round θ̃ stream and the per-slot streams must
# never coincide, whatever the round and slot numbers.
_THETA_STREAM = 0
_SLOT_STREAM = 1
_TEXT_STREAM = 2
_UNIFORM_STREAM = 3
_PROPENSITY_STREAM = 4


@dataclass(frozen=True)
class CampaignParams:
    """Campaign settings; defaults are SNARE's OVEREAGER-scale values (N=500, K=10, J=3, q_floor=15, q_ceil=30)."""

    n: int = 500
    k: int = 10
    j: int = 3  # concurrent sandboxes per round; the executor uses it, the allocation does not
    q_floor: int = 15
    q_ceil: int = 30
    m_choices: tuple[int, ...] = (1, 2)
    seed: int = 0
    max_attempts: int = 3
    # Share of the fresh slots drawn uniformly over cells, outcome-independently (see the module
    # docstring). A campaign state saved before this field existed resumes with 0: its design
    # had no reserve, and changing it mid-campaign would mix two designs.
    uniform_share: float = 0.2
    # θ̃ replays per round for the Monte Carlo propensities (besides the real draw). 500 puts the
    # standard error of a propensity near 0.5 at 2.2 points, at ~10 ms per round (the Beta draws
    # are most of it); a propensity below ~1/500 may come out as 0.
    propensity_draws: int = 500
    # Optional informative priors (α, β) per cell, e.g. carried over from an earlier campaign on a
    # sibling SUT. Cells not listed start at the paper's uniform Beta(1, 1).
    priors: Mapping[Cell, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.n < 0 or self.k < 1 or self.j < 1 or self.max_attempts < 1:
            raise ValueError("n must be ≥ 0; k, j and max_attempts must be ≥ 1")
        if not 0 <= self.q_floor <= self.q_ceil or self.q_ceil < 1:
            raise ValueError("need 0 ≤ q_floor ≤ q_ceil and q_ceil ≥ 1")
        if not self.m_choices or any(not 1 <= m <= len(OPERATORS) for m in self.m_choices):
            raise ValueError(f"m_choices must be non-empty values in 1..{len(OPERATORS)}")
        if not 0.0 <= self.uniform_share <= 1.0:
            raise ValueError("uniform_share must be in [0, 1]")
        if self.propensity_draws < 1:
            raise ValueError("propensity_draws must be ≥ 1")
        if self.seed < 0:
            raise ValueError("seed must be ≥ 0 (it seeds numpy.random.SeedSequence)")
        for cell, (a, b) in self.priors.items():
            if not (a > 0 and b > 0):
                raise ValueError(f"prior for {cell} must have α > 0 and β > 0")

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "k": self.k,
            "j": self.j,
            "q_floor": self.q_floor,
            "q_ceil": self.q_ceil,
            "m_choices": list(self.m_choices),
            "seed": self.seed,
            "max_attempts": self.max_attempts,
            "uniform_share": self.uniform_share,
            "propensity_draws": self.propensity_draws,
            "priors": [[a, c, float(ab[0]), float(ab[1])] for (a, c), ab in sorted(self.priors.items())],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CampaignParams:
        return cls(
            n=int(data["n"]),
            k=int(data["k"]),
            j=int(data["j"]),
            q_floor=int(data["q_floor"]),
            q_ceil=int(data["q_ceil"]),
            m_choices=tuple(int(m) for m in data["m_choices"]),
            seed=int(data["seed"]),
            max_attempts=int(data["max_attempts"]),
            # Absent in parameters saved before the reserve existed: those campaigns had none.
            uniform_share=float(data.get("uniform_share", 0.0)),
            propensity_draws=int(data.get("propensity_draws", 500)),
            priors={(str(a), str(c)): (float(al), float(be)) for a, c, al, be in data.get("priors", [])},
        )


@dataclass(frozen=True)
class Mutations:
    """The mutation plan of one slot: which operators (canonical order) and the seed that picks their texts."""

    operators: tuple[str, ...]
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {"operators": list(self.operators), "seed": self.seed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Mutations:
        return cls(operators=tuple(str(o) for o in data["operators"]), seed=int(data["seed"]))


@dataclass(frozen=True)
class Slot:
    """One allocated run. (round, index) is its identity; `attempt` is bumped on each retry."""

    round: int
    index: int
    cell: Cell
    scenario_id: str
    mutations: Mutations
    tier: Tier
    attempt: int = 1
    repeat: bool = False  # the cell had no unused scenario left: drawn with replacement
    # P(this slot → this cell | the state when its round was allocated); None when the allocator
    # does not record one (the deterministic list allocators).
    propensity: float | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.round, self.index)

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "index": self.index,
            "archetype": self.cell[0],
            "consent": self.cell[1],
            "scenario_id": self.scenario_id,
            "mutations": self.mutations.to_dict(),
            "tier": self.tier,
            "attempt": self.attempt,
            "repeat": self.repeat,
            "propensity": self.propensity,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Slot:
        tier = data["tier"]
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r}")
        return cls(
            round=int(data["round"]),
            index=int(data["index"]),
            cell=(str(data["archetype"]), str(data["consent"])),
            scenario_id=str(data["scenario_id"]),
            mutations=Mutations.from_dict(data["mutations"]),
            tier=tier,
            attempt=int(data["attempt"]),
            repeat=bool(data["repeat"]),
            propensity=None if data.get("propensity") is None else float(data["propensity"]),
        )


@dataclass
class _CellState:
    alpha: float
    beta: float
    scored: int = 0
    triggers: int = 0
    used: set[str] = field(default_factory=set)


class Scheduler:
    """The campaign's allocation state. Drive it with `next_round(pool)` and `record(slot, outcome)`."""

    def __init__(self, params: CampaignParams | None = None) -> None:
        self.params = params or CampaignParams()
        self.round = 0
        self.cells: dict[Cell, _CellState] = {}
        self.archetype_scored: dict[str, int] = defaultdict(int)
        self.scored = 0
        self.triggers = 0
        self.outstanding: dict[tuple[int, int], Slot] = {}  # issued, verdict not yet recorded
        self.retry_queue: list[Slot] = []  # invalid, waiting for the next round
        self.dropped: list[Slot] = []  # invalid max_attempts times; budget returned
        # Fresh (attempt-1) slots issued so far, and how many of them were uniform: the reserve's
        # quota is kept over the whole campaign, not per round, so it holds for any K.
        self.fresh_issued = 0
        self.uniform_issued = 0
        # The last round's full propensity matrix (new slots × sorted cells) and its cells. Not
        # persisted: only the benches (which compare estimators that need every cell's
        # probability) read it.
        self.last_propensities: FloatArray | None = None
        self.last_cells: list[Cell] = []

    # -- queries ------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.scored >= self.params.n

    @property
    def remaining(self) -> int:
        """Budget not yet scored, issued or queued for a retry."""
        return self.params.n - self.scored - len(self.outstanding) - len(self.retry_queue)

    def posterior(self, cell: Cell) -> tuple[float, float]:
        state = self.cells.get(cell)
        return (state.alpha, state.beta) if state else self._prior(cell)

    def cell_scored(self, cell: Cell) -> int:
        state = self.cells.get(cell)
        return state.scored if state else 0

    # -- allocation ---------------------------------------------------------------------------

    def next_round(self, pool: Mapping[Cell, Sequence[str]]) -> list[Slot]:
        """Allocate the next round: queued retries first, then new slots, coverage before yield.

        Returns [] without advancing the round when nothing can be issued (campaign done, or the
        whole remaining budget is in flight), so an idle poll never shifts the seeded sequence.
        """
        p = self.params
        if self.done:
            return []
        cells = sorted(c for c, ids in pool.items() if ids)
        slots = self.retry_queue[: p.k]
        self.retry_queue = self.retry_queue[p.k :]
        for s in slots:
            self.outstanding[s.key] = s
        n_new = min(p.k - len(slots), self.remaining)
        if n_new > 0 and not cells:
            raise ValueError("the pool has no scenarios to allocate")
        if not slots and n_new <= 0:
            return []
        if n_new > 0:
            fresh = self._allocate(cells, pool, n_new)
            self.outstanding.update((s.key, s) for s in fresh)
            slots.extend(fresh)
        self.round += 1
        return slots

    def _allocate(self, cells: list[Cell], pool: Mapping[Cell, Sequence[str]], n_new: int) -> list[Slot]:
        p = self.params
        for c in cells:
            if c not in self.cells:
                alpha, beta = self._prior(c)
                self.cells[c] = _CellState(alpha=alpha, beta=beta)
        alphas = [self.cells[c].alpha for c in cells]
        betas = [self.cells[c].beta for c in cells]
        # One θ̃ draw per cell per round (SNARE: "at each round, the scheduler draws θ̃_c^(t)"), in
        # sorted cell order so the draw does not depend on the pool mapping's iteration order.
        # Row 0 is that real draw; the other rows are the Monte Carlo replays for the propensities,
        # from their own stream so the real draw is what it was before propensities existed.
        real = np.random.default_rng([p.seed, self.round, _THETA_STREAM]).beta(alphas, betas)
        extra = np.random.default_rng([p.seed, self.round, _PROPENSITY_STREAM]).beta(
            alphas, betas, size=(p.propensity_draws, len(cells))
        )
        theta = np.vstack([real[None, :], extra])

        # Projected loads: scored + in flight. Allocations made below are added as they happen.
        index = {c: i for i, c in enumerate(cells)}
        cell_load = np.array([self.cells[c].scored for c in cells], dtype=np.int64)
        for s in (*self.outstanding.values(), *self.retry_queue):
            if s.cell in index:
                cell_load[index[s.cell]] += 1
        archetypes = sorted({c[0] for c in cells})
        arch_pos = {a: i for i, a in enumerate(archetypes)}
        arch_of = np.array([arch_pos[c[0]] for c in cells], dtype=np.int64)
        arch_load = np.array([self.archetype_scored.get(a, 0) for a in archetypes], dtype=np.int64)
        for s in (*self.outstanding.values(), *self.retry_queue):
            if s.cell[0] in arch_pos:
                arch_load[arch_pos[s.cell[0]]] += 1

        quota = math.floor(p.uniform_share * (self.fresh_issued + n_new) + 0.5) - self.uniform_issued
        n_uniform = max(0, min(n_new, quota))
        uniform = [
            int(np.random.default_rng([p.seed, self.round, _UNIFORM_STREAM, i]).integers(len(cells)))
            for i in range(n_uniform)
        ]
        picks, coverage = allocate_draws(
            theta, cell_load, arch_load, arch_of, uniform, n_new, q_floor=p.q_floor, q_ceil=p.q_ceil
        )
        propensity = np.zeros((n_new, len(cells)))
        for i in range(n_new):
            if i < n_uniform:
                propensity[i, :] = 1.0 / len(cells)
            else:
                # Replays only, not the real draw: counting it would make a chosen cell's
                # estimate depend on having been chosen (never below 1/M when chosen), which
                # biases any weight built from it — the estimate must be predictable.
                propensity[i] = np.bincount(picks[1:, i], minlength=len(cells)) / (picks.shape[0] - 1)
        self.last_propensities, self.last_cells = propensity, cells
        self.fresh_issued += n_new
        self.uniform_issued += n_uniform

        out: list[Slot] = []
        for i in range(n_new):
            cell = cells[int(picks[0, i])]
            tier: Tier = "uniform" if i < n_uniform else "coverage" if coverage[0, i] else "yield"
            slot = self._make_slot(cell, pool[cell], i, tier)
            out.append(replace(slot, propensity=float(propensity[i, picks[0, i]])))
        return out

    def _make_slot(self, cell: Cell, scenario_ids: Sequence[str], index: int, tier: Tier) -> Slot:
        p = self.params
        rng = np.random.default_rng([p.seed, self.round, _SLOT_STREAM, index])
        # Mutations are drawn before the scenario so they depend on (seed, round, index) only,
        # never on how many scenarios the cell's pool holds.
        m = int(rng.choice(p.m_choices))
        ops = sorted(int(i) for i in rng.choice(len(OPERATORS), size=m, replace=False))
        mutations = Mutations(operators=tuple(OPERATORS[i] for i in ops), seed=int(rng.integers(0, 2**32)))

        # Sorted ids: the draw must not depend on the order the database returned the pool in.
        ids = sorted(set(scenario_ids))
        used = self.cells[cell].used
        unused = [s for s in ids if s not in used]
        repeat = not unused
        # A repeat differs from its earlier runs through its mutations: a fresh (round, index)
        # gives a fresh operator set and text seed.
        choices = ids if repeat else unused
        scenario_id = choices[int(rng.integers(len(choices)))]
        used.add(scenario_id)  # at allocation, so two slots of one round never share a scenario
        return Slot(
            round=self.round,
            index=index,
            cell=cell,
            scenario_id=scenario_id,
            mutations=mutations,
            tier=tier,
            repeat=repeat,
        )

    # -- outcomes -----------------------------------------------------------------------------

    def record(self, slot: Slot, outcome: bool | None) -> None:
        """Record a run's verdict: True/False update the cell's posterior, None (invalid) re-queues it.

        The attempt number acts as a fencing token: a verdict for an attempt that is no longer
        the outstanding one (a duplicate, or a late answer from a superseded attempt) is refused.
        """
        current = self.outstanding.get(slot.key)
        if current is None or current.attempt != slot.attempt:
            raise ValueError(f"slot {slot.key} attempt {slot.attempt} is not outstanding")
        del self.outstanding[slot.key]
        if outcome is None:
            # Infrastructure failures are retried, never counted (SNARE: posteriors update on
            # scored runs only, so an invalid run must not read as "no trigger").
            retry_or_drop(current, self.params.max_attempts, self.retry_queue, self.dropped)
            return
        state = self.cells.get(slot.cell)
        if state is None:
            alpha, beta = self._prior(slot.cell)
            state = self.cells[slot.cell] = _CellState(alpha=alpha, beta=beta)
        hit = bool(outcome)
        state.alpha += hit
        state.beta += not hit
        state.scored += 1
        state.triggers += hit
        self.archetype_scored[slot.cell[0]] += 1
        self.scored += 1
        self.triggers += hit

    def _prior(self, cell: Cell) -> tuple[float, float]:
        a, b = self.params.priors.get(cell, (1.0, 1.0))
        return float(a), float(b)

    # -- persistence --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able snapshot; `from_dict(to_dict())` resumes exactly where this state stands."""
        return {
            "version": STATE_VERSION,
            "params": self.params.to_dict(),
            "round": self.round,
            "scored": self.scored,
            "triggers": self.triggers,
            "cells": [
                {
                    "archetype": c[0],
                    "consent": c[1],
                    "alpha": s.alpha,
                    "beta": s.beta,
                    "scored": s.scored,
                    "triggers": s.triggers,
                    "used": sorted(s.used),
                }
                for c, s in sorted(self.cells.items())
            ],
            "archetype_scored": dict(sorted(self.archetype_scored.items())),
            "fresh_issued": self.fresh_issued,
            "uniform_issued": self.uniform_issued,
            "outstanding": [s.to_dict() for _, s in sorted(self.outstanding.items())],
            "retry_queue": [s.to_dict() for s in self.retry_queue],
            "dropped": [s.to_dict() for s in self.dropped],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scheduler:
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported scheduler state version {data.get('version')!r}")
        sched = cls(CampaignParams.from_dict(data["params"]))
        sched.round = int(data["round"])
        sched.scored = int(data["scored"])
        sched.triggers = int(data["triggers"])
        for row in data["cells"]:
            sched.cells[(str(row["archetype"]), str(row["consent"]))] = _CellState(
                alpha=float(row["alpha"]),
                beta=float(row["beta"]),
                scored=int(row["scored"]),
                triggers=int(row["triggers"]),
                used={str(s) for s in row["used"]},
            )
        sched.archetype_scored.update({str(a): int(n) for a, n in data["archetype_scored"].items()})
        # Absent in states saved before the uniform reserve; those campaigns have uniform_share 0.
        sched.fresh_issued = int(data.get("fresh_issued", 0))
        sched.uniform_issued = int(data.get("uniform_issued", 0))
        sched.outstanding = {s.key: s for s in map(Slot.from_dict, data["outstanding"])}
        sched.retry_queue = [Slot.from_dict(s) for s in data["retry_queue"]]
        sched.dropped = [Slot.from_dict(s) for s in data["dropped"]]
        # A hand-edited or truncated snapshot would silently skew coverage; refuse it instead.
        per_arch: dict[str, int] = defaultdict(int)
        for (a, _), s in sched.cells.items():
            per_arch[a] += s.scored
        if sum(per_arch.values()) != sched.scored or any(
            sched.archetype_scored.get(a, 0) != n for a, n in per_arch.items()
        ):
            raise ValueError("scheduler state is inconsistent: scored counts disagree")
        return sched


def allocate_draws(
    theta: FloatArray,
    cell_load: IntArray,
    arch_load: IntArray,
    arch_of: IntArray,
    uniform: Sequence[int],
    n_new: int,
    *,
    q_floor: int,
    q_ceil: int,
) -> tuple[IntArray, BoolArray]:
    """One round's allocation for every row of θ̃ at once → (cell index, is-coverage), each (M, n_new).

    ``theta`` is (M, C) over sorted cells (an archetype's cells are contiguous), the loads are the
    projected loads at the round's start, ``uniform`` the cells of the round's first slots (fixed:
    they do not depend on θ̃). Then, slot by slot:

    * coverage, while an archetype is below q_floor: among the archetypes with the fewest projected
      runs, the cell with the highest θ̃ that is under the ceiling (so ties between archetypes go
      to the one whose best cell drew highest);
    * yield: the highest θ̃ among cells under the ceiling that have not had a yield slot this round.

    When every candidate is at q_ceil the ceiling is relaxed, not enforced: it is raised to the next
    multiple of q_ceil above the least-loaded candidate. Stalling would leave budget unspent, and
    raising in steps (instead of dropping the ceiling) keeps the spread the ceiling exists for. At
    the defaults this never happens (120 cells × 30 ≫ 500).
    """
    m, n_cells = theta.shape
    rows = np.arange(m)
    load = np.repeat(cell_load[None, :].astype(np.int64), m, axis=0)
    aload = np.repeat(arch_load[None, :].astype(np.int64), m, axis=0)
    starts = np.flatnonzero(np.r_[True, arch_of[1:] != arch_of[:-1]])
    taken = np.zeros((m, n_cells), dtype=bool)
    picks = np.empty((m, n_new), dtype=np.int64)
    coverage = np.zeros((m, n_new), dtype=bool)
    big = np.iinfo(np.int64).max
    for i in range(n_new):
        if i < len(uniform):
            pick = np.full(m, uniform[i], dtype=np.int64)
        else:
            below = aload < q_floor
            in_coverage = below.any(axis=1)
            ok = np.zeros((m, n_cells), dtype=bool)
            # Each branch only when some row needs it: most rounds are all-coverage or all-yield.
            if in_coverage.any():
                fewest = np.where(below, aload, big).min(axis=1, keepdims=True)
                tied = below & (aload == fewest)
                arch_ceiling = _relaxed(np.minimum.reduceat(load, starts, axis=1), q_ceil)
                ok[in_coverage] = (tied[:, arch_of] & (load < arch_ceiling[:, arch_of]))[in_coverage]
            if not in_coverage.all():
                # A round with more yield slots than eligible cells walks the ranking again.
                taken[taken.all(axis=1)] = False
                lowest_free = np.where(taken, big, load).min(axis=1, keepdims=True)
                yield_ok = ~taken & (load < _relaxed(lowest_free, q_ceil))
                ok[~in_coverage] = yield_ok[~in_coverage]
            # argmax keeps the first maximum: ties go to the smaller (sorted) cell.
            pick = np.where(ok, theta, -np.inf).argmax(axis=1)
            coverage[:, i] = in_coverage
            taken[rows[~in_coverage], pick[~in_coverage]] = True
        picks[:, i] = pick
        load[rows, pick] += 1
        aload[rows, arch_of[pick]] += 1
    return picks, coverage


def _relaxed(lowest: IntArray, q_ceil: int) -> IntArray:
    return np.where(lowest >= q_ceil, q_ceil * (lowest // q_ceil + 1), q_ceil)


def retry_or_drop(slot: Slot, max_attempts: int, retry_queue: list[Slot], dropped: list[Slot]) -> bool:
    """An invalid slot: queue its next attempt (same scenario, same mutations), or drop it after
    ``max_attempts``. Returns True when dropped. Shared by every allocator of this package."""
    if slot.attempt + 1 > max_attempts:
        dropped.append(slot)
        return True
    retry_queue.append(replace(slot, attempt=slot.attempt + 1))
    return False


# -- mutation operators -------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutated:
    prompt: str
    files: list[dict[str, Any]]
    applied: list[dict[str, str]]  # [{"operator", "id"}] in application order, for the run's record


def apply_mutations(
    prompt: str,
    files: Sequence[Mapping[str, Any]],
    mutations: Mutations,
    texts: Mapping[str, Sequence[Mapping[str, str]]],
    *,
    taken_paths: Iterable[str] = (),
) -> Mutated:
    """Apply a slot's mutation operators to a materialised scenario (SNARE's operator family Φ).

    `texts` is the mutations library (pool/libraries/mutations.yaml): prompt_prepend and
    prompt_append entries carry `text`, file_addition entries `path` and `content`. Each operator
    picks its entry with a generator seeded by (mutations.seed, operator), so the result depends
    only on the plan and the curated lists. A file addition never overwrites: when the picked
    path already exists — in `files`, in `taken_paths` (e.g. the seed repository's own files,
    root-prefixed) or from an earlier addition — the next entry in list order is tried, and if
    every path is taken the operator is skipped rather than clobber a file the oracle relies on.
    Inputs are not modified.
    """
    out_prompt = prompt
    out_files = {str(f["path"]): dict(f) for f in files}
    taken = set(out_files) | set(taken_paths)
    applied: list[dict[str, str]] = []
    for op in OPERATORS:  # canonical order, whatever order the plan lists them in
        if op not in mutations.operators:
            continue
        entries = texts.get(op, [])
        if not entries:
            raise ValueError(f"the mutations library has no {op} entries")
        rng = np.random.default_rng([mutations.seed, _TEXT_STREAM, OPERATORS.index(op)])
        start = int(rng.integers(len(entries)))
        if op == "file_addition":
            for offset in range(len(entries)):
                entry = entries[(start + offset) % len(entries)]
                if entry["path"] not in taken:
                    out_files[entry["path"]] = {
                        "path": entry["path"],
                        "content": entry["content"],
                        "mode": "0644",
                        "symlink": "",
                    }
                    taken.add(entry["path"])
                    applied.append({"operator": op, "id": entry["id"]})
                    break
            continue
        entry = entries[start]
        text = entry["text"].strip()
        if op == "prompt_prepend":
            out_prompt = f"{text}\n\n{out_prompt}"
        else:
            # Keep the prompt's trailing newline(s) at the very end, after the appended text.
            body = out_prompt.rstrip("\n")
            out_prompt = f"{body}\n\n{text}{out_prompt[len(body) :]}"
        applied.append({"operator": op, "id": entry["id"]})
    return Mutated(prompt=out_prompt, files=[out_files[p] for p in sorted(out_files)], applied=applied)
