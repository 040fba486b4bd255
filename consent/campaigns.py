"""Consent-paired campaigns: each slot is a (scenario, consent-stripped twin) pair, same SUT.

Registered as the ``paired`` campaign kind (``ConsentConfig.ready``).  Runs execute exactly like
SNARE runs; only the allocation differs (``oracles.pairing.PairedAllocator``).
"""

from __future__ import annotations

from typing import Any

from oracles.pairing import PairedAllocator, PairItem
from oracles.scheduler import CampaignParams, Slot
from pool.models import Candidate, PoolVersion
from runs.campaigns import Allocator, CampaignError, SnarePlan, _pool_lock, check_snare_pool, pool_index
from runs.models import Campaign

_pair_cache: dict[int, dict[tuple[str, str, str], list[PairItem]]] = {}


def pair_index(pool_id: int) -> dict[tuple[str, str, str], list[PairItem]]:
    """Verified (scenario, stripped twin) pairs of a pool by (archetype, consent, channel)."""
    with _pool_lock:
        cached = _pair_cache.get(pool_id)
    if cached is not None:
        return cached
    strata: dict[tuple[str, str, str], list[PairItem]] = {}
    twins = Candidate.objects.filter(
        pool_id=pool_id, variant="stripped", status=Candidate.Status.VERIFIED, twin_of__pool_rank__isnull=False
    ).values_list("digest", "twin_of__digest", "twin_of__archetype", "twin_of__consent", "twin_of__channel")
    for digest, kept, arch, consent, channel in twins:
        strata.setdefault((arch, consent, channel), []).append(PairItem(kept=kept, stripped=digest))
    # The twins' own rows must be reachable by digest too (pool_index covers retained scenarios).
    index = pool_index(pool_id)
    for pk, digest, tier, channel in Candidate.objects.filter(
        pool_id=pool_id, variant="stripped", status=Candidate.Status.VERIFIED
    ).values_list("pk", "digest", "tier", "channel"):
        index.by_digest.setdefault(digest, (pk, tier, channel))
    if strata:  # an empty answer is not cached: the twins may be built while this process lives
        with _pool_lock:
            _pair_cache[pool_id] = strata
    return strata


class PairedPlan(SnarePlan):
    # Pairs drawn uniformly in a seeded order with their mutation plans (oracles.pairing): no posterior.
    params_used = ("n", "k", "j", "seed", "m_choices", "max_attempts")

    def prepare(self, pool: PoolVersion | None, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        checked = check_snare_pool(pool)
        if not pair_index(checked.pk):
            raise CampaignError(
                f"pool {checked.pk} has no verified consent-stripped twins: run `manage.py build_pool --twins` first"
            )
        return params, {}

    def allocator(self, campaign: Campaign) -> Allocator:
        if campaign.state:
            return PairedAllocator.from_dict(campaign.state)
        return PairedAllocator(CampaignParams.from_dict(campaign.params))

    def items(self, campaign: Campaign) -> Any:
        assert campaign.pool_id is not None
        return pair_index(campaign.pool_id)

    def run_fields(self, campaign: Campaign, alloc: Allocator, slot: Slot) -> dict[str, Any]:
        assert isinstance(alloc, PairedAllocator)
        fields = super().run_fields(campaign, alloc, slot)
        pair = alloc.pair_of(slot)
        fields["channel"] = pair.stratum[2]  # the twin has no phrasing: its stratum's channel
        fields["tier"] = ""
        return {**fields, **alloc.run_fields(slot)}

    def campaign_page(self, campaign: Campaign) -> tuple[str, dict[str, Any]]:
        from django.urls import reverse

        return "runs/campaign_detail.html", {"consent_url": reverse("consent-sensitivity") + f"?campaign={campaign.pk}"}
