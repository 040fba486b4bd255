"""OpenCode (``opencode-ai``), headless, against the gateway through a custom provider.

Launch: ``opencode run --format json --pure --auto -m overeager/<model> <prompt>``.  The
gateway is an ``overeager`` provider in ``~/.config/opencode/opencode.json`` built on one of the
AI SDK providers OpenCode bundles (so nothing is fetched from npm at run time):

| api kind | provider package | route |
|---|---|---|
| ``openai-chat`` (default) | ``@ai-sdk/openai-compatible`` | ``POST /v1/chat/completions`` |
| ``anthropic-messages`` | ``@ai-sdk/anthropic`` | ``POST /v1/messages`` |

Pitfalls handled here:

* a permission left at "ask" blocks a headless run forever (nobody answers the prompt):
  ``"permission": "allow"`` for everything, plus ``--auto`` for any rule a later version adds;
* the models catalogue (models.dev), auto-update, sharing, LSP downloads and the default
  plugins (installed from npm on first start) all want the network: each is switched off by
  ``OPENCODE_DISABLE_*`` / config, and ``--pure`` runs without external plugins; the provider's
  model is declared in the config, so no catalogue is needed;
* a project config in the workspace (``opencode.json``, ``.opencode/``) is merged *over* the
  global one, so it could re-point the provider or turn a permission back to "ask": the
  harness's config is also passed inline (``OPENCODE_CONFIG_CONTENT``), the one source that wins
  over the project's.  The rest of the project's config, and its ``AGENTS.md`` / ``CLAUDE.md``
  instructions (the scenario's consent channels), still apply as they would for a user.

``--format json`` prints one JSON event per line: ``step_start``, ``text``, ``tool_use``
(``part.tool``, ``part.state.input`` / ``output`` / ``metadata.exit``), ``step_finish``
(``part.tokens``) and ``error`` (``error.data.statusCode``, ``message``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.agents.base import AgentAdapter, AgentLaunch, AgentTask
from harness.agents.cli.common import XDG_PARENTS, as_dict, home, http_status, json_lines, pinned_version
from harness.agents.events import Command, Error, Event, FileEdit, FinalMessage, Message, ToolCall, Usage, clip
from harness.gateway.protocols import ApiKind

LAYER = "opencode"
PROVIDER = "overeager"
CONFIG_PATH = "/home/agent/.config/opencode/opencode.json"
PROVIDER_PACKAGES = {
    ApiKind.OPENAI_CHAT: "@ai-sdk/openai-compatible",
    ApiKind.ANTHROPIC_MESSAGES: "@ai-sdk/anthropic",
}
NO_OUTPUT = "(no output)"  # OpenCode's stand-in for a command that printed nothing
EDIT_TOOLS = {"write": "write", "edit": "edit", "patch": "edit", "multiedit": "edit", "apply_patch": "edit"}


class OpenCodeAdapter(AgentAdapter):
    name = "opencode"
    api_kinds = (ApiKind.OPENAI_CHAT, ApiKind.ANTHROPIC_MESSAGES)
    image_layer = LAYER
    state_paths = (
        "home/.config/opencode/**",
        "home/.local/share/opencode/**",
        "home/.local/state/opencode/**",
        "home/.cache/opencode/**",
        "home/.overeager-agent/**",
        *XDG_PARENTS,
        # The project id OpenCode caches inside the repository's git directory.
        "workspace/.git/opencode",
    )

    def version(self) -> str:
        return pinned_version(LAYER)

    def config(self, task: AgentTask) -> dict[str, Any]:
        package = PROVIDER_PACKAGES.get(task.api_kind)
        if package is None:
            raise ValueError(f"opencode speaks {[k.value for k in self.api_kinds]}, not {task.api_kind.value}")
        return {
            "$schema": "https://opencode.ai/config.json",
            "model": f"{PROVIDER}/{task.model}",
            "small_model": f"{PROVIDER}/{task.model}",
            "provider": {
                PROVIDER: {
                    "npm": package,
                    "name": "Overeager gateway",
                    "options": {"baseURL": task.base_url.rstrip("/") + "/v1", "apiKey": "{env:OVEREAGER_API_KEY}"},
                    "models": {
                        task.model: {
                            "name": task.model,
                            "tool_call": True,
                            "limit": {"context": 200_000, "output": 8_192},
                        }
                    },
                }
            },
            "enabled_providers": [PROVIDER],
            "permission": "allow",
            "autoupdate": False,
            "share": "disabled",
            "snapshot": False,
            "lsp": False,
            "formatter": False,
        }

    def launch(self, task: AgentTask) -> AgentLaunch:
        config = json.dumps(self.config(task), indent=1)
        env = {
            "OVEREAGER_API_KEY": task.run_token,
            "OPENCODE_CONFIG_CONTENT": config,
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_TERMINAL_TITLE": "1",
            "OPENCODE_EXPERIMENTAL_BASH_DEFAULT_TIMEOUT_MS": str(int(task.command_timeout * 1000)),
            "NO_COLOR": "1",
        }
        argv = [
            "opencode",
            "run",
            "--format",
            "json",
            "--pure",
            "--auto",
            "--title",
            f"overeager run {task.run_id}".strip(),
            "-m",
            f"{PROVIDER}/{task.model}",
            task.prompt,
        ]
        return AgentLaunch(
            argv=argv,
            env=env,
            # Also as the global config file, where a person debugging the sandbox looks first.
            files={home(CONFIG_PATH): config.encode()},
        )

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        return parse_json_events(stdout, stderr)


def parse_json_events(stdout: str, stderr: str = "") -> list[Event]:
    """Common events from ``opencode run --format json`` stdout."""
    events: list[Event] = []
    texts: list[int] = []  # indexes of Message events, the last of which is the final answer
    tokens_in = tokens_out = steps = 0
    for rec in json_lines(stdout):
        kind = rec.get("type")
        part = as_dict(rec.get("part"))
        if kind == "text":
            text = str(part.get("text") or "")
            if text.strip():
                texts.append(len(events))
                events.append(Message(text=clip(text)))
        elif kind == "tool_use":
            tool = str(part.get("tool", ""))
            state = as_dict(part.get("state"))
            arguments = as_dict(state.get("input"))
            call_id = str(part.get("callID") or part.get("id") or "")
            events.append(ToolCall(name=tool, arguments=arguments, call_id=call_id))
            meta = as_dict(state.get("metadata"))
            done = state.get("status") == "completed"
            if tool == "bash":
                code = meta.get("exit")
                output = state.get("output") if done else state.get("error")
                if output == NO_OUTPUT:
                    output = ""
                events.append(
                    Command(
                        command=str(arguments.get("command", "")),
                        exit_code=code if isinstance(code, int) else (None if not done else 0),
                        output=clip(str(output or "")),
                        call_id=call_id,
                    )
                )
            elif tool in EDIT_TOOLS and done:
                path = arguments.get("filePath") or arguments.get("path") or ""
                events.append(FileEdit(path=str(path), action=EDIT_TOOLS[tool]))
        elif kind == "step_finish":
            steps += 1
            tok = as_dict(part.get("tokens"))
            cache = as_dict(tok.get("cache"))
            tokens_in += int(tok.get("input") or 0) + int(cache.get("read") or 0) + int(cache.get("write") or 0)
            tokens_out += int(tok.get("output") or 0) + int(tok.get("reasoning") or 0)
        elif kind == "error":
            err = as_dict(rec.get("error"))
            data = as_dict(err.get("data"))
            message = str(data.get("message") or err.get("message") or err.get("name") or "error")
            status = data.get("statusCode")
            api = err.get("name") == "APIError" or isinstance(status, int)
            events.append(
                Error(
                    message=clip(message),
                    source="model_api" if api else "agent",
                    status=status if isinstance(status, int) else (http_status(message) if api else None),
                )
            )
    if texts and not any(isinstance(e, (Error, ToolCall)) for e in events[texts[-1] :]):
        last = texts[-1]
        events[last] = FinalMessage(text=events[last].text)  # type: ignore[attr-defined]
    if steps:
        events.append(Usage(input_tokens=tokens_in, output_tokens=tokens_out, requests=steps))
    if not events and stderr.strip():
        status = http_status(stderr)
        events.append(
            Error(
                message=clip(stderr.strip().splitlines()[-1]), source="model_api" if status else "agent", status=status
            )
        )
    return events
