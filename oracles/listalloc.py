"""Allocation for UnderSpecBench campaigns: a fixed list of prompts, run once each. Pure Python.

Two campaign types share it (issue 8 §4):

* **full matrix** — every prompt of the suite (69 families × 32 variants = 2,208) once, in a
  seeded order;
* **stratified sample** — a budget of N prompts balanced over families × axis cells: families
  are visited round-robin in a seeded order, and within a family the variants are drawn without
  replacement so that every S × B × R cell is used once before any repeats (``sample_items``).

The interface is the one ``oracles.scheduler.Scheduler`` offers the coordinator (``next_round``,
``record``, ``outstanding``, ``dropped``, ``done``, ``to_dict``/``from_dict``), so the same
crash-proof execution runs it. Rounds of K prompts; an invalid run is retried with the same prompt
up to ``max_attempts`` and then dropped — a fixed list has no replacement to draw, so a dropped
prompt is reported as missing rather than re-spent elsewhere (the campaign is done when every
item is scored or dropped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from oracles.scheduler import CampaignParams, Mutations, Slot, retry_or_drop

STATE_VERSION = 1
NO_MUTATIONS = Mutations(operators=(), seed=0)
_ORDER_STREAM = 20


def item_key(family: str, variant: str) -> str:
    return f"{family}/{variant}"


def full_items(prompts: Mapping[str, Sequence[str]], seed: int) -> list[str]:
    """Every (family, variant) once, in a seeded order (runs of one family spread over the campaign)."""
    items = sorted(item_key(f, v) for f, variants in prompts.items() for v in variants)
    rng = np.random.default_rng([seed, _ORDER_STREAM])
    return [items[i] for i in rng.permutation(len(items))]


def sample_items(prompts: Mapping[str, Sequence[str]], n: int, seed: int) -> list[str]:
    """N prompts balanced over families (round-robin) and, within a family, over its variants."""
    families = sorted(f for f, v in prompts.items() if v)
    if not families:
        return []
    rng = np.random.default_rng([seed, _ORDER_STREAM])
    order = [families[i] for i in rng.permutation(len(families))]
    decks: dict[str, list[str]] = {}
    out: list[str] = []
    i = 0
    while len(out) < n:
        family = order[i % len(order)]
        i += 1
        deck = decks.get(family)
        if not deck:
            variants = sorted(prompts[family])
            deck = decks[family] = [variants[j] for j in rng.permutation(len(variants))]
        out.append(item_key(family, deck.pop()))
    return out


class ListAllocator:
    """Issue each item of a fixed list once (retrying invalid runs), K per round."""

    def __init__(self, params: CampaignParams, items: Sequence[str]) -> None:
        self.params = params
        self.items = list(items)
        self.round = 0
        self.next_item = 0
        self.outstanding: dict[tuple[int, int], Slot] = {}
        self.retry_queue: list[Slot] = []
        self.dropped: list[Slot] = []
        self.results: dict[int, bool] = {}  # item index → the run's "overstep" outcome
        self.scored = 0
        self.triggers = 0

    @property
    def done(self) -> bool:
        return self.next_item >= len(self.items) and not self.outstanding and not self.retry_queue

    def cell_of(self, item: str) -> tuple[tuple[str, str], str]:
        """An item's cell and the scenario id its slot carries: ``family/variant`` is both."""
        family, _, variant = item.partition("/")
        return (family, variant), item

    def next_round(self, _items: Any = None) -> list[Slot]:
        if self.done:
            return []
        slots = list(self.retry_queue)
        self.retry_queue = []
        while len(slots) < self.params.k and self.next_item < len(self.items):
            index = self.next_item
            cell, scenario_id = self.cell_of(self.items[index])
            slots.append(Slot(self.round, index, cell, scenario_id, NO_MUTATIONS, "yield"))
            self.next_item += 1
        if not slots:
            return []
        for s in slots:
            self.outstanding[s.key] = s
        self.round += 1
        return slots

    def record(self, slot: Slot, outcome: bool | None) -> None:
        current = self.outstanding.get(slot.key)
        if current is None or current.attempt != slot.attempt:
            raise ValueError(f"slot {slot.key} attempt {slot.attempt} is not outstanding")
        del self.outstanding[slot.key]
        if outcome is None:
            retry_or_drop(current, self.params.max_attempts, self.retry_queue, self.dropped)
            return
        self.results[current.index] = bool(outcome)
        self.scored += 1
        self.triggers += bool(outcome)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": "list",
            "params": self.params.to_dict(),
            "items": self.items,
            "round": self.round,
            "next_item": self.next_item,
            "scored": self.scored,
            "triggers": self.triggers,
            "results": [[i, r] for i, r in sorted(self.results.items())],
            "outstanding": [s.to_dict() for _, s in sorted(self.outstanding.items())],
            "retry_queue": [s.to_dict() for s in self.retry_queue],
            "dropped": [s.to_dict() for s in self.dropped],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ListAllocator:
        if data.get("version") != STATE_VERSION or data.get("kind") != "list":
            raise ValueError("not a list-allocator state (or an unsupported version)")
        alloc = cls(CampaignParams.from_dict(data["params"]), [str(i) for i in data["items"]])
        alloc.round = int(data["round"])
        alloc.next_item = int(data["next_item"])
        alloc.scored = int(data["scored"])
        alloc.triggers = int(data["triggers"])
        alloc.results = {int(i): bool(r) for i, r in data["results"]}
        alloc.outstanding = {s.key: s for s in map(Slot.from_dict, data["outstanding"])}
        alloc.retry_queue = [Slot.from_dict(s) for s in data["retry_queue"]]
        alloc.dropped = [Slot.from_dict(s) for s in data["dropped"]]
        return alloc
