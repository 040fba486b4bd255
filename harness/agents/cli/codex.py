"""Codex CLI (``@openai/codex``), headless, against the gateway's OpenAI Responses API.

Launch: ``codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
--strict-config -m <model> -`` with the prompt on stdin.  Pitfalls handled here:

* Codex ignores ``OPENAI_BASE_URL`` for its built-in ``openai`` provider: the gateway is a
  provider of its own in ``~/.codex/config.toml`` (``model_providers.overeager``) with
  ``wire_api = "responses"`` — the only wire API current Codex speaks — and ``env_key`` naming
  the variable that holds the run token;
* its own sandbox (Landlock + seccomp) and approval prompts would either block a headless run or
  fail inside the container: approvals never, sandbox off (the container *is* the sandbox);
* ``--strict-config`` makes a config key this version does not know an error instead of a
  silently ignored setting;
* update checks, analytics and the feedback upload are switched off in the config; retries are
  capped so a refused request (budget spent) ends the run instead of backing off for minutes.

``--json`` prints one JSON event per line: ``thread.started``, ``turn.started``,
``item.started`` / ``item.completed`` (items ``agent_message``, ``reasoning``,
``command_execution`` with ``command`` / ``aggregated_output`` / ``exit_code``, ``file_change``
with ``changes``), ``turn.completed`` (usage), ``turn.failed`` and ``error``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from harness.agents.base import AgentAdapter, AgentLaunch, AgentTask
from harness.agents.cli.common import XDG_PARENTS, as_dict, home, http_status, json_lines, pinned_version
from harness.agents.events import Command, Error, Event, FileEdit, FinalMessage, Message, ToolCall, Usage, clip
from harness.gateway.protocols import ApiKind

LAYER = "codex"
PROVIDER = "overeager"
CONFIG_PATH = "/home/agent/.codex/config.toml"
KEY_ENV = "OVEREAGER_API_KEY"
# The model's shell tool in this version; --json shows only the command line Codex ran with it.
SHELL_TOOL = "exec_command"
# Codex words some provider answers without their status: insufficient_quota is "Quota exceeded".
_KNOWN_STATUS = (("quota exceeded", 429), ("usage limit", 429), ("rate limit", 429))


def _toml_str(value: str) -> str:
    """A TOML basic string: the escapes JSON writes (quote, backslash, \\n, \\uXXXX) are TOML's too."""
    return json.dumps(value)


class CodexAdapter(AgentAdapter):
    name = "codex"
    api_kinds = (ApiKind.OPENAI_RESPONSES,)
    image_layer = LAYER
    state_paths = ("home/.codex/**", "home/.cache/codex/**", "home/.overeager-agent/**", *XDG_PARENTS)

    def version(self) -> str:
        return pinned_version(LAYER)

    def config_toml(self, task: AgentTask) -> str:
        base_url = task.base_url.rstrip("/") + "/v1"
        return "\n".join(
            [
                f"model = {_toml_str(task.model)}",
                f"model_provider = {_toml_str(PROVIDER)}",
                'approval_policy = "never"',
                'sandbox_mode = "danger-full-access"',
                "check_for_update_on_startup = false",
                "",
                "[model_providers.overeager]",
                'name = "Overeager gateway"',
                f"base_url = {_toml_str(base_url)}",
                f"env_key = {_toml_str(KEY_ENV)}",
                'wire_api = "responses"',
                "request_max_retries = 1",
                "stream_max_retries = 1",
                "",
                "[analytics]",
                "enabled = false",
                "",
                "[feedback]",
                "enabled = false",
                "",
                "[history]",
                'persistence = "none"',
                "",
            ]
        )

    def launch(self, task: AgentTask) -> AgentLaunch:
        argv = [
            "codex",
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--strict-config",
            "--color",
            "never",
            "-m",
            task.model,
            "-",
        ]
        env = {KEY_ENV: task.run_token, "CODEX_HOME": "/home/agent/.codex", "NO_COLOR": "1", "RUST_LOG": "error"}
        return AgentLaunch(
            argv=argv,
            env=env,
            files={home(CONFIG_PATH): self.config_toml(task).encode()},
            stdin=task.prompt.encode(),
        )

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        return parse_exec_json(stdout, stderr)


def _error(message: str) -> Error:
    status = http_status(message)
    if status is None:
        status = next((code for text, code in _KNOWN_STATUS if text in message.lower()), None)
    return Error(message=clip(message), source="model_api" if status else "agent", status=status)


def parse_exec_json(stdout: str, stderr: str = "") -> list[Event]:
    """Common events from ``codex exec --json`` stdout."""
    events: list[Event] = []
    messages: list[int] = []
    seen_errors: set[str] = set()
    tokens_in = tokens_out = turns = 0
    failed = False

    def error(message: str) -> None:
        # Codex reports one failure twice (an ``error`` event, then ``turn.failed``) and announces
        # each retry ("Reconnecting... 1/1 (…)"): one event per distinct failure.
        if message and message not in seen_errors and not message.startswith("Reconnecting..."):
            seen_errors.add(message)
            events.append(_error(message))

    def tool_call(item: Mapping[str, object]) -> None:
        call_id = str(item.get("id", ""))
        if not any(isinstance(e, ToolCall) and e.call_id == call_id for e in events):
            events.append(ToolCall(name=SHELL_TOOL, arguments={"command": item.get("command")}, call_id=call_id))

    for rec in json_lines(stdout):
        kind = str(rec.get("type", ""))
        item = as_dict(rec.get("item"))
        itype = item.get("type")
        if kind == "item.started" and itype == "command_execution":
            tool_call(item)
        elif kind == "item.completed":
            if itype == "agent_message" and str(item.get("text") or "").strip():
                messages.append(len(events))
                events.append(Message(text=clip(str(item["text"]))))
            elif itype == "command_execution":
                tool_call(item)
                code = item.get("exit_code")
                events.append(
                    Command(
                        command=str(item.get("command", "")),
                        exit_code=code if isinstance(code, int) else None,
                        output=clip(str(item.get("aggregated_output") or "")),
                        call_id=str(item.get("id", "")),
                    )
                )
            elif itype == "file_change":
                for change in item.get("changes") or []:
                    change = as_dict(change)
                    action = {"add": "write", "delete": "delete"}.get(str(change.get("kind")), "edit")
                    events.append(FileEdit(path=str(change.get("path", "")), action=action))
            elif itype == "mcp_tool_call":
                events.append(
                    ToolCall(
                        name=str(item.get("tool", "")),
                        arguments=as_dict(item.get("arguments")),
                        call_id=str(item.get("id")),
                    )
                )
            elif itype == "error":
                error(str(item.get("message", "")))
        elif kind == "turn.completed":
            turns += 1
            usage = as_dict(rec.get("usage"))
            tokens_in += int(usage.get("input_tokens") or 0)
            tokens_out += int(usage.get("output_tokens") or 0)
        elif kind == "turn.failed":
            failed = True
            error(str(as_dict(rec.get("error")).get("message", "turn failed")))
        elif kind == "error":
            message = str(rec.get("message", ""))
            failed = failed or not message.startswith("Reconnecting...")
            error(message)
    if messages and not failed and not any(isinstance(e, ToolCall) for e in events[messages[-1] :]):
        last = messages[-1]
        events[last] = FinalMessage(text=events[last].text)  # type: ignore[attr-defined]
    if turns:
        # A Codex turn spans many model requests and --json does not count them: 0 = not reported.
        events.append(Usage(input_tokens=tokens_in, output_tokens=tokens_out, requests=0))
    if not events and stderr.strip():
        error(stderr.strip().splitlines()[-1])
    return events
