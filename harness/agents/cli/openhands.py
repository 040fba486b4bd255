"""OpenHands CLI (PyPI ``openhands``, on ``openhands-sdk``), headless, against the gateway's OpenAI Chat API.

Launch: ``openhands --headless --json --override-with-envs --file <task>`` with ``LLM_API_KEY``
(the run token), ``LLM_BASE_URL`` (the gateway's ``/v1``) and ``LLM_MODEL`` (``openai/<model>``,
litellm's OpenAI-compatible provider).  Pitfalls handled here:

* without ``--headless`` the CLI is a Textual TUI that waits for the user; ``--headless`` runs
  the seeded task to the end with the NeverConfirm policy (every action auto-approved: its
  permission-bypassed mode), no critic, and exits without the exit confirmation;
* without ``--override-with-envs`` the ``LLM_*`` variables are ignored and a first run has no
  settings, so it would stop asking for them;
* ``--json`` streams one JSON event per line on stdout, between the CLI's human-readable lines;
* the task goes in a file (``--file``), not in argv: the sandbox traces every ``execve`` and a
  prompt in the agent's argv would land in the command trace the oracle matches.  The CLI then
  opens the conversation with "Starting this session with file context … File contents: …";
* ``OPENHANDS_SUPPRESS_BANNER=1``; ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (no price list fetch).

What it still does without network, by design of 1.16: at start it tries to ``git clone`` its
public skills repository into ``~/.openhands/cache/skills`` (fails at once: the sandbox has no
network; the clone shows in the command trace as the framework's own command), and litellm
retries a failed model call 5 times with backoff from 8 to 64 s, so a dead or refusing upstream
costs a run about three minutes before it ends with a ``ConversationErrorEvent``.

The latest releases need Python 3.12; the layer runs 1.16.0 on Debian 13's Python 3.13 (see its
Dockerfile).  Events (``kind``): ``MessageEvent`` (``source`` user/agent, ``llm_message``),
``ActionEvent`` (``thought``, ``tool_call``, ``action`` — ``TerminalAction``,
``FileEditorAction``, ``FinishAction`` …), ``ObservationEvent`` (``TerminalObservation`` with
``command``/``exit_code``/``timeout`` …), ``AgentErrorEvent``, ``ConversationErrorEvent``
(``code`` = litellm's exception class, ``detail``).  Token counts are not in the stream; they are
in the conversation's ``base_state.json`` (``stats.usage_to_metrics``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fnmatch import fnmatch
from typing import Any

from harness.agents import connect
from harness.agents.base import AgentAdapter, AgentLaunch, AgentTask
from harness.agents.cli.common import as_dict, home, json_lines, pinned_version
from harness.agents.cli.litellm_errors import litellm_error, status_of
from harness.agents.events import Command, Error, Event, FileEdit, FinalMessage, Message, ToolCall, Usage, clip
from harness.gateway.protocols import ApiKind

LAYER = "openhands"
STATE_DIR = "/home/agent/.openhands"
TASK_FILE = f"{STATE_DIR}/task.md"
CONVERSATION_STATE = home(STATE_DIR) + "/conversations/*/base_state.json"
EDIT_ACTIONS = {"create": "write", "str_replace": "edit", "insert": "edit", "undo_edit": "edit"}


PROTOCOL_TOOLS = frozenset({"finish", "think"})


class OpenHandsAdapter(AgentAdapter):
    name = "openhands"
    api_kinds = (ApiKind.OPENAI_CHAT,)
    image_layer = LAYER
    state_paths = (
        home(STATE_DIR) + "/**",
        "home/.bash_history",
        "home/.cache/**",
        "home/.config/**",
        "home/.local/**",
        connect.STATE_GLOB,
    )
    # Root-prefixed sandbox files (globs) the runner should read after the exec and pass to parse().
    output_files = (CONVERSATION_STATE,)

    def version(self) -> str:
        return pinned_version(LAYER)

    def is_action(self, event: Event) -> bool:
        # ``finish`` is how OpenHands ends its turn and ``think`` only writes a thought down:
        # calling them is talking, not acting on anything.
        if isinstance(event, ToolCall) and event.name in PROTOCOL_TOOLS:
            return False
        return super().is_action(event)

    def launch(self, task: AgentTask) -> AgentLaunch:
        argv = ["openhands", "--headless", "--json", "--override-with-envs", "--file", TASK_FILE]
        env = {
            "LLM_API_KEY": task.run_token,
            "LLM_BASE_URL": task.base_url.rstrip("/") + "/v1",
            "LLM_MODEL": f"openai/{task.model}",
            "OPENHANDS_SUPPRESS_BANNER": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "NO_COLOR": "1",
        }
        return AgentLaunch(argv=argv, env=env, files={home(TASK_FILE): task.prompt.encode()}, stdin=b"")

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        state: dict[str, Any] = {}
        for path, content in files.items():
            if fnmatch(path, CONVERSATION_STATE):
                try:
                    state = as_dict(json.loads(content.decode("utf-8", errors="replace")))
                except ValueError:
                    state = {}
        return parse_openhands(stdout, state)


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(as_dict(p).get("text", "")) for p in content if as_dict(p).get("type", "text") == "text")
    return ""


def parse_openhands(stdout: str, state: Mapping[str, Any] | None = None) -> list[Event]:
    """Events from the CLI's ``--json`` stream (and token counts from its base_state.json)."""
    events: list[Event] = []
    responses: set[str] = set()
    for rec in json_lines(stdout):
        kind = rec.get("kind")
        source = rec.get("source")
        if rec.get("llm_response_id"):
            responses.add(str(rec["llm_response_id"]))
        if kind == "MessageEvent":
            msg = as_dict(rec.get("llm_message"))
            text = _texts(msg.get("content"))
            if source == "agent" and text:
                events.append(Message(text=clip(text)))
        elif kind == "ActionEvent":
            thought = _texts(rec.get("thought"))
            if thought:
                events.append(Message(text=clip(thought)))
            call = as_dict(rec.get("tool_call"))
            try:
                arguments = json.loads(call.get("arguments") or "{}")
            except ValueError:
                arguments = {"_raw": call.get("arguments")}
            if not isinstance(arguments, dict):
                arguments = {"_raw": arguments}
            name = str(call.get("name") or rec.get("tool_name") or "")
            events.append(ToolCall(name=name, arguments=arguments, call_id=str(rec.get("tool_call_id", ""))))
            action = as_dict(rec.get("action"))
            if action.get("kind") == "FileEditorAction" and action.get("command") in EDIT_ACTIONS:
                events.append(FileEdit(path=str(action.get("path", "")), action=EDIT_ACTIONS[str(action["command"])]))
            elif action.get("kind") == "FinishAction":
                events.append(FinalMessage(text=clip(str(action.get("message", "")))))
        elif kind == "ObservationEvent":
            obs = as_dict(rec.get("observation"))
            if obs.get("kind") == "TerminalObservation":
                code = obs.get("exit_code")
                events.append(
                    Command(
                        command=str(obs.get("command", "")),
                        exit_code=code if isinstance(code, int) and code >= 0 else None,
                        output=clip(_texts(obs.get("content"))),
                        timed_out=bool(obs.get("timeout")),
                        call_id=str(rec.get("tool_call_id", "")),
                    )
                )
        elif kind in ("AgentErrorEvent", "ConversationErrorEvent"):
            detail = str(rec.get("detail") or rec.get("error") or "")
            code = status_of(str(rec.get("code", "")))
            if code is not None:
                events.append(Error(message=clip(detail), source="model_api", status=code))
            else:
                error = litellm_error(detail)
                events.append(error if error is not None else Error(message=clip(detail), source="agent"))
    if not any(isinstance(e, FinalMessage) for e in events) and events and isinstance(events[-1], Message):
        # The turn ended on a reply without a tool call (a question, a refusal): that is its answer.
        events[-1] = FinalMessage(text=events[-1].text)
    usage = _usage(state or {})
    events.append(Usage(input_tokens=usage[0], output_tokens=usage[1], requests=usage[2] or len(responses)))
    return events


def _usage(state: Mapping[str, Any]) -> tuple[int, int, int]:
    """(prompt, completion, calls) summed over the conversation's LLMs (agent, condenser …)."""
    metrics = as_dict(as_dict(state.get("stats")).get("usage_to_metrics"))
    prompt = completion = calls = 0
    for m in metrics.values():
        acc = as_dict(as_dict(m).get("accumulated_token_usage"))
        prompt += int(acc.get("prompt_tokens") or 0)
        completion += int(acc.get("completion_tokens") or 0)
        calls += len(as_dict(m).get("token_usages") or [])
    return prompt, completion, calls
