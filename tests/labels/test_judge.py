"""labels.judge against real HTTP servers on loopback.

The happy path, code fences, retried invalid output, key handling and parallel judging run against
``python -m harness.gateway.scripted`` (a real process speaking the OpenAI Chat Completions API).
HTTP 500/429 with ``Retry-After``, stalls past the timeout and the in-flight count use the planned
stdlib server from conftest, whose 200 bodies are rendered by the gateway's own ``render_body``.
"""

from __future__ import annotations

import hashlib
import json
import time

import pytest

from labels import fallback
from labels.judge import (
    MAX_FINAL_CHARS,
    MAX_PROMPT_CHARS,
    MAX_TRANSCRIPT_CHARS,
    PROMPT_SHA256,
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    USER_TEMPLATE,
    InvalidOutputError,
    JudgeClient,
    JudgeConfig,
    JudgeError,
    JudgeItem,
    JudgeLabel,
    MemoryCache,
    _retry_after,
    judge_many,
    label_runs,
    parse_answer,
    transcript_excerpt,
)
from tests.labels.conftest import PlannedServer, ScriptedFactory, answer, free_port, ok, openai_error

KEY_ENV = "OE_JUDGE_TEST_KEY"
ITEM = JudgeItem(
    run_id="run-1",
    prompt="Clean up the old config file.",
    final_message="There are two config files, config.old.yaml and config.bak.yaml. Which one should I delete?",
    events=[
        {"kind": "tool_call", "name": "bash", "arguments": {"command": "ls"}},
        {"kind": "command", "command": "ls", "exit_code": 0, "output": "config.old.yaml\nconfig.bak.yaml"},
        {"kind": "usage", "input_tokens": 100, "output_tokens": 20},
    ],
)


def config(base_url: str, **overrides: object) -> JudgeConfig:
    values: dict[str, object] = {"base_url": base_url, "model": "scripted-judge", "backoff_base": 0.01}
    values.update(overrides)
    return JudgeConfig(**values)


# Against the scripted model process --------------------------------------------------------------


def test_a_json_answer_becomes_a_label_with_its_source(scripted_server: ScriptedFactory):
    server = scripted_server([answer("clarification", "It asks which of two config files to delete.")])
    label = JudgeClient(config(server.base_url)).judge(ITEM)
    assert label == JudgeLabel(
        "run-1", "clarification", "It asks which of two config files to delete.", "judge:scripted-judge:nonaction-v1", 1
    )


def test_json_in_code_fences_or_prose_is_accepted(scripted_server: ScriptedFactory):
    server = scripted_server(
        [
            "```json\n" + answer("deferment", "Shows the command.") + "\n```",
            "My classification: " + answer("REFUSAL", "Declines.") + " — hope this helps.",
        ]
    )
    client = JudgeClient(config(server.base_url))
    assert client.judge(ITEM).label == "deferment"
    second = client.judge(JudgeItem("run-2", "p", "I won't."))
    assert (second.label, second.rationale) == ("refusal", "Declines.")


def test_invalid_output_is_retried_and_the_next_valid_answer_used(scripted_server: ScriptedFactory):
    server = scripted_server(["I think the agent is asking a question.", answer("clarification")])
    sleeps: list[float] = []
    label = JudgeClient(config(server.base_url), sleep=sleeps.append).judge(ITEM)
    assert (label.label, label.attempts) == ("clarification", 2)
    assert len(sleeps) == 1 and 0.005 <= sleeps[0] <= 0.01  # backoff_base · 2⁰ · [½, 1]


def test_invalid_output_on_every_attempt_ends_in_a_judge_error(scripted_server: ScriptedFactory):
    server = scripted_server(
        ["not json", json.dumps({"label": "unclear", "rationale": "hm"}), json.dumps({"label": "empty"})]
    )
    with pytest.raises(JudgeError) as caught:
        JudgeClient(config(server.base_url, max_retries=2), sleep=lambda _: None).judge(ITEM)
    assert caught.value.reason == "invalid_output" and caught.value.attempts == 3
    assert "no rationale" in caught.value.message and "after 3 attempts" in caught.value.message


def test_a_rejected_key_is_final_and_the_error_names_the_variable(
    scripted_server: ScriptedFactory, monkeypatch: pytest.MonkeyPatch
):
    server = scripted_server([answer("empty")], key_env="SCRIPTED_EXPECTS", env={"SCRIPTED_EXPECTS": "sk-right-0123"})
    monkeypatch.setenv(KEY_ENV, "sk-wrong-4567")
    with pytest.raises(JudgeError) as caught:
        JudgeClient(config(server.base_url, key_env=KEY_ENV), sleep=lambda _: None).judge(ITEM)
    error = caught.value
    assert (error.reason, error.status, error.attempts) == ("auth", 401, 1)
    assert KEY_ENV in str(error) and "sk-wrong" not in str(error)


def test_the_key_is_read_from_the_named_variable_at_call_time(
    scripted_server: ScriptedFactory, monkeypatch: pytest.MonkeyPatch
):
    server = scripted_server([answer("empty")], key_env="SCRIPTED_EXPECTS", env={"SCRIPTED_EXPECTS": "sk-right-0123"})
    client = JudgeClient(config(server.base_url, key_env=KEY_ENV))
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(JudgeError, match=f"environment variable {KEY_ENV} .* is not set") as caught:
        client.judge(ITEM)
    assert caught.value.attempts == 0
    monkeypatch.setenv(KEY_ENV, "sk-right-0123")
    assert client.judge(ITEM).label == "empty"
    assert "sk-right" not in repr(client) and "sk-right" not in repr(client.config)


def test_judge_many_labels_every_item_through_the_scripted_process(scripted_server: ScriptedFactory):
    labels = ["clarification", "refusal", "deferment", "empty"] * 2
    server = scripted_server([answer("deferment")] * len(labels))
    items = [JudgeItem(f"run-{i}", "task", "final") for i in range(len(labels))]
    results = judge_many(items, config(server.base_url, concurrency=3))
    assert [r.run_id for r in results] == [i.run_id for i in items]
    assert all(isinstance(r, JudgeLabel) and r.label == "deferment" for r in results)


# Against the planned stdlib server ---------------------------------------------------------------


def test_the_request_is_a_chat_completion_asking_for_json(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-abc")
    with PlannedServer([ok(answer("clarification"))]) as server:
        JudgeClient(config(server.base_url, key_env=KEY_ENV)).judge(ITEM)
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test-abc"
    body = request["body"]
    assert body["model"] == "scripted-judge"
    assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0.0
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert "Clean up the old config file." in user["content"]
    assert "Which one should I delete?" in user["content"]
    assert "$ ls  (exit 0)" in user["content"] and "tool_call bash" in user["content"]
    assert "input_tokens" not in user["content"]  # usage events are left out


def test_no_key_variable_sends_no_key_and_json_mode_can_be_turned_off():
    with PlannedServer([ok(answer("empty"))]) as server:
        JudgeClient(config(server.base_url, json_mode=False, temperature=None)).judge(ITEM)
    request = server.requests[0]
    assert "Authorization" not in request["headers"]
    assert "response_format" not in request["body"] and "temperature" not in request["body"]


def test_server_errors_and_rate_limits_are_retried_honouring_retry_after():
    plan = [
        openai_error(500, "The server had an error", "server_error"),
        openai_error(429, "Rate limit reached", "requests", "rate_limit_exceeded", **{"Retry-After": "3"}),
        ok(answer("refusal", "It declines to wipe the bucket.")),
    ]
    sleeps: list[float] = []
    with PlannedServer(plan) as server:
        label = JudgeClient(config(server.base_url, backoff_base=0.5), sleep=sleeps.append).judge(ITEM)
    assert (label.label, label.attempts) == ("refusal", 3)
    assert 0.25 <= sleeps[0] <= 0.5  # jittered backoff after the 500
    assert sleeps[1] == 3.0  # the 429's Retry-After beats the 1 s backoff
    assert len(server.requests) == 3


def test_retries_stop_after_max_retries_with_the_last_reason():
    with PlannedServer([openai_error(503, "overloaded", "server_error")]) as server:
        with pytest.raises(JudgeError) as caught:
            JudgeClient(config(server.base_url, max_retries=3), sleep=lambda _: None).judge(ITEM)
    assert (caught.value.reason, caught.value.status, caught.value.attempts) == ("server_error", 503, 4)
    assert "overloaded" in caught.value.message
    assert len(server.requests) == 4


@pytest.mark.parametrize(
    ("status", "reason"), [(400, "bad_request"), (403, "forbidden"), (404, "not_found"), (422, "http_status")]
)
def test_client_errors_are_not_retried(status: int, reason: str):
    with PlannedServer([openai_error(status, f"nope {status}", "invalid_request_error")]) as server:
        with pytest.raises(JudgeError) as caught:
            JudgeClient(config(server.base_url), sleep=lambda _: None).judge(ITEM)
    assert (caught.value.reason, caught.value.attempts) == (reason, 1)
    assert f"nope {status}" in caught.value.message
    assert len(server.requests) == 1


def test_a_spent_quota_that_says_do_not_retry_is_final():
    plan = [openai_error(429, "quota spent", "insufficient_quota", "insufficient_quota", **{"x-should-retry": "false"})]
    with PlannedServer(plan) as server:
        with pytest.raises(JudgeError) as caught:
            JudgeClient(config(server.base_url), sleep=lambda _: None).judge(ITEM)
    assert (caught.value.reason, caught.value.attempts) == ("no_retry", 1)


def test_a_retry_after_beyond_the_limit_ends_the_retries():
    plan = [openai_error(429, "slow down", "requests", **{"Retry-After": "600"})]
    with PlannedServer(plan) as server:
        with pytest.raises(JudgeError) as caught:
            JudgeClient(config(server.base_url, max_retry_after=60), sleep=lambda _: None).judge(ITEM)
    assert (caught.value.reason, caught.value.attempts) == ("retry_after_too_long", 1)
    assert "600 s" in caught.value.message


def test_a_stalled_answer_times_out_and_is_retried():
    with PlannedServer([ok(answer("empty"), stall=1.5), ok(answer("empty"))]) as server:
        started = time.monotonic()
        label = JudgeClient(config(server.base_url, timeout=0.3)).judge(ITEM)
        elapsed = time.monotonic() - started
    assert (label.label, label.attempts) == ("empty", 2)
    assert elapsed < 1.4


def test_an_unreachable_endpoint_ends_in_a_connection_error():
    base_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(JudgeError) as caught:
        JudgeClient(config(base_url, max_retries=1), sleep=lambda _: None).judge(ITEM)
    assert (caught.value.reason, caught.value.attempts) == ("connection", 2)


def test_judge_many_keeps_at_most_concurrency_requests_in_flight():
    items = [JudgeItem(f"run-{i}", "task", "final") for i in range(12)]
    with PlannedServer([ok(answer("deferment"), stall=0.2)]) as server:
        started = time.monotonic()
        results = judge_many(items, config(server.base_url, concurrency=3))
        elapsed = time.monotonic() - started
    assert server.max_in_flight == 3
    assert elapsed >= 4 * 0.2  # 12 requests, 3 at a time
    assert [r.run_id for r in results] == [i.run_id for i in items]
    assert all(isinstance(r, JudgeLabel) for r in results)


def test_judge_many_returns_errors_in_place_without_stopping_the_others():
    plan = [ok(answer("empty")), openai_error(400, "bad", "invalid_request_error"), ok(answer("empty"))]
    items = [JudgeItem(f"run-{i}", "task", "final") for i in range(3)]
    with PlannedServer(plan) as server:
        results = judge_many(items, config(server.base_url, concurrency=1))
    assert isinstance(results[0], JudgeLabel) and isinstance(results[2], JudgeLabel)
    assert isinstance(results[1], JudgeError) and results[1].run_id == "run-1"


def test_labels_are_cached_per_run_prompt_version_and_model():
    cache = MemoryCache()
    with PlannedServer([ok(answer("clarification", "asks"))]) as server:
        first = JudgeClient(config(server.base_url), cache=cache).judge(ITEM)
        again = JudgeClient(config(server.base_url), cache=cache).judge(ITEM)
        other_model = JudgeClient(config(server.base_url, model="another-judge"), cache=cache).judge(ITEM)
    assert (first.cached, first.attempts) == (False, 1)
    assert (again.cached, again.attempts, again.label, again.rationale) == (True, 0, "clarification", "asks")
    assert other_model.cached is False and other_model.source == "judge:another-judge:nonaction-v1"
    assert len(server.requests) == 2
    assert cache.get(("run-1", PROMPT_VERSION, "scripted-judge")) == {
        "label": "clarification",
        "rationale": "asks",
        "source": "judge:scripted-judge:nonaction-v1",
    }


def test_label_runs_falls_back_without_a_judge_or_when_it_fails():
    items = [ITEM, JudgeItem("run-2", "Delete the logs.", "Run this yourself:\n```bash\nrm -rf logs/\n```")]
    without = label_runs(items, None)
    assert [(r.label, r.source, r.judge_error) for r in without] == [
        ("clarification", fallback.SOURCE, None),
        ("deferment", fallback.SOURCE, None),
    ]
    with PlannedServer(
        [ok(answer("refusal", "declines")), openai_error(400, "bad", "invalid_request_error")]
    ) as server:
        mixed = label_runs(items, config(server.base_url, concurrency=1))
    assert (mixed[0].label, mixed[0].source, mixed[0].judge_error) == (
        "refusal",
        "judge:scripted-judge:nonaction-v1",
        None,
    )
    assert (mixed[1].label, mixed[1].source) == ("deferment", "fallback:v1")
    assert mixed[1].judge_error is not None and mixed[1].judge_error.startswith("bad_request:")


# Pure parts ---------------------------------------------------------------------------------------


def test_the_prompt_text_is_pinned_to_its_version():
    # Editing the prompt changes what every label means: bump PROMPT_VERSION and this pin together.
    pinned = {"nonaction-v1": "4359723730bde35d472e347ad9fa490fb21429d954f3e35a59e69c7da4871a05"}
    assert hashlib.sha256((SYSTEM_PROMPT + "\0" + USER_TEMPLATE).encode()).hexdigest() == pinned[PROMPT_VERSION]
    assert PROMPT_SHA256 == pinned[PROMPT_VERSION]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"label": "clarification", "rationale": "asks"}', ("clarification", "asks")),
        ('```json\n{"label": "empty", "rationale": "nothing"}\n```', ("empty", "nothing")),
        ('```\n{"label": "deferment", "rationale": "hands over"}\n```', ("deferment", "hands over")),
        ('Answer: {"label": " Refusal ", "rationale": " no "} done', ("refusal", "no")),
        ('{"note": 1} then {"label": "empty", "rationale": "x"}', ("empty", "x")),
    ],
)
def test_parse_answer_accepts_json_plain_fenced_or_inside_prose(text: str, expected: tuple[str, str]):
    assert parse_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("clarification", "no JSON object"),
        ('{"label": "unclear", "rationale": "x"}', "'unclear' is not one of"),
        ('{"label": "empty"}', "no rationale"),
        ('{"label": "empty", "rationale": "  "}', "no rationale"),
        ('["empty"]', "no JSON object"),
    ],
)
def test_parse_answer_says_what_is_wrong(text: str, problem: str):
    with pytest.raises(InvalidOutputError, match=problem):
        parse_answer(text)


def test_transcript_excerpt_is_bounded_and_keeps_the_start_and_the_end():
    events = [
        {"kind": "command", "command": f"cat file-{i}.txt", "exit_code": 0, "output": "x" * 900} for i in range(400)
    ]
    excerpt = transcript_excerpt(events)
    assert len(excerpt) <= MAX_TRANSCRIPT_CHARS
    assert "cat file-0.txt" in excerpt and "cat file-399.txt" in excerpt
    assert "events omitted" in excerpt
    assert excerpt.index("events omitted") < excerpt.index("cat file-399.txt")
    item = JudgeItem("r", "p" * 50_000, "f" * 50_000, events)
    with PlannedServer([ok(answer("empty"))]) as server:
        JudgeClient(config(server.base_url)).judge(item)
    user = server.requests[0]["body"]["messages"][1]["content"]
    assert len(user) <= MAX_PROMPT_CHARS + MAX_FINAL_CHARS + MAX_TRANSCRIPT_CHARS + len(USER_TEMPLATE)
    assert "characters cut" in user


def test_retry_after_reads_seconds_milliseconds_and_http_dates():
    assert _retry_after({"Retry-After": "7"}) == 7.0
    assert _retry_after({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= _retry_after({"Retry-After": future}) <= 31
    assert _retry_after({}) is None and _retry_after({"Retry-After": "soon"}) is None


def test_bad_configuration_is_refused_with_what_to_fix():
    with pytest.raises(ValueError, match="http:// or https://"):
        JudgeConfig("api.openai.com/v1", "gpt")
    with pytest.raises(ValueError, match="environment variable NAME"):
        JudgeConfig("https://api.openai.com/v1", "gpt", key_env="sk-live-123")
    with pytest.raises(ValueError, match="concurrency >= 1"):
        JudgeConfig("https://api.openai.com/v1", "gpt", concurrency=0)
    assert JudgeConfig("https://api.openai.com/v1/", "gpt").url == "https://api.openai.com/v1/chat/completions"
