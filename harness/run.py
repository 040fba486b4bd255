"""The one entry point that runs an actor — an agent under test or a reference script — in a world.

Every benchmark's runs go through :func:`run`: SNARE's pool verification (both reference
solutions of a candidate), a SNARE campaign run (an agent on a scenario), a scenario pack's
scenario, and UnderSpecBench (a family's reference scripts, an agent on a prompt)::

    raw = run(world_spec, ScriptActor(script) | AgentActor(plan, gateway), collect=…, checks=…,
              backend=…, run_id=…)
    verdict = <the benchmark's oracle>(raw)          # pure: oracles, or the suite's oracle

The sequence is always the same, and always here: build the world (its files, setup, daemon and
services), take the "before" evidence (manifest, git state, the text of watched files), give the
actor its one turn (an exec the trace records), take the "after" evidence (manifest, git state,
the changed files' text, the world's records, the trace of that exec with shim starts folded in),
then run the task's checks — after the evidence, untraced, so nothing they write counts as the
actor's — and tear the world down. What comes back (:class:`RawRun`) is data: the benchmark
judges it without touching the sandbox again. No Django; nothing here knows a benchmark.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agents.identity import AGENT_IDENTITY, SCRIPT_ENV
from harness.agents.runner import AgentPlan, AgentTurn, GatewayHandle, take_turn
from harness.sandbox.base import ExecResult, Limits, Sandbox, SandboxError
from harness.sandbox.manifest import Change, Manifest, diff
from harness.sandbox.paths import sandbox_path
from harness.sandbox.trace import TraceRecord
from harness.world.spec import WorldSpec
from harness.world.world import PROGRAMS, World, WorldRecords

MAX_TEXT = 256 * 1024  # text of one file kept as evidence
MAX_WATCHED = 500
GIT_SNAPSHOT_TIMEOUT = 60.0
GIT_SNAPSHOT = (PROGRAMS / "git_snapshot.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Collect:
    """What the benchmark's judge reads besides manifests, the trace and the world's records.

    ``watch``: regexes of root-prefixed paths (``workspace/…``) whose text is read before the turn
    (a predicate that compares old and new lines needs the file as it was when the turn began).
    ``skip_text``: a regex of paths whose text is never read after the turn (git's internals: the
    git snapshots describe them).  ``git``: snapshot the world's git state before and after.
    """

    git: bool = False
    watch: tuple[str, ...] = ()
    skip_text: str = ""
    text_after: bool = True
    strict_text: bool = False  # True: a file that is not valid UTF-8 has no text (it is compared by hash)
    probe: str = ""  # a script run after the turn (untraced); its stdout is ``RawRun.probe_after``


@dataclass(frozen=True)
class Checks:
    """The task's success checks: a script run after the evidence, untraced; its output is the
    benchmark's to parse (``RawRun.checks_stdout``)."""

    script: str
    timeout: float = 180.0


@dataclass(frozen=True)
class ScriptActor:
    """A reference script (or a simulated agent's script): one exec in the world's terminal mode."""

    script: str
    timeout: float = 180.0
    env: Mapping[str, str] = field(default_factory=dict)
    name: str = "script"


@dataclass(frozen=True)
class AgentActor:
    """An agent under test: its plan (``harness.agents.runner.plan_agent``) and the gateway."""

    plan: AgentPlan
    gateway: GatewayHandle | None
    wall_limit: float
    evidence: Path


Actor = ScriptActor | AgentActor


@dataclass
class RawRun:
    """Everything one run left, before any benchmark judged it."""

    run_id: str
    attempt: int
    backend: str
    image: str
    result: ExecResult
    exec_seq: int
    stdout: str
    stderr: str
    before: Manifest
    after: Manifest
    changes: list[Change]
    trace: list[TraceRecord]  # the actor's exec only, shim starts folded in (World.trace)
    records: WorldRecords  # what the world recorded during the turn
    texts_before: dict[str, str] = field(default_factory=dict)  # watched files, before the turn
    texts_after: dict[str, str] = field(default_factory=dict)  # changed text files, after the turn
    git_before: dict[str, Any] | None = None
    git_after: dict[str, Any] | None = None
    checks_stdout: str | None = None
    checks_timed_out: bool = False  # the checks ran out of time: their missing codes are no exit status
    probe_after: str = ""
    agent: AgentTurn | None = None
    alive: dict[str, bool] = field(default_factory=dict)  # the world's services after the turn
    timings: dict[str, float] = field(default_factory=dict)


def run(
    world: WorldSpec,
    actor: Actor,
    *,
    collect: Collect = Collect(),
    checks: Checks | None = None,
    backend: str,
    run_id: str,
    attempt: int = 1,
    limits: Limits | None = None,
    sockets: Mapping[str, str] | None = None,
) -> RawRun:
    """Build ``world``, give ``actor`` its turn, collect the evidence, run the checks: see the module.

    ``sockets``: host directories of Unix sockets a benchmark's host-side service answers on (the
    UnderSpecBench emulators), mounted read-only beside the agent's gateway socket.
    """
    started = time.perf_counter()
    agent = actor if isinstance(actor, AgentActor) else None
    with World(
        world,
        backend=backend,
        run_id=run_id,
        attempt=attempt,
        limits=limits or Limits(lifetime_s=int(agent.wall_limit if agent else 900) + 900),
        extra_files=agent.plan.file_specs() if agent else (),
        sockets={**(sockets or {}), **(agent.plan.sockets if agent else {})},
        image=agent.plan.image.get("image") if agent else None,
    ) as built:
        sb = built.sb
        timings = {f"world_{k}": v for k, v in built.timings.items()}
        t = time.perf_counter()
        git_before = git_snapshot(sb, None, built.env(AGENT_IDENTITY)) if collect.git else None
        before = sb.manifest()
        texts_before = read_texts(sb, before, collect.watch, collect.strict_text)
        records_before = built.records()
        timings["before"] = time.perf_counter() - t
        t = time.perf_counter()
        turn: AgentTurn | None = None
        if agent is not None:
            turn = take_turn(
                sb,
                agent.plan,
                agent.gateway,
                env=built.env(AGENT_IDENTITY),
                wall_limit=agent.wall_limit,
                evidence=agent.evidence,
            )
            result, exec_seq, stdout, stderr = turn.result, turn.exec_seq, turn.stdout, turn.stderr
        else:
            assert isinstance(actor, ScriptActor)
            result = sb.exec(
                built.script_argv(),
                timeout=actor.timeout,
                env=built.env({**AGENT_IDENTITY, **actor.env, SCRIPT_ENV: actor.script}),
            )
            exec_seq, stdout, stderr = sb.last_exec_seq, result.stdout_text, result.stderr_text
        timings["turn"] = time.perf_counter() - t
        t = time.perf_counter()
        after = sb.manifest()
        git_after = git_snapshot(sb, git_before, built.env(AGENT_IDENTITY)) if git_before else None
        changes = diff(before, after)
        texts_after = changed_texts(sb, changes, collect.skip_text, collect.strict_text) if collect.text_after else {}
        probe_after = ""
        if collect.probe:
            probe_after = sb.exec(
                ["bash", "-c", collect.probe], timeout=60, env=built.env(AGENT_IDENTITY), traced=False
            ).stdout_text
        trace = [r for r in built.trace() if r.exec_seq == exec_seq]
        records = built.records().since(records_before)
        alive = built.alive()
        timings["after"] = time.perf_counter() - t
        checks_stdout: str | None = None
        checks_timed_out = False
        if checks is not None:
            t = time.perf_counter()
            # The harness looking at the result, after the "after" evidence: untraced.
            checked = sb.exec(
                ["bash", "-s"],
                input=checks.script.encode(),
                timeout=checks.timeout,
                env=built.env(AGENT_IDENTITY),
                traced=False,
            )
            checks_stdout = checked.stdout_text
            checks_timed_out = checked.timed_out
            timings["checks"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - started
        return RawRun(
            run_id=run_id,
            attempt=attempt,
            backend=sb.backend,
            image=sb.image_digest,
            result=result,
            exec_seq=exec_seq,
            stdout=stdout,
            stderr=stderr,
            before=before,
            after=after,
            changes=changes,
            trace=trace,
            records=records,
            texts_before=texts_before,
            texts_after=texts_after,
            git_before=git_before,
            git_after=git_after,
            checks_stdout=checks_stdout,
            checks_timed_out=checks_timed_out,
            probe_after=probe_after,
            agent=turn,
            alive=alive,
            timings=timings,
        )


def git_snapshot(sb: Sandbox, before: Mapping[str, Any] | None, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The world's git state (the snapshot program's JSON), or None when it cannot be read.

    The "after" snapshot gets what it needs of the "before" one (refs, commits) in its environment,
    so it can tell which refs moved forward and which commits are new.
    """
    slim = ""
    if before:
        slim = json.dumps(
            {
                "repos": {
                    name: {
                        "refs": r.get("refs", {}),
                        "commits": r.get("commits", []),
                        "head_commit": r.get("head_commit", ""),
                    }
                    for name, r in (before.get("repos") or {}).items()
                }
            },
            separators=(",", ":"),
        )
    result = sb.exec(
        ["python3", "-"],
        input=GIT_SNAPSHOT.encode(),
        timeout=GIT_SNAPSHOT_TIMEOUT,
        env={**env, "OVEREAGER_GIT_BEFORE": slim},
        traced=False,
    )
    if result.exit_code != 0:
        return None
    try:
        data = json.loads(result.stdout_text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def text_of(data: bytes, strict: bool = False) -> str | None:
    """A file's text, or None for a binary one (a NUL in its first 8 KiB; invalid UTF-8 if strict)."""
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8", "strict" if strict else "replace")
    except UnicodeDecodeError:
        return None


def read_texts(
    sb: Sandbox, manifest: Mapping[str, Any], patterns: tuple[str, ...], strict: bool = False
) -> dict[str, str]:
    """The text of the regular files whose root-prefixed path matches one of ``patterns``."""
    if not patterns:
        return {}
    regexes = [re.compile(p) for p in patterns]
    out: dict[str, str] = {}
    for path, entry in manifest.items():
        if entry.type != "file" or entry.size > MAX_TEXT or not any(rx.match(path) for rx in regexes):
            continue
        if len(out) >= MAX_WATCHED:
            break
        try:
            text = text_of(sb.read_file(sandbox_path(path), MAX_TEXT), strict)
        except SandboxError:
            continue
        if text is not None:
            out[path] = text
    return out


def changed_texts(sb: Sandbox, changes: list[Change], skip: str, strict: bool = False) -> dict[str, str]:
    """The text, after the turn, of every created or modified regular file (not ``skip``)."""
    skip_rx = re.compile(skip) if skip else None
    out: dict[str, str] = {}
    for c in changes:
        if c.kind not in ("created", "modified") or c.after is None or c.after.type != "file":
            continue
        if skip_rx is not None and skip_rx.match(c.path):
            continue
        try:
            data = sb.read_file(sandbox_path(c.path), MAX_TEXT)
        except SandboxError:  # a vanished or unreadable file is simply not evidence
            continue
        text = text_of(data, strict)
        if text is not None:
            out[c.path] = text
    return out
