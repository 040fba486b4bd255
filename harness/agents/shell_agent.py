"""The built-in minimal shell agent: one ``bash`` tool, the OpenAI Chat Completions API, stdlib only.

It is the smallest thing that deserves the name "coding agent", kept readable as a reference for
what every adapter does: send the task, run what the model asks for, feed the result back, stop
at a final answer or after ``--max-steps`` model calls.  It runs verbatim under the sandbox's
python3 (copied in by :class:`harness.agents.base.ShellAgentAdapter`)::

    python3 shell_agent.py --base-url http://127.0.0.1:8765/v1 --model M [--max-steps N]
        [--command-timeout S] < prompt.txt            # the run token in OPENAI_API_KEY

Its transcript goes to stdout as JSON lines, one object per step, with a ``type`` of
``request``, ``assistant``, ``tool_result``, ``final``, ``usage`` or ``error``;
:func:`harness.agents.base.parse_shell_transcript` turns them into common events.  Diagnostics go
to stderr.  Exit codes: 0 finished (final answer or step limit), 1 model API failure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

SYSTEM_PROMPT = (
    "You are a coding agent working in a git repository at /workspace. "
    "Use the bash tool to inspect and change files and to run commands. "
    "When the task is done, answer with a short summary and no tool call."
)
BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command in /workspace and return its exit code and output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run."}},
            "required": ["command"],
        },
    },
}
MAX_OUTPUT = 16 * 1024  # per tool result sent back: the context window is the limit, not the disk
REQUEST_TIMEOUT = 600.0


def emit(record: dict[str, Any]) -> None:
    # One line per record, flushed: if the agent is killed mid-run, every finished step is kept.
    sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def chat(base_url: str, token: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310 - the base URL is the forwarder's http://127.0.0.1
        base_url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:  # noqa: S310 - http to the forwarder
        result: dict[str, Any] = json.loads(response.read())
        return result


# How each command's shell starts (--shell): plain ``bash -c``, a login shell (/etc/profile and
# ~/.profile, as Codex runs its commands) or an interactive one (~/.bashrc, as a terminal does).
SHELLS = {"plain": ["bash", "-c"], "login": ["bash", "-l", "-c"], "interactive": ["bash", "-i", "-c"]}
# What bash -i prints on a stdin that is not a terminal: noise, not the command's output.
JOB_CONTROL_NOISE = (
    "bash: cannot set terminal process group (-1): Inappropriate ioctl for device\n",
    "bash: no job control in this shell\n",
)


def run_bash(command: str, timeout: float, shell: str = "plain") -> tuple[int | None, str, bool]:
    try:
        done = subprocess.run(
            [*SHELLS[shell], command],
            cwd="/workspace",
            stdin=subprocess.DEVNULL,  # a command reading stdin would otherwise eat nothing and hang
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        return None, out.decode("utf-8", "replace") + f"\n[timed out after {timeout:g}s]", True
    text = done.stdout.decode("utf-8", "replace")
    for noise in JOB_CONTROL_NOISE if shell == "interactive" else ():
        text = text.replace(noise, "", 1)
    return done.returncode, text, False


def clip(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + f"\n[{len(text) - MAX_OUTPUT} bytes cut]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="minimal shell agent")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--command-timeout", type=float, default=120.0)
    parser.add_argument("--shell", choices=sorted(SHELLS), default="plain")
    args = parser.parse_args(argv)
    token = os.environ.get("OPENAI_API_KEY", "")
    prompt = sys.stdin.read()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]
    totals = {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    try:
        for step in range(1, args.max_steps + 1):
            emit({"type": "request", "step": step})
            try:
                reply = chat(args.base_url, token, {"model": args.model, "messages": messages, "tools": [BASH_TOOL]})
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:2000]
                emit({"type": "error", "source": "model_api", "status": exc.code, "message": detail})
                return 1
            except (urllib.error.URLError, OSError, ValueError) as exc:
                emit({"type": "error", "source": "model_api", "status": None, "message": str(exc)})
                return 1
            totals["requests"] += 1
            usage = reply.get("usage") or {}
            totals["input_tokens"] += int(usage.get("prompt_tokens") or 0)
            totals["output_tokens"] += int(usage.get("completion_tokens") or 0)
            message = reply["choices"][0]["message"]
            calls = message.get("tool_calls") or []
            content = message.get("content") or ""
            emit({"type": "assistant", "step": step, "content": content, "tool_calls": calls})
            if not calls:
                emit({"type": "final", "content": content})
                return 0
            messages.append({"role": "assistant", "content": content or None, "tool_calls": calls})
            for call in calls:
                try:
                    command = str(json.loads(call["function"]["arguments"] or "{}")["command"])
                except (KeyError, TypeError, ValueError):
                    result = "error: the bash tool takes a JSON object with a string 'command'"
                    emit({"type": "tool_result", "id": call.get("id", ""), "command": None, "output": result})
                else:
                    code, output, timed_out = run_bash(command, args.command_timeout, args.shell)
                    emit(
                        {
                            "type": "tool_result",
                            "id": call.get("id", ""),
                            "command": command,
                            "exit_code": code,
                            "timed_out": timed_out,
                            "output": clip(output),
                        }
                    )
                    result = f"exit code: {code if code is not None else 'timeout'}\n{clip(output)}"
                messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result})
        # Out of steps: a normal end for a bounded agent, not a crash.
        emit({"type": "final", "content": "", "reason": "max_steps"})
        return 0
    finally:
        emit({"type": "usage", **totals})


if __name__ == "__main__":
    sys.exit(main())
