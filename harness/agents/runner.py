"""The agent's side of a run, whatever the benchmark: plan the launch, take the turn, judge validity.

    plan_agent (adapter × SUT × backend checked, the launch and the gateway grant prepared)
    → the benchmark creates its sandbox with ``plan.file_specs()`` and ``plan.sockets``
    → take_turn (run token live for exactly the agent's exec; output, gateway records, parsed
    events, validity) → the benchmark collects its evidence and scores it.

The benchmarks' own run functions — ``pool.execution.run_agent`` for a SNARE scenario,
``suite.execution.run_task`` for an UnderSpecBench prompt — are built from these pieces.

Validity is decided separately from the verdict and first (issue 5 §4): a run that hung, lost
its model or never had the means to act says nothing about overeagerness, so it gets no verdict.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import redis

from harness.agents import connect
from harness.agents.base import AgentAdapter, AgentLaunch, AgentTask
from harness.agents.events import Error, Event, FinalMessage
from harness.gateway.protocols import ApiKind
from harness.gateway.registry import (
    DEFAULT_PREFIX,
    Budgets,
    RunGrant,
    UpstreamConfig,
    new_run_token,
    register_run,
    revoke_run,
    run_usage,
)
from harness.outcome import Validity
from harness.procutil import die_with_parent
from harness.sandbox import reaper
from harness.sandbox.base import ExecResult, Sandbox, SandboxError
from harness.sandbox.images import agents as agent_images
from harness.sandbox.paths import FileSpec, sandbox_path

DEFAULT_WALL_LIMIT = 1800.0
SETUP_TIMEOUT = 60.0
# Record error kinds that mean the model side failed, not the agent: the run is not evidence.
GATEWAY_ERROR_KINDS = frozenset({"budget_exceeded", "upstream", "timeout", "upstream_status"})
# How frameworks and providers word a prompt that no longer fits the model's context window.
CONTEXT_OVERFLOW = re.compile(
    r"ContextWindowExceeded|context[ _-]?(?:length|window)[ _-]?exceeded|maximum context length|"
    r"exceeds? the (?:model's )?context|prompt is too long|context_length_exceeded",
    re.IGNORECASE,
)


# -- the gateway process ---------------------------------------------------------------------


@dataclass(frozen=True)
class GatewayHandle:
    """A running gateway as the runner needs it: its socket's host directory and its Redis keys."""

    socket_dir: str
    redis_url: str
    prefix: str = DEFAULT_PREFIX

    @property
    def socket_path(self) -> str:
        return os.path.join(self.socket_dir, connect.SOCKET_NAME)


@contextlib.contextmanager
def gateway_process(redis_url: str, prefix: str = DEFAULT_PREFIX, startup_s: float = 20.0) -> Iterator[GatewayHandle]:
    """Start ``python -m harness.gateway.server`` on a Unix socket in a fresh directory; stop it after."""
    # The name carries the owner (pid, start ticks): the reaper removes it if a SIGKILL skipped
    # the ``finally`` below.
    socket_dir = tempfile.mkdtemp(prefix=reaper.gateway_dir_prefix())
    # The sandbox's agent (uid 1000) must traverse the directory to reach the 0666 socket.
    os.chmod(socket_dir, 0o755)  # noqa: S103
    handle = GatewayHandle(socket_dir, redis_url, prefix)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.gateway.server",
            "--unix",
            handle.socket_path,
            "--redis-url",
            redis_url,
            "--prefix",
            prefix,
            "--log-level",
            "WARNING",
        ],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # A worker killed with SIGKILL runs no ``finally``: without this its gateway lives on.
        preexec_fn=die_with_parent,
    )
    assert proc.stderr is not None
    stderr = proc.stderr
    ready = threading.Event()
    tail: collections.deque[str] = collections.deque(maxlen=50)

    def drain() -> None:
        # Read stderr for the process's whole life: an unread pipe fills at 64 KiB and would then
        # block the gateway's logging — and with it every model request of every run.
        for raw in stderr:
            line = raw.decode(errors="replace")
            tail.append(line)
            if "gateway listening" in line:  # printed after the socket exists and is chmod-ed
                ready.set()
        ready.set()  # EOF: the process is gone; the caller sees that below

    threading.Thread(target=drain, name="gateway-stderr", daemon=True).start()
    try:
        if not ready.wait(startup_s) or proc.poll() is not None:
            raise RuntimeError(f"gateway did not start listening: {''.join(tail)[-2000:]}")
        yield handle
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(socket_dir, ignore_errors=True)


# -- validity --------------------------------------------------------------------------------


def classify_validity(
    *,
    uses_gateway: bool,
    exit_code: int,
    timed_out: bool,
    events: Sequence[Event],
    records: Sequence[Mapping[str, Any]],
    budget_exceeded: str | None,
    offers_tools: bool = True,
    is_action: Callable[[Event], bool] | None = None,
) -> tuple[Validity, str]:
    """The run's validity and why; checked in order, the first that applies wins.

    The gateway's records beat the agent's transcript wherever both speak: the agent's output is
    the agent's word, the records are the harness's.  A 401 is the exception — the gateway does
    not record unauthenticated requests, so only the agent can tell about it.

    A run the agent never got to act in is not evidence either (issue 18): its framework stopped
    on its own fatal error (exit code 0 or not — mini-swe-agent exits 0 after
    ``RepeatedFormatError``), or it ended with no command, no tool call and no answer.  An agent
    that answered without acting (a question, a refusal) did act in the sense that matters: it is
    valid and goes to the non-action dispositions.  ``is_action``: the adapter's
    (``AgentAdapter.is_action``), so a framework's protocol moves (a submit marker) do not count.
    """
    if timed_out:
        return Validity.TIMEOUT, "the agent did not exit within the wall-time limit"
    failed = [r for r in records if (r.get("error") or {}).get("kind") in GATEWAY_ERROR_KINDS]
    if budget_exceeded or failed:
        err = (failed[0].get("error") or {}) if failed else {}
        reason = budget_exceeded or err.get("reason") or err.get("kind")
        return Validity.GATEWAY_FAILURE, f"the gateway refused or failed a model request: {reason}"
    api_errors = [e for e in events if isinstance(e, Error) and e.source == "model_api" and e.status is not None]
    if any(e.status in (401, 403, 429) or (e.status or 0) >= 500 for e in api_errors):
        return Validity.GATEWAY_FAILURE, f"the model API answered {api_errors[0].status}: {api_errors[0].message[:200]}"
    if uses_gateway:
        answered = [r for r in records if r.get("status") == 200]
        if not answered:
            return Validity.TOOLLESS_START, "no model request of the agent was answered (it could not start or connect)"
        # A text-protocol agent (aider: edits and shell commands are blocks in the reply's text)
        # never offers tools; for it an answered request is a start with the means to act.
        if offers_tools and not (answered[0].get("request") or {}).get("tools"):
            return Validity.TOOLLESS_START, "the agent's first model request offered no tools"
    acts = is_action or _default_is_action
    acted = [e for e in events if acts(e)]
    # A tool call and the command it ran are one action: count the commands when there are any.
    actions = sum(1 for e in acted if e.kind != "tool_call") or len(acted)
    fatal = [e for e in events if isinstance(e, Error) and (e.fatal or CONTEXT_OVERFLOW.search(e.message))]
    if uses_gateway and fatal:
        what = "a context overflow" if CONTEXT_OVERFLOW.search(fatal[-1].message) else "its own fatal error"
        if not actions:
            return Validity.AGENT_ERROR, f"the agent stopped on {what}: {fatal[-1].message[:300]}"
        # It acted first: what it did is evidence, ended early like a step limit. Discarding such
        # runs would drop the longest, most exploratory ones (a small context fills after a few
        # steps), which is where oversteps happen: a survival bias in the rate.
        return Validity.VALID, f"ended early: after {actions} action(s) the agent stopped on {what}"
    final = any(isinstance(e, FinalMessage) for e in events)
    if exit_code != 0 and not final:
        return Validity.CRASH, f"the agent exited with {exit_code} and no final message"
    if uses_gateway and not final and not actions:
        return Validity.NO_ACTION, "the agent ended with no command, no tool call and no answer"
    return Validity.VALID, ""


def _default_is_action(event: Event) -> bool:
    return event.kind in ("command", "file_edit", "tool_call")


# -- the run ---------------------------------------------------------------------------------


MAX_DIFF_FILES = 200
MAX_DIFF_CHARS = 64 * 1024


def text_diffs(
    before: Mapping[str, str], after: Mapping[str, str], changes: Sequence[Mapping[str, Any]]
) -> dict[str, str]:
    """Unified diffs of the changed text files the evidence holds (created files diff against empty).

    Bounded: a run that rewrites a thousand files keeps the first MAX_DIFF_FILES diffs, each
    clipped, so a run's record stays small enough to show.
    """
    import difflib

    out: dict[str, str] = {}
    for c in changes:
        path = str(c["path"])
        if len(out) >= MAX_DIFF_FILES:
            break
        if c["change"] == "deleted" and path in before:
            old, new = before[path], ""
        elif path in after:
            old, new = before.get(path, ""), after[path]
        else:
            continue
        diff = "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=2
            )
        )
        if diff:
            out[path] = diff if len(diff) <= MAX_DIFF_CHARS else diff[:MAX_DIFF_CHARS] + "\n… [diff clipped]\n"
    return out


def read_output_files(sandbox: Any, manifest: Mapping[str, Any], adapter: AgentAdapter) -> dict[str, bytes]:
    """The files an adapter's CLI writes its transcript to (``output_files`` globs), read after its exec.

    Read here, not from the evidence's ``files_after``: that is capped at 256 KiB per file and
    text only, and a long trajectory is bigger.  A file that vanished is simply not there.
    """
    patterns = adapter.output_files
    out: dict[str, bytes] = {}
    for key, entry in manifest.items():
        if entry.type == "file" and any(fnmatch(key, p) for p in patterns):
            with contextlib.suppress(SandboxError):
                out[key] = sandbox.read_file(sandbox_path(key))
    return out


def read_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            records.append(json.loads(line))
    # Lines are in completion order; seq is arrival order, which is what "first request" means.
    return sorted(records, key=lambda r: int(r.get("seq") or 0))


@dataclass
class AgentPlan:
    """Everything decided before a sandbox exists: the task, the launch, the grant, the image."""

    adapter: AgentAdapter
    task: AgentTask
    launch: AgentLaunch
    argv: list[str]
    files: dict[str, bytes]  # root-prefixed path → content: the adapter's files and the forwarder
    sockets: dict[str, str]
    image: dict[str, Any]  # {"image": tag} for a CLI layer on docker, else {}
    grant: RunGrant | None
    token: str
    records_path: Path

    def file_specs(self) -> list[FileSpec]:
        return [FileSpec(path, content, 0o644) for path, content in sorted(self.files.items())]


def plan_agent(
    adapter: AgentAdapter,
    sut: Mapping[str, Any],
    *,
    prompt: str,
    backend: str,
    run_id: str,
    attempt: int,
    evidence: Path,
    gateway: GatewayHandle | None,
    wall_limit: float,
    budgets: Budgets | None,
    max_steps: int,
    command_timeout: float,
    canaries: Sequence[str] = (),
    task_fields: Mapping[str, Any] | None = None,
) -> AgentPlan:
    """Validate the SUT against the adapter and the backend, and prepare the agent's launch.

    Everything that can be wrong with a configuration fails here, before any sandbox exists.
    """
    image: dict[str, Any] = {}  # create(image=...) exists on the docker backend only
    if adapter.image_layer is not None:
        if backend != "docker":
            raise ValueError(
                f"framework {adapter.name!r} runs only in the docker backend: its CLI is installed in the image"
                f" layer {adapter.image_layer!r} (harness/sandbox/images/agents/), which a {backend} sandbox cannot use"
            )
        image["image"] = agent_images.image_tag(adapter.image_layer)
    evidence.mkdir(parents=True, exist_ok=True)
    api_kind = ApiKind(sut.get("api_kind") or (adapter.api_kinds[0] if adapter.api_kinds else ApiKind.OPENAI_CHAT))
    token = new_run_token() if adapter.uses_gateway else ""
    records_path = evidence / "gateway.jsonl"
    grant: RunGrant | None = None
    if adapter.uses_gateway:
        if gateway is None:
            raise ValueError(f"agent {adapter.name!r} calls a model: run_agent needs a gateway")
        if adapter.api_kinds and api_kind not in adapter.api_kinds:
            raise ValueError(
                f"agent {adapter.name!r} speaks {[k.value for k in adapter.api_kinds]}, not {api_kind.value}"
            )
        upstream = sut["upstream"]
        if isinstance(upstream, Mapping):
            upstream = UpstreamConfig(**upstream)
        grant = RunGrant(
            run_id=run_id,
            attempt=attempt,
            api_kind=api_kind,
            upstream=upstream,
            evidence_path=str(records_path),
            expires_at=time.time() + wall_limit + 600,
            budgets=budgets or Budgets(max_requests=max_steps + 5, max_seconds=wall_limit),
            canaries=tuple(canaries),
        )
        grant.upstream.validate()
    task = AgentTask(
        prompt=prompt,
        base_url=connect.base_url(),
        run_token=token,
        model=str(sut.get("model", "")),
        api_kind=api_kind,
        max_steps=max_steps,
        command_timeout=command_timeout,
        run_id=run_id,
        framework=str(sut["framework"]),
        **dict(task_fields or {}),
    )
    launch = adapter.launch(task)
    files = dict(launch.files)
    argv = launch.argv
    sockets: dict[str, str] = {}
    if adapter.uses_gateway:
        assert gateway is not None
        files["home/.overeager-agent/forward.py"] = connect.forwarder_source()
        argv = connect.forwarder_argv(argv)
        sockets = {gateway.socket_dir: connect.SANDBOX_SOCKET_DIR}
    return AgentPlan(adapter, task, launch, argv, files, sockets, image, grant, token, records_path)


@dataclass
class AgentTurn:
    """What the agent's exec left: its output, the gateway's records, its events, its validity."""

    result: ExecResult
    exec_seq: int
    stdout: str
    stderr: str
    records: list[dict[str, Any]]
    usage: dict[str, Any]
    canaries_seen: tuple[str, ...]
    events: list[Event]
    validity: Validity
    validity_reason: str


def take_turn(
    sandbox: Sandbox,
    plan: AgentPlan,
    gateway: GatewayHandle | None,
    *,
    env: Mapping[str, str],
    wall_limit: float,
    evidence: Path,
) -> AgentTurn:
    """Run the agent once in a prepared sandbox, its run token live exactly for the exec.

    The token is registered only now and revoked before returning (and on any error), so a failed
    sandbox creation or setup leaves no grant behind and no token outlives its agent.
    """
    rclient: redis.Redis | None = None
    try:
        if plan.grant is not None and gateway is not None:
            rclient = redis.Redis.from_url(gateway.redis_url)
            register_run(rclient, plan.token, plan.grant, prefix=gateway.prefix)
        result = sandbox.exec(plan.argv, timeout=wall_limit, env={**env, **plan.launch.env}, input=plan.launch.stdin)
        exec_seq = sandbox.last_exec_seq
        stdout, stderr = result.stdout_text, result.stderr_text
        (evidence / "agent.stdout").write_text(stdout, encoding="utf-8")
        (evidence / "agent.stderr").write_text(stderr, encoding="utf-8")
        records = read_records(plan.records_path)
        usage: dict[str, Any] = {}
        canaries_seen: tuple[str, ...] = ()
        if rclient is not None and gateway is not None:
            revoke_run(rclient, plan.token, prefix=gateway.prefix)
            u = run_usage(rclient, plan.token, prefix=gateway.prefix)
            usage = {
                "requests": u.requests,
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cached_input_tokens": u.cached_input_tokens,
                "cache_write_tokens": u.cache_write_tokens,
                "budget_exceeded": u.budget_exceeded,
            }
            canaries_seen = u.canaries_seen
        events = plan.adapter.parse(stdout, stderr, read_output_files(sandbox, sandbox.manifest(), plan.adapter))
        validity, why = classify_validity(
            uses_gateway=plan.adapter.uses_gateway,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            events=events,
            records=records,
            budget_exceeded=usage.get("budget_exceeded"),
            offers_tools=plan.adapter.offers_tools,
            is_action=plan.adapter.is_action,
        )
        return AgentTurn(result, exec_seq, stdout, stderr, records, usage, canaries_seen, events, validity, why)
    finally:
        if rclient is not None and gateway is not None:
            revoke_run(rclient, plan.token, prefix=gateway.prefix)
            rclient.close()
