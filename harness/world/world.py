"""A world built in a sandbox: its files, its setup, its daemon, its services, its records.

    with World(spec, backend="bwrap", run_id="…") as world:
        world.sandbox.exec(world.script_argv(), env=world.env({…}), timeout=…)   # the actor's turn
        records = world.records()        # sink, index, scheduler, processes, shim invocations
        trace = world.trace()            # the execve trace, shim starts folded into what they ran

The world's features (``WorldSpec``) are recorded where the agent cannot reach: the daemon writes
to its own records directory (another uid, or another pid namespace on the host), the services'
starts and ends are recorded by the harness, and shim invocations are program starts in the trace.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from harness.agents.identity import AGENT_IDENTITY, SCRIPT_ENV
from harness.sandbox.base import (
    RECORDS_DIR,
    WORLD_DIR,
    ExecResult,
    Limits,
    ProcessRole,
    Sandbox,
    SandboxError,
    SystemFile,
    get_backend,
)
from harness.sandbox.paths import FileSpec
from harness.sandbox.trace import TraceRecord
from harness.world.packages import build_index
from harness.world.shims import shim_files, shim_name
from harness.world.spec import NPM_PORT, PYPI_PORT, SCHEDULER_PORT, WorldSpec

PROGRAMS = Path(__file__).with_name("programs")
SKEL = Path(__file__).with_name("skel")
READY_TIMEOUT = 20.0
# What each terminal mode runs a script with (the script travels in SCRIPT_ENV; see identity).
TERMINAL_ARGV = {
    "plain": ["bash", "-c"],
    "login": ["bash", "-l", "-c"],
    "interactive": ["bash", "-i", "-c"],
}
SCRIPT_BODY = f'exec </dev/null; eval "${SCRIPT_ENV}"'


class WorldError(RuntimeError):
    """The world could not be built (its setup failed, a daemon or service did not come up)."""


@dataclass
class WorldRecords:
    """What the world recorded during a run, each list in order."""

    processes: list[dict[str, Any]] = field(default_factory=list)
    sink: list[dict[str, Any]] = field(default_factory=list)
    index: list[dict[str, Any]] = field(default_factory=list)
    scheduler: list[dict[str, Any]] = field(default_factory=list)
    shims: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "sink": self.sink,
            "index": self.index,
            "scheduler": self.scheduler,
            "shims": self.shims,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> WorldRecords:
        data = data or {}
        return cls(**{k: list(data.get(k) or []) for k in ("processes", "sink", "index", "scheduler", "shims")})

    def since(self, before: WorldRecords) -> WorldRecords:
        """The records added after ``before`` was taken (what one turn did)."""
        return WorldRecords(
            processes=self.processes[len(before.processes) :],
            sink=self.sink[len(before.sink) :],
            index=self.index[len(before.index) :],
            scheduler=self.scheduler[len(before.scheduler) :],
            shims=self.shims[len(before.shims) :],
        )


def skeleton() -> list[FileSpec]:
    """Debian 12's ``/etc/skel``: what a new user's home holds (login and interactive shells)."""
    return [
        FileSpec(f"home/.{name}", (SKEL / name).read_bytes(), 0o644) for name in ("bashrc", "profile", "bash_logout")
    ]


def _hosts(spec: WorldSpec) -> bytes:
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback", "127.0.1.1\tsandbox"]
    lines += [f"127.0.0.1\t{h}" for h in spec.sink.hosts]
    return ("\n".join(lines) + "\n").encode()


def system_files(spec: WorldSpec) -> list[SystemFile]:
    """The world's harness-owned files: shims, programs, the index and its configuration."""
    if not spec.features:
        return []
    index = build_index(spec.packages)
    config = {
        "sink": spec.sink.as_dict(),
        "index": {
            "root": f"{WORLD_DIR}/index",
            "pypi_port": PYPI_PORT,
            "npm_port": NPM_PORT,
            "pypi": index.pypi,
            "npm": index.npm,
        },
        "scheduler": {"port": SCHEDULER_PORT},
    }
    out = [SystemFile(path, content, 0o755) for path, content in sorted(shim_files().items())]
    out += [SystemFile(f"{WORLD_DIR}/{p.name}", p.read_bytes(), 0o644) for p in sorted(PROGRAMS.glob("*.py"))]
    out.append(SystemFile(f"{WORLD_DIR}/daemon.json", json.dumps(config, sort_keys=True).encode()))
    out += [SystemFile(f"{WORLD_DIR}/index/{name}", data) for name, data in sorted(index.files.items())]
    out.append(
        SystemFile(
            "/etc/pip.conf",
            f"[global]\nindex-url = http://127.0.0.1:{PYPI_PORT}/simple/\ntrusted-host = 127.0.0.1\n".encode(),
        )
    )
    out.append(SystemFile("/etc/npmrc", f"registry=http://127.0.0.1:{NPM_PORT}/\nfund=false\naudit=false\n".encode()))
    out.append(SystemFile("/etc/hosts", _hosts(spec)))
    out.append(SystemFile("/etc/resolv.conf", b"nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"))
    return out


def fold_shims(records: Sequence[TraceRecord]) -> tuple[list[TraceRecord], list[dict[str, Any]]]:
    """The trace with each shim start folded into the tool it ran, and the shim invocations.

    A shim that ran the real tool ``exec``s it in the same process with the same arguments: the two
    starts are one command, kept as the tool's start marked ``shim=<name>``.  A shim that answered
    itself (sudo, a missing tool, the scheduler) stays as the shim's own start: the command was
    issued, and that record is the evidence.
    """
    out: list[TraceRecord] = []
    invocations: list[dict[str, Any]] = []
    skip: set[int] = set()
    for i, rec in enumerate(records):
        if i in skip:
            continue
        name = shim_name(rec.filename)
        if name is None:
            out.append(rec)
            continue
        follow = next(
            (
                j
                for j in range(i + 1, min(i + 8, len(records)))
                if records[j].pid == rec.pid and records[j].exec_seq == rec.exec_seq
            ),
            None,
        )
        real = records[follow] if follow is not None else None
        ran = real is not None and real.argv[1:] == rec.argv[1:] and real.filename.rsplit("/", 1)[-1] == name
        invocations.append(
            {
                "name": name,
                "argv": list(rec.argv),
                "cwd": rec.cwd,
                "exec_seq": rec.exec_seq,
                "time": rec.time,
                "ran": real.filename if ran and real is not None else None,
                "exit_status": real.exit_status if ran and real is not None else rec.exit_status,
            }
        )
        if ran and real is not None and follow is not None:
            skip.add(follow)
            out.append(replace(real, shim=name))
        else:
            out.append(replace(rec, shim=name))
    return out, invocations


def _jsonl(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


class World:
    """One world in one sandbox (see the module docstring)."""

    def __init__(
        self,
        spec: WorldSpec,
        *,
        backend: str,
        run_id: str,
        attempt: int = 1,
        limits: Limits | None = None,
        extra_files: Sequence[FileSpec] = (),
        sockets: Mapping[str, str] | None = None,
        image: str | None = None,
    ) -> None:
        self.spec = spec
        self.backend = backend
        self.run_id = run_id
        self.attempt = attempt
        self.limits = limits or Limits(lifetime_s=900)
        self.extra_files = list(extra_files)
        self.sockets = dict(sockets or {})
        self.image = image
        self.sandbox: Sandbox | None = None
        self.service_pids: dict[str, int] = {}
        self.timings: dict[str, float] = {}

    # -- lifecycle ------------------------------------------------------------------------

    def files(self) -> list[FileSpec]:
        given = {f.path for f in (*self.spec.files, *self.extra_files)}
        skel = [f for f in skeleton() if f.path not in given] if self.spec.features else []
        return [*skel, *self.spec.files, *self.extra_files]

    def __enter__(self) -> Self:
        started = time.perf_counter()
        self.sandbox = get_backend(self.backend).create(
            self.files(),
            run_id=self.run_id,
            attempt=self.attempt,
            limits=self.limits,
            sockets=self.sockets or None,
            system_files=system_files(self.spec),
            **({"image": self.image} if self.image else {}),
        )
        try:
            self.timings["create"] = time.perf_counter() - started
            if self.spec.features:
                # Started before the setup and waited for after it: the two overlap.
                self._start_daemon()
            if self.spec.setup:
                t = time.perf_counter()
                res = self.sandbox.exec(
                    ["bash", "-s"],
                    input=self.spec.setup.encode(),
                    timeout=self.spec.setup_timeout,
                    env=self.env(AGENT_IDENTITY),
                    traced=False,
                )
                self.timings["setup"] = time.perf_counter() - t
                if res.exit_code != 0:
                    raise WorldError(f"the world's setup failed ({res.exit_code}): {res.stderr_text[-800:]}")
            if self.spec.features:
                t = time.perf_counter()
                self._wait_daemon()
                for service in self.spec.services:
                    self._start_service(service)
                self.timings["features"] = time.perf_counter() - t
        except BaseException:
            self.close(interrupted=True)
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(interrupted=exc is not None)

    def close(self, interrupted: bool = False) -> None:
        if self.sandbox is not None:
            self.sandbox.destroy(interrupted=interrupted)
            self.sandbox = None

    @property
    def sb(self) -> Sandbox:
        assert self.sandbox is not None, "the world is not built (use it as a context manager)"
        return self.sandbox

    def _start_daemon(self) -> None:
        self.sb.start_process(
            "world",
            ["python3", "-I", f"{WORLD_DIR}/daemon.py", f"{WORLD_DIR}/daemon.json", RECORDS_DIR],
            role=ProcessRole.DAEMON,
        )

    def _wait_daemon(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.sb.read_record("ready"):
                return
            if any(e.get("name") == "world" and e.get("event") == "exited" for e in self.sb.process_events()):
                break
            time.sleep(0.01)
        raise WorldError("the world daemon did not come up")

    def _start_service(self, service: Any) -> None:
        spec = {**service.as_dict(), "name": service.name}
        pid = self.sb.start_process(
            service.name,
            ["python3", "-I", f"{WORLD_DIR}/service.py", json.dumps(spec)],
            role=ProcessRole.SERVICE,
            env=self.env(AGENT_IDENTITY),
            cwd=service.directory,
        )
        self.service_pids[service.name] = pid
        # Ready when it wrote its pid file (after binding its port) or, without one, said so.
        deadline = time.monotonic() + READY_TIMEOUT
        probe = service.pidfile or ""
        while time.monotonic() < deadline:
            if probe:
                if self._exists(probe):
                    return
            elif any(e.get("name") == service.name for e in self.sb.process_events()):
                return
            if any(e.get("name") == service.name and e.get("event") == "exited" for e in self.sb.process_events()):
                break
            time.sleep(0.02)
        raise WorldError(f"the world's service {service.name!r} did not come up")

    def _exists(self, path: str) -> bool:
        try:
            self.sb.read_file(path, 64)
        except SandboxError:
            return False
        return True

    # -- the actor's side -----------------------------------------------------------------

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a command in this world: its own variables, then ``extra``."""
        env = dict(self.spec.env)
        if self.spec.features:
            # npm reads /etc/npmrc only when built with that global config (Debian's is; the
            # host's npm, which bwrap shows, is not): the registry is also set the way CI
            # machines set a mirror.
            env.setdefault("NPM_CONFIG_REGISTRY", f"http://127.0.0.1:{NPM_PORT}/")
            env.setdefault("NPM_CONFIG_UPDATE_NOTIFIER", "false")
        env.update(extra or {})
        return env

    def script_argv(self) -> list[str]:
        """How a script (in ``SCRIPT_ENV``) runs in this world's terminal mode."""
        return [*TERMINAL_ARGV[self.spec.terminal], SCRIPT_BODY]

    def run_script(self, script: str, *, timeout: float, env: Mapping[str, str] | None = None) -> ExecResult:
        return self.sb.exec(self.script_argv(), timeout=timeout, env=self.env({**(env or {}), SCRIPT_ENV: script}))

    # -- evidence -------------------------------------------------------------------------

    def trace(self) -> list[TraceRecord]:
        """The execve trace with shim starts folded into what they ran (``fold_shims``)."""
        folded, _ = fold_shims(self.sb.trace())
        return folded

    def records(self) -> WorldRecords:
        _, shims = fold_shims(self.sb.trace())
        if not self.spec.features:
            return WorldRecords(processes=self.sb.process_events(), shims=shims)
        return WorldRecords(
            processes=[e for e in self.sb.process_events() if e.get("name") != "world"],
            sink=_jsonl(self.sb.read_record("sink.jsonl")),
            index=_jsonl(self.sb.read_record("index.jsonl")),
            scheduler=_jsonl(self.sb.read_record("scheduler.jsonl")),
            shims=shims,
        )

    def alive(self) -> dict[str, bool]:
        """Which services are running now (the records' last event for each)."""
        state = {s.name: False for s in self.spec.services}
        for e in self.sb.process_events():
            if e.get("role") == "service" and e.get("name") in state:
                state[str(e["name"])] = e.get("event") == "started"
        return state


def describe(records: WorldRecords) -> list[str]:
    """One line per record, for a run's page and a validator's view."""
    lines = []
    for p in records.processes:
        if p.get("event") == "exited" and not p.get("during_teardown"):
            how = f"signal {p['signal']}" if p.get("signal") else f"exit {p.get('exit_code')}"
            lines.append(f"service {p.get('name')} ended ({how})")
    for s in records.sink:
        if s.get("kind") == "http":
            lines.append(
                f"network: {s.get('method')} http://{s.get('host')}{s.get('target')} ({s.get('body_bytes')} bytes)"
            )
        elif s.get("kind") == "dns":
            lines.append(f"network: DNS lookup of {s.get('name')}")
        else:
            lines.append(f"network: {s.get('kind')} connection to port {s.get('port')} {s.get('server_name') or ''}")
    for i in records.index:
        lines.append(f"package index: {i.get('method')} {i.get('path')} ({i.get('registry')}, {i.get('status')})")
    for c in records.scheduler:
        lines.append(f"scheduler: {c.get('kind')} {c.get('op')} {c.get('unit') or ''}".rstrip())
    for s in records.shims:
        if not s.get("ran"):
            lines.append(
                f"issued: {shlex.join(s.get('argv') or [])} (answered by the world: exit {s.get('exit_status')})"
            )
    return lines
