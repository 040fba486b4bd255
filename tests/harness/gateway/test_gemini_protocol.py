"""Gemini's wire format without sockets: bodies, streams, usage, errors, auth, the scripted model.

Every body and chunk the scripted model renders is validated with the official ``google-genai``
SDK's own response types, whose pydantic models forbid unknown fields — a field Google does not
define, or a wrong type, fails here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types

from harness.gateway import protocols as p
from harness.gateway.protocols import ApiError, ApiKind, SSEEvent
from harness.gateway.scripted import gemini_array_body, parse_script, reply_for, validate_request

GEMINI = ApiKind.GEMINI
BODY: dict[str, Any] = {
    "contents": [{"role": "user", "parts": [{"text": "What is in this directory?"}]}],
    "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
    "tools": [
        {
            "functionDeclarations": [
                {"name": "run_shell_command", "description": "run", "parametersJsonSchema": {"type": "object"}},
                {"name": "write_file", "description": "write", "parametersJsonSchema": {"type": "object"}},
            ]
        },
        {"googleSearch": {}},
    ],
    "generationConfig": {"temperature": 1},
}
TURNS = [
    {"text": "Let me check.", "tool_call": {"name": "RUN_SHELL_COMMAND", "arguments": {"command": "ls -la"}}},
    {"tool_call": {"name": "write_file", "arguments": {"file_path": "/w/a.md", "content": 'é "quoted"\n'}}},
    {"text": "Run this yourself:\n```bash\nrm -rf build/\n```\n" + "long " * 30},
    {"question": "Which branch?"},
]


def reply(turn: dict[str, Any], body: dict[str, Any] = BODY) -> p.Reply:
    [parsed] = parse_script([turn])
    return reply_for(GEMINI, body, parsed, 0, "gemini-2.5-pro")


def stream_events(r: p.Reply) -> list[SSEEvent]:
    raw = b"".join(p.encode_sse(e.data, e.event) for e in p.render_stream(GEMINI, r))
    return p.parse_sse(raw)


@pytest.mark.parametrize("turn", TURNS)
def test_every_rendered_body_and_chunk_is_a_valid_sdk_response(turn: dict[str, Any]) -> None:
    r = reply(turn)
    body = p.render_body(GEMINI, r)
    chunks = [e.json() for e in stream_events(r)]

    parsed = types.GenerateContentResponse.model_validate(body)
    for chunk in chunks:
        types.GenerateContentResponse.model_validate(chunk)
    assert parsed.candidates and parsed.candidates[0].finish_reason == types.FinishReason.STOP
    assert parsed.model_version == "gemini-2.5-pro"
    assert [e.event for e in stream_events(r)] == [None] * len(chunks)  # Gemini names no events


def test_a_function_call_is_a_functioncall_part_with_args_matched_to_the_declared_name() -> None:
    body = p.render_body(GEMINI, reply(TURNS[0]))

    parsed = types.GenerateContentResponse.model_validate(body)
    assert parsed.text == "Let me check."
    assert parsed.function_calls is not None
    [call] = parsed.function_calls
    assert call.name == "run_shell_command"  # "RUN_SHELL_COMMAND" matched case-insensitively
    assert call.args == {"command": "ls -la"}
    assert body["candidates"][0]["content"] == {
        "parts": [
            {"text": "Let me check."},
            {"functionCall": {"name": "run_shell_command", "args": {"command": "ls -la"}}},
        ],
        "role": "model",
    }


def test_the_stream_sends_text_in_pieces_and_each_call_whole_and_ends_on_the_finishing_chunk() -> None:
    events = stream_events(reply(TURNS[0]))
    chunks = [e.json() for e in events]

    parts = [c["candidates"][0]["content"]["parts"] for c in chunks]
    assert parts == [
        [{"text": "Let me check."}],
        [{"functionCall": {"name": "run_shell_command", "args": {"command": "ls -la"}}}],
    ]
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, "STOP"]
    assert [p.is_terminal_event(GEMINI, e) for e in events] == [False, True]
    # Usage is cumulative: mid-stream chunks restate the prompt, the last one has everything.
    assert "candidatesTokenCount" not in chunks[0]["usageMetadata"]
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] == sum(
        chunks[-1]["usageMetadata"][k] for k in ("promptTokenCount", "candidatesTokenCount")
    )


def test_a_long_text_reply_streams_in_pieces_that_reassemble_into_one_text_part() -> None:
    r = reply(TURNS[2])
    events = stream_events(r)

    rebuilt = p.reassemble(GEMINI, events)

    assert len(events) > 5
    assert rebuilt is not None
    assert rebuilt["candidates"][0]["content"]["parts"] == [{"text": r.text}]
    assert rebuilt["candidates"][0]["finishReason"] == "STOP"
    assert p.usage_from_body(GEMINI, rebuilt) == p.usage_from_body(GEMINI, p.render_body(GEMINI, r))
    assert rebuilt == p.render_body(GEMINI, r)
    types.GenerateContentResponse.model_validate(rebuilt)


def test_without_alt_sse_the_stream_is_one_json_array_of_the_same_chunks() -> None:
    r = reply(TURNS[0])

    array = json.loads(gemini_array_body(GEMINI, r))

    assert array == [e.json() for e in stream_events(r)]
    assert p.usage_from_body(GEMINI, array) == p.usage_from_body(GEMINI, p.render_body(GEMINI, r))
    assert p.response_text(GEMINI, array) == p.response_text(GEMINI, p.render_body(GEMINI, r))


def test_usage_counts_thoughts_as_output_and_tool_use_prompts_as_input() -> None:
    body = {
        "usageMetadata": {
            "promptTokenCount": 100,
            "cachedContentTokenCount": 60,  # a part of the prompt count, not added
            "toolUsePromptTokenCount": 7,
            "candidatesTokenCount": 20,
            "thoughtsTokenCount": 30,
            "totalTokenCount": 157,
        }
    }

    # input 107, of which the 60 cached are billed at the cached-input price (harness.gateway.pricing)
    assert p.usage_from_body(GEMINI, body) == p.Usage(107, 50, cached_input_tokens=60)
    assert p.usage_from_body(GEMINI, {"candidates": []}) is None


def test_reassembly_keeps_thoughts_apart_from_text_and_a_mid_stream_error() -> None:
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "plan ", "thought": True}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "more", "thought": True}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Answer"}]}}]},
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
    ]
    events = [SSEEvent(json.dumps(c)) for c in chunks]

    rebuilt = p.reassemble(GEMINI, events)

    assert rebuilt is not None
    assert rebuilt["candidates"][0]["content"]["parts"] == [{"text": "plan more", "thought": True}, {"text": "Answer"}]
    assert rebuilt["error"]["status"] == "UNAVAILABLE"
    assert p.is_terminal_event(GEMINI, events[-1]) and not p.is_terminal_event(GEMINI, events[2])
    assert p.reassemble(GEMINI, events[-1:]) == chunks[-1]


@pytest.mark.parametrize(
    ("kind", "status", "google_status"),
    [
        ("authentication", 401, "UNAUTHENTICATED"),
        ("invalid_request", 400, "INVALID_ARGUMENT"),
        ("not_found", 404, "NOT_FOUND"),
        ("budget", 429, "RESOURCE_EXHAUSTED"),
        ("upstream", 502, "UNAVAILABLE"),
        ("timeout", 504, "DEADLINE_EXCEEDED"),
    ],
)
def test_errors_have_googles_shape_and_status_names(kind: str, status: int, google_status: str) -> None:
    err = ApiError(kind, "what went wrong", reason="r")

    body = err.body(GEMINI)

    assert err.status == status
    assert {k: body["error"][k] for k in ("code", "message", "status")} == {
        "code": status,
        "message": "what went wrong",
        "status": google_status,
    }
    assert set(body["error"]) == (
        {"code", "message", "status", "details"} if kind == "budget" else {"code", "message", "status"}
    )


def test_a_budget_error_says_when_a_retry_could_help_in_google_rpc_details() -> None:
    err = ApiError(
        "budget", "Overeager gateway: run request budget is spent", reason="max_requests", retry_delay_s=1234
    )

    details = err.body(GEMINI)["error"]["details"]

    assert details == [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "subject": "overeager-run",
                    "description": "Overeager gateway: run request budget is spent",
                    "quotaMetric": "overeager.gateway/max_requests",
                    "quotaId": "overeager-run-max_requests",
                }
            ],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1234s"},
    ]
    # Gemini CLI reads "PerDay"/"PerMinute" in a quota id as a quota of its own kind.
    assert not any(w in json.dumps(details) for w in ("PerDay", "PerMinute", "Daily"))
    # The other APIs' shapes are unchanged by the delay.
    assert err.body(ApiKind.OPENAI_CHAT)["error"]["code"] == "insufficient_quota"


def test_the_key_is_read_from_x_goog_api_key_or_the_key_parameter_of_gemini_calls_only() -> None:
    assert p.credential(GEMINI, {"x-goog-api-key": "oe-run-a"}, {}) == "oe-run-a"
    assert p.credential(GEMINI, {}, {"key": "oe-run-b", "alt": "sse"}) == "oe-run-b"
    assert p.credential(GEMINI, {"x-goog-api-key": "oe-run-a"}, {"key": "oe-run-b"}) == "oe-run-a"
    assert p.credential(ApiKind.OPENAI_CHAT, {}, {"key": "oe-run-b"}) is None
    assert p.credential(GEMINI, {}, {"key": " "}) is None


def test_the_key_parameter_never_reaches_an_upstream_and_only_allowed_parameters_are_kept() -> None:
    anthropic = ApiKind.ANTHROPIC_MESSAGES
    assert p.forwarded_query(GEMINI, "alt=sse&key=oe-run-secret") == "alt=sse"
    assert p.forwarded_query(GEMINI, "key=oe-run-secret") == ""
    assert p.forwarded_query(anthropic, "beta=true") == "beta=true"
    # Anything else an agent adds stays out of the provider's URL (issue 17).
    assert p.forwarded_query(GEMINI, "alt=sse&access_token=x&%24fields=y&alt=json") == "alt=sse"
    assert p.forwarded_query(GEMINI, "alt=sse%23&upload_protocol=resumable") == ""
    assert p.forwarded_query(anthropic, "beta=true&beta=false&x=%2F..") == "beta=true"
    assert p.forwarded_query(ApiKind.OPENAI_CHAT, "beta=true&api-version=1") == ""
    assert p.forwarded_query(GEMINI, "beta=true") == ""
    assert p.gemini_sse("alt=sse&key=x") and not p.gemini_sse("") and not p.gemini_sse("alt=json")


def test_gemini_paths_split_into_model_and_method() -> None:
    assert p.split_gemini_target("gemini-2.5-pro:streamGenerateContent") == ("gemini-2.5-pro", "streamGenerateContent")
    assert p.split_gemini_target("gemini-2.5-pro") is None
    assert p.split_gemini_target(":generateContent") is None
    assert p.gemini_suffix("models/gemini-2.5-pro", "generateContent") == "/models/gemini-2.5-pro:generateContent"


@pytest.mark.parametrize(
    "model",
    ["../../v1/files?upload=1#", "..", ".", "a/b", "a?b", "a#b", "a%2Fb", "a b", "", "models/", "-x", "a\n"],
)
def test_a_model_name_that_is_not_a_plain_id_never_becomes_part_of_a_path(model: str) -> None:
    assert p.gemini_model_problem(model)
    with pytest.raises(ValueError, match="not a Gemini model id"):
        p.gemini_suffix(model, p.GEMINI_GENERATE)


def test_gemini_model_ids_are_plain_ids() -> None:
    for model in ("gemini-2.5-pro", "gemini-2.0-flash-001", "models/gemini-1.5-pro", "gemini_x.y"):
        assert p.gemini_model_problem(model) == ""
    with pytest.raises(ValueError, match="method"):
        p.gemini_suffix("gemini-2.5-pro", "generateContent?upload=1")
    assert "/v1beta/models/{model}:generateContent" in p.route_hint(GEMINI)


def test_declared_function_names_are_read_from_every_tool_and_prompts_count_for_estimates() -> None:
    assert p.tool_names(GEMINI, BODY) == ["run_shell_command", "write_file"]
    text = p.request_text(BODY)
    assert "What is in this directory?" in text and "You are a coding agent." in text
    assert "temperature" not in text  # sampling knobs are not prompt


def test_a_request_without_contents_gets_googles_400() -> None:
    err = validate_request(GEMINI, {"contents": []})

    assert err is not None and err.status == 400
    assert err.body(GEMINI)["error"]["status"] == "INVALID_ARGUMENT"
    assert "contents" in err.message
    assert validate_request(GEMINI, BODY) is None


def test_the_models_list_and_a_model_are_rest_model_resources() -> None:
    listed = p.models_body(GEMINI, ["gemini-2.5-pro"])

    # The SDK's Model is its own converted type (supported_actions), so the REST field set of
    # ai.google.dev/api/models#Model is checked here and the SDK's parsing in the conformance test.
    assert [m["name"] for m in listed["models"]] == ["models/gemini-2.5-pro"]
    assert p.gemini_model("models/gemini-2.5-pro")["name"] == "models/gemini-2.5-pro"
    assert set(p.gemini_model("x")) <= {
        "name",
        "baseModelId",
        "version",
        "displayName",
        "description",
        "inputTokenLimit",
        "outputTokenLimit",
        "supportedGenerationMethods",
        "temperature",
        "maxTemperature",
        "topP",
        "topK",
        "thinking",
    }
