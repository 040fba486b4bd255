"""One run of a system under test on one scenario, end to end.

    register a run token (budgets, canaries, evidence file) → create the sandbox from the
    scenario exactly as ``pool.execution`` does, plus the agent's files and the gateway's socket
    → setup → manifest before → the agent, under a wall-time limit, in one exec behind the
    forwarder → manifest after → evidence (trace of that exec, diff, changed files, the gateway's
    records of the model requests) → composite oracle → task checks → validity.

Validity is decided separately from the verdict and first (issue 5 §4): a run that hung, lost
its model or never had the means to act says nothing about overeagerness, so it gets no verdict.

No Django here: the campaign jobs call :func:`run_agent` with primitives and dicts.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Literal

import redis

from oracles.composite import Verdict, composite_verdict
from pool.execution import (
    AGENT_IDENTITY,
    CHECK_TIMEOUT,
    build_seed_repo,
    checks_script,
    collect_evidence,
    parse_checks,
    read_watched,
    scenario_files,
    setup_script,
)
from runs.agents import connect
from runs.agents.base import AgentAdapter, AgentLaunch, AgentTask, get_adapter
from runs.agents.events import Error, Event, FinalMessage, events_to_dicts
from runs.gateway.protocols import ApiKind
from runs.gateway.registry import (
    DEFAULT_PREFIX,
    Budgets,
    RunGrant,
    UpstreamConfig,
    new_run_token,
    register_run,
    revoke_run,
    run_usage,
)
from runs.procutil import die_with_parent
from runs.sandbox.base import ExecResult, Limits, Sandbox, SandboxError, get_backend
from runs.sandbox.images import agents as agent_images
from runs.sandbox.paths import FileSpec, sandbox_path

Validity = Literal["valid", "toolless_start", "timeout", "gateway_failure", "crash"]
VALIDITIES: tuple[Validity, ...] = ("valid", "toolless_start", "timeout", "gateway_failure", "crash")
DEFAULT_WALL_LIMIT = 1800.0
SETUP_TIMEOUT = 60.0
# Record error kinds that mean the model side failed, not the agent: the run is not evidence.
GATEWAY_ERROR_KINDS = frozenset({"budget_exceeded", "upstream", "timeout", "upstream_status"})


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
    """Start ``python -m runs.gateway.server`` on a Unix socket in a fresh directory; stop it after."""
    socket_dir = tempfile.mkdtemp(prefix="overeager-gw-")
    # The sandbox's agent (uid 1000) must traverse the directory to reach the 0666 socket.
    os.chmod(socket_dir, 0o755)  # noqa: S103
    handle = GatewayHandle(socket_dir, redis_url, prefix)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runs.gateway.server",
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
) -> tuple[Validity, str]:
    """The run's validity and why; checked in order, the first that applies wins.

    The gateway's records beat the agent's transcript wherever both speak: the agent's output is
    the agent's word, the records are the harness's.  A 401 is the exception — the gateway does
    not record unauthenticated requests, so only the agent can tell about it.
    """
    if timed_out:
        return "timeout", "the agent did not exit within the wall-time limit"
    failed = [r for r in records if (r.get("error") or {}).get("kind") in GATEWAY_ERROR_KINDS]
    if budget_exceeded or failed:
        err = (failed[0].get("error") or {}) if failed else {}
        reason = budget_exceeded or err.get("reason") or err.get("kind")
        return "gateway_failure", f"the gateway refused or failed a model request: {reason}"
    api_errors = [e for e in events if isinstance(e, Error) and e.source == "model_api" and e.status is not None]
    if any(e.status in (401, 403, 429) or (e.status or 0) >= 500 for e in api_errors):
        return "gateway_failure", f"the model API answered {api_errors[0].status}: {api_errors[0].message[:200]}"
    if uses_gateway:
        answered = [r for r in records if r.get("status") == 200]
        if not answered:
            return "toolless_start", "no model request of the agent was answered (it could not start or connect)"
        # A text-protocol agent (aider: edits and shell commands are blocks in the reply's text)
        # never offers tools; for it an answered request is a start with the means to act.
        if offers_tools and not (answered[0].get("request") or {}).get("tools"):
            return "toolless_start", "the agent's first model request offered no tools"
    final = any(isinstance(e, FinalMessage) for e in events)
    if exit_code != 0 and not final:
        return "crash", f"the agent exited with {exit_code} and no final message"
    return "valid", ""


# -- the run ---------------------------------------------------------------------------------


@dataclass
class AgentRun:
    run_id: str
    attempt: int
    framework: str
    framework_version: str
    model: str
    backend: str
    image: str
    validity: Validity
    validity_reason: str
    verdict: Verdict | None  # None unless valid: invalid runs are not scored
    exit_code: int
    timed_out: bool
    duration: float
    check_codes: list[int | None] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    gateway_records: list[dict[str, Any]] = field(default_factory=list)
    canaries_in_requests: list[str] = field(default_factory=list)  # canary names
    usage: dict[str, Any] = field(default_factory=dict)
    ground_truth: dict[str, Any] | None = None
    argv: list[str] = field(default_factory=list)  # how the framework was started (its flags)
    stdout_tail: str = ""
    stderr_tail: str = ""
    file_diffs: dict[str, str] = field(default_factory=dict)  # path → unified diff of a changed text file

    @property
    def task_succeeded(self) -> bool:
        return bool(self.check_codes) and all(code == 0 for code in self.check_codes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "attempt": self.attempt,
            "framework": self.framework,
            "framework_version": self.framework_version,
            "model": self.model,
            "backend": self.backend,
            "image": self.image,
            "validity": self.validity,
            "validity_reason": self.validity_reason,
            "verdict": self.verdict.as_dict() if self.verdict is not None else None,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "duration": round(self.duration, 3),
            "check_codes": self.check_codes,
            "task_succeeded": self.task_succeeded,
            "events": events_to_dicts(self.events),
            "commands": self.commands[:500],
            "changes": self.changes[:500],
            "gateway_requests": len(self.gateway_records),
            "canaries_in_requests": self.canaries_in_requests,
            "usage": self.usage,
            "ground_truth": self.ground_truth,
            "argv": self.argv,
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
            "file_diffs": self.file_diffs,
        }


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
                f" layer {adapter.image_layer!r} (runs/sandbox/images/agents/), which a {backend} sandbox cannot use"
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
        )
        return AgentTurn(result, exec_seq, stdout, stderr, records, usage, canaries_seen, events, validity, why)
    finally:
        if rclient is not None and gateway is not None:
            revoke_run(rclient, plan.token, prefix=gateway.prefix)
            rclient.close()


def run_agent(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    sut: Mapping[str, Any],
    *,
    backend: str,
    run_id: str,
    attempt: int = 1,
    evidence_dir: str | Path,
    gateway: GatewayHandle | None = None,
    adapter: AgentAdapter | None = None,
    wall_limit: float = DEFAULT_WALL_LIMIT,
    budgets: Budgets | None = None,
    max_steps: int = 30,
    command_timeout: float = 120.0,
    seed_digest: str = "",
    limits: Limits | None = None,
) -> AgentRun:
    """Run the SUT ``sut`` = {framework, model, api_kind, upstream} on ``scenario`` in a fresh sandbox.

    ``upstream`` is an :class:`UpstreamConfig` or its dict.  ``gateway`` is required for adapters
    that call a model.  Evidence files (gateway.jsonl, agent stdout/stderr, run.json) go to
    ``evidence_dir``.
    """
    adapter = adapter or get_adapter(str(sut["framework"]))
    evidence = Path(evidence_dir)
    plan = plan_agent(
        adapter,
        sut,
        prompt=scenario["prompt"],
        backend=backend,
        run_id=run_id,
        attempt=attempt,
        evidence=evidence,
        gateway=gateway,
        wall_limit=wall_limit,
        budgets=budgets,
        max_steps=max_steps,
        command_timeout=command_timeout,
        canaries=tuple(scenario["canaries"].values()),
        task_fields={
            "archetype": str(scenario.get("archetype", "")),
            "consent": str(scenario.get("consent", "")),
            "consent_stripped": bool((scenario.get("phrasing") or {}).get("channel"))
            and (scenario.get("phrasing") or {}).get("text") is None,
            "solutions": scenario.get("solutions") or {},
        },
    )
    specs = scenario_files(scenario, build_seed_repo(seed, seed_digest)) + plan.file_specs()
    sandbox = get_backend(backend).create(
        specs,
        run_id=run_id,
        attempt=attempt,
        limits=limits or Limits(lifetime_s=int(wall_limit) + 900),
        sockets=plan.sockets,
        **plan.image,
    )
    interrupted = True
    try:
        setup = sandbox.exec(
            ["bash", "-s"],
            input=setup_script(scenario).encode(),
            timeout=SETUP_TIMEOUT,
            env=AGENT_IDENTITY,
            traced=False,
        )
        if setup.exit_code != 0:
            raise RuntimeError(f"scenario setup failed ({setup.exit_code}): {setup.stderr_text[-500:]}")
        before = sandbox.manifest()
        watched = read_watched(sandbox, before, scenario["predicates"])
        turn = take_turn(sandbox, plan, gateway, env=AGENT_IDENTITY, wall_limit=wall_limit, evidence=evidence)
        after = sandbox.manifest()
        ev, changes = collect_evidence(
            sandbox, scenario, seed, turn.exec_seq, before, after, [turn.stdout, turn.stderr], watched
        )
        # What the agent sent to the model is evidence too: a canary read by a tool and passed on
        # in the next request has left the sandbox even if nothing else shows it.
        ev = replace(ev, model_requests=[json.dumps(r.get("request"), ensure_ascii=False) for r in turn.records])
        verdict: Verdict | None = None
        if turn.validity == "valid":
            verdict = composite_verdict(
                ev,
                predicates=scenario["predicates"],
                canaries=scenario["canaries"],
                allowed_writes=scenario["allowed_writes"],
                framework_state=adapter.state_paths,
            )
        # The checks are the harness looking at the result, after the "after" manifest: untraced.
        checked = sandbox.exec(
            ["bash", "-s"],
            input=checks_script(scenario["checks"]).encode(),
            timeout=CHECK_TIMEOUT,
            env=AGENT_IDENTITY,
            traced=False,
        )
        names = {value: name for name, value in scenario["canaries"].items()}
        result = turn.result
        run = AgentRun(
            run_id=run_id,
            attempt=attempt,
            framework=adapter.name,
            framework_version=adapter.version(),
            model=plan.task.model,
            backend=sandbox.backend,
            image=sandbox.image_digest,
            validity=turn.validity,
            validity_reason=turn.validity_reason,
            verdict=verdict,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            duration=result.duration,
            check_codes=parse_checks(checked.stdout_text, len(scenario["checks"])),
            events=turn.events,
            commands=ev.commands,
            changes=changes,
            gateway_records=turn.records,
            canaries_in_requests=sorted(names.get(c, c) for c in turn.canaries_seen),
            usage=turn.usage,
            ground_truth=adapter.ground_truth(plan.task),
            argv=list(plan.launch.argv),
            stdout_tail=turn.stdout[-4000:],
            stderr_tail=turn.stderr[-4000:],
            file_diffs=text_diffs(ev.files_before, ev.files_after, changes),
        )
        (evidence / "run.json").write_text(json.dumps(run.as_dict(), indent=1, default=str), encoding="utf-8")
        interrupted = False
        return run
    finally:
        sandbox.destroy(interrupted=interrupted)


@dataclass
class TaskRun:
    """One run of an UnderSpecBench prompt: the agent's turn and the family oracle's verdict."""

    run_id: str
    attempt: int
    framework: str
    framework_version: str
    model: str
    backend: str
    image: str
    validity: Validity
    validity_reason: str
    verdict: dict[str, Any] | None  # suite.oracle.Verdict.as_dict(); None unless valid
    evidence: dict[str, Any]  # suite.execution.Evidence.as_dict()
    acted: bool
    exit_code: int
    timed_out: bool
    duration: float
    events: list[Event] = field(default_factory=list)
    gateway_records: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    ground_truth: dict[str, Any] | None = None
    argv: list[str] = field(default_factory=list)
    stdout_tail: str = ""
    stderr_tail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "attempt": self.attempt,
            "framework": self.framework,
            "framework_version": self.framework_version,
            "model": self.model,
            "backend": self.backend,
            "image": self.image,
            "validity": self.validity,
            "validity_reason": self.validity_reason,
            "verdict": self.verdict,
            "evidence": self.evidence,
            "acted": self.acted,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "duration": round(self.duration, 3),
            "events": events_to_dicts(self.events),
            "gateway_requests": len(self.gateway_records),
            "usage": self.usage,
            "ground_truth": self.ground_truth,
            "argv": self.argv,
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
        }


def run_task(
    family: Mapping[str, Any],
    prompt: str,
    sut: Mapping[str, Any],
    *,
    axes: Mapping[str, int],
    backend: str,
    run_id: str,
    attempt: int = 1,
    evidence_dir: str | Path,
    gateway: GatewayHandle | None = None,
    adapter: AgentAdapter | None = None,
    wall_limit: float = DEFAULT_WALL_LIMIT,
    budgets: Budgets | None = None,
    max_steps: int = 30,
    command_timeout: float = 120.0,
    limits: Limits | None = None,
) -> TaskRun:
    """Run the SUT on one UnderSpecBench prompt of ``family`` (its data form) in a TaskEnvironment.

    ``axes`` = {"s", "b", "r"} levels of the prompt (simulated agents plant their propensities on
    them; real agents never see them). The family oracle scores the run (suite.oracle).
    """
    from suite.execution import TaskEnvironment

    adapter = adapter or get_adapter(str(sut["framework"]))
    evidence = Path(evidence_dir)
    references = dict(family.get("references") or {})
    plan = plan_agent(
        adapter,
        sut,
        prompt=prompt,
        backend=backend,
        run_id=run_id,
        attempt=attempt,
        evidence=evidence,
        gateway=gateway,
        wall_limit=wall_limit,
        budgets=budgets,
        max_steps=max_steps,
        command_timeout=command_timeout,
        task_fields={
            "family": str(family["slug"]),
            "axes": dict(axes),
            # The answer key, read only by the reference and stochastic agents (see AgentTask).
            "solutions": {**{k: str(v) for k, v in references.items()}, "noop": "true\n"},
        },
    )
    with TaskEnvironment(
        family,
        backend=backend,
        run_id=run_id,
        attempt=attempt,
        limits=limits or Limits(lifetime_s=int(wall_limit) + 900),
        extra_files=plan.file_specs(),
        sockets=plan.sockets,
        image=plan.image.get("image"),
    ) as env:
        assert env.sandbox is not None
        turn = take_turn(env.sandbox, plan, gateway, env=env.agent_env(), wall_limit=wall_limit, evidence=evidence)
        collected = env.collect([turn.exec_seq])
        verdict = env.score(collected)
        result = turn.result
        run = TaskRun(
            run_id=run_id,
            attempt=attempt,
            framework=adapter.name,
            framework_version=adapter.version(),
            model=plan.task.model,
            backend=env.sandbox.backend,
            image=env.sandbox.image_digest,
            validity=turn.validity,
            validity_reason=turn.validity_reason,
            verdict=verdict.as_dict() if turn.validity == "valid" else None,
            evidence=collected.as_dict(),
            acted=bool(verdict.acted),
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            duration=result.duration,
            events=turn.events,
            gateway_records=turn.records,
            usage=turn.usage,
            ground_truth=adapter.ground_truth(plan.task),
            argv=list(plan.launch.argv),
            stdout_tail=turn.stdout[-4000:],
            stderr_tail=turn.stderr[-4000:],
        )
    (evidence / "run.json").write_text(json.dumps(run.as_dict(), indent=1, default=str), encoding="utf-8")
    return run
