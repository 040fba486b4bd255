"""Claude Code (``@anthropic-ai/claude-code``), headless, against the gateway's Anthropic Messages API.

Launch: ``claude --print --verbose --output-format=stream-json --permission-mode=bypassPermissions``
with the prompt on stdin.  Pitfalls handled here:

* bypass mode is refused as root unless the CLI is told it is sandboxed: ``IS_SANDBOX=1`` (the
  sandbox runs it as the non-root ``agent``, but a root backend must not break it);
* ``--print`` with ``--output-format=stream-json`` fails without ``--verbose``;
* every call that is not a model request (telemetry, error reporting, auto-update, the feedback
  survey, the release notes fetch) is switched off by environment, so a run without network is
  not slowed by retries; the model calls go to ``ANTHROPIC_BASE_URL`` = the forwarder.

Its stream-json output is one JSON object per line: ``system/init``; ``assistant`` messages whose
content blocks are ``text`` / ``tool_use``; ``user`` messages carrying ``tool_result`` blocks; and
one final ``result`` (``is_error``, ``result`` text, usage, turns).  A model API failure ends in a
``result`` whose text is ``API Error: …`` with the status, e.g. ``Request rejected (429)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from harness.agents.base import AgentAdapter, AgentLaunch, AgentTask
from harness.agents.cli.common import (
    XDG_PARENTS,
    as_dict,
    home,
    http_status,
    json_lines,
    pinned_version,
    reported_cost,
)
from harness.agents.events import Command, Error, Event, FileEdit, FinalMessage, Message, ToolCall, Usage, clip
from harness.gateway.protocols import ApiKind

LAYER = "claude-code"
EDIT_TOOLS = {"Write": "write", "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit"}
_EXIT_CODE = re.compile(r"^Exit code (\d+)", re.MULTILINE)


class ClaudeCodeAdapter(AgentAdapter):
    name = "claude-code"
    api_kinds = (ApiKind.ANTHROPIC_MESSAGES,)
    image_layer = LAYER
    state_paths = (
        "home/.claude/**",
        "home/.claude.json",
        "home/.claude.json.*",
        "home/.cache/claude/**",
        "home/.cache/claude-cli-nodejs/**",
        "home/.config/claude/**",
        "home/.local/state/claude/**",
        "home/.local/share/claude/**",
        "home/.overeager-agent/**",
        *XDG_PARENTS,
    )

    def version(self) -> str:
        return pinned_version(LAYER)

    def launch(self, task: AgentTask) -> AgentLaunch:
        timeout_ms = str(int(task.command_timeout * 1000))
        env = {
            "IS_SANDBOX": "1",
            "ANTHROPIC_BASE_URL": task.base_url,
            "ANTHROPIC_API_KEY": task.run_token,
            "ANTHROPIC_MODEL": task.model,
            # Background calls (titles, summaries) go to the "small fast" model: the same one, so
            # the gateway's upstream serves them too.
            "ANTHROPIC_SMALL_FAST_MODEL": task.model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": task.model,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "BASH_DEFAULT_TIMEOUT_MS": timeout_ms,
            "BASH_MAX_TIMEOUT_MS": timeout_ms,
            "NO_COLOR": "1",
        }
        settings = {
            "permissions": {"defaultMode": "bypassPermissions"},
            "autoUpdates": False,
            "includeCoAuthoredBy": False,
        }
        argv = [
            "claude",
            "--print",
            "--verbose",
            "--output-format=stream-json",
            "--permission-mode=bypassPermissions",
            "--model",
            task.model,
            "--max-turns",
            str(task.max_steps),
        ]
        return AgentLaunch(
            argv=argv,
            env=env,
            files={home("/home/agent/.claude/settings.json"): json.dumps(settings, indent=1).encode()},
            stdin=task.prompt.encode(),
        )

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        return parse_stream_json(stdout, stderr)


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def parse_stream_json(stdout: str, stderr: str = "") -> list[Event]:
    """Common events from Claude Code's ``--output-format=stream-json`` (``--verbose``) stdout."""
    events: list[Event] = []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    message_ids: set[str] = set()
    saw_result = False
    for rec in json_lines(stdout):
        kind = rec.get("type")
        message = as_dict(rec.get("message"))
        if kind == "assistant":
            if message.get("model") == "<synthetic>":
                continue  # Claude Code's own stand-in for a failed call; the result event says it
            if message.get("id"):
                message_ids.add(str(message["id"]))
            for block in message.get("content") or []:
                block = as_dict(block)
                if block.get("type") == "text" and block.get("text"):
                    events.append(Message(text=clip(str(block["text"]))))
                elif block.get("type") == "tool_use":
                    arguments = as_dict(block.get("input"))
                    call_id = str(block.get("id", ""))
                    calls[call_id] = (str(block.get("name", "")), arguments)
                    events.append(ToolCall(name=str(block.get("name", "")), arguments=arguments, call_id=call_id))
        elif kind == "user":
            extra = as_dict(rec.get("tool_use_result"))
            for block in message.get("content") or []:
                block = as_dict(block)
                if block.get("type") != "tool_result":
                    continue
                call_id = str(block.get("tool_use_id", ""))
                name, arguments = calls.get(call_id, ("", {}))
                text = _tool_result_text(block.get("content"))
                failed = bool(block.get("is_error"))
                if name == "Bash":
                    code: int | None = 0
                    if failed:
                        m = _EXIT_CODE.search(text)
                        code = int(m.group(1)) if m else None
                    if "stdout" in extra or "stderr" in extra:
                        output = "".join(str(extra.get(k) or "") for k in ("stdout", "stderr"))
                    else:  # a failed command's result is the text "Exit code N\n<output>"
                        output = _EXIT_CODE.sub("", text, count=1).lstrip("\n")
                    events.append(
                        Command(
                            command=str(arguments.get("command", "")),
                            exit_code=code,
                            output=clip(output),
                            timed_out=bool(extra.get("interrupted")),
                            call_id=call_id,
                        )
                    )
                elif name in EDIT_TOOLS and not failed:
                    path = arguments.get("file_path") or arguments.get("notebook_path") or ""
                    events.append(FileEdit(path=str(path), action=EDIT_TOOLS[name]))
        elif kind == "result":
            saw_result = True
            text = str(rec.get("result") or "")
            failed = bool(rec.get("is_error")) or str(rec.get("subtype", "success")) != "success"
            if not failed and text and events and events[-1] == Message(text=clip(text)):
                events.pop()  # the last assistant text *is* the final answer: one event, not two
            usage = as_dict(rec.get("usage"))
            events.append(
                Usage(
                    input_tokens=int(usage.get("input_tokens") or 0)
                    + int(usage.get("cache_creation_input_tokens") or 0)
                    + int(usage.get("cache_read_input_tokens") or 0),
                    output_tokens=int(usage.get("output_tokens") or 0),
                    requests=len(message_ids),
                    cost_usd=reported_cost(rec.get("total_cost_usd")),
                )
            )
            if failed:
                reason = text or str(rec.get("subtype") or "error")
                api = reason.startswith("API Error") or "api_error_status" in rec
                status = rec.get("api_error_status") if isinstance(rec.get("api_error_status"), int) else None
                events.append(
                    Error(
                        message=clip(reason),
                        source="model_api" if api else "agent",
                        status=status if status is not None else (http_status(reason) if api else None),
                    )
                )
            elif text:
                events.append(FinalMessage(text=clip(text)))
    if not saw_result and stderr.strip():
        last = stderr.strip().splitlines()[-1]
        status = http_status(stderr)
        events.append(Error(message=clip(last), source="model_api" if status else "agent", status=status))
    return events
