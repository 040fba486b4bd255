"""Campaigns over a scenario pack: the ``pack`` (uniform) and ``pack-adaptive`` campaign kinds.

A pack's scenarios are a pool's (``packs.models``), so both kinds are SNARE's plan with another
check at the start and, for the uniform kind, another allocator:

* ``pack`` — every scenario × consent variant, R times (``n`` = R × the pack's scenario variants),
  repeat-major so that a campaign stopped early has covered every item equally; no mutations;
* ``pack-adaptive`` — SNARE's Thompson-sampling scheduler over the pack's category × consent
  cells, with its coverage floors and ceilings, reserve and mutation operators.

Runs execute like pool runs (``runs.performing.perform_snare``: the scenario's build.sh replaces the seed
repository), are judged by the composite oracle, and show on the same pages.
"""

from __future__ import annotations

from typing import Any

from oracles.listalloc import ListAllocator
from oracles.scheduler import CampaignParams
from pool.models import PoolVersion
from runs.campaigns import Allocator, CampaignError, SnarePlan, pool_index
from runs.models import Campaign

ITEM_SEP = "|"


class PackListAllocator(ListAllocator):
    """ListAllocator whose items are ``category|variant|scenario digest|repeat``."""

    def cell_of(self, item: str) -> tuple[tuple[str, str], str]:
        category, variant, digest, _repeat = item.split(ITEM_SEP)
        return (category, variant), digest


def pack_items(pool_id: int, repeats: int) -> list[str]:
    """Every scenario variant of the pack's pool, ``repeats`` times, in pool order (repeat-major)."""
    from pool.models import Candidate

    rows = list(Candidate.objects.filter(pool_id=pool_id).in_pool().values_list("archetype", "consent", "digest"))
    return [ITEM_SEP.join((a, c, d, str(r))) for r in range(repeats) for a, c, d in rows]


def check_pack_pool(pool: PoolVersion | None) -> PoolVersion:
    if pool is None or pool.pack_info is None:
        raise CampaignError("a pack campaign needs a scenario pack: `manage.py import_scenarios DIR`, then --pack SLUG")
    if pool.status != PoolVersion.Status.COMPLETE or not pool_index(pool.pk).cells:
        raise CampaignError(f"the pool of pack {pool.pack_info['slug']} holds no verified scenarios")
    return pool


def _pack_context(campaign: Campaign) -> dict[str, Any]:
    from django.urls import reverse

    info = campaign.pool.pack_info if campaign.pool else None
    if not info:
        return {}
    pack = getattr(campaign.pool, "pack", None)
    return {
        "pack_info": info,
        "pack_url": reverse("pack-detail", args=[pack.pk]) if pack is not None else "",
    }


class UniformPackPlan(SnarePlan):
    # Every scenario variant n // variants times, in pool order, K per round (pack_items).
    params_used = ("n", "k", "j", "max_attempts")

    def prepare(self, pool: PoolVersion | None, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        pool = check_pack_pool(pool)
        count = sum(len(ids) for ids in pool_index(pool.pk).cells.values())
        n = int(params.get("n", 0))
        if n <= 0 or n % count:
            raise CampaignError(
                f"a uniform pack campaign runs every one of the pack's {count} scenario variants R times:"
                f" n must be a multiple of {count} (run_campaign --repeats R sets it), not {n}"
            )
        return params, {}

    def allocator(self, campaign: Campaign) -> Allocator:
        if campaign.state:
            return PackListAllocator.from_dict(campaign.state)
        assert campaign.pool_id is not None
        params = CampaignParams.from_dict(campaign.params)
        count = sum(len(ids) for ids in pool_index(campaign.pool_id).cells.values())
        return PackListAllocator(params, pack_items(campaign.pool_id, max(1, params.n // max(1, count))))

    def items(self, campaign: Campaign) -> Any:
        return None

    def campaign_page(self, campaign: Campaign) -> tuple[str, dict[str, Any]]:
        return "runs/campaign_detail.html", _pack_context(campaign)


class AdaptivePackPlan(SnarePlan):
    def prepare(self, pool: PoolVersion | None, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        check_pack_pool(pool)
        return params, {}

    def campaign_page(self, campaign: Campaign) -> tuple[str, dict[str, Any]]:
        return "runs/campaign_detail.html", _pack_context(campaign)
