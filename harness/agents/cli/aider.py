"""aider (PyPI ``aider-chat``), one non-interactive message, against the gateway's OpenAI Chat API.

Launch: ``aider --model openai/<model> --openai-api-base <gateway>/v1 --edit-format diff
--message-file <task> …`` in the scenario's repository, the run token in ``OPENAI_API_KEY``, and
**stdin at end-of-file**.  aider answers each of its confirmations (create this file? run this
shell command? add its output to the chat?) with the question's default when stdin is at EOF, and
every default is Yes: that is its permission-bypassed mode.  ``--yes-always`` is *not* that — it
answers No to the shell-command question (``explicit_yes_required``), so an agent that suggests
``cat ~/.aws/credentials`` would never run it.

aider is not a tool-calling agent: it sends no ``tools``, it edits files through SEARCH/REPLACE
blocks in the reply's text (``--edit-format diff``, the format aider itself picks for every
capable model; for a model name it does not know it would fall back to ``whole``, which cannot
carry shell commands), and it runs the ```` ```bash ```` blocks of a reply as suggested shell
commands.  With ``--message-file`` it sends one message, applies the reply (plus up to three
automatic reflections when an edit fails to apply) and exits 0 — also after a model API error,
which therefore shows only in its output.  Scripted turns for it are ``text`` turns.

Pitfalls handled here: ``--no-check-update``, ``--analytics-disable`` and
``--no-show-release-notes`` (no calls home); ``--model-metadata-file`` with an entry for the
gateway's model name, or aider fetches litellm's price list from GitHub before every request and
warns about an unknown model; ``--no-auto-commits --no-dirty-commits`` so the harness, not aider's
bookkeeping, decides what a run did to the repository's history; ``--no-gitignore`` (otherwise
it asks to add ``.aider*`` to ``.gitignore``); ``--no-pretty --no-fancy-input`` plain output.

Native output (read back from the sandbox, :attr:`AiderAdapter.output_files`): the chat history
(Markdown: ``#### `` user lines, the assistant's replies as plain text, aider's own notes as
``> `` lines — ``Applied edit to PATH``, ``Running CMD``, ``litellm.<Error>: …``), the analytics
log (JSON lines: ``message_send`` with token counts per model call, ``exit`` with its reason)
and the LLM history (exact messages sent and received).  A command's output appears only on
stdout, between ``Running CMD`` and aider's next question.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.agents import connect
from harness.agents.base import AgentAdapter, AgentLaunch, AgentTask
from harness.agents.cli.common import as_dict, home, json_lines, pinned_version
from harness.agents.cli.litellm_errors import litellm_error
from harness.agents.events import Command, Error, Event, FileEdit, FinalMessage, Message, Usage, clip
from harness.agents.identity import AGENT_IDENTITY
from harness.gateway.protocols import ApiKind

LAYER = "aider"
STATE_DIR = "/home/agent/.aider"  # aider's own (analytics id, caches)
OUT_DIR = f"{STATE_DIR}/overeager"
CHAT_HISTORY = f"{OUT_DIR}/chat.history.md"
ANALYTICS_LOG = f"{OUT_DIR}/analytics.jsonl"
LLM_HISTORY = f"{OUT_DIR}/llm.history.txt"
INPUT_HISTORY = f"{OUT_DIR}/input.history"
MESSAGE_FILE = f"{connect.STATE_DIR}/aider/message.md"
METADATA_FILE = f"{connect.STATE_DIR}/aider/model-metadata.json"
EDIT_FORMAT = "diff"
# What aider learns about the gateway's model name: no price (the gateway counts tokens), and a
# context window it uses only to warn; the SUT's upstream enforces the real one.
MAX_INPUT_TOKENS = 131_072
MAX_OUTPUT_TOKENS = 8_192

_RUNNING = re.compile(r"^Running (.+)$")
_APPLIED = re.compile(r"^Applied edit to (.+)$")
_QUESTION = re.compile(r"^(.+\?) \(Y\)es/\(N\)o.*\]: ?(\w*)$")


class AiderAdapter(AgentAdapter):
    name = "aider"
    api_kinds = (ApiKind.OPENAI_CHAT,)
    image_layer = LAYER
    # Its requests carry no tools by design (see above): the runner must not call that a toolless start.
    offers_tools = False
    state_paths = (
        home(STATE_DIR) + "/**",
        "workspace/.aider*",
        "workspace/.aider*/**",
        connect.STATE_GLOB,
    )
    # Root-prefixed sandbox files the runner should read after the agent's exec and pass to parse().
    output_files = (home(CHAT_HISTORY), home(ANALYTICS_LOG), home(LLM_HISTORY))

    def version(self) -> str:
        return pinned_version(LAYER)

    def launch(self, task: AgentTask) -> AgentLaunch:
        model = f"openai/{task.model}"
        metadata = {
            model: {
                "max_tokens": MAX_OUTPUT_TOKENS,
                "max_input_tokens": MAX_INPUT_TOKENS,
                "max_output_tokens": MAX_OUTPUT_TOKENS,
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
        argv = [
            "aider",
            "--model",
            model,
            "--openai-api-base",
            task.base_url.rstrip("/") + "/v1",
            "--edit-format",
            EDIT_FORMAT,
            "--model-metadata-file",
            METADATA_FILE,
            "--message-file",
            MESSAGE_FILE,
            "--no-auto-commits",
            "--no-dirty-commits",
            "--no-gitignore",
            "--no-check-update",
            "--no-show-model-warnings",
            "--no-show-release-notes",
            "--analytics-disable",
            "--analytics-log",
            ANALYTICS_LOG,
            "--chat-history-file",
            CHAT_HISTORY,
            "--input-history-file",
            INPUT_HISTORY,
            "--llm-history-file",
            LLM_HISTORY,
            "--no-pretty",
            "--no-fancy-input",
        ]
        env = {
            "OPENAI_API_KEY": task.run_token,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "NO_COLOR": "1",
            "TERM": "dumb",
            # aider writes user.name "Your Name" into the workspace's .git/config when `git config`
            # knows no identity (GIT_AUTHOR_NAME does not count): an edit of the repository no
            # agent made.  The sandbox's identity as command-scope git config (git >= 2.31).
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "user.name",
            "GIT_CONFIG_VALUE_0": AGENT_IDENTITY["GIT_AUTHOR_NAME"],
            "GIT_CONFIG_KEY_1": "user.email",
            "GIT_CONFIG_VALUE_1": AGENT_IDENTITY["GIT_AUTHOR_EMAIL"],
        }
        files = {
            home(MESSAGE_FILE): task.prompt.encode(),
            home(METADATA_FILE): json.dumps(metadata, indent=1).encode(),
        }
        # stdin at EOF: every confirmation takes its default, Yes (see the module docstring).
        return AgentLaunch(argv=argv, env=env, files=files, stdin=b"")

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        chat = files.get(home(CHAT_HISTORY))
        analytics = files.get(home(ANALYTICS_LOG))
        return parse_aider(
            chat.decode("utf-8", errors="replace") if chat is not None else None,
            analytics.decode("utf-8", errors="replace") if analytics is not None else "",
            stdout,
        )


@dataclass
class _Reply:
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines).strip()


def _squash(text: str) -> str:
    return "".join(text.split())


def command_outputs(stdout: str, commands: list[str]) -> dict[str, list[str]]:
    """Each command's output as printed on stdout, per run of it.

    The output follows ``Running CMD`` up to aider's next question.  The console wraps long
    lines at its width (80 columns without a terminal), breaking ``Running CMD`` itself over
    several lines, so a line starting ``Running `` is joined with the next ones until, spaces
    aside, it spells one of ``commands`` (the exact text, from the chat history).
    """
    wanted = {_squash(c): c for c in commands}
    outputs: dict[str, list[str]] = {}
    lines = stdout.splitlines()
    i = 0
    while i < len(lines):
        m = _RUNNING.match(lines[i])
        if not m:
            i += 1
            continue
        text, j = m.group(1), i + 1
        while _squash(text) not in wanted and j < len(lines) and any(k.startswith(_squash(text)) for k in wanted):
            text += " " + lines[j]
            j += 1
        command = wanted.get(_squash(text), m.group(1))
        output: list[str] = []
        while j < len(lines):
            line = lines[j]
            if _QUESTION.match(line) or _RUNNING.match(line) or line.startswith(("Add command output", "Tokens: ")):
                break
            output.append(line + "\n")
            j += 1
        outputs.setdefault(command, []).append("".join(output))
        i = j
    return outputs


def parse_aider(chat: str | None, analytics: str, stdout: str) -> list[Event]:
    """Events from aider's chat history (or, without it, its plain stdout) and analytics log."""
    events: list[Event] = []
    source = chat if chat is not None else _stdout_as_chat(stdout)
    notes = [line.rstrip()[2:] for line in source.splitlines() if line.startswith("> ")]
    ran = [m.group(1) for note in notes if (m := _RUNNING.match(note))]
    outputs = command_outputs(stdout, ran)
    seen_runs: dict[str, int] = {}
    created: set[str] = set()
    subject = ""
    reply = _Reply()
    replies: list[int] = []  # indexes in events of assistant Messages
    errors_after_reply = False
    in_body = chat is None

    def flush() -> None:
        nonlocal reply, errors_after_reply
        text = reply.text()
        if text:
            replies.append(len(events))
            events.append(Message(text=clip(text)))
            errors_after_reply = False
        reply = _Reply()

    in_fence = False
    for raw in source.splitlines():
        line = raw.rstrip()
        if in_fence or line.startswith("```"):
            # Inside a reply's code block nothing is a note: ">>>>>>> REPLACE" is edit syntax.
            if line.startswith("```"):
                in_fence = not in_fence
            if in_body:
                reply.lines.append(line)
            continue
        if line.startswith("# aider chat started at"):
            flush()
            in_body = False
            continue
        if line == "####" or line.startswith("#### "):
            flush()
            in_body = True
            continue
        if line == ">" or line.startswith("> "):
            flush()
            note = line[1:].strip()
            if not in_body:
                continue  # the banner before the first message
            error = litellm_error(note)
            if error is not None:
                events.append(error)
                errors_after_reply = True
                continue
            q = _QUESTION.match(note)
            if q:
                if q.group(1).startswith("Create new file") and q.group(2).lower().startswith("y"):
                    created.add(subject)
                continue
            m = _APPLIED.match(note)
            if m:
                path = m.group(1)
                events.append(FileEdit(path=path, action="write" if path in created else "edit"))
                continue
            m = _RUNNING.match(note)
            if m:
                command = m.group(1)
                k = seen_runs.get(command, 0)
                seen_runs[command] = k + 1
                printed = outputs.get(command, [])
                events.append(Command(command=command, output=clip(printed[k] if k < len(printed) else "")))
                continue
            if note.startswith("The LLM did not conform to the edit format"):
                events.append(Message(text=note, role="framework"))
            subject = note
            continue
        if in_body:
            reply.lines.append(line)
    flush()

    records = list(json_lines(analytics))
    sends = [as_dict(r.get("properties")) for r in records if r.get("event") == "message_send"]
    if not any(isinstance(e, Error) for e in events):
        for r in records:
            if r.get("event") == "message_send_exception":
                error = litellm_error(str(as_dict(r.get("properties")).get("exception", "")))
                if error is not None:
                    events.append(error)
                    errors_after_reply = True
    exit_reason = next(
        (str(as_dict(r.get("properties")).get("reason", "")) for r in records if r.get("event") == "exit"), ""
    )
    completed = exit_reason.startswith("Completed") if records else chat is None
    if replies and completed and not errors_after_reply:
        last = events[replies[-1]]
        assert isinstance(last, Message)
        events[replies[-1]] = FinalMessage(text=last.text)
    events.append(
        Usage(
            input_tokens=sum(int(s.get("prompt_tokens") or 0) for s in sends),
            output_tokens=sum(int(s.get("completion_tokens") or 0) for s in sends),
            requests=sum(1 for r in records if r.get("event") == "message_send_starting"),
        )
    )
    return events


def _stdout_as_chat(stdout: str) -> str:
    """Without the chat history, stdout's notes are not marked; only errors are recovered from it."""
    return "\n".join("> " + line for line in stdout.splitlines() if litellm_error(line) is not None)
