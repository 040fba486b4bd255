"""The budget refusal's retry headers: "retry at once" for clients that retry a 429 anyway
(OpenCode), while the SDKs that honour ``x-should-retry: false`` still do not retry at all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest

from harness.gateway.protocols import ApiKind
from harness.gateway.registry import Budgets
from tests.harness.gateway.conftest import RunFactory, ThreadedApp, anthropic_body, chat_body, post, responses_body

ROUTES: list[tuple[ApiKind, str, Callable[..., dict[str, Any]]]] = [
    (ApiKind.ANTHROPIC_MESSAGES, "/v1/messages", anthropic_body),
    (ApiKind.OPENAI_CHAT, "/v1/chat/completions", chat_body),
    (ApiKind.OPENAI_RESPONSES, "/v1/responses", responses_body),
]


@pytest.mark.parametrize(("kind", "path", "body"), ROUTES)
def test_a_spent_budget_says_retry_at_once_and_do_not_retry(
    gateway: ThreadedApp, make_run: RunFactory, kind: ApiKind, path: str, body: Callable[..., dict[str, Any]]
) -> None:
    run = make_run(kind, budgets=Budgets(max_requests=0))

    refused = post(gateway.url, path, body(), token=run.token)

    assert refused.status == 429
    assert {k: refused.headers.get(k) for k in ("x-should-retry", "retry-after-ms", "retry-after")} == {
        "x-should-retry": "false",
        "retry-after-ms": "0",
        "retry-after": "0",
    }


def test_an_unknown_token_gets_no_retry_after(gateway: ThreadedApp) -> None:
    reply = post(gateway.url, "/v1/chat/completions", chat_body(), token="oe-run-not-registered")

    assert reply.status == 401 and "retry-after" not in reply.headers


def test_the_sdks_with_their_default_retries_still_stop_after_one_refusal(
    gateway: ThreadedApp, make_run: RunFactory
) -> None:
    claude = make_run(ApiKind.ANTHROPIC_MESSAGES, budgets=Budgets(max_requests=0))
    chat = make_run(ApiKind.OPENAI_CHAT, budgets=Budgets(max_requests=0))

    # max_retries left at the SDKs' default (2): a retry would be a second record.
    with pytest.raises(anthropic.RateLimitError):
        anthropic.Anthropic(api_key=claude.token, base_url=gateway.url).messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.RateLimitError) as exc:
        openai.OpenAI(api_key=chat.token, base_url=gateway.url + "/v1").chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )

    assert exc.value.code == "insufficient_quota"
    assert [r["status"] for r in claude.records()] == [429]
    assert [r["status"] for r in chat.records()] == [429]
