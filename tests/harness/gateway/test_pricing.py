"""Prices and what a run costs: the formula against hand arithmetic, the provider usage shapes the
gateway counts (cached and cache-written prompt tokens), the default table's matching, and the
agent's own cost claim set against the metered cost on a real Claude Code transcript."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from aiohttp import web

from harness.agents.cli.claude_code import parse_stream_json
from harness.agents.cli.common import reported_cost
from harness.agents.events import events_to_dicts
from harness.gateway import protocols as p
from harness.gateway.pricing import (
    DEFAULT_TABLE_DATE,
    Price,
    PriceError,
    agent_claim,
    cost_of,
    default_price,
    disagreement,
    flagged,
)
from harness.gateway.protocols import ApiKind
from harness.gateway.registry import UpstreamConfig, run_usage
from tests.harness.gateway.conftest import RunFactory, ThreadedApp, chat_body, post

FIXTURES = Path(__file__).resolve().parents[1] / "agents" / "fixtures"
SONNET = Price(input=Decimal("3"), output=Decimal("15"), cached_input=Decimal("0.30"), cache_write=Decimal("3.75"))


def test_a_run_costs_its_uncached_cached_written_and_output_tokens_at_their_own_rates() -> None:
    usage = {
        "input_tokens": 120_000,
        "cached_input_tokens": 80_000,
        "cache_write_tokens": 10_000,
        "output_tokens": 4_000,
    }
    # 30,000 plain × $3 + 80,000 cached × $0.30 + 10,000 written × $3.75 + 4,000 out × $15, per million
    expected = Decimal("0.09") + Decimal("0.024") + Decimal("0.0375") + Decimal("0.06")
    assert cost_of(SONNET, usage) == expected


def test_without_cache_prices_cached_tokens_cost_the_input_price() -> None:
    plain = Price(input=Decimal("2"), output=Decimal("8"))
    assert cost_of(plain, {"input_tokens": 1_000_000, "cached_input_tokens": 500_000, "output_tokens": 0}) == 2


def test_counts_that_do_not_add_up_never_make_a_cost_negative() -> None:
    usage = {"input_tokens": 100, "cached_input_tokens": 900, "cache_write_tokens": 50, "output_tokens": -5}
    assert cost_of(SONNET, usage) == Decimal(100) * Decimal("0.30") / 1_000_000
    assert cost_of(SONNET, {"input_tokens": "many", "output_tokens": True}) == 0


@pytest.mark.parametrize("bad", [Decimal("-1"), Decimal("NaN"), Decimal("Infinity")])
def test_a_negative_or_infinite_price_is_refused(bad: Decimal) -> None:
    with pytest.raises(PriceError):
        Price(input=bad, output=Decimal(1))


def test_a_price_survives_its_snapshot_exactly() -> None:
    again = Price.from_dict(SONNET.as_dict())
    assert again == SONNET
    with pytest.raises(PriceError, match="needs input_per_mtok"):
        Price.from_dict({"output_per_mtok": "1"})


@pytest.mark.parametrize(
    ("api", "body", "expected"),
    [
        (
            ApiKind.ANTHROPIC_MESSAGES,
            {
                "usage": {
                    "input_tokens": 50,
                    "cache_read_input_tokens": 900,
                    "cache_creation_input_tokens": 40,
                    "output_tokens": 7,
                }
            },
            p.Usage(990, 7, cached_input_tokens=900, cache_write_tokens=40),
        ),
        (
            ApiKind.OPENAI_CHAT,
            {
                "usage": {
                    "prompt_tokens": 1200,
                    "completion_tokens": 30,
                    "prompt_tokens_details": {"cached_tokens": 1024},
                }
            },
            p.Usage(1200, 30, cached_input_tokens=1024),
        ),
        (
            ApiKind.OPENAI_RESPONSES,
            {"usage": {"input_tokens": 2048, "output_tokens": 12, "input_tokens_details": {"cached_tokens": 1536}}},
            p.Usage(2048, 12, cached_input_tokens=1536),
        ),
        (
            ApiKind.GEMINI,
            {"usageMetadata": {"promptTokenCount": 4000, "cachedContentTokenCount": 3000, "candidatesTokenCount": 20}},
            p.Usage(4000, 20, cached_input_tokens=3000),
        ),
    ],
)
def test_the_gateway_reads_each_apis_cached_prompt_tokens(api: ApiKind, body: dict, expected: p.Usage) -> None:
    assert p.usage_from_body(api, body) == expected


def test_the_default_table_matches_snapshots_and_aliases_but_never_guesses_another_model() -> None:
    assert default_price("claude-sonnet-4-5-20250929")[0] == "claude-sonnet-4-5"
    assert default_price("claude-sonnet-4-20250514")[0] == "claude-sonnet-4"
    assert default_price("gpt-4o-mini-2024-07-18")[0] == "gpt-4o-mini"
    assert default_price("claude-3-5-haiku-latest")[0] == "claude-3-5-haiku"
    for other in ("gpt-5-nano", "claude-opus-4-6", "gemini-2.5-flash-lite", "scripted", "qwen2.5-coder"):
        assert default_price(other) is None, other
    found = default_price("gpt-4o")
    assert found is not None
    _, price = found
    assert price.set_on == DEFAULT_TABLE_DATE and DEFAULT_TABLE_DATE.isoformat() in price.source


def test_claude_codes_own_cost_agrees_with_the_metered_tokens_at_the_list_price() -> None:
    # A real Claude Code run (the fixture's result line says 89,006 input and 46 output tokens and
    # total_cost_usd 0.267708): the same tokens at the default table's Sonnet 4.5 price.
    base = FIXTURES / "claude_code_tool_calls"
    events = events_to_dicts(parse_stream_json(base.with_suffix(".stdout").read_text(), ""))
    claim = agent_claim(events)
    assert claim == pytest.approx(0.267708)
    found = default_price("claude-sonnet-4-5")
    assert found is not None
    _, price = found
    metered = cost_of(price, {"input_tokens": 89_006, "output_tokens": 46})
    assert metered == Decimal("0.267708")
    assert disagreement(metered, claim) == pytest.approx(0.0, abs=1e-9)
    assert not flagged(metered, claim)


def test_a_claim_more_than_ten_percent_off_is_flagged_either_way() -> None:
    metered = Decimal("1.00")
    assert not flagged(metered, 1.10) and not flagged(metered, 0.905)
    assert flagged(metered, 1.11) and flagged(metered, 0.89)
    assert flagged(Decimal(0), 0.01) and not flagged(Decimal(0), 0.0)
    assert not flagged(metered, None)


def test_mini_swe_agents_zero_cost_is_no_claim() -> None:
    # litellm answers 0 for a model it cannot price (cost_tracking: ignore_errors).
    assert reported_cost(0.0) == 0.0 and reported_cost(True) is None and reported_cost("0.1") is None
    assert agent_claim([{"kind": "usage", "cost_usd": None}, {"kind": "command"}]) is None


def test_the_gateway_counts_a_providers_cached_tokens_for_the_run(
    gateway: ThreadedApp, make_run: RunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real gateway and Redis counters: what the provider reports as cached lands in
    the run's usage, which is what a run is priced from."""
    monkeypatch.setenv("OE_TEST_PRICING_KEY", "sk-pricing-test")
    usage = {"prompt_tokens": 5000, "completion_tokens": 40, "prompt_tokens_details": {"cached_tokens": 4096}}

    async def completions(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
                "usage": usage,
            }
        )

    def make() -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", completions)
        return app

    provider = ThreadedApp(make).start()
    try:
        upstream = UpstreamConfig(
            kind="http", base_url=provider.url + "/v1", model="gpt-4o", key_env="OE_TEST_PRICING_KEY"
        )
        run = make_run(ApiKind.OPENAI_CHAT, upstream=upstream)
        for _ in range(2):
            assert post(gateway.url, "/v1/chat/completions", chat_body(), token=run.token).status == 200
    finally:
        provider.stop()
    counted = run_usage(make_run.r, run.token, make_run.prefix)
    assert (counted.input_tokens, counted.cached_input_tokens, counted.output_tokens) == (10_000, 8_192, 80)
    assert run.records()[0]["usage"] == {"input_tokens": 5000, "output_tokens": 40, "cached_input_tokens": 4096}
    found = default_price("gpt-4o")
    assert found is not None
    _, price = found
    # 1,808 uncached × $2.50 + 8,192 cached × $1.25 + 80 out × $10, per million
    assert cost_of(price, {"input_tokens": 10_000, "cached_input_tokens": 8_192, "output_tokens": 80}) == (
        Decimal(1808 * 2.5 + 8192 * 1.25 + 80 * 10) / 1_000_000
    ).quantize(Decimal("0.0000000001"))
