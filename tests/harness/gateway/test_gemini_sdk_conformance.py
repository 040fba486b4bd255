"""The official ``google-genai`` SDK parses what the gateway serves for a Gemini run.

Gateway → in-process scripted upstream.  The SDK (3.x) calls ``/v1/models/…`` by default;
Gemini CLI's JS SDK calls ``/v1beta/models/…``: both are exercised.  Each relayed body is also
validated against the SDK's response types, which forbid unknown fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

from harness.gateway.protocols import ApiKind
from harness.gateway.registry import Budgets
from tests.harness.gateway.conftest import RunFactory, ThreadedApp

MODEL = "gemini-2.5-pro"
SCRIPT: list[dict[str, Any]] = [
    {"text": "I'll look first.", "tool_call": {"name": "bash", "arguments": {"command": "ls -la"}}},
    {"text": "Here is the plan:\n```bash\nrm -rf build\n```\n" + "Then rebuild. " * 8},
]
TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="Bash",
            description="Run a shell command",
            parameters_json_schema={"type": "object", "properties": {"command": {"type": "string"}}},
        )
    ]
)
# The SDK would otherwise call Python functions itself; the agent, not the SDK, runs tools.
CONFIG = types.GenerateContentConfig(
    tools=[TOOL], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
)


@pytest.fixture
def clients() -> Iterator[list[genai.Client]]:
    # A genai.Client closes its HTTP client when garbage-collected: keep each one alive.
    made: list[genai.Client] = []
    yield made
    for client in made:
        client.close()


def client_for(
    gateway: ThreadedApp, token: str, made: list[genai.Client], api_version: str | None = None
) -> genai.Client:
    options = types.HttpOptions(base_url=gateway.url, api_version=api_version)
    client = genai.Client(api_key=token, http_options=options)
    made.append(client)
    return client


def test_generate_content_surfaces_the_function_call(
    gateway: ThreadedApp, make_run: RunFactory, clients: list[genai.Client]
) -> None:
    run = make_run(ApiKind.GEMINI, script=SCRIPT)
    client = client_for(gateway, run.token, clients)

    response = client.models.generate_content(model=MODEL, contents="What is in this directory?", config=CONFIG)
    second = client.models.generate_content(model=MODEL, contents="and?", config=CONFIG)
    third = client.models.generate_content(model=MODEL, contents="?")

    assert response.function_calls is not None
    [call] = response.function_calls
    assert call.name == "Bash" and call.args == {"command": "ls -la"}  # "bash" matched the declared case
    assert response.candidates and response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.candidates[0].content and response.candidates[0].content.parts
    assert response.candidates[0].content.parts[0].text == "I'll look first."
    usage = response.usage_metadata
    assert usage is not None and usage.prompt_token_count and usage.candidates_token_count
    assert usage.total_token_count == usage.prompt_token_count + usage.candidates_token_count
    assert second.text is not None and "```bash\nrm -rf build\n```" in second.text and not second.function_calls
    assert third.text == "Done."

    records = run.records()
    assert [r["path"] for r in records] == [f"/v1/models/{MODEL}:generateContent"] * 3
    assert [r["api"] for r in records] == ["gemini-generate-content"] * 3
    assert records[0]["usage"] == {
        "input_tokens": usage.prompt_token_count,
        "output_tokens": usage.candidates_token_count,
    }
    assert records[0]["request"]["tools"][0]["functionDeclarations"][0]["name"] == "Bash"
    for record in records:
        types.GenerateContentResponse.model_validate(record["response"])


def test_the_stream_arrives_as_sse_chunks_and_is_recorded_reassembled(
    gateway: ThreadedApp, make_run: RunFactory, clients: list[genai.Client]
) -> None:
    run = make_run(ApiKind.GEMINI, script=SCRIPT)
    client = client_for(gateway, run.token, clients, api_version="v1beta")  # as Gemini CLI calls it

    first = list(client.models.generate_content_stream(model=MODEL, contents="What is here?", config=CONFIG))
    second = list(client.models.generate_content_stream(model=MODEL, contents="and?", config=CONFIG))

    assert [c.text for c in first[:1]] == ["I'll look first."]
    calls = [call for chunk in first for call in chunk.function_calls or []]
    assert [(c.name, c.args) for c in calls] == [("Bash", {"command": "ls -la"})]
    text = "".join(chunk.text or "" for chunk in second)
    assert text == SCRIPT[1]["text"] and len(second) > 3
    final_usage = second[-1].usage_metadata
    assert final_usage is not None and final_usage.candidates_token_count

    records = run.records()
    assert records[0]["path"] == f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
    assert records[1]["response"]["candidates"][0]["content"]["parts"] == [{"text": text}]
    assert records[1]["response"]["candidates"][0]["finishReason"] == "STOP"
    assert len(records[1]["stream_events"]) == len(second)
    assert records[1]["usage"]["output_tokens"] == final_usage.candidates_token_count
    types.GenerateContentResponse.model_validate(records[1]["response"])


@pytest.mark.parametrize("api_version", ["v1", "v1beta"])
def test_count_tokens_and_models_answer_as_the_sdk_expects(
    gateway: ThreadedApp, make_run: RunFactory, clients: list[genai.Client], api_version: str
) -> None:
    run = make_run(ApiKind.GEMINI, script=SCRIPT)
    client = client_for(gateway, run.token, clients, api_version=api_version)

    counted = client.models.count_tokens(model=MODEL, contents="hello there, how many tokens is this?")
    model = client.models.get(model=MODEL)
    listed = list(client.models.list())

    assert counted.total_tokens and counted.total_tokens > 0
    assert model.name == f"models/{MODEL}" and model.supported_actions == ["generateContent", "countTokens"]
    assert [m.name for m in listed] == ["models/scripted-model"]  # the run's configured model
    # Neither is a model call: no request budget or scripted turn is used.
    assert client.models.generate_content(model=MODEL, contents="go", config=CONFIG).function_calls


def test_an_unknown_key_is_the_sdks_client_error_with_googles_status(
    gateway: ThreadedApp, clients: list[genai.Client]
) -> None:
    client = client_for(gateway, "oe-run-not-registered", clients)

    with pytest.raises(errors.ClientError) as exc:
        client.models.generate_content(model=MODEL, contents="hi")

    assert exc.value.code == 401 and exc.value.status == "UNAUTHENTICATED"
    assert exc.value.message == "API key not valid. Please pass a valid API key."


def test_a_spent_budget_is_resource_exhausted_with_a_retry_delay(
    gateway: ThreadedApp, make_run: RunFactory, clients: list[genai.Client]
) -> None:
    run = make_run(ApiKind.GEMINI, script=SCRIPT, budgets=Budgets(max_requests=1), ttl_s=900)
    client = client_for(gateway, run.token, clients)
    client.models.generate_content(model=MODEL, contents="go", config=CONFIG)

    with pytest.raises(errors.ClientError) as exc:
        client.models.generate_content(model=MODEL, contents="again", config=CONFIG)

    assert exc.value.code == 429 and exc.value.status == "RESOURCE_EXHAUSTED"
    assert "request budget is spent" in (exc.value.message or "")
    details = exc.value.details["error"]["details"]
    [retry] = [d for d in details if d["@type"] == "type.googleapis.com/google.rpc.RetryInfo"]
    # The run's remaining lifetime: beyond Gemini CLI's 300 s ceiling, so it stops at once.
    assert 800 <= int(retry["retryDelay"].removesuffix("s")) <= 900
    assert [r["status"] for r in run.records()] == [200, 429]
    assert json.loads(json.dumps(run.records()[1]["response"])) == exc.value.details
