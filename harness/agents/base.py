"""The agent adapter interface, the registry of adapters by name, and the built-in shell agent's adapter.

An adapter knows one agent framework: which files and argv start it non-interactively inside the
sandbox pointed at the gateway, how to read its native output back as common events, and which
paths are its own state (the oracle ignores them, SPEC §5).  It does not start sandboxes or the
gateway — :mod:`harness.agents.runner` does that the same way for every adapter.

Adapters are registered by name and imported lazily, like the sandbox backends, so a worker that
runs only reference agents never imports what the CLI adapters need.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import platform
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from harness.agents import connect
from harness.agents.events import Command, Error, Event, FinalMessage, Message, ToolCall, Usage, clip
from harness.gateway.protocols import ApiKind


@dataclass(frozen=True)
class AgentTask:
    """What an adapter may know about one run."""

    prompt: str
    base_url: str  # the gateway as seen from inside the sandbox (the forwarder), without /v1
    run_token: str  # stands in for the API key; never a real key
    model: str
    api_kind: ApiKind
    max_steps: int = 30
    command_timeout: float = 120.0
    run_id: str = ""
    framework: str = ""
    archetype: str = ""
    consent: str = ""
    # The consent-stripped twin of a scenario (its consent mode's phrasing removed); simulated
    # agents use it to plant the phrasing's effect, real agents never see it.
    consent_stripped: bool = False
    # UnderSpecBench: the family and the prompt's axis levels {"s", "b", "r"} (simulated agents only).
    family: str = ""
    axes: Mapping[str, int] = field(default_factory=dict)
    # Only the reference and stochastic agents read the scenario's solutions: they *are* the
    # answer key.  Adapters of agents under test must never look at it.
    solutions: Mapping[str, str] = field(default_factory=dict)
    # How the world starts a command for the harness's own agents (harness.world.TERMINAL_ARGV):
    # plain, login or interactive.  A real agent CLI starts its shells its own way.
    terminal: str = "plain"


@dataclass(frozen=True)
class AgentLaunch:
    """How to start an agent: one exec in the sandbox."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # root-prefixed path ("home/…") -> content
    stdin: bytes | None = None


class AdapterOptionsError(ValueError):
    """A framework's options are not ones its adapter takes; the message names what to fix."""


@dataclass(frozen=True)
class AdapterOptions:
    """The typed options an ``AgentFramework`` may set for an adapter (the base takes none).

    An adapter that takes options subclasses this with its fields and checks their values in
    ``__post_init__`` (raising :class:`AdapterOptionsError`).  What is applied is exactly
    ``as_dict()`` of the parsed options: that is what the campaign's ``sut_snapshot`` records.
    """

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, adapter: str) -> AdapterOptions:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise AdapterOptionsError(f"the {adapter!r} adapter's options must be an object, not {type(raw).__name__}")
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(str(k) for k in raw if k not in known)
        if unknown:
            takes = f"it takes {known}" if known else "it takes no options"
            raise AdapterOptionsError(f"unknown option(s) {unknown} for the {adapter!r} adapter: {takes}")
        try:
            return cls(**dict(raw))
        except TypeError as exc:  # a wrong-typed value a field's own check did not catch
            raise AdapterOptionsError(f"the {adapter!r} adapter's options: {exc}") from None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class AgentAdapter(ABC):
    name: str = ""
    # The options a framework may set (AgentFramework.options); the base class takes none, so a
    # key given to an adapter that cannot apply it is an error, never silently dropped.
    Options: ClassVar[type[AdapterOptions]] = AdapterOptions
    options: AdapterOptions = AdapterOptions()
    api_kinds: tuple[ApiKind, ...] = ()
    # False for agents that never call a model (reference, stochastic): no token, no forwarder,
    # and validity does not look at gateway records.
    uses_gateway: bool = True
    # Root-prefixed globs (manifest paths) of the framework's own state.
    state_paths: tuple[str, ...] = ()
    # Root-prefixed globs of files the CLI writes its transcript to; the runner reads them after
    # the agent's exec and passes them to ``parse`` (e.g. mini-swe-agent's trajectory JSON).
    output_files: tuple[str, ...] = ()
    # False for text-protocol agents (aider: edits and commands are blocks in the reply's text),
    # which never declare tools: validity then does not call a tool-less first request a failure.
    offers_tools: bool = True
    # The agent image layer (harness.sandbox.images.agents) its CLI is installed in; None = base image.
    image_layer: str | None = None

    @abstractmethod
    def version(self) -> str:
        """What is recorded on the run as the framework's version."""

    @abstractmethod
    def launch(self, task: AgentTask) -> AgentLaunch:
        """Files, argv, environment and stdin for a non-interactive run of ``task``."""

    @abstractmethod
    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        """The framework's native output as common events (``files``: state files it wrote)."""

    def ground_truth(self, task: AgentTask) -> dict[str, Any] | None:
        """The planted truth of a simulated agent (None for real agents)."""
        return None

    @classmethod
    def configured(cls, options: AdapterOptions) -> AgentAdapter:
        """An adapter applying ``options`` (of type ``cls.Options``); the base has none to apply."""
        return cls()

    def is_action(self, event: Event) -> bool:
        """Whether an event is the agent acting (not the framework's own protocol, e.g. a submit marker)."""
        return event.kind in ("command", "file_edit", "tool_call")


# -- the built-in shell agent ------------------------------------------------------------------

SHELL_AGENT_PATH = f"{connect.STATE_DIR}/shell_agent.py"


def _home_rel(sandbox_path: str) -> str:
    return "home/" + sandbox_path.removeprefix("/home/agent/")


class ShellAgentAdapter(AgentAdapter):
    """The adapter of :mod:`harness.agents.shell_agent` (kept here: that file must stay stdlib-only)."""

    name = "shell"
    api_kinds = (ApiKind.OPENAI_CHAT,)
    state_paths = (connect.STATE_GLOB,)

    def version(self) -> str:
        # The program is versioned with the harness; the interpreter is the sandbox's python3.
        return f"builtin (host python {platform.python_version()})"

    def launch(self, task: AgentTask) -> AgentLaunch:
        source = (Path(__file__).parent / "shell_agent.py").read_bytes()
        argv = [
            "python3",
            SHELL_AGENT_PATH,
            "--base-url",
            task.base_url.rstrip("/") + "/v1",
            "--model",
            task.model,
            "--max-steps",
            str(task.max_steps),
            "--command-timeout",
            str(task.command_timeout),
        ]
        if task.terminal != "plain":
            argv += ["--shell", task.terminal]
        return AgentLaunch(
            argv=argv,
            env={"OPENAI_API_KEY": task.run_token, "PYTHONDONTWRITEBYTECODE": "1"},
            files={_home_rel(SHELL_AGENT_PATH): source},
            stdin=task.prompt.encode(),
        )

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        return parse_shell_transcript(stdout)


def parse_shell_transcript(stdout: str) -> list[Event]:
    """Events from the shell agent's JSON lines; lines that are not JSON objects are skipped.

    The bash tool's own output goes through the agent's pipes, never to its stdout, so only a
    truncated last line can be malformed.
    """
    events: list[Event] = []
    for line in stdout.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        kind = rec.get("type")
        if kind == "assistant":
            calls = rec.get("tool_calls") or []
            if rec.get("content") and calls:
                events.append(Message(text=clip(str(rec["content"]))))
            for call in calls:
                fn = call.get("function") or {}
                try:
                    arguments = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    arguments = {"_raw": fn.get("arguments")}
                if not isinstance(arguments, dict):
                    arguments = {"_raw": arguments}
                events.append(
                    ToolCall(name=str(fn.get("name", "")), arguments=arguments, call_id=str(call.get("id", "")))
                )
        elif kind == "tool_result" and rec.get("command") is not None:
            events.append(
                Command(
                    command=str(rec["command"]),
                    exit_code=rec.get("exit_code"),
                    output=clip(str(rec.get("output", ""))),
                    timed_out=bool(rec.get("timed_out")),
                    call_id=str(rec.get("id", "")),
                )
            )
        elif kind == "final":
            events.append(FinalMessage(text=clip(str(rec.get("content", "")))))
        elif kind == "usage":
            events.append(
                Usage(
                    input_tokens=int(rec.get("input_tokens") or 0),
                    output_tokens=int(rec.get("output_tokens") or 0),
                    requests=int(rec.get("requests") or 0),
                )
            )
        elif kind == "error":
            events.append(
                Error(
                    message=clip(str(rec.get("message", ""))),
                    source=str(rec.get("source", "agent")),
                    status=rec.get("status"),
                )
            )
    return events


# -- registry ---------------------------------------------------------------------------------

# name -> "module:class"; the class is built by its ``configured(options)`` (no options: ``cls()``).
_ADAPTERS: dict[str, str] = {
    "shell": "harness.agents.base:ShellAgentAdapter",
    "reference-safe": "harness.agents.reference:ReferenceSafeAgent",
    "reference-overeager": "harness.agents.reference:ReferenceOvereagerAgent",
    "stochastic": "harness.agents.stochastic:StochasticAgent",
    "claude-code": "harness.agents.cli.claude_code:ClaudeCodeAdapter",
    "opencode": "harness.agents.cli.opencode:OpenCodeAdapter",
    "codex": "harness.agents.cli.codex:CodexAdapter",
    "gemini-cli": "harness.agents.cli.gemini:GeminiCliAdapter",
    "mini-swe-agent": "harness.agents.cli.mini_swe_agent:MiniSweAgentAdapter",
    "aider": "harness.agents.cli.aider:AiderAdapter",
    "openhands": "harness.agents.cli.openhands:OpenHandsAdapter",
}


def adapter_names() -> list[str]:
    return sorted(_ADAPTERS)


def adapter_class(name: str) -> type[AgentAdapter]:
    try:
        target = _ADAPTERS[name]
    except KeyError:
        raise KeyError(f"unknown agent framework {name!r}; choose one of {adapter_names()}") from None
    module_name, _, attr = target.partition(":")
    cls: type[AgentAdapter] = getattr(importlib.import_module(module_name), attr)
    return cls


def adapter_options(name: str, raw: Mapping[str, Any] | None) -> AdapterOptions:
    """``raw`` (an ``AgentFramework.options``) checked against adapter ``name``'s typed options."""
    return adapter_class(name).Options.parse(raw, name)


def get_adapter(name: str, options: Mapping[str, Any] | None = None) -> AgentAdapter:
    """The adapter registered as ``name``, applying the framework's ``options`` (AdapterOptionsError if
    it takes none of them); ``adapter.options`` is what was applied."""
    cls = adapter_class(name)
    parsed = cls.Options.parse(options, name)
    adapter = cls.configured(parsed)
    adapter.options = parsed
    return adapter
