"""A campaign of the scripted model stops at its cost cap and resumes when the cap is raised (issue 37).

The built-in shell agent talks to the scripted model through the real gateway in bwrap sandboxes;
each run is executed by the real job function, in this process.  The model has a (notional)
price; a pilot of two runs gives the estimate, from which a cap of five runs' worth is set on a
six-run campaign: after two rounds of two runs, a third round would cross it, so the campaign
stops there — "stopped: cost cap" on its page — with its spending within 1% of the tokens the
gateway recorded (read back from the evidence files, independently of the product's sums) × the
prices.  Raised, the cap lets it finish exactly the runs it had planned.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client

from overeager.roles import VIEWER, sync_groups
from runs import costs
from runs.campaigns import CampaignError, campaign_params, resume_campaign, start_campaign
from runs.models import Campaign, CampaignKind, Run, RunAttempt
from tests.runs.scripted_campaign import drive, load_suite, scripted_sut

pytestmark = pytest.mark.slow

# Notional (nobody bills the scripted model); output dearer than input, as providers price it.
PRICE_IN, PRICE_OUT = Decimal("0.5"), Decimal("200")


def metered_independently(campaign: Campaign) -> tuple[int, int, Decimal]:
    """Input and output tokens from the gateway's own evidence files, and their cost at the prices."""
    inp = out = 0
    for folder in RunAttempt.objects.filter(run__campaign=campaign).values_list("evidence_dir", flat=True):
        for line in (Path(folder) / "gateway.jsonl").read_text().splitlines():
            usage = json.loads(line).get("usage") or {}
            inp += int(usage.get("input_tokens") or 0)
            out += int(usage.get("output_tokens") or 0)
    return inp, out, (inp * PRICE_IN + out * PRICE_OUT) / Decimal(1_000_000)


def test_a_scripted_campaign_stops_at_its_cost_cap_and_resumes_when_it_is_raised(
    transactional_db, queue_name, evidence_dir, tmp_path
):
    load_suite()
    sut = scripted_sut(PRICE_IN, PRICE_OUT)
    params = {"k": 2, "j": 1, "seed": 11}
    pilot = start_campaign(
        name="pilot",
        sut=sut,
        pool=None,
        params=campaign_params(n=2, **params),
        backend="bwrap",
        kind=CampaignKind.USB_SAMPLE,
    )
    pilot = drive(pilot.pk)
    assert pilot.status == Campaign.Status.COMPLETE, pilot.error

    estimate = costs.estimate_for(sut, CampaignKind.USB_SAMPLE, 6)
    assert estimate is not None and estimate.sample == 2 and estimate.median > 0
    cap = Decimal(str(round(5 * estimate.median, 4)))
    main = start_campaign(
        name="capped",
        sut=sut,
        pool=None,
        params=campaign_params(n=6, **params),
        backend="bwrap",
        kind=CampaignKind.USB_SAMPLE,
        cost_cap=cap,
    )
    assert main.cost_estimate["sample"] == 2  # the pilot primes the brake before any run finishes
    main = drive(main.pk)

    # Stopped at the cap: two rounds ran, the third would have crossed it.
    assert main.status == Campaign.Status.STOPPED and main.stop_reason == Campaign.StopReason.COST_CAP, main.error
    assert main.scored == 4, (main.scored, main.error)
    assert not Run.objects.filter(campaign=main, status__in=costs.IN_FLIGHT).exists()
    spent = costs.spent([main.pk])
    assert 0 < spent <= cap
    inp, out, independent = metered_independently(main)
    assert inp > 0 and out > 0
    assert abs(spent - independent) <= Decimal("0.01") * independent, (spent, independent)
    # Every run's cost is its attempts' (no attempt lost its cost on the way).
    assert sum(Run.objects.filter(campaign=main).values_list("cost_usd", flat=True)) == spent

    # Its page says so, and shows what was spent, labelled notional.
    sync_groups()
    viewer = User.objects.create_user("vera", password="pw")
    viewer.groups.add(Group.objects.get(name=VIEWER))
    client = Client()
    client.force_login(viewer)
    page = client.get(f"/campaigns/{main.pk}/").content.decode()
    assert "stopped: cost cap" in page and "notional" in page
    data = client.get(f"/campaigns/{main.pk}/costs.json").json()
    assert data["total"]["spent"] == pytest.approx(float(spent), rel=1e-9)
    assert data["notional"] is True and data["cap"] == pytest.approx(float(cap))
    cells = data["cells"]
    assert sum(c["spent"] for c in cells) == pytest.approx(float(spent), rel=1e-9)
    assert sum(c["runs"] for c in cells) == 4
    csv_text = client.get(f"/campaigns/{main.pk}/costs.json?format=csv").content.decode()
    assert csv_text.splitlines()[0].startswith("family,spent,") and len(csv_text.splitlines()) == 1 + len(cells)

    # A cap not above what was spent resumes nothing; a raised one continues to the planned end.
    with pytest.raises(CampaignError, match="not above what campaign"):
        resume_campaign(main.pk, cost_cap=spent / 2)
    resumed = resume_campaign(main.pk, cost_cap=cap * 4)
    assert resumed.status == Campaign.Status.RUNNING
    done = drive(main.pk)
    assert done.status == Campaign.Status.COMPLETE, done.error
    assert done.scored == 6 and done.stop_reason == "" and done.error == ""
    # Exactly the sample planned at the start, in its order: the stop held the allocator still.
    planned = main.state["items"]  # the allocator's state when it stopped
    assert main.state["next_item"] == 4
    runs = Run.objects.filter(campaign=main).select_related("prompt").order_by("round", "slot")
    assert [f"{r.family}/{r.prompt.variant}" for r in runs] == planned
    _, _, all_independent = metered_independently(done)
    assert abs(costs.spent([main.pk]) - all_independent) <= Decimal("0.01") * all_independent

    # The finished campaign as an Inspect log: samples_df reads it, one row per scored run with
    # its verdict; the log's spec names the campaign and its system; the cost travels with it.
    from inspect_ai.analysis import samples_df

    from runs.inspect_export import export

    result = export([done], tmp_path / "inspect")
    assert len(result.paths) == 1 and result.samples == 6 and result.scored == 6
    df = samples_df(str(result.paths[0]))
    scored = Run.objects.filter(campaign=done, status=Run.Status.SCORED)
    assert len(df) == scored.count() == 6
    by_id = df.set_index("id")
    for run in scored.select_related("counted_attempt"):
        row = by_id.loc[f"r{run.round}.s{run.slot}"]
        assert row["score_verdict"] == run.counted_attempt.verdict["outcome"]
        assert row["score_acted"] == float(run.acted) and row["score_overscope"] == float(run.overscope)
        assert row["metadata_run_uuid"] == str(run.uuid)
    assert df["metadata_cost_usd"].sum() == pytest.approx(float(costs.spent([main.pk])), rel=1e-9)


def test_a_run_token_cap_ends_a_run_through_the_gateways_budget_error(transactional_db, queue_name, evidence_dir):
    load_suite()
    sut = scripted_sut(PRICE_IN, PRICE_OUT)
    campaign = start_campaign(
        name="token-capped",
        sut=sut,
        pool=None,
        params=campaign_params(n=1, k=1, j=1, seed=3, max_attempts=1),
        backend="bwrap",
        kind=CampaignKind.USB_SAMPLE,
        run_token_cap=50,  # the first request alone is several hundred tokens
    )
    drive(campaign.pk)
    attempt = RunAttempt.objects.get(run__campaign=campaign)
    assert attempt.validity == "gateway_failure", (attempt.validity, attempt.validity_reason)
    assert attempt.usage["budget_exceeded"] == "max_tokens"
    assert [r["status"] for r in attempt.evidence["gateway"]] == [200, 429]
    # The one answered call was paid for, and is counted.
    assert attempt.cost_usd == costs.attempt_costs(campaign.sut_snapshot, attempt.usage, [])[0] > 0


def test_run_campaign_runs_a_pilot_and_estimates_from_it(transactional_db, queue_name, evidence_dir, monkeypatch):
    from io import StringIO

    from runs.management.commands import run_campaign

    load_suite()
    sut = scripted_sut(PRICE_IN, PRICE_OUT)
    monkeypatch.setattr(run_campaign, "start_workers", lambda count, queue="": [])
    monkeypatch.setattr(run_campaign.Command, "_follow", lambda self, ids, timeout: [drive(pk) for pk in ids])
    out = StringIO()
    call_command(
        "run_campaign",
        sut=f"shell:{sut.model.slug}",
        kind="usb-sample",
        n=20,
        seed=2,
        pilot=2,
        dry_run=True,
        backend="bwrap",
        stdout=out,
    )
    text = out.getvalue()
    pilot = Campaign.objects.get(name__contains="-pilot-")
    assert pilot.status == Campaign.Status.COMPLETE and pilot.scored == 2
    assert f"pilot campaign {pilot.pk}" in text
    assert "20 runs × median $" in text and "based on 2 runs" in text and "notional price" in text
    assert Campaign.objects.count() == 1  # a dry run starts nothing else
