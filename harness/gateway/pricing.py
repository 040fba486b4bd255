"""What model calls cost: prices per million tokens, a run's cost from the gateway's own counts.

A run is priced from the tokens the gateway metered (``RunUsage``: what the provider reported,
or the gateway's estimate where it reported nothing), never from what the agent claims.  Where
the agent's framework reports its own cost (Claude Code's ``total_cost_usd``, mini-swe-agent's
``instance_cost``) the claim is kept beside the metered cost and a disagreement above
:data:`DISAGREEMENT` is flagged: a framework with a stale price table, or one that hides calls
from its own count, shows up there.

Prices are USD per million tokens, as providers publish them.  Prompt tokens split three ways:

    cost = (input − cached − cache writes) × input price
         + cached × cached-input price
         + cache writes × cache-write price (the input price where none is set)
         + output × output price

``input_tokens`` counts every prompt token (harness.gateway.protocols.Usage), so the uncached
part is the difference.  Money is ``Decimal`` throughout: a campaign sums thousands of
sub-cent amounts, and a cap compared against a float sum could be crossed by rounding.

:data:`DEFAULT_PRICES` is a small dated table for models of the providers the gateway speaks
(Anthropic, OpenAI, Google); curators copy a row into an endpoint in the admin and check it
against the provider's page, since prices change.  Long-context surcharges (Gemini over 200k
prompt tokens) and batch discounts are not modelled: the base tier is what a benchmark run pays.

No Django here.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

MILLION = Decimal(1_000_000)
# Stored costs keep ten decimal places of a dollar: one token of the cheapest model in the
# table costs 3e-8 USD, so nothing a run spends rounds away.
QUANTUM = Decimal("0.0000000001")
# |agent's claim − metered| / metered above this is flagged on the run's page.
DISAGREEMENT = 0.10


class PriceError(ValueError):
    pass


@dataclass(frozen=True)
class Price:
    """USD per million tokens, and the day they were set (what the provider charged then)."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None  # None: cached tokens cost the input price
    cache_write: Decimal | None = None  # None: cache writes cost the input price
    set_on: dt.date | None = None
    notional: bool = False  # no provider bills these tokens (a scripted or local model)
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("input", "output", "cached_input", "cache_write"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, Decimal):
                raise PriceError(f"{name} must be a Decimal, got {type(value).__name__}")
            if not value.is_finite() or value < 0:
                raise PriceError(f"{name} must be a finite amount of at least 0, got {value}")

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe (amounts as strings, so no float rounding enters a snapshot)."""
        return {
            "input_per_mtok": str(self.input),
            "output_per_mtok": str(self.output),
            "cached_input_per_mtok": None if self.cached_input is None else str(self.cached_input),
            "cache_write_per_mtok": None if self.cache_write is None else str(self.cache_write),
            "set_on": self.set_on.isoformat() if self.set_on else None,
            "notional": self.notional,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Price:
        def amount(key: str) -> Decimal | None:
            value = data.get(key)
            if value is None or value == "":
                return None
            try:
                return Decimal(str(value))
            except ArithmeticError:
                raise PriceError(f"{key}: {value!r} is not an amount") from None

        inp, out = amount("input_per_mtok"), amount("output_per_mtok")
        if inp is None or out is None:
            raise PriceError("a price needs input_per_mtok and output_per_mtok")
        set_on = data.get("set_on")
        return cls(
            input=inp,
            output=out,
            cached_input=amount("cached_input_per_mtok"),
            cache_write=amount("cache_write_per_mtok"),
            set_on=dt.date.fromisoformat(set_on) if set_on else None,
            notional=bool(data.get("notional")),
            source=str(data.get("source") or ""),
        )


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def cost_of(price: Price, usage: Mapping[str, Any]) -> Decimal:
    """What ``usage`` (a run's or a call's token counts, as the gateway records them) costs."""
    inp = _tokens(usage, "input_tokens")
    out = _tokens(usage, "output_tokens")
    # Clamped: a count that claims more cached than prompt tokens must not make the rest negative.
    cached = min(_tokens(usage, "cached_input_tokens"), inp)
    written = min(_tokens(usage, "cache_write_tokens"), inp - cached)
    plain = inp - cached - written
    total = (
        plain * price.input
        + cached * (price.input if price.cached_input is None else price.cached_input)
        + written * (price.input if price.cache_write is None else price.cache_write)
        + out * price.output
    ) / MILLION
    return total.quantize(QUANTUM, rounding=ROUND_HALF_EVEN)


def agent_claim(events: Iterable[Mapping[str, Any]]) -> float | None:
    """The run's cost as its framework reported it (the sum of its usage events' ``cost_usd``)."""
    claims = [e.get("cost_usd") for e in events if e.get("kind") == "usage"]
    numbers = [float(c) for c in claims if isinstance(c, int | float) and not isinstance(c, bool)]
    return sum(numbers) if numbers else None


def disagreement(metered: Decimal, claimed: float) -> float | None:
    """|claimed − metered| / metered, or None when the metered cost is zero (no ratio exists).

    Relative to the metered cost because that is the figure the product stands behind; a claim of
    anything for a run the gateway metered at zero is flagged by :func:`flagged` on its own.
    """
    if metered <= 0:
        return None
    return abs(float(Decimal(str(claimed)) - metered) / float(metered))


def flagged(metered: Decimal, claimed: float | None) -> bool:
    if claimed is None:
        return False
    ratio = disagreement(metered, claimed)
    if ratio is None:
        return claimed > 0
    return ratio > DISAGREEMENT


# -- the shipped default table ------------------------------------------------------------------

DEFAULT_TABLE_DATE = dt.date(2025, 11, 24)
DEFAULT_SOURCE = (
    "Overeager's default table of {date}, from the providers' published list prices (base tier,"
    " no batch or long-context rates): check the provider's page before relying on it"
)

# model id prefix → (input, output, cached input, cache write) USD per million tokens.
_DEFAULTS: dict[str, tuple[str, str, str, str | None]] = {
    # Anthropic: cache reads at 0.1×, five-minute cache writes at 1.25× the input price.
    "claude-opus-4-5": ("5", "25", "0.50", "6.25"),
    "claude-opus-4-1": ("15", "75", "1.50", "18.75"),
    "claude-opus-4": ("15", "75", "1.50", "18.75"),
    "claude-sonnet-4-5": ("3", "15", "0.30", "3.75"),
    "claude-sonnet-4": ("3", "15", "0.30", "3.75"),
    "claude-haiku-4-5": ("1", "5", "0.10", "1.25"),
    "claude-3-5-haiku": ("0.80", "4", "0.08", "1"),
    # OpenAI: cached input as listed; no cache-write charge.
    "gpt-5": ("1.25", "10", "0.125", None),
    "gpt-5-mini": ("0.25", "2", "0.025", None),
    "gpt-4.1": ("2", "8", "0.50", None),
    "gpt-4.1-mini": ("0.40", "1.60", "0.10", None),
    "gpt-4o": ("2.50", "10", "1.25", None),
    "gpt-4o-mini": ("0.15", "0.60", "0.075", None),
    # Google Gemini: prompts up to 200k tokens; cached content at a tenth of the input price.
    "gemini-2.5-pro": ("1.25", "10", "0.125", None),
    "gemini-2.5-flash": ("0.30", "2.50", "0.03", None),
}


def default_prices() -> dict[str, Price]:
    source = DEFAULT_SOURCE.format(date=DEFAULT_TABLE_DATE.isoformat())
    return {
        model: Price(
            input=Decimal(i),
            output=Decimal(o),
            cached_input=Decimal(c),
            cache_write=None if w is None else Decimal(w),
            set_on=DEFAULT_TABLE_DATE,
            source=source,
        )
        for model, (i, o, c, w) in _DEFAULTS.items()
    }


def default_price(model_id: str) -> tuple[str, Price] | None:
    """The table's row for ``model_id``, or None.

    A row matches the id itself or the id with a dated snapshot or alias suffix
    (``claude-sonnet-4-5-20250929``, ``gpt-4o-mini-2024-07-18``, ``claude-3-5-haiku-latest``,
    ``gemini-2.5-pro-preview-06-05``) and nothing else: ``gpt-5-nano`` or ``claude-opus-4-6`` are
    other models with other prices, and an unknown model is better unpriced than mispriced.
    """
    model = model_id.strip().lower().rsplit("/", 1)[-1]
    table = default_prices()
    for prefix in sorted(table, key=len, reverse=True):
        if model == prefix or (model.startswith(prefix + "-") and _SUFFIX.fullmatch(model[len(prefix) + 1 :])):
            return prefix, table[prefix]
    return None


_SUFFIX = re.compile(r"\d{4}[\d-]*|latest|preview(-[\w.-]+)?|exp(-[\w.-]+)?")
