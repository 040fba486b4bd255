"""Costs and caps in the database: the cap guard (campaign and matrix), the stop and resume
transitions, what is refused and why, the estimate on the form and in ``run_campaign --dry-run``,
the admin's prices, the per-run token cap, and the cost tables and the run page.

Costs are planted on attempts directly (``attempt_with_cost``): the end-to-end path from the
gateway's counts to these rows is tests/runs/campaigns/test_cost_cap_end_to_end.py.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from oracles.scheduler import CampaignParams, Scheduler
from runs import costs, state
from runs.campaigns import CampaignError, resume_campaign, resume_matrix, start_campaign
from runs.models import AgentFramework, Campaign, Matrix, ModelEndpoint, Run, RunAttempt, SystemUnderTest
from runs.performing import sut_limits
from tests import factories

pytestmark = pytest.mark.django_db

SCRIPT = [{"text": "Done."}]


def priced_sut(slug: str = "scripted-priced", price: bool = True) -> SystemUnderTest:
    shell, _ = AgentFramework.objects.get_or_create(slug="shell", defaults={"label": "shell", "adapter": "shell"})
    fields: dict[str, Any] = {}
    if price:
        fields = {
            "price_input": Decimal("3"),
            "price_output": Decimal("15"),
            "price_set_on": "2026-12-01",
            "price_notional": True,
        }
    model = ModelEndpoint.objects.create(
        slug=slug, label=slug, upstream="scripted", api_kinds=["openai-chat"], script=SCRIPT, **fields
    )
    return SystemUnderTest.objects.for_pair(shell, model)


def capped(sut: SystemUnderTest, cap: str | None, name: str = "capped", matrix: Matrix | None = None) -> Campaign:
    c = factories.campaign(name, system=sut, n=20, matrix=matrix)
    Campaign.objects.filter(pk=c.pk).update(
        cost_cap_usd=None if cap is None else Decimal(cap), sut_snapshot=sut.snapshot()
    )
    c.refresh_from_db()
    return c


def attempt_with_cost(c: Campaign, cost: str, status: str = Run.Status.SCORED, claim: str | None = None) -> Run:
    slot = Run.objects.filter(campaign=c).count()
    run = Run.objects.create(
        campaign=c, round=1 + slot, slot=0, status=status, attempt=1, cost_usd=Decimal(cost), family="f"
    )
    RunAttempt.objects.create(
        run=run,
        number=1,
        status=RunAttempt.Status.COMPLETED,
        finished_at=timezone.now(),
        cost_usd=Decimal(cost),
        agent_cost_usd=None if claim is None else Decimal(claim),
        usage={"input_tokens": 1000, "output_tokens": 100},
    )
    return run


def in_flight(c: Campaign, n: int) -> None:
    base = Run.objects.filter(campaign=c).count()
    for i in range(n):
        Run.objects.create(campaign=c, round=1000 + base + i, slot=0, status=Run.Status.QUEUED)


# -- the guard ------------------------------------------------------------------------------------


def test_the_guard_lets_a_round_through_that_stays_under_the_cap_and_stops_one_that_could_cross_it() -> None:
    c = capped(priced_sut(), "1.00")
    for _ in range(4):
        attempt_with_cost(c, "0.10")  # $0.40 spent, $0.10 a run
    assert costs.cap_stop(c, next_runs=5) is None  # → $0.90
    stop = costs.cap_stop(c, next_runs=7)  # → $1.10
    assert stop is not None
    reason, message = stop
    assert reason == Campaign.StopReason.COST_CAP
    assert "spent $0.4000 of its $1.00 cost cap" in message and "7 more runs at $0.1000 each" in message


def test_runs_already_in_flight_count_against_the_cap() -> None:
    c = capped(priced_sut(), "1.00")
    for _ in range(4):
        attempt_with_cost(c, "0.10")
    in_flight(c, 3)
    assert costs.cap_stop(c, next_runs=2) is None  # 0.40 + 5 × 0.10 = 0.90
    assert costs.cap_stop(c, next_runs=4) is not None  # 0.40 + 7 × 0.10 = 1.10


def test_before_any_run_finished_the_estimate_primes_the_projection() -> None:
    c = capped(priced_sut(), "1.00")
    assert costs.cap_stop(c, next_runs=10) is None  # nothing known: the first round runs
    Campaign.objects.filter(pk=c.pk).update(cost_estimate={"mean": 0.25, "median": 0.2, "sample": 6})
    c.refresh_from_db()
    assert costs.cap_stop(c, next_runs=4) is None and costs.cap_stop(c, next_runs=5) is not None


def test_every_attempt_costs_invalid_and_retried_ones_too() -> None:
    c = capped(priced_sut(), "0.35")
    attempt_with_cost(c, "0.10")
    attempt_with_cost(c, "0.10", status=Run.Status.INVALID)
    attempt_with_cost(c, "0.10", status=Run.Status.DROPPED)
    assert costs.spent([c.pk]) == Decimal("0.30")
    assert costs.cap_stop(c, next_runs=1) is not None  # 0.30 + 0.10 > 0.35


def test_a_matrix_cap_counts_every_campaign_of_the_matrix_at_its_own_cost_per_run() -> None:
    matrix = Matrix.objects.create(name="m", framework_slugs=["shell"], model_slugs=["a", "b"], cost_cap_usd=2)
    cheap = capped(priced_sut("cheap-model"), None, "m/cheap", matrix)
    dear = capped(priced_sut("dear-model"), None, "m/dear", matrix)
    for _ in range(2):
        attempt_with_cost(cheap, "0.10")
        attempt_with_cost(dear, "0.50")
    in_flight(dear, 2)  # $1.20 spent; dear's two queued runs will spend $1.00 more
    assert costs.cap_stop(cheap, next_runs=1) is not None  # 1.20 + 1.00 + 0.10 > 2
    Matrix.objects.filter(pk=matrix.pk).update(cost_cap_usd=Decimal("2.35"))
    assert costs.cap_stop(cheap, next_runs=1) is None
    stop = costs.cap_stop(cheap, next_runs=2)
    assert stop is not None
    reason, message = stop
    assert reason == Campaign.StopReason.MATRIX_COST_CAP and "matrix 'm'" in message


def test_a_campaign_without_caps_is_never_stopped_by_one() -> None:
    c = capped(priced_sut(), None)
    attempt_with_cost(c, "1000")
    assert costs.cap_stop(c, next_runs=1000) is None


def test_probing_the_next_issue_leaves_the_allocator_as_it_was() -> None:
    """Why a capped campaign resumes deterministically: the guard asks a copy."""
    pool = {(f"a{i}", m): [f"s{i}{m}"] for i in range(6) for m in ("silent", "explicit-deny")}
    alloc = Scheduler(CampaignParams(n=30, k=5, seed=7, q_floor=1, q_ceil=3))
    alloc.record(alloc.next_round(pool)[0], True)
    before = copy.deepcopy(alloc.to_dict())
    assert costs.next_issue_size(alloc, pool) == 5
    assert alloc.to_dict() == before
    probed = [(s.cell, s.scenario_id, s.mutations) for s in copy.deepcopy(alloc).next_round(pool)]
    assert [(s.cell, s.scenario_id, s.mutations) for s in alloc.next_round(pool)] == probed


# -- the transitions ------------------------------------------------------------------------------


def test_a_cost_stop_is_a_conditional_transition_and_only_it_can_be_resumed() -> None:
    c = capped(priced_sut(), "1")
    assert state.stop_for_cost(c.pk, Campaign.StopReason.COST_CAP, "stopped: cost cap — test")
    assert not state.stop_for_cost(c.pk, Campaign.StopReason.COST_CAP, "again")  # not running any more
    c.refresh_from_db()
    assert (c.status, c.stop_reason, c.error) == ("stopped", "cost-cap", "stopped: cost cap — test")
    with pytest.raises(ValueError, match="not a cost stop"):
        state.stop_for_cost(c.pk, "user", "x")
    other = capped(priced_sut("other"), "1", "stopped-by-hand")
    Campaign.objects.filter(pk=other.pk).update(status=Campaign.Status.STOPPED)
    with pytest.raises(CampaignError, match="only a campaign a cost cap stopped can be resumed"):
        resume_campaign(other.pk, cost_cap="5")
    assert not state.resume(other.pk)


def test_resuming_needs_a_cap_above_what_was_spent() -> None:
    c = capped(priced_sut(), "0.25")
    attempt_with_cost(c, "0.20")
    state.stop_for_cost(c.pk, Campaign.StopReason.COST_CAP, "stopped: cost cap")
    for bad in ("0.20", "0.1", "-1", "abc", "0"):
        with pytest.raises(CampaignError):
            resume_campaign(c.pk, cost_cap=bad)
    c.refresh_from_db()
    assert c.status == Campaign.Status.STOPPED and c.cost_cap_usd == Decimal("0.25")


def test_a_matrix_resumes_the_campaigns_its_cap_stopped_not_the_others() -> None:
    matrix = Matrix.objects.create(name="mx", framework_slugs=["shell"], model_slugs=["a", "b"], cost_cap_usd=1)
    by_matrix = capped(priced_sut("ma"), None, "mx/a", matrix)
    by_own = capped(priced_sut("mb"), "0.01", "mx/b", matrix)
    Campaign.objects.filter(matrix=matrix).update(kind="usb-sample")  # no pool to allocate from: none needed
    attempt_with_cost(by_own, "0.02")
    state.stop_for_cost(by_matrix.pk, Campaign.StopReason.MATRIX_COST_CAP, "stopped: cost cap")
    state.stop_for_cost(by_own.pk, Campaign.StopReason.COST_CAP, "stopped: cost cap")
    with pytest.raises(CampaignError, match="not above what the matrix has spent"):
        resume_matrix(matrix.pk, cost_cap="0.01")
    resumed = resume_matrix(matrix.pk, cost_cap="5")
    assert [c.name for c in resumed] == ["mx/a"]
    assert Matrix.objects.get(pk=matrix.pk).cost_cap_usd == 5
    assert Campaign.objects.get(pk=by_own.pk).status == Campaign.Status.STOPPED


# -- what is refused at the start -------------------------------------------------------------------


def test_a_cost_cap_on_an_unpriced_model_is_refused_naming_the_fix() -> None:
    sut = priced_sut("unpriced", price=False)
    with pytest.raises(CampaignError, match="needs the price of model 'unpriced': set its prices in the admin"):
        start_campaign(name="x", sut=sut, pool=None, params={"n": 2}, backend="bwrap", kind="usb-sample", cost_cap=1)
    for bad in (0, -2, "NaN", "lots"):
        with pytest.raises(CampaignError, match="cost cap"):
            start_campaign(
                name="x", sut=priced_sut(f"p{abs(hash(str(bad)))}"), pool=None, params={}, backend="bwrap", cost_cap=bad
            )
    with pytest.raises(CampaignError, match="token cap must be at least 1"):
        start_campaign(name="x", sut=sut, pool=None, params={}, backend="bwrap", run_token_cap=0)
    assert not Campaign.objects.exists()


def test_a_simulated_system_calls_no_model_and_may_be_capped_at_no_cost() -> None:
    sim = factories.sut()  # upstream "none"
    costs.check_priced(sim)  # no refusal: nothing it does is billed
    assert costs.attempt_costs(sim.snapshot(), {"input_tokens": 5}, []) == (Decimal(0), None)
    unpriced = priced_sut("u", price=False)
    assert costs.attempt_costs(unpriced.snapshot(), {"input_tokens": 5}, []) == (None, None)


def test_the_run_token_cap_is_the_tighter_of_the_campaigns_and_the_suts() -> None:
    sut = priced_sut()
    assert sut_limits(sut)["budgets"].max_tokens == sut.max_tokens
    assert sut_limits(sut, 5000)["budgets"].max_tokens == 5000
    assert sut_limits(sut, 10**12)["budgets"].max_tokens == sut.max_tokens


def test_a_campaign_prices_its_runs_by_its_snapshot_not_by_a_later_admin_edit() -> None:
    sut = priced_sut()
    snapshot = sut.snapshot()
    ModelEndpoint.objects.filter(pk=sut.model_id).update(price_input=Decimal("300"))
    cost, _ = costs.attempt_costs(snapshot, {"input_tokens": 1_000_000, "output_tokens": 0}, [])
    assert cost == Decimal("3")


# -- the estimate ---------------------------------------------------------------------------------


def history(sut: SystemUnderTest, per_run_tokens: list[int], kind: str = "usb-sample") -> None:
    """Finished runs of the SUT's earlier campaign, each with its attempts' gateway token counts."""
    old = factories.campaign("earlier", system=sut, n=len(per_run_tokens), status=Campaign.Status.COMPLETE)
    Campaign.objects.filter(pk=old.pk).update(kind=kind)
    for i, tokens in enumerate(per_run_tokens):
        run = Run.objects.create(campaign=old, round=i, slot=0, status=Run.Status.SCORED, attempt=1)
        RunAttempt.objects.create(run=run, number=1, usage={"input_tokens": tokens, "output_tokens": 0})


def test_the_estimate_re_prices_earlier_runs_at_the_current_price() -> None:
    sut = priced_sut()
    history(sut, [100_000, 200_000, 300_000, 400_000, 500_000, 600_000, 700_000])  # $0.30 … $2.10 at $3/M
    est = costs.estimate_for(sut, "usb-sample", 10)
    assert est.sample == 7 and est.median == pytest.approx(1.2) and est.total == pytest.approx(12)
    assert est.total_low is not None and est.total_low <= 12 <= est.total_high
    ModelEndpoint.objects.filter(pk=sut.model_id).update(price_input=Decimal("6"))
    sut.model.refresh_from_db()
    assert costs.estimate_for(sut, "usb-sample", 10).median == pytest.approx(2.4)
    assert costs.estimate_for(sut, "snare", 10) is None  # another kind of campaign: no history


def test_run_campaign_dry_run_prints_the_estimate_and_starts_nothing() -> None:
    sut = priced_sut()
    history(sut, [100_000] * 6)
    out = StringIO()
    call_command("run_campaign", sut=f"shell:{sut.model.slug}", kind="usb-sample", n=40, dry_run=True, stdout=out)
    text = out.getvalue()
    assert "40 runs × median $0.3000 = $12.00 (the median's 95% interval × runs: $12.00–$12.00)" in text
    assert "notional price" in text
    assert Campaign.objects.filter(name__startswith="shell__").count() == 0


def test_the_start_form_shows_the_estimate_without_starting(role_users: dict[str, Any]) -> None:
    sut = priced_sut()
    history(sut, [100_000, 200_000, 300_000], kind="snare")  # the form starts SNARE campaigns
    client = Client()
    client.force_login(role_users["curator"])
    from pool.models import PoolVersion

    pool = PoolVersion.objects.create(library_digest="x" * 64, pool_seed=1, target_size=1, status="complete")
    form = {"name": "new", "mode": "single", "sut": sut.pk, "pool": pool.pk, "n": 20, "k": 5, "j": 1}
    form |= {"q_floor": 1, "q_ceil": 3, "seed": 0, "max_attempts": 3, "backend": "bwrap", "estimate": "1"}
    page = client.post("/campaigns/start/", form).content.decode()
    assert "Cost estimate" in page, page[page.find("errorlist") :][:2000]
    assert "20 runs × median $0.6000 = $12.00 (no 95% interval: it needs at least 6 finished runs)" in page
    assert not Campaign.objects.filter(name="new").exists()
    unpriced = priced_sut("unpriced", price=False)
    refused = client.post("/campaigns/start/", form | {"sut": unpriced.pk, "cost_cap": "5", "estimate": ""}).content
    assert b"needs the price of model" in refused and not Campaign.objects.filter(name="new").exists()


# -- the admin ------------------------------------------------------------------------------------


def test_the_admin_refuses_half_a_price_and_a_price_without_its_date(role_users: dict[str, Any]) -> None:
    client = Client()
    client.force_login(role_users["curator"])
    base = {"slug": "m", "label": "m", "upstream": "scripted", "api_kinds": '["openai-chat"]', "script": "[]"}
    page = client.post("/admin/runs/modelendpoint/add/", base | {"price_input": "3"}).content.decode()
    assert "give both the input and the output price" in page
    undated = client.post("/admin/runs/modelendpoint/add/", base | {"price_input": "3", "price_output": "15"})
    assert b"say on which day these prices held" in undated.content
    r = client.post(
        "/admin/runs/modelendpoint/add/",
        base | {"price_input": "3", "price_output": "15", "price_set_on": "2026-12-01"},
    )
    assert r.status_code == 302 and ModelEndpoint.objects.get(slug="m").price().output == 15


def test_the_admin_copies_the_default_table_for_known_models_only(role_users: dict[str, Any]) -> None:
    known = ModelEndpoint.objects.create(slug="sonnet", label="s", model="claude-sonnet-4-5-20250929", api_kinds=[])
    unknown = ModelEndpoint.objects.create(slug="local", label="l", model="qwen2.5-coder", api_kinds=[])
    client = Client()
    client.force_login(role_users["curator"])
    r = client.post(
        "/admin/runs/modelendpoint/",
        {"action": "apply_default_prices", "_selected_action": [known.pk, unknown.pk]},
        follow=True,
    )
    text = r.content.decode()
    assert "Prices copied from the default table for: sonnet" in text and "no row for: local" in text
    price = ModelEndpoint.objects.get(pk=known.pk).price()
    assert (price.input, price.output, price.cached_input) == (3, 15, Decimal("0.30")) and price.set_on
    assert ModelEndpoint.objects.get(pk=unknown.pk).price() is None


# -- tables and pages -----------------------------------------------------------------------------


def test_the_cost_tables_sum_what_the_attempts_cost(role_users: dict[str, Any]) -> None:
    c = capped(priced_sut(), "5")
    for family, cost in (("f1", "0.10"), ("f1", "0.30"), ("f2", "0.05")):
        run = attempt_with_cost(c, cost)
        Run.objects.filter(pk=run.pk).update(family=family)
    Campaign.objects.filter(pk=c.pk).update(kind="usb-sample")
    client = Client()
    client.force_login(role_users["viewer"])
    data = client.get(f"/campaigns/{c.pk}/costs.json").json()
    assert data["total"]["spent"] == pytest.approx(0.45) and data["total"]["runs"] == 3
    assert {r["family"]: (r["spent"], r["runs"]) for r in data["cells"]} == {"f1": (0.4, 2), "f2": (0.05, 1)}
    assert data["notional"] is True and data["cap"] == 5.0
    csv_lines = client.get(f"/campaigns/{c.pk}/costs.json?format=csv").content.decode().splitlines()
    assert csv_lines[0].split(",")[:3] == ["family", "spent", "attempts"] and len(csv_lines) == 3


def test_the_matrix_cost_table_has_a_row_per_pair(role_users: dict[str, Any]) -> None:
    matrix = Matrix.objects.create(name="mm", framework_slugs=["shell"], model_slugs=["a", "b"], cost_cap_usd=3)
    a = capped(priced_sut("pa"), None, "mm/a", matrix)
    b = capped(factories.sut("sim-alpha", "sim-m1"), None, "mm/b", matrix)
    attempt_with_cost(a, "0.25")
    attempt_with_cost(b, "0")
    client = Client()
    client.force_login(role_users["viewer"])
    data = client.get(f"/matrices/{matrix.pk}/costs.json").json()
    rows = {(r["framework"], r["model"]): r for r in data["pairs"]}
    assert rows[("shell", "pa")]["spent"] == 0.25 and rows[("shell", "pa")]["notional"] is True
    assert rows[("sim-alpha", "sim-m1")]["spent"] == 0.0 and data["total"] == 0.25 and data["cap"] == 3.0
    assert len(client.get(f"/matrices/{matrix.pk}/costs.json?format=csv").content.decode().splitlines()) == 3
    assert "Cost per pair" in client.get(f"/matrices/{matrix.pk}/").content.decode()


def test_the_run_page_shows_the_agents_claim_beside_the_metered_cost_and_flags_a_gap(
    role_users: dict[str, Any],
) -> None:
    c = capped(priced_sut(), None)
    close = attempt_with_cost(c, "0.100", claim="0.105")
    far = attempt_with_cost(c, "0.100", claim="0.150")
    client = Client()
    client.force_login(role_users["viewer"])
    page = client.get(f"/runs/{close.pk}/").content.decode()
    assert "$0.100000</strong> this attempt" in page and "the agent says <strong>$0.105000" in page
    assert 'id="cost-flag"' not in page
    page = client.get(f"/runs/{far.pk}/").content.decode()
    assert 'id="cost-flag"' in page and "50% off the metered cost" in page
    summary = costs.campaign_costs(c)
    assert (summary["attempts_with_claim"], summary["claims_disagreeing"]) == (2, 1)


def test_a_curator_resumes_a_capped_campaign_from_its_page(role_users: dict[str, Any]) -> None:
    c = capped(priced_sut(), "0.10")
    attempt_with_cost(c, "0.10")
    state.stop_for_cost(c.pk, Campaign.StopReason.COST_CAP, "stopped: cost cap — spent $0.1000")
    viewer, curator = Client(), Client()
    viewer.force_login(role_users["viewer"])
    curator.force_login(role_users["curator"])
    page = viewer.get(f"/campaigns/{c.pk}/").content.decode()
    assert "stopped: cost cap" in page and 'id="resume-form"' not in page
    assert viewer.post(f"/campaigns/{c.pk}/resume/", {"cost_cap": "1"}).status_code == 403
    assert 'id="resume-form"' in curator.get(f"/campaigns/{c.pk}/").content.decode()
    r = curator.post(f"/campaigns/{c.pk}/resume/", {"cost_cap": "0.05"}, follow=True)
    assert "Not resumed" in r.content.decode()
    assert Campaign.objects.get(pk=c.pk).status == Campaign.Status.STOPPED


def test_the_estimate_of_an_unpriced_model_says_what_is_missing() -> None:
    sut = priced_sut("unpriced-estimate", price=False)
    history(sut, [1000] * 8)
    (line,) = costs.estimate_lines([sut], "usb-sample", {"n": 10})
    assert line.endswith("model 'unpriced-estimate' has no price — set its prices in the admin to estimate its cost.")
