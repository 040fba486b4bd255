"""Every statistic and chart of a campaign or matrix, with database ids removed, for before/after checks."""

from __future__ import annotations

from typing import Any

from labels.reports import agreement_data, disposition_composition
from runs.costs import campaign_costs, matrix_costs
from runs.models import Campaign, Matrix, Run
from runs.stats import campaign_data, matrix_data


def campaign_figures(campaign: Campaign) -> dict[str, Any]:
    """``campaign_data`` (heatmap, posterior, per-archetype and overall rates, progress), the cost
    table and the label figures."""
    data = dict(campaign_data(campaign))
    data.pop("campaign")
    data["costs"] = campaign_costs(campaign)
    runs = Run.objects.filter(campaign=campaign)
    data["labels"] = {
        "composition": disposition_composition(runs, by="system"),
        "agreement": {s: agreement_data(runs, s) for s in ("fallback:1", "judge:m:nonaction-v1", None)},
    }
    return data


def matrix_figures(matrix: Matrix) -> dict[str, Any]:
    data = dict(matrix_data(matrix))
    data.pop("matrix")
    for row in data["progress"]:
        row.pop("campaign")
    for tier in ("high", "long-tail"):
        filtered = dict(matrix_data(matrix, tier=tier))
        filtered.pop("matrix")
        for row in filtered["progress"]:
            row.pop("campaign")
        data[f"tier={tier}"] = filtered
    data["campaigns"] = {c.name: campaign_figures(c) for c in matrix.campaigns.order_by("name")}
    pairs = {
        c.pk: (c.sut.framework.slug, c.sut.model.slug)
        for c in matrix.campaigns.select_related("sut__framework", "sut__model")
    }
    data["costs"] = matrix_costs(matrix, pairs)
    for row in data["costs"]["pairs"]:
        row.pop("campaign")
    return data
