"""Campaign cost arithmetic: the estimate shown before a campaign starts, and the cap's brake.

Pure Python + SciPy: no Django.  Amounts are USD as ``float`` here — estimates and projections,
not the accounting (the stored costs are ``Decimal``, harness.gateway.pricing).

**The estimate** is what the issue asks for: the planned runs × the median cost of a run of the
same system so far (or of a pilot), with the median's distribution-free 95% confidence interval
from order statistics (``scipy.stats.quantile_test``, the binomial method: no assumption about
the shape of the cost distribution, which is skewed — a run that loops costs many typical ones).
It needs six runs: below that no pair of order statistics covers the median with 95%
confidence, and the interval is reported as unknown rather than invented.  The median is the
typical run; a total is a sum, whose expectation is runs × the *mean*: on right-skewed costs
runs × median under-states a campaign's total (bench/cost_estimate.py: by a quarter to a half),
so the mean-based total is reported beside it with a 95% *prediction* interval for the total —
the figure to budget from.

**The brake** decides before each issue of new runs whether spending could cross a cap:

    spent + (runs in flight + runs about to be issued) × cost per run so far  >  cap  →  stop

Runs in flight are counted because they will spend whatever the decision is.  The cost per run is
the mean of the finished attempts (every attempt is paid for, retries included); before any has
finished it is the prior estimate's mean, or unknown — then only an already crossed cap stops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from scipy.stats import quantile_test
from scipy.stats import t as student_t

CONFIDENCE = 0.95
MIN_RUNS_FOR_INTERVAL = 6


@dataclass(frozen=True)
class CostEstimate:
    runs: int  # runs the estimate is for
    sample: int  # finished runs it rests on
    median: float  # per run
    low: float | None  # the median's 95% interval, per run (None: too few runs for one)
    high: float | None
    mean: float  # per run
    sd: float = 0.0  # per run (sample standard deviation)

    @property
    def total(self) -> float:
        return self.runs * self.median

    @property
    def total_low(self) -> float | None:
        return None if self.low is None else self.runs * self.low

    @property
    def total_high(self) -> float | None:
        return None if self.high is None else self.runs * self.high

    @property
    def total_from_mean(self) -> float:
        return self.runs * self.mean

    @property
    def total_prediction(self) -> tuple[float, float] | None:
        """A 95% prediction interval for the campaign's actual total (None below two runs).

        The total T of N new runs is estimated by N·x̄; T − N·x̄ has variance N·σ² (the new runs
        vary) + N²·σ²/n (x̄ is itself estimated from n runs), so T ∈ N·x̄ ± t(n−1)·s·√(N + N²/n)
        — a normal approximation (the CLT over N runs), clipped at 0; bench/cost_estimate.py
        measures its coverage on skewed planted costs.
        """
        if self.sample < 2:
            return None
        half = float(student_t.ppf(0.5 + CONFIDENCE / 2, self.sample - 1)) * self.sd
        half *= math.sqrt(self.runs + self.runs**2 / self.sample)
        return max(0.0, self.total_from_mean - half), self.total_from_mean + half

    def as_dict(self) -> dict[str, Any]:
        prediction = self.total_prediction
        return {
            **asdict(self),
            "total": self.total,
            "total_low": self.total_low,
            "total_high": self.total_high,
            "total_from_mean": self.total_from_mean,
            "total_prediction_low": prediction[0] if prediction else None,
            "total_prediction_high": prediction[1] if prediction else None,
            "confidence": CONFIDENCE,
            "method": (
                f"runs × median cost per run of {self.sample} finished runs; interval: the median's"
                f" distribution-free {CONFIDENCE:.0%} confidence interval (order statistics,"
                f" binomial method), × runs"
            ),
        }


def estimate(costs: Sequence[float], runs: int) -> CostEstimate | None:
    """The cost of ``runs`` runs from the per-run costs of earlier ones (None without any)."""
    values = sorted(float(c) for c in costs if c is not None and math.isfinite(float(c)))
    if not values or runs < 0:
        return None
    n = len(values)
    median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    low: float | None = None
    high: float | None = None
    if n >= MIN_RUNS_FOR_INTERVAL:
        ci = quantile_test(values, q=median, p=0.5).confidence_interval(CONFIDENCE)
        if math.isfinite(ci.low) and math.isfinite(ci.high):
            low, high = float(ci.low), float(ci.high)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return CostEstimate(runs=runs, sample=n, median=median, low=low, high=high, mean=mean, sd=sd)


@dataclass(frozen=True)
class Projection:
    spent: float
    in_flight: int
    next_runs: int
    per_run: float | None  # None: nothing to project from yet
    cap: float

    @property
    def projected(self) -> float:
        return self.spent + (self.in_flight + self.next_runs) * (self.per_run or 0.0)

    @property
    def crosses(self) -> bool:
        """Whether issuing ``next_runs`` more could take spending over the cap."""
        return self.spent >= self.cap or (self.next_runs > 0 and self.projected > self.cap)
