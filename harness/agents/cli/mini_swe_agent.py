"""mini-swe-agent (PyPI ``mini-swe-agent``), headless, against the gateway's OpenAI Chat Completions API.

Launch: ``mini --yolo --exit-immediately --cost-limit 0 --model openai/<model> --output <traj>
-c mini.yaml -c <ours>`` — the CLI's own default config (``mini.yaml``: tool calling with one
``bash`` tool) with a small override file of ours holding the task, the step limit, the gateway's
``api_base`` and the working directory.  The task goes in that file, not in argv: the sandbox
traces every ``execve``, and a prompt in the agent's argv would put the scenario's words into the
command trace the oracle matches predicates against.

Version 2 calls the model with tool calls (``tools=[bash]``), not with a bash block in the text
(that is ``mini_textbased.yaml``), so scripted turns for it are ``tool_call`` turns, and the run
ends when a command's output starts with ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` (the script's
last turn runs ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``).  A reply without a tool call is a
format error the CLI answers itself; three in a row end the run (``RepeatedFormatError``).

Headless pitfalls handled here:

* ``MSWEA_CONFIGURED=true``, or the first run asks for a default model and key on the terminal;
* ``MSWEA_COST_TRACKING=ignore_errors``: litellm knows no price for the gateway's model name, and
  by default that aborts the run after the first answer; ``--cost-limit 0`` lifts the $3 limit;
* ``--yolo`` (no confirmation per command) and ``--exit-immediately`` (no "new task?" prompt);
* ``LITELLM_LOCAL_MODEL_COST_MAP=True``: litellm fetches its price list from GitHub on import,
  which in a sandbox without network costs three timed-out attempts;
* ``MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=3``: the CLI retries a failed model call ten times with
  exponential backoff up to a minute, so a spent budget (429) would hold a run for ~6 minutes.

Native output: the trajectory JSON (``trajectory_format`` ``mini-swe-agent-1.1``) it rewrites
after every step at ``--output``: ``messages`` in order — ``assistant`` (text, ``tool_calls``,
``extra.actions``, ``extra.response.usage``), ``tool`` (the observation, ``extra.raw_output``,
``extra.returncode``, ``extra.exception_info``), ``user`` format-error feedback, and one final
``exit`` message whose ``extra.exit_status`` is ``Submitted``, ``LimitsExceeded``,
``RepeatedFormatError`` or the name of the exception that ended the run (litellm's
``AuthenticationError``, ``RateLimitError``, ``InternalServerError`` — a refused connection is
an ``InternalServerError`` too — with ``extra.exception_str``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from harness.agents import connect
from harness.agents.base import AdapterOptions, AdapterOptionsError, AgentAdapter, AgentLaunch, AgentTask
from harness.agents.cli.common import XDG_PARENTS, as_dict, home, pinned_version, reported_cost
from harness.agents.cli.litellm_errors import litellm_error, status_of
from harness.agents.events import Command, Error, Event, FinalMessage, Message, ToolCall, Usage, clip
from harness.gateway.protocols import ApiKind

LAYER = "mini-swe-agent"
STATE_DIR = "/home/agent/.config/mini-swe-agent"  # the CLI's global config dir (platformdirs)
TRAJECTORY = f"{STATE_DIR}/last_mini_run.traj.json"  # its default --output, named explicitly
CONFIG = f"{connect.STATE_DIR}/mini-swe-agent.yaml"
SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
WORKDIR = "/workspace"
RETRY_ATTEMPTS = 3

AGENT_EXITS = frozenset({"Submitted", "LimitsExceeded", "TimeExceeded", "RepeatedFormatError", "UserInterruption"})
# Exit states that mean the agent could not go on, not that it chose to stop: the run says nothing
# about the agent's judgement (validity).  LimitsExceeded/TimeExceeded end a run that did act.
FATAL_EXITS = frozenset({"RepeatedFormatError"})
# How the console names the fatal exit states when no trajectory was written.
_FATAL_CONSOLE = re.compile(r"\b(?:RepeatedFormatError|ContextWindowExceededError|Traceback \(most recent call last\))")
# Request parameters the adapter itself sets (the gateway's address, the run token): an option
# overriding them would point the agent past the gateway or put a secret into the database.
RESERVED_MODEL_KWARGS = frozenset({"api_base", "base_url", "api_key"})


@dataclass(frozen=True)
class MiniSweAgentOptions(AdapterOptions):
    """``model_kwargs``: extra request parameters (mini's ``model.model_kwargs``, sent with every
    model request) for a model that needs them — a named ``tool_choice`` makes a small local
    model always call ``bash``, ``max_tokens`` bounds its answers (bench/local_model_smoke.py)."""

    model_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.model_kwargs, Mapping) or not all(isinstance(k, str) for k in self.model_kwargs):
            raise AdapterOptionsError("mini-swe-agent option model_kwargs must be an object of request parameters")
        reserved = sorted(RESERVED_MODEL_KWARGS & set(self.model_kwargs))
        if reserved:
            raise AdapterOptionsError(
                f"mini-swe-agent option model_kwargs may not set {reserved}: the harness sets them"
            )
        # Round-tripped through JSON: what is applied is exactly what the snapshot can record.
        try:
            object.__setattr__(self, "model_kwargs", json.loads(json.dumps(dict(self.model_kwargs))))
        except (TypeError, ValueError) as exc:
            raise AdapterOptionsError(f"mini-swe-agent option model_kwargs is not JSON: {exc}") from None


class MiniSweAgentAdapter(AgentAdapter):
    name = "mini-swe-agent"
    api_kinds = (ApiKind.OPENAI_CHAT,)
    image_layer = LAYER
    # XDG_PARENTS: writing the trajectory creates ~/.config itself, which is no act of the agent's.
    state_paths = (home(STATE_DIR) + "/**", connect.STATE_GLOB, *XDG_PARENTS)
    # Root-prefixed sandbox files the runner should read after the agent's exec and pass to parse().
    output_files = (home(TRAJECTORY),)
    Options: ClassVar[type[AdapterOptions]] = MiniSweAgentOptions

    def __init__(self, model_kwargs: Mapping[str, Any] | None = None) -> None:
        """``model_kwargs``: see :class:`MiniSweAgentOptions` (a framework sets them as options)."""
        self.options = MiniSweAgentOptions(model_kwargs=dict(model_kwargs or {}))
        self.model_kwargs = dict(self.options.model_kwargs)

    @classmethod
    def configured(cls, options: AdapterOptions) -> AgentAdapter:
        assert isinstance(options, MiniSweAgentOptions)
        return cls(model_kwargs=options.model_kwargs)

    def is_action(self, event: Event) -> bool:
        # The submit marker's echo is mini's protocol for "I am done", not an act on the workspace.
        if isinstance(event, Command) and is_submit(event.command):
            return False
        if isinstance(event, ToolCall) and is_submit(str(event.arguments.get("command", ""))):
            return False
        return super().is_action(event)

    def version(self) -> str:
        return pinned_version(LAYER)

    def launch(self, task: AgentTask) -> AgentLaunch:
        config = {
            "run": {"task": task.prompt},
            "agent": {"step_limit": task.max_steps},
            "model": {
                "cost_tracking": "ignore_errors",
                "model_kwargs": {**self.model_kwargs, "api_base": task.base_url.rstrip("/") + "/v1"},
            },
            "environment": {
                "environment_class": "local",
                "cwd": WORKDIR,
                "timeout": max(1, int(task.command_timeout)),
            },
        }
        argv = [
            "mini",
            "--yolo",
            "--exit-immediately",
            "--cost-limit",
            "0",
            "--model",
            f"openai/{task.model}",
            "--output",
            TRAJECTORY,
            "-c",
            "mini.yaml",
            "-c",
            CONFIG,
        ]
        env = {
            "OPENAI_API_KEY": task.run_token,
            "MSWEA_CONFIGURED": "true",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(RETRY_ATTEMPTS),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "NO_COLOR": "1",
            "TERM": "dumb",
        }
        # JSON is YAML: no YAML writer needed, and the prompt's quoting is exact.
        return AgentLaunch(argv=argv, env=env, files={home(CONFIG): json.dumps(config, indent=1).encode()})

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        raw = files.get(home(TRAJECTORY))
        if raw is not None:
            try:
                data = json.loads(raw.decode("utf-8", errors="replace"))
            except ValueError:
                data = None
            if isinstance(data, dict):
                return parse_trajectory(data)
        return parse_console(stdout, stderr)


def parse_trajectory(data: Mapping[str, Any]) -> list[Event]:
    """Events from a mini-swe-agent trajectory (``trajectory_format`` mini-swe-agent-1.1)."""
    events: list[Event] = []
    messages = [m for m in data.get("messages") or [] if isinstance(m, dict)]
    commands: dict[str, str] = {}  # tool_call_id -> command, from the assistant's parsed actions
    last_text = ""
    input_tokens = output_tokens = 0
    exit_message = next((m for m in reversed(messages) if m.get("role") == "exit"), None)
    submitted = exit_message is not None and as_dict(exit_message.get("extra")).get("exit_status") == "Submitted"
    for n, msg in enumerate(messages):
        role = msg.get("role")
        extra = as_dict(msg.get("extra"))
        content = _text(msg.get("content"))
        if role == "assistant":
            usage = as_dict(as_dict(extra.get("response")).get("usage"))
            input_tokens += int(usage.get("prompt_tokens") or 0)
            output_tokens += int(usage.get("completion_tokens") or 0)
            if content:
                events.append(Message(text=clip(content)))
                last_text = content
            for action in extra.get("actions") or []:
                if isinstance(action, dict) and action.get("tool_call_id"):
                    commands[str(action["tool_call_id"])] = str(action.get("command", ""))
            for call in msg.get("tool_calls") or []:
                fn = as_dict(as_dict(call).get("function"))
                try:
                    arguments = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    arguments = {"_raw": fn.get("arguments")}
                if not isinstance(arguments, dict):
                    arguments = {"_raw": arguments}
                events.append(
                    ToolCall(
                        name=str(fn.get("name", "")), arguments=arguments, call_id=str(as_dict(call).get("id", ""))
                    )
                )
        elif role == "tool" or (role == "user" and "returncode" in extra):
            call_id = str(msg.get("tool_call_id", ""))
            command = commands.get(call_id, "")
            code = extra.get("returncode")
            output = str(extra.get("raw_output", ""))
            # The submit command did run (its output starting with the marker and exit status 0 is
            # what ends the run), but the CLI raises before recording its output and logs it as
            # "action was not executed": record what it did.
            later = [m.get("role") for m in messages[n + 1 :]]
            if (
                submitted
                and command.strip().endswith(SUBMIT_MARKER)
                and extra.get("exception_info") == "action was not executed"
                and all(r in ("tool", "exit") for r in later)
            ):
                submission = str(as_dict(exit_message.get("extra") if exit_message else {}).get("submission", ""))
                code, output = 0, f"{SUBMIT_MARKER}\n{submission}"
            exception_type = str(extra.get("exception_type", ""))
            events.append(
                Command(
                    command=command,
                    exit_code=int(code) if isinstance(code, int) else None,
                    output=clip(output),
                    timed_out=exception_type == "TimeoutExpired",
                    call_id=call_id,
                )
            )
        elif role == "user" and extra.get("interrupt_type") == "FormatError":
            # The CLI's own complaint to the model about a reply without a usable tool call.
            events.append(Message(text=clip(content), role="framework"))
        elif role == "exit":
            status = str(extra.get("exit_status", ""))
            if status == "Submitted":
                submission = str(extra.get("submission", ""))
                events.append(FinalMessage(text=clip(submission.strip() or last_text)))
            elif status in AGENT_EXITS:
                events.append(
                    Error(message=f"mini-swe-agent stopped: {status}", source="agent", fatal=status in FATAL_EXITS)
                )
            else:
                # An exception ended the run (litellm's, or the CLI's own): the agent could not go on.
                text = str(extra.get("exception_str") or content or status)
                code = status_of(status)
                events.append(
                    Error(
                        message=clip(text),
                        source="model_api" if code is not None else "agent",
                        status=code,
                        fatal=True,
                    )
                )
    stats = as_dict(as_dict(data.get("info")).get("model_stats"))
    # litellm prices the run from its own table; under cost_tracking "ignore_errors" a model it
    # does not know costs 0, which is "no claim", not a claim of zero.
    cost = reported_cost(stats.get("instance_cost"))
    events.append(
        Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            requests=int(stats.get("api_calls") or 0),
            cost_usd=cost if cost else None,
        )
    )
    return events


def is_submit(command: str) -> bool:
    """Whether a command is only mini's submission (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``)."""
    words = command.strip().rstrip(";").split()
    return len(words) == 2 and words[0] == "echo" and words[1].strip("'\"") == SUBMIT_MARKER


def parse_console(stdout: str, stderr: str) -> list[Event]:
    """What the console says when the trajectory file is not available: only how the run ended.

    The console output is rich-formatted prose (wrapped at the terminal width), not a transcript;
    the only line it reliably carries is the exception that ended a failed run.
    """
    lines = (stderr + "\n" + stdout).splitlines()
    for line in reversed(lines):
        error = litellm_error(line)
        if error is not None:
            return [error]
    for line in reversed(lines):
        match = _FATAL_CONSOLE.search(line)
        if match is not None:
            return [Error(message=clip(line.strip()), source="agent", fatal=True)]
    return []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal content parts
        return "".join(str(as_dict(p).get("text", "")) for p in content)
    return ""
