"""The sandbox interface every backend implements, and the backend registry.

Shape follows inspect_ai's sandbox environments: ``exec(argv, timeout) -> ExecResult``, file
read/write, and a cleanup that is told whether the run was interrupted.  What is specific to
this project: creation takes the scenario's fixture files (validated before anything exists),
and a sandbox yields the evidence the oracles need — manifests of the writable roots and the
executed-command trace.

Contract shared by the backends (checked by tests/harness/sandbox and ``manage.py sandbox_selfcheck``):

* commands run as the non-root ``agent`` user (uid 1000) with HOME=/home/agent, no network;
* ``exec`` never leaves processes behind: when the command returns or times out, everything it
  started is killed *inside* the sandbox — on Docker by a harness exec after every agent exec,
  verified empty, since the agent can kill its own supervisor;
* stdout/stderr are read as a stream and capped (``Limits.output_bytes`` each); the rest is
  drained and dropped, and ``truncated`` is set;
* output is bytes; ``stdout_text``/``stderr_text`` decode with U+FFFD replacement for display;
* ``destroy`` is idempotent and safe to call from ``finally``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from harness.sandbox.manifest import Manifest
from harness.sandbox.paths import FileSpec
from harness.sandbox.trace import TraceRecord

AGENT_USER = "agent"
AGENT_UID = 1000
AGENT_HOME = "/home/agent"
DEFAULT_CWD = "/workspace"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Labels on every Docker container (and the bwrap state directory's metadata).
LABEL_MANAGED = "overeager.managed"
LABEL_RUN = "overeager.run"
LABEL_ATTEMPT = "overeager.attempt"
LABEL_OWNER = "overeager.owner"  # "<hostname>:<pid>:<process start ticks>"
LABEL_DEADLINE = "overeager.deadline"  # epoch seconds after which the sandbox is a leftover
LABEL_STATE = "overeager.state"  # docker: host directory holding the roots' quota filesystem
# Which install made the sandbox: run ids are database ids, so two installs on one machine (a
# second checkout, a copied database) share them; a reaper removes only its own install's.
LABEL_INSTALL = "overeager.install"
INSTALL_ID_FILE = "install-id"
_install_id: str | None = None
_install_lock = threading.Lock()


def install_id() -> str:
    """This install's id: ``OVEREAGER_INSTALL_ID``, else a random id kept in the var directory.

    The var directory (``OVEREAGER_VAR_DIR``, default ``<checkout>/var``, as in settings) is the
    install's own — a copied database does not carry it along, a second checkout has its own.
    """
    global _install_id
    with _install_lock:
        if _install_id is None:
            _install_id = os.environ.get("OVEREAGER_INSTALL_ID", "").strip() or _stored_install_id()
        return _install_id


def _stored_install_id() -> str:
    var = Path(os.environ.get("OVEREAGER_VAR_DIR") or Path(__file__).resolve().parents[2] / "var")
    path = var / INSTALL_ID_FILE
    with contextlib.suppress(OSError):
        existing = path.read_text(encoding="ascii").strip()
        if existing:
            return existing
    var.mkdir(parents=True, exist_ok=True)
    fresh = uuid.uuid4().hex[:16]
    tmp = path.with_name(f".{INSTALL_ID_FILE}.{os.getpid()}")
    tmp.write_text(fresh + "\n", encoding="ascii")
    try:
        # link() fails if another process wrote the id first: then its id is the install's.
        os.link(tmp, path)
    except FileExistsError:
        fresh = path.read_text(encoding="ascii").strip() or fresh
    finally:
        tmp.unlink(missing_ok=True)
    return fresh


class SandboxError(RuntimeError):
    """The sandbox could not do what was asked (engine error, missing file, sandbox gone)."""


class SandboxFileError(SandboxError):
    """A read/write of a file failed: missing, not a regular file, too large, outside the roots."""


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 2 * 1024**3  # memory + swap: swap is not an escape hatch
    pids: int = 512
    cpus: float = 1.0
    lifetime_s: int = 3 * 3600  # after this the sandbox exits by itself even if nobody destroys it
    tmp_bytes: int = 512 * 1024**2  # size of the /tmp tmpfs
    output_bytes: int = 1024 * 1024  # per stream, per exec
    read_file_bytes: int = 32 * 1024 * 1024
    # The writable roots together (harness.sandbox.quota): bytes and files; /tmp too on bwrap.
    disk_bytes: int = 4 * 1024**3
    disk_inodes: int = 100_000


@dataclass(frozen=True)
class ExecResult:
    exit_code: int  # 128+N when the command was killed by signal N (shell convention)
    stdout: bytes
    stderr: bytes
    truncated: bool  # stdout or stderr hit Limits.output_bytes
    timed_out: bool
    oom_killed: bool
    duration: float
    stdout_truncated: bool = field(default=False, compare=False)
    stderr_truncated: bool = field(default=False, compare=False)

    @classmethod
    def from_buffers(
        cls, *, exit_code: int, out: CappedBuffer, err: CappedBuffer, timed_out: bool, oom_killed: bool, duration: float
    ) -> ExecResult:
        """The result of an exec whose streams were pumped into capped buffers."""
        return cls(
            exit_code=exit_code,
            stdout=out.getvalue(),
            stderr=err.getvalue(),
            truncated=out.truncated or err.truncated,
            timed_out=timed_out,
            oom_killed=oom_killed,
            duration=duration,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
        )

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


class CappedBuffer:
    """Keeps the first ``cap`` bytes written to it and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._parts: list[bytes] = []
        self._kept = 0
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - self._kept
        if room > 0:
            piece = data[:room]
            self._parts.append(piece)
            self._kept += len(piece)

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


# -- what a world adds to a sandbox (harness.world) ---------------------------------------------

# Harness-owned files outside the roots, read-only to the agent and in no manifest: the command
# shims (/usr/local/bin, first on every PATH, as on a real machine), the world's own programs and
# data, and a few configuration files a real machine keeps in /etc.
SYSTEM_DIRS = ("/usr/local/bin", "/opt/overeager-world")
SYSTEM_FILES = ("/etc/pip.conf", "/etc/npmrc", "/etc/hosts", "/etc/resolv.conf")
# Where a world's daemons see their programs and write their records, on both backends.
WORLD_DIR = "/opt/overeager-world"
RECORDS_DIR = "/var/lib/overeager-records"
# Processes a world starts record here, one JSON object per line: started / exited events.
PROCESS_EVENTS = "processes.jsonl"
# Uid of the world's daemons inside a Docker container: not the agent's, so the agent can neither
# signal them nor read their records; never root, so a daemon parsing the agent's bytes holds
# no privilege.  (bwrap runs them on the host as ``nobody`` in a sandbox of their own.)
DAEMON_UID = 999


@dataclass(frozen=True)
class SystemFile:
    """A harness-owned file outside the roots (``SYSTEM_DIRS``/``SYSTEM_FILES``): see above."""

    path: str
    content: bytes
    mode: int = 0o644


def check_system_files(files: Sequence[SystemFile]) -> list[SystemFile]:
    """Validate system file paths before anything exists (SandboxError naming the bad one)."""
    seen: set[str] = set()
    for f in files:
        norm = os.path.normpath(f.path)
        inside_dir = any(norm.startswith(d + "/") and "/" not in norm[len(d) + 1 :] for d in SYSTEM_DIRS)
        nested = norm.startswith(WORLD_DIR + "/")
        if norm != f.path or not (inside_dir or nested or norm in SYSTEM_FILES):
            raise SandboxError(
                f"system file {f.path!r}: must be a normalised path directly in {', '.join(SYSTEM_DIRS)}"
                f" (any depth under {WORLD_DIR}) or one of {', '.join(SYSTEM_FILES)}"
            )
        if ".." in norm.split("/") or "\x00" in norm or not f.path.startswith("/"):
            raise SandboxError(f"system file {f.path!r}: not a plain path")
        if norm in seen:
            raise SandboxError(f"system file {f.path!r} given twice")
        seen.add(norm)
    return list(files)


class ProcessRole(StrEnum):
    """Who a long-lived world process belongs to.

    * ``service`` — part of the agent's world: runs as the agent's uid in its pid and network
      namespace, answers on its loopback, outlives every exec and may be killed by the agent; its
      start and end (exit status or signal) are recorded out of the agent's reach.
    * ``daemon`` — the world's own recorder or server (network sink, package index, scheduler):
      reachable on the sandbox's loopback, out of the agent's reach (another uid, or another pid
      namespace on the host), writing its records to ``RECORDS_DIR``.
    """

    SERVICE = "service"
    DAEMON = "daemon"


def agent_env(extra: Mapping[str, str] | None, user: str) -> dict[str, str]:
    home = AGENT_HOME if user == AGENT_USER else "/root"
    env = {
        "HOME": home,
        "USER": user,
        "LOGNAME": user,
        "SHELL": "/bin/bash",
        "PATH": DEFAULT_PATH,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",  # noqa: S108 - the sandbox's own /tmp
    }
    env.update(extra or {})
    return env


def process_start_ticks(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (pid reuse guard); None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def owner_token(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{process_start_ticks(pid)}"


def owner_alive(token: str) -> bool:
    """Whether the process named by an owner token still exists (on this host)."""
    host, _, rest = token.partition(":")
    pid_s, _, ticks = rest.partition(":")
    if host != socket.gethostname():
        return True  # another machine's worker: not ours to judge
    try:
        pid = int(pid_s)
    except ValueError:
        return False
    return str(process_start_ticks(pid)) == ticks


def check_socket_binds(sockets: Mapping[str, str] | None) -> dict[str, str]:
    """Validate host-dir -> sandbox-dir socket binds (shared with the Docker backend).

    The sandbox side must be a fresh absolute directory outside the evidence roots and the
    system directories: a bind over /workspace or /usr would hide or replace what the run sees.
    """
    out: dict[str, str] = {}
    for host_dir, inside in (sockets or {}).items():
        if not os.path.isabs(host_dir) or not Path(host_dir).is_dir():
            raise SandboxError(f"socket bind: {host_dir!r} is not an existing absolute host directory")
        norm = os.path.normpath(inside)
        if not norm.startswith(("/run/", "/var/run/")) or norm != inside:
            raise SandboxError(f"socket bind: sandbox side {inside!r} must be a normalised path under /run")
        out[host_dir] = norm
    return out


class Sandbox(ABC):
    """One isolated environment for one run attempt."""

    backend: ClassVar[str]

    @classmethod
    def available(cls) -> bool:
        """Whether this backend can create sandboxes on this machine (``auto`` asks in order)."""
        return True

    def __init__(self, run_id: str, attempt: int, limits: Limits) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self.limits = limits
        self.destroyed = False
        self.interrupted: bool | None = None
        self._exec_seq = 0
        self.created_at = time.time()

    @classmethod
    @abstractmethod
    def create(
        cls,
        files: Sequence[FileSpec],
        *,
        run_id: str,
        attempt: int = 1,
        limits: Limits | None = None,
        sockets: Mapping[str, str] | None = None,
        system_files: Sequence[SystemFile] = (),
    ) -> Self:
        """Validate ``files`` (FixturePathError before any side effect), then build the sandbox.

        ``sockets`` maps host directories holding Unix sockets (the model gateway's) to read-only
        mount points under ``/run`` in the sandbox: the only way out of a network-less sandbox.
        ``system_files`` are the world's harness-owned files (``SystemFile``), read-only inside.
        """

    @property
    @abstractmethod
    def image_digest(self) -> str:
        """What the sandbox was built from (Docker image id; for bwrap a description of the host)."""

    @abstractmethod
    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        user: str = AGENT_USER,
        cwd: str = DEFAULT_CWD,
        input: bytes | None = None,
        traced: bool = True,
    ) -> ExecResult:
        """Run ``argv`` (no shell) and wait for it, at most ``timeout`` seconds.

        ``traced=False`` skips the command trace; it is for the harness's own setup steps that
        run before any agent or reference script gets control (they are not evidence, and
        tracing them costs about as much as running them).
        """

    @abstractmethod
    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Content of a regular file at an absolute sandbox path inside one of the roots."""

    @abstractmethod
    def write_file(self, path: str, content: bytes, mode: int = 0o644) -> None:
        """Create or replace a regular file (owned by the agent); its directory must exist."""

    @abstractmethod
    def manifest(self) -> Manifest:
        """Manifest of the roots (workspace, home, remote) as they are now."""

    @abstractmethod
    def trace(self) -> list[TraceRecord]:
        """Every program started by every exec so far, in order."""

    @abstractmethod
    def destroy(self, interrupted: bool = False) -> None:
        """Kill everything and release all resources; idempotent."""

    # -- a world's long-lived processes and records (harness.world) ----------------------------

    def start_process(
        self,
        name: str,
        argv: Sequence[str],
        *,
        role: ProcessRole,
        env: Mapping[str, str] | None = None,
        cwd: str = DEFAULT_CWD,
    ) -> int:
        """Start a long-lived process of the world (see ``ProcessRole``); returns its pid as the
        agent would see it (0 for a daemon, which the agent does not see)."""
        raise SandboxError(f"the {self.backend} backend cannot start world processes here")

    def process_events(self) -> list[dict[str, object]]:
        """Every start and end of the world's processes so far, in order (recorded by the harness)."""
        return []

    def read_record(self, name: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        """A daemon's record file ``RECORDS_DIR/name`` (b"" if it wrote none)."""
        return b""

    @property
    def last_exec_seq(self) -> int:
        """Sequence number of the latest ``exec``: selects that exec's records from ``trace()``."""
        return self._exec_seq

    def _next_seq(self) -> int:
        if self.destroyed:
            raise SandboxError(f"{self.backend} sandbox for run {self.run_id} is already destroyed")
        self._exec_seq += 1
        return self._exec_seq

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.destroy(interrupted=exc is not None)


# name -> "module:Class"; imported lazily so a machine without the docker SDK can use bwrap.
_BACKENDS: dict[str, str] = {
    "docker": "harness.sandbox.docker_backend:DockerSandbox",
    "bwrap": "harness.sandbox.bwrap_backend:BwrapSandbox",
}


AUTO_ORDER = ("docker", "bwrap")


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def get_backend(name: str) -> type[Sandbox]:
    """The backend class for ``"docker"``, ``"bwrap"`` or ``"auto"``.

    ``auto`` picks docker when an engine answers and the base image exists, else bwrap; the
    caller records ``cls.backend`` on the run so the choice is never implicit afterwards.
    """
    if name == "auto":
        # Preference order: the production backend first, then the one that needs no engine.
        name = next((n for n in AUTO_ORDER if _load(n).available()), AUTO_ORDER[-1])
    return _load(name)


def _load(name: str) -> type[Sandbox]:
    try:
        target = _BACKENDS[name]
    except KeyError:
        raise SandboxError(f"unknown sandbox backend {name!r}; choose one of {backend_names()} or 'auto'") from None
    module_name, _, cls_name = target.partition(":")
    cls: type[Sandbox] = getattr(importlib.import_module(module_name), cls_name)
    return cls


def resolve_backend(name: str) -> str:
    """The concrete backend name (``docker`` or ``bwrap``) that ``name`` (``auto`` included) selects."""
    return get_backend(name).backend
