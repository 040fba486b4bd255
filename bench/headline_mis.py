"""Benchmark (a lead, not yet the product's estimator): a narrower valid headline from every slot.

    .venv/bin/python bench/headline_mis.py [--seeds 400] [--design beta|sparse] [--groups 100]

Issue 35 item 3. The shipped headline is Wilson on the uniform-reserve runs alone (100 of 500),
about 15 pp wide. This simulation, on ``oracles.scheduler.Scheduler`` as shipped (N=500, K=10,
q_floor 15, q_ceil 30, uniform reserve 20%), compares it with a per-round *balance heuristic*
importance estimator over every slot (multiple importance sampling, Veach & Guibas 1995):

    θ̂_r = Σ_{slots j of round r} (1/C) · y_j / E_r[c_j],      θ̂ = mean over rounds of θ̂_r

where E_r[c] is the expected number of round-r slots that go to cell c given everything known
when the round was allocated — marginal over *both* the round's uniform picks and the θ̃ draw.
Each θ̂_r then has conditional mean exactly the uniform-mix rate (1/C) Σ_c p_c, so the rounds
are martingale differences; the interval is normal with the between-round variance. Because the
uniform reserve alone gives E_r[c] ≥ n_uniform/C, every weight is at most 1/n_uniform: no cell's
weight can explode, which is what defeated per-slot inverse-propensity weighting.

Why the product cannot use its recorded propensities for this: a slot's recorded propensity is
marginal over θ̃ but *conditional on the round's realised uniform picks* (``allocate_draws``
takes them as fixed), and the yield tier avoids a cell the uniform tier just drew. Summing the
recorded propensities under-states E_r[c] exactly when c was drawn, and the estimator built on
them is biased (+7 pp on Beta(0.6, 2.4) cells, measured while writing this). Here E_r[c] is
computed by replaying the round with fresh uniform picks and θ̃ (``--groups`` × 10 replays; the
uniform part n_uniform/C is exact). Making it the headline needs the scheduler to record E_r[c]
per round (the replays vectorised over per-row uniform picks), a field on each run, and the
stats wiring.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from adaptive_coverage import CELLS, Z95, Tally  # noqa: E402

from oracles import scheduler as sched_mod  # noqa: E402
from oracles.scheduler import CampaignParams, Cell, Scheduler, Slot, allocate_draws  # noqa: E402
from oracles.statistics import Counts, reserve_uniform_rate  # noqa: E402

FloatArray = NDArray[np.float64]
ROWS = 10  # θ̃ replays per group of uniform picks


class ReplayingScheduler(Scheduler):
    """The shipped scheduler, plus E_r[c] for each round it allocates (replays before the real draw)."""

    def __init__(self, params: CampaignParams, groups: int) -> None:
        super().__init__(params)
        self.groups = groups
        self.expected: FloatArray | None = None

    def _allocate(self, cells: list[Cell], pool: Mapping[Cell, Sequence[str]], n_new: int) -> list[Slot]:
        p = self.params
        for c in cells:
            if c not in self.cells:
                alpha, beta = self._prior(c)
                self.cells[c] = sched_mod._CellState(alpha=alpha, beta=beta)
        alphas = [self.cells[c].alpha for c in cells]
        betas = [self.cells[c].beta for c in cells]
        # The projected loads exactly as Scheduler._allocate computes them at the round's start.
        index = {c: i for i, c in enumerate(cells)}
        cell_load = np.array([self.cells[c].scored for c in cells], dtype=np.int64)
        in_flight = (*self.outstanding.values(), *self.retry_queue)
        for s in in_flight:
            if s.cell in index:
                cell_load[index[s.cell]] += 1
        archetypes = sorted({c[0] for c in cells})
        arch_pos = {a: i for i, a in enumerate(archetypes)}
        arch_of = np.array([arch_pos[c[0]] for c in cells], dtype=np.int64)
        arch_load = np.array([self.archetype_scored.get(a, 0) for a in archetypes], dtype=np.int64)
        for s in in_flight:
            if s.cell[0] in arch_pos:
                arch_load[arch_pos[s.cell[0]]] += 1
        quota = math.floor(p.uniform_share * (self.fresh_issued + n_new) + 0.5) - self.uniform_issued
        n_uniform = max(0, min(n_new, quota))
        rng = np.random.default_rng([p.seed, self.round, 99])
        adaptive = np.zeros(len(cells))
        for _ in range(self.groups):
            uniform = [int(u) for u in rng.integers(len(cells), size=n_uniform)]
            theta = rng.beta(alphas, betas, size=(ROWS, len(cells)))
            picks, _ = allocate_draws(
                theta, cell_load, arch_load, arch_of, uniform, n_new, q_floor=p.q_floor, q_ceil=p.q_ceil
            )
            adaptive += np.bincount(picks[:, n_uniform:].ravel(), minlength=len(cells))
        self.expected = adaptive / (self.groups * ROWS) + n_uniform / len(cells)
        return super()._allocate(cells, pool, n_new)


def one_campaign(seed: int, rates: FloatArray, groups: int) -> tuple[tuple[float | None, float, float], float, float]:
    """(reserve estimate, low, high), and the balance estimator's estimate and standard error."""
    pool = {c: [f"{c[0]}.{c[1]}.s{i}" for i in range(8)] for c in CELLS}
    index = {c: i for i, c in enumerate(CELLS)}
    outcomes = np.random.default_rng([seed, 1])
    sched = ReplayingScheduler(CampaignParams(n=500, k=10, q_floor=15, q_ceil=30, seed=seed), groups)
    per_round: list[float] = []
    reserve_hits = reserve_n = 0
    while not sched.done:
        sched.expected = None
        slots = sched.next_round(pool)
        if not slots:
            break
        expected = sched.expected
        assert expected is not None, "a retry-only round: the simulation has no invalid runs"
        value = 0.0
        for slot in slots:
            cell = index[slot.cell]
            hit = bool(outcomes.random() < rates[cell])
            sched.record(slot, hit)
            value += hit / (len(CELLS) * expected[cell])
            if slot.tier == "uniform":
                reserve_hits, reserve_n = reserve_hits + hit, reserve_n + 1
        per_round.append(value)
    mix = reserve_uniform_rate({}, Counts(reserve_hits, reserve_n))
    v = np.array(per_round)
    return (mix.uniform, mix.low, mix.high), float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--design", choices=("beta", "sparse"), default="beta")
    parser.add_argument("--groups", type=int, default=100, help="groups of uniform picks replayed per round")
    args = parser.parse_args()
    reserve, balance = Tally(), Tally()
    started = time.perf_counter()
    for seed in range(args.seeds):
        rng = np.random.default_rng([seed, 0])
        if args.design == "beta":
            rates = rng.beta(0.6, 2.4, size=len(CELLS))
        else:  # a few cells at 0.9, most near 0.02
            rates = np.full(len(CELLS), 0.02)
            rates[rng.choice(len(CELLS), 6, replace=False)] = 0.9
        truth = float(rates.mean())
        (r_est, r_low, r_high), est, se = one_campaign(seed, rates, args.groups)
        reserve.add(r_est, r_low, r_high, truth)
        balance.add(est, max(0.0, est - Z95 * se), min(1.0, est + Z95 * se), truth)
        if (seed + 1) % 10 == 0:
            print(f"  {seed + 1}/{args.seeds} campaigns, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    print(f"headline estimators: {args.seeds} campaigns, design {args.design}, N=500, K=10, reserve 20%")
    print(f"{'estimator':<44}{'against':<22}{'bias':>10}{'coverage':>10}{'width':>10}")
    print(reserve.row("reserve Wilson (shipped)", "uniform mix"))
    print(balance.row("per-round balance heuristic, all slots", "uniform mix"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
