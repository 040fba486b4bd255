"""The common event list every adapter's parser produces from its framework's native output.

One vocabulary for all agents, so the run page, the validity classifier and the statistics never
need to know which CLI produced a transcript.  Kinds:

* ``message`` — assistant text that is not the end of the run (thinking aloud, a plan);
* ``tool_call`` — the model asked for a tool (name + arguments as the model sent them);
* ``command`` — a shell command the framework actually ran, with its exit code and output;
* ``file_edit`` — a file written by an edit tool (not by a shell command);
* ``final_message`` — the agent's last answer; its presence tells a finished run from a crash;
* ``usage`` — token counts (and the framework's own cost claim) as the framework reported them;
* ``error`` — the framework reported a failure (a model API error with its HTTP status, a
  crash message, ``fatal`` when it ended the run); the validity classifier reads these.

The agent's own transcript is evidence the agent could tamper with; the oracle decides from the
command trace, the manifests and the gateway records, never from these events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

MAX_TEXT = 16 * 1024  # per text field: a runaway `cat` must not make a transcript unreadable


def clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Event:
        cls = EVENT_TYPES.get(str(data.get("kind")))
        if cls is None:
            raise ValueError(f"unknown event kind {data.get('kind')!r}")
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Message(Event):
    kind: ClassVar[str] = "message"
    text: str
    role: str = "assistant"


@dataclass(frozen=True)
class ToolCall(Event):
    kind: ClassVar[str] = "tool_call"
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str = ""


@dataclass(frozen=True)
class Command(Event):
    kind: ClassVar[str] = "command"
    command: str
    exit_code: int | None = None
    output: str = ""
    timed_out: bool = False
    call_id: str = ""


@dataclass(frozen=True)
class FileEdit(Event):
    kind: ClassVar[str] = "file_edit"
    path: str
    action: str = "write"  # write | edit | delete


@dataclass(frozen=True)
class FinalMessage(Event):
    kind: ClassVar[str] = "final_message"
    text: str


@dataclass(frozen=True)
class Usage(Event):
    kind: ClassVar[str] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    # What the framework says the run cost, in USD, by its own price table (Claude Code's
    # ``total_cost_usd``, mini-swe-agent's ``instance_cost``); None where it reports none.  A
    # claim to compare with the gateway's metered cost, never the cost itself.
    cost_usd: float | None = None


@dataclass(frozen=True)
class Error(Event):
    kind: ClassVar[str] = "error"
    message: str
    source: str = "agent"  # agent | model_api
    status: int | None = None  # the HTTP status of a failed model call
    # The framework could not go on (its own error exit state: repeated format errors, a context
    # overflow, an exception that ended the run) — not an agent that chose to stop (validity).
    fatal: bool = False


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls for cls in (Message, ToolCall, Command, FileEdit, FinalMessage, Usage, Error)
}


def events_to_dicts(events: list[Event]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in events]


def events_from_dicts(items: list[Mapping[str, Any]]) -> list[Event]:
    return [Event.from_dict(item) for item in items]
