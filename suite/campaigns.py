"""UnderSpecBench campaigns: every prompt once (full matrix) or a balanced sample (stratified).

Registered as the ``usb-full`` and ``usb-sample`` campaign kinds (``SuiteConfig.ready``): the
allocation (``oracles.listalloc``), the execution of one run in its world (``suite.execution.run_task``)
(``suite.execution.run_task``), and what the campaign and run pages show of it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from harness.outcome import Outcome
from oracles.listalloc import ListAllocator, full_items, item_key, sample_items
from oracles.scheduler import CampaignParams, Slot
from pool.models import PoolVersion
from runs.campaigns import Allocator, CampaignError, Plan
from runs.models import Campaign, CampaignKind, Run, RunAttempt
from suite.oracle import ORACLE_VERSION as SUITE_ORACLE_VERSION

_lock = threading.Lock()


@dataclass(frozen=True)
class SuiteIndex:
    """The suite's prompts: variants per family, and what a run row needs of each prompt."""

    variants: dict[str, list[str]]
    prompts: dict[str, tuple[int, str, str, int, int, int]]  # "family/variant" → pk, domain, surface, s, b, r


_suite_cache: dict[str, SuiteIndex] = {}


def suite_index() -> SuiteIndex:
    """The current suite's prompts (cached per suite digest: an admin edit gives a new index)."""
    from suite.models import FamilyPrompt, SuiteVersion

    # The digest names the content; the first prompt's key names the rows.  The same suite loaded
    # again (a database emptied and refilled, as transactional tests do) has new primary keys, and
    # an index cached by content alone handed out keys of rows that no longer exist.
    first = FamilyPrompt.objects.order_by("pk").values_list("pk", flat=True).first()
    digest = f"{SuiteVersion.current_digest()}:{first}"
    with _lock:
        cached = _suite_cache.get(digest)
    if cached is not None:
        return cached
    variants: dict[str, list[str]] = {}
    prompts: dict[str, tuple[int, str, str, int, int, int]] = {}
    rows = FamilyPrompt.objects.select_related("family").values_list(
        "pk", "family__slug", "family__domain", "family__surface", "s", "b", "r"
    )
    for pk, slug, domain, surface, s_, b, r in rows:
        variant = f"S{s_}-B{b}-R{r}"
        variants.setdefault(slug, []).append(variant)
        prompts[item_key(slug, variant)] = (pk, domain, surface, s_, b, r)
    index = SuiteIndex(variants, prompts)
    with _lock:
        _suite_cache[digest] = index
    return index


def suite_items(kind: str, n: int, seed: int) -> list[str]:
    variants = suite_index().variants
    if kind == CampaignKind.USB_FULL:
        return full_items(variants, seed)
    return sample_items(variants, n, seed)


_family_cache: dict[tuple[str, str], dict[str, Any]] = {}


def family_data(slug: str) -> dict[str, Any]:
    from suite.models import TaskFamily

    family = TaskFamily.objects.get(slug=slug)
    key = (slug, family.digest)
    if key not in _family_cache:
        _family_cache[key] = family.to_data()
    return _family_cache[key]


def perform_suite(run: Run, attempt: RunAttempt) -> Outcome:
    from runs.gateway import gateway_handle
    from runs.performing import adapter_for, evidence_dir, record_limits, sut_limits
    from suite.execution import run_task

    campaign = run.campaign
    sut = campaign.sut
    assert run.prompt is not None
    family = family_data(run.family)
    adapter = adapter_for(run)
    folder = evidence_dir(campaign, run, attempt)
    RunAttempt.objects.filter(pk=attempt.pk).update(
        prompt=run.prompt.text, evidence_dir=str(folder), backend=campaign.backend
    )
    result = run_task(
        family,
        run.prompt.text,
        sut.runner_config(),
        axes={"s": run.prompt.s, "b": run.prompt.b, "r": run.prompt.r},
        backend=campaign.backend,
        run_id=str(run.pk),
        attempt=attempt.number,
        evidence_dir=folder,
        gateway=gateway_handle() if adapter.uses_gateway else None,
        adapter=adapter,
        **record_limits(run, attempt, sut_limits(sut, run.campaign.run_token_cap)),
    )
    return result.outcome()


class SuitePlan(Plan):
    """UnderSpecBench: every prompt once (full matrix) or a balanced sample of N (stratified)."""

    oracle_name = "the UnderSpecBench oracle (suite/oracle.py)"
    oracle_version = SUITE_ORACLE_VERSION

    # A list of prompts in a seeded order (suite_items), K per round: no posterior, no mutations.
    params_used = ("n", "k", "j", "seed", "max_attempts")

    def prepare(self, pool: PoolVersion | None, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        from suite.models import SuiteVersion

        if not suite_index().prompts:
            raise CampaignError("the UnderSpecBench suite is empty: run `manage.py load_suite` first")
        return params, {"suite_digest": SuiteVersion.current_digest()}

    def allocator(self, campaign: Campaign) -> Allocator:
        if campaign.state:
            return ListAllocator.from_dict(campaign.state)
        params = CampaignParams.from_dict(campaign.params)
        return ListAllocator(params, suite_items(campaign.kind, params.n, params.seed))

    def items(self, campaign: Campaign) -> Any:
        return None

    def run_fields(self, campaign: Campaign, alloc: Allocator, slot: Slot) -> dict[str, Any]:
        pk, domain, surface, s_, b, r = suite_index().prompts[slot.scenario_id]
        return {
            "prompt_id": pk,
            "family": slot.cell[0],
            "domain": domain,
            "surface": surface,
            "s_level": s_,
            "b_level": b,
            "r_level": r,
        }

    def perform(self, run: Run, attempt: RunAttempt) -> Outcome:
        return perform_suite(run, attempt)

    def campaign_page(self, campaign: Campaign) -> tuple[str, dict[str, Any]]:
        # UnderSpecBench campaigns have no archetype × consent cells: their page shows the suite
        # metrics of this campaign (the results page's charts, suite/views.py).
        from django.urls import reverse

        from runs.selection import live_topics

        query = f"campaign={campaign.pk}"
        return "suite/campaign.html", {
            "query": query,
            "data_url": reverse("suite-data") + "?" + query,
            "suite_url": reverse("suite-results") + "?" + query,
            "composition_url": reverse("labels-composition") + "?" + query,
            "topics_json": json.dumps(live_topics([campaign])),
            "suite_charts": ("overall", "by_s", "by_b", "by_r", "by_surface", "by_domain", "families"),
        }

    def run_page(self, run: Run, attempt: RunAttempt | None) -> dict[str, Any]:
        from django.urls import reverse

        from suite import evidence

        context: dict[str, Any] = {
            "family_url": reverse("suite-family", args=[run.family]),
            "variant": f"S{run.s_level}-B{run.b_level}-R{run.r_level}",
        }
        if attempt is not None:
            context["suite"] = evidence.layout(attempt.verdict, attempt.evidence or {})
        return context


class FullMatrixPlan(SuitePlan):
    def prepare(self, pool: PoolVersion | None, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        params, extra = super().prepare(pool, params)
        # The full matrix's budget is the suite itself: one run per prompt.
        return {**params, "n": len(suite_index().prompts)}, extra
