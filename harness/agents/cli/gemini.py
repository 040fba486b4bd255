"""Gemini CLI (``@google/gemini-cli``), headless, pointed at the gateway.

Launch: ``gemini --output-format stream-json --approval-mode yolo --skip-trust -m <model>
-p <prompt>``.  What this version (pinned in the layer's Dockerfile) can and cannot do here:

* It speaks only Gemini's native API through ``@google/genai``: every model call is
  ``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the key in
  ``x-goog-api-key`` (captured through the gateway); it has no OpenAI-compatible or Anthropic
  provider.  The gateway serves that API (``gemini-generate-content``), so the run is registered
  under it and ``GOOGLE_GEMINI_BASE_URL`` points at the forwarder.
* Pitfall handled: with ``GOOGLE_GEMINI_BASE_URL`` set the CLI picks its ``gateway`` auth type,
  which its non-interactive validation rejects ("Invalid auth method selected."); pinning
  ``security.auth.selectedType = "gemini-api-key"`` in ``~/.gemini/settings.json`` makes it use
  the key *and* the custom base URL.  Folder trust, usage statistics, telemetry, update checks
  and checkpointing are switched off there too, and ``--approval-mode yolo`` approves every tool.
* A spent budget: the gateway's 429 carries a google.rpc RetryInfo longer than the CLI's 300 s
  retry ceiling, which makes the CLI stop at once instead of retrying ten times (≈ 3.5 min).

``--output-format stream-json`` prints one JSON event per line: ``init``, ``message`` (role,
content, ``delta``), ``tool_use`` (``tool_name``, ``tool_id``, ``parameters``), ``tool_result``
(``status``, ``output``, ``error``), ``error`` and a final ``result`` (``status``, ``stats``,
``error``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from harness.agents.base import AgentAdapter, AgentLaunch, AgentTask
from harness.agents.cli.common import XDG_PARENTS, as_dict, home, http_status, json_lines, pinned_version
from harness.agents.events import Command, Error, Event, FileEdit, FinalMessage, Message, ToolCall, Usage, clip
from harness.gateway.protocols import ApiKind

LAYER = "gemini-cli"
SETTINGS_PATH = "/home/agent/.gemini/settings.json"
SHELL_TOOLS = {"run_shell_command"}
EDIT_TOOLS = {"write_file": "write", "replace": "edit", "edit": "edit"}
# What the CLI appends to an API error whose status is 429 (with the gemini-api-key auth type,
# packages/core/src/utils/errorParsing.ts); the message itself names no status.
RATE_LIMIT_TEXT = "request a quota increase through AI Studio"
# A Google error body the CLI quotes whole: '[API Error: {"error":{"code":401,…}}]'.
_EMBEDDED_CODE = re.compile(r'"code"\s*:\s*(\d{3})\b')


class GeminiCliAdapter(AgentAdapter):
    name = "gemini-cli"
    api_kinds = (ApiKind.GEMINI,)
    image_layer = LAYER
    state_paths = (
        "home/.gemini/**",
        "home/.cache/gemini*/**",
        "home/.config/gemini*/**",
        "home/.overeager-agent/**",
        *XDG_PARENTS,
    )

    def version(self) -> str:
        return pinned_version(LAYER)

    def settings(self, task: AgentTask) -> dict[str, Any]:
        return {
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {
                "disableAutoUpdate": True,
                "disableUpdateNag": True,
                "checkpointing": {"enabled": False},
            },
            "model": {"name": task.model, "maxSessionTurns": task.max_steps},
            "ui": {"hideTips": True, "hideBanner": True},
        }

    def launch(self, task: AgentTask) -> AgentLaunch:
        env = {
            "GOOGLE_GEMINI_BASE_URL": task.base_url,
            "GEMINI_API_KEY": task.run_token,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "NO_COLOR": "1",
        }
        argv = [
            "gemini",
            "--output-format",
            "stream-json",
            "--approval-mode",
            "yolo",
            "--skip-trust",
            "-m",
            task.model,
            "-p",
            task.prompt,
        ]
        return AgentLaunch(
            argv=argv, env=env, files={home(SETTINGS_PATH): json.dumps(self.settings(task), indent=1).encode()}
        )

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        return parse_stream_json(stdout, stderr)


def _error(message: str, status: Any = None) -> Error:
    code = status if isinstance(status, int) else http_status(message)
    if code is None and (embedded := _EMBEDDED_CODE.search(message)):
        code = int(embedded.group(1)) if 400 <= int(embedded.group(1)) <= 599 else None
    if code is None and RATE_LIMIT_TEXT in message:
        code = 429
    return Error(message=clip(message), source="model_api" if code else "agent", status=code)


def parse_stream_json(stdout: str, stderr: str = "") -> list[Event]:
    """Common events from ``gemini --output-format stream-json`` stdout (``json`` output too)."""
    events: list[Event] = []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    pending = ""  # assistant text arrives in deltas; a tool call or the end closes it
    final_ok = False

    def flush() -> None:
        nonlocal pending
        if pending.strip():
            events.append(Message(text=clip(pending)))
        pending = ""

    for rec in json_lines(stdout):
        kind = rec.get("type")
        if kind == "message" and rec.get("role") == "assistant":
            pending += str(rec.get("content") or "")
        elif kind == "tool_use":
            flush()
            name, call_id = str(rec.get("tool_name", "")), str(rec.get("tool_id", ""))
            params = as_dict(rec.get("parameters"))
            calls[call_id] = (name, params)
            events.append(ToolCall(name=name, arguments=params, call_id=call_id))
        elif kind == "tool_result":
            name, params = calls.get(str(rec.get("tool_id", "")), ("", {}))
            ok = rec.get("status") == "success"
            output = str(rec.get("output") or as_dict(rec.get("error")).get("message") or "")
            if name in SHELL_TOOLS:
                events.append(
                    Command(
                        command=str(params.get("command", "")),
                        exit_code=_exit_code(output),
                        output=clip(output),
                        call_id=str(rec.get("tool_id", "")),
                    )
                )
            elif name in EDIT_TOOLS and ok:
                events.append(FileEdit(path=str(params.get("file_path", "")), action=EDIT_TOOLS[name]))
        elif kind == "error":
            flush()
            events.append(_error(str(rec.get("message", "")), rec.get("status")))
        elif kind == "result":
            stats = as_dict(rec.get("stats"))
            ok = rec.get("status") == "success"
            if ok and pending.strip():
                events.append(FinalMessage(text=clip(pending)))  # the answer the run ended on
                pending = ""
                final_ok = True
            flush()
            if int(stats.get("input_tokens") or 0) or int(stats.get("output_tokens") or 0):
                events.append(
                    Usage(
                        input_tokens=int(stats.get("input_tokens") or 0),
                        output_tokens=int(stats.get("output_tokens") or 0),
                        # stream-json counts tool calls, not model requests: 0 = not reported.
                        requests=0,
                    )
                )
            if not ok:
                err = as_dict(rec.get("error"))
                events.append(_error(str(err.get("message") or "the run failed"), err.get("code")))
        elif "response" in rec or "error" in rec:
            # ``--output-format json``: one object with the whole answer or the error.
            if rec.get("response"):
                events.append(FinalMessage(text=clip(str(rec["response"]))))
                final_ok = True
            err = as_dict(rec.get("error"))
            if err:
                events.append(_error(str(err.get("message", "")), err.get("code")))
    flush()
    if not events and not final_ok and stderr.strip():
        events.append(_error(_last_error_line(stderr)))
    return events


def _exit_code(output: str) -> int | None:
    for line in output.splitlines():
        if line.startswith("Exit Code:"):
            try:
                return int(line.split(":", 1)[1].strip())
            except ValueError:
                return None
    # stream-json shows a command's output, not its exit status (only the model's copy has it).
    return None


def _last_error_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if "error" in line.lower():
            return line.strip()
    return lines[-1].strip() if lines else ""
