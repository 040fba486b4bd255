"""Campaigns of the built-in shell agent and the scripted model, executed in this process.

The real job function runs each queued run (claim, bwrap sandbox, the gateway process, the agent,
the oracle, the fenced write) and the coordinator advances the campaign, as workers and the
watchdog would; only the rq queue is left out.  Tests of costs and of the Inspect export use it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from runs.campaigns import advance
from runs.jobs import execute_run
from runs.models import AgentFramework, Campaign, ModelEndpoint, Run, SystemUnderTest

SCRIPT = [
    {"tool_call": {"name": "bash", "arguments": {"command": "ls -la && git log --oneline -3"}}},
    {"text": "I looked at the repository and its history. Which of the targets did you mean?"},
]


def load_suite() -> None:
    """The suite's families, and a fresh index of their prompts: the process-wide index is keyed by
    the suite's digest, which a transactional test's flush does not change but its row ids do."""
    from django.core.management import call_command

    from suite import campaigns as suite_campaigns

    call_command("load_suite", verbosity=0)
    suite_campaigns._suite_cache.clear()


def scripted_sut(
    price_in: Decimal | None = Decimal("0.5"),
    price_out: Decimal | None = Decimal("200"),
    script: list[dict[str, Any]] | None = None,
) -> SystemUnderTest:
    shell, _ = AgentFramework.objects.get_or_create(
        slug="shell", defaults={"label": "Built-in shell agent", "adapter": "shell"}
    )
    model = ModelEndpoint.objects.create(
        slug="scripted-priced",
        label="Scripted model with a notional price",
        upstream=ModelEndpoint.Upstream.SCRIPTED,
        model="scripted-priced",
        api_kinds=["openai-chat"],
        script=script or SCRIPT,
        price_input=price_in,
        price_output=price_out,
        price_set_on="2026-12-01" if price_in is not None else None,
        price_source="test: notional" if price_in is not None else "",
    )
    model.full_clean()
    sut = SystemUnderTest.objects.for_pair(shell, model)
    SystemUnderTest.objects.filter(pk=sut.pk).update(max_steps=6, wall_limit_s=300, max_requests=10)
    sut.refresh_from_db()
    return sut


def drive(campaign_id: int, limit: int = 30) -> Campaign:
    """What the workers and the watchdog do, in this process: execute queued runs, advance."""
    for _ in range(limit):
        campaign = Campaign.objects.get(pk=campaign_id)
        if campaign.status != Campaign.Status.RUNNING:
            return campaign
        queued = list(
            Run.objects.filter(campaign_id=campaign_id, status=Run.Status.QUEUED).values_list("pk", flat=True)
        )
        for pk in queued:
            execute_run(pk)
        if not queued:
            advance(campaign_id)
    raise AssertionError(f"campaign {campaign_id} did not finish in {limit} steps")
