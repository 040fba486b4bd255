"""Allocation for consent-paired campaigns (issue 11). Pure Python + NumPy: no Django.

A paired campaign runs, on one SUT, both members of scenario pairs: the verified scenario *with*
its consent phrasing and its consent-stripped twin (identical bytes everywhere else). Pairs are
drawn stratified over archetype × consent mode × channel — round-robin over the strata in a
seeded order, without replacement within a stratum while unused pairs remain — and both members
get the same mutation plan and run under the same SUT, in a seeded random order (the first
member is enqueued first).

The interface is the one ``oracles.scheduler.Scheduler`` offers the campaign coordinator —
``next_round(items)``, ``record(slot, outcome)``, ``outstanding``, ``dropped``, ``done``,
``to_dict()/from_dict()`` — so the same crash-proof machinery executes it. Slot ``index`` 2i is
pair i's member "with", 2i + 1 its member "stripped"; ``scenario_id`` is the member's scenario.

Budget: ``n`` complete pairs (both members scored). A member that stays invalid after
``max_attempts`` makes its pair *incomplete*: the pair is kept on the record (``incomplete``) and
excluded from paired statistics, and a replacement pair is drawn, so the campaign still ends with
n complete pairs. Nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oracles.scheduler import OPERATORS, CampaignParams, Mutations, Slot, retry_or_drop

Stratum = tuple[str, str, str]
"""(archetype, consent mode, channel)."""

MEMBERS = ("with", "stripped")
STATE_VERSION = 1
_ORDER_STREAM = 10
_PAIR_STREAM = 11


@dataclass(frozen=True)
class PairItem:
    """A drawable pair: the kept scenario's id and its stripped twin's id."""

    kept: str
    stripped: str


@dataclass
class _Pair:
    index: int
    round: int
    stratum: Stratum
    kept: str
    stripped: str
    mutations: Mutations
    first: str  # the member executed first
    repeat: bool = False
    outcomes: dict[str, bool | None] = field(default_factory=dict)  # member → verdict (None = given up)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "round": self.round,
            "stratum": list(self.stratum),
            "kept": self.kept,
            "stripped": self.stripped,
            "mutations": self.mutations.to_dict(),
            "first": self.first,
            "repeat": self.repeat,
            "outcomes": dict(self.outcomes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> _Pair:
        a, c, ch = data["stratum"]
        return cls(
            index=int(data["index"]),
            round=int(data["round"]),
            stratum=(str(a), str(c), str(ch)),
            kept=str(data["kept"]),
            stripped=str(data["stripped"]),
            mutations=Mutations.from_dict(data["mutations"]),
            first=str(data["first"]),
            repeat=bool(data["repeat"]),
            outcomes={str(k): (None if v is None else bool(v)) for k, v in data["outcomes"].items()},
        )

    @property
    def complete(self) -> bool:
        return all(self.outcomes.get(m) is not None for m in MEMBERS)

    @property
    def incomplete(self) -> bool:
        return any(m in self.outcomes and self.outcomes[m] is None for m in MEMBERS)


class PairedAllocator:
    """Allocation state of a paired campaign; ``params.n`` counts complete pairs, ``params.k`` pairs per round."""

    def __init__(self, params: CampaignParams | None = None) -> None:
        self.params = params or CampaignParams()
        self.round = 0
        self.pairs: dict[int, _Pair] = {}
        self.used: dict[Stratum, set[str]] = {}
        self.next_stratum = 0  # round-robin position over the sorted, seeded stratum order
        self.outstanding: dict[tuple[int, int], Slot] = {}
        self.retry_queue: list[Slot] = []
        self.dropped: list[Slot] = []
        self.scored = 0  # member runs with a verdict
        self.triggers = 0

    # -- queries ------------------------------------------------------------------------------

    @property
    def complete_pairs(self) -> int:
        return sum(1 for p in self.pairs.values() if p.complete)

    @property
    def incomplete_pairs(self) -> list[int]:
        return sorted(i for i, p in self.pairs.items() if p.incomplete)

    @property
    def done(self) -> bool:
        return self.complete_pairs >= self.params.n

    def _in_flight_pairs(self) -> int:
        return sum(1 for p in self.pairs.values() if not p.complete and not p.incomplete)

    def member_of(self, slot: Slot) -> str:
        return MEMBERS[slot.index % 2]

    def pair_of(self, slot: Slot) -> _Pair:
        return self.pairs[slot.index // 2]

    def run_fields(self, slot: Slot) -> dict[str, Any]:
        pair = self.pair_of(slot)
        member = self.member_of(slot)
        return {
            "member": member,
            "pair_key": f"p{pair.index}",
            "pair_order": 0 if pair.first == member else 1,
        }

    # -- allocation ---------------------------------------------------------------------------

    def next_round(self, items: Mapping[Stratum, Sequence[PairItem]]) -> list[Slot]:
        if self.done:
            return []
        slots = list(self.retry_queue)
        self.retry_queue = []
        wanted = self.params.n - self.complete_pairs - self._in_flight_pairs()
        new_pairs = min(self.params.k, max(0, wanted))
        strata = self._strata_order(items)
        if new_pairs and not strata:
            raise ValueError("the pool has no verified scenario pairs (build the twins first)")
        for _ in range(new_pairs):
            stratum = strata[self.next_stratum % len(strata)]
            self.next_stratum += 1
            slots.extend(self._draw_pair(stratum, items[stratum]))
        if not slots:
            return []
        for s in slots:
            self.outstanding[s.key] = s
        self.round += 1
        return slots

    def _strata_order(self, items: Mapping[Stratum, Sequence[PairItem]]) -> list[Stratum]:
        strata = sorted(s for s, pairs in items.items() if pairs)
        rng = np.random.default_rng([self.params.seed, _ORDER_STREAM])
        return [strata[i] for i in rng.permutation(len(strata))]

    def _draw_pair(self, stratum: Stratum, pairs: Sequence[PairItem]) -> list[Slot]:
        index = len(self.pairs)
        rng = np.random.default_rng([self.params.seed, _PAIR_STREAM, index])
        m = int(rng.choice(self.params.m_choices))
        ops = sorted(int(i) for i in rng.choice(len(OPERATORS), size=m, replace=False))
        mutations = Mutations(operators=tuple(OPERATORS[i] for i in ops), seed=int(rng.integers(0, 2**32)))
        ordered = sorted(pairs, key=lambda p: p.kept)
        used = self.used.setdefault(stratum, set())
        unused = [p for p in ordered if p.kept not in used]
        repeat = not unused
        choice = (ordered if repeat else unused)[int(rng.integers(len(ordered if repeat else unused)))]
        used.add(choice.kept)
        first = MEMBERS[int(rng.integers(2))]
        pair = _Pair(index, self.round, stratum, choice.kept, choice.stripped, mutations, first, repeat)
        self.pairs[index] = pair
        cell = (stratum[0], stratum[1])
        members = [
            Slot(self.round, 2 * index, cell, choice.kept, mutations, "yield", repeat=repeat),
            Slot(self.round, 2 * index + 1, cell, choice.stripped, mutations, "yield", repeat=repeat),
        ]
        return members if first == "with" else members[::-1]

    # -- outcomes -----------------------------------------------------------------------------

    def record(self, slot: Slot, outcome: bool | None) -> None:
        current = self.outstanding.get(slot.key)
        if current is None or current.attempt != slot.attempt:
            raise ValueError(f"slot {slot.key} attempt {slot.attempt} is not outstanding")
        del self.outstanding[slot.key]
        pair = self.pair_of(current)
        member = self.member_of(current)
        if outcome is None:
            if retry_or_drop(current, self.params.max_attempts, self.retry_queue, self.dropped):
                pair.outcomes[member] = None  # the pair is incomplete; a replacement will be drawn
            return
        pair.outcomes[member] = bool(outcome)
        self.scored += 1
        self.triggers += bool(outcome)

    # -- persistence --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": "paired",
            "params": self.params.to_dict(),
            "round": self.round,
            "scored": self.scored,
            "triggers": self.triggers,
            "next_stratum": self.next_stratum,
            "pairs": [p.to_dict() for _, p in sorted(self.pairs.items())],
            "used": [[*s, sorted(ids)] for s, ids in sorted(self.used.items())],
            "outstanding": [s.to_dict() for _, s in sorted(self.outstanding.items())],
            "retry_queue": [s.to_dict() for s in self.retry_queue],
            "dropped": [s.to_dict() for s in self.dropped],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairedAllocator:
        if data.get("version") != STATE_VERSION or data.get("kind") != "paired":
            raise ValueError("not a paired-allocator state (or an unsupported version)")
        alloc = cls(CampaignParams.from_dict(data["params"]))
        alloc.round = int(data["round"])
        alloc.scored = int(data["scored"])
        alloc.triggers = int(data["triggers"])
        alloc.next_stratum = int(data["next_stratum"])
        alloc.pairs = {int(p["index"]): _Pair.from_dict(p) for p in data["pairs"]}
        alloc.used = {(str(a), str(c), str(ch)): set(ids) for a, c, ch, ids in data["used"]}
        alloc.outstanding = {s.key: s for s in map(Slot.from_dict, data["outstanding"])}
        alloc.retry_queue = [Slot.from_dict(s) for s in data["retry_queue"]]
        alloc.dropped = [Slot.from_dict(s) for s in data["dropped"]]
        return alloc
