"""Docker backend: the production sandbox, driven through the ``docker`` SDK.

One container per run attempt, created from the registry-free base image
(``harness.sandbox.images``) with:

* ``--network none``; the Docker socket is never mounted;
* the agent's commands run as uid 1000 (``agent``) with an empty capability set;
* ``cap_drop ALL`` plus CAP_SETUID/SETGID/SYS_PTRACE/DAC_READ_SEARCH in the bounding set, used
  only by harness execs as root: the ``strace`` that starts each command as the agent and
  records every execve (see ``harness.sandbox.trace``), and the ``tar`` that reads the roots for a
  manifest even where the agent chmod-ed things to 000.  The agent runs as uid 1000 under
  ``no-new-privileges`` with an empty capability set and can never gain them;
* pids, memory (= memory + swap) and CPU limits, a size-limited ``/tmp`` tmpfs;
* ``tini`` as pid 1 reaping orphans, and as its child a root ``cat`` of the container's stdin
  under ``timeout <lifetime>``.  The creating process holds the only attach to that stdin
  (``StdinOnce``), so when it dies — SIGKILL included — the engine closes the stdin, ``cat``
  ends and the container stops with everything in it; the lifetime bounds it regardless.
  The agent cannot end it early (root-owned) or keep it alive;
* labels ``overeager.managed=1``, ``overeager.run``, ``overeager.attempt``, ``overeager.owner``
  (host:pid:start), ``overeager.deadline`` and ``overeager.install`` (which install made it) for
  the reaper (``harness.sandbox.reaper``).

The writable roots live on a size- and inode-limited filesystem of their own on the host
(``harness.sandbox.quota``, under ``overeager-docker-*`` in the temp directory, labelled
``overeager.state``), bind-mounted at /workspace, /home/agent and /srv/remote: the overlay2 layer
on ext4 has no quota.  Without root or mkfs.ext4 they stay in the container's layer, unbounded.
Fixture upload (put_archive before start) reaches the bind mounts.  A manifest is one root exec of
``tar -c`` over the three roots, parsed as a stream on the host (one exec is ~3x faster than
three get_archive calls).

Exec timeouts are enforced inside the container twice over: the supervisor's ``timeout -s
KILL`` plus its kill-everything loop, and — if the agent killed the supervisor — a second exec
as the agent running the same loop from the host's watchdog.  A host-side timeout alone would
leave the processes running.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import select
import socket
import struct
import tarfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, Self

import docker
import docker.errors
from docker.types import LogConfig, Ulimit

from harness.sandbox import images, quota
from harness.sandbox import trace as trace_mod
from harness.sandbox.base import (
    AGENT_UID,
    AGENT_USER,
    DAEMON_UID,
    DEFAULT_CWD,
    LABEL_ATTEMPT,
    LABEL_DEADLINE,
    LABEL_INSTALL,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_STATE,
    PROCESS_EVENTS,
    RECORDS_DIR,
    CappedBuffer,
    ExecResult,
    Limits,
    ProcessRole,
    Sandbox,
    SandboxError,
    SandboxFileError,
    SystemFile,
    agent_env,
    check_socket_binds,
    check_system_files,
    install_id,
    owner_token,
)
from harness.sandbox.manifest import ROOTS, Manifest, entries_from_tar
from harness.sandbox.paths import FileSpec, parent_dirs, root_of_sandbox_path, sandbox_path, validate_files

TRACE_DIR = images.TRACE_DIR
HOST_GRACE_S = 3.0
# As the agent: kill every process of its uid but the world's services (trace.REAP_LOOP).
_KILL_LOOP = trace_mod.REAP_LOOP
# The end-of-exec sweep, run by the harness in a fresh root exec after every agent exec (never by
# the agent's own supervisor shell, which the agent can SIGKILL, leaving e.g. a
# clone(CLONE_UNTRACED) child that strace never saw).  Root has no CAP_KILL here, so the kill
# runs as the agent uid (setpriv; root holds CAP_SETUID for the tracer); the loop reaches every
# uid-1000 process of this container's pid namespace and nothing else, sparing only the world's
# services, which the harness started and lists in the root-owned SERVICES_FILE.  Then root
# lists what is left (zombies are dead already; services are meant to be) and the sweep repeats
# until it is nothing.
_SWEEP = (
    "for i in 1 2 3 4 5 6 7 8 9 10; do "
    f"setpriv --reuid={AGENT_UID} --regid={AGENT_UID} --clear-groups -- /bin/sh -c '{_KILL_LOOP}'; "
    f'spare=" $(cat {trace_mod.SERVICES_FILE} 2>/dev/null | tr "\\n" " ") "; '
    "left=$(ps -e -o pid=,uid=,ruid=,stat= | "
    f'awk -v spare="$spare" \'($2 == {AGENT_UID} || $3 == {AGENT_UID}) && $4 !~ /^Z/ && '
    'index(spare, " " $1 " ") == 0 {{print $1}}\'); '
    '[ -z "$left" ] && exit 0; sleep 0.05; done; echo $left; exit 3'
)
# Root-owned, 0700: where the harness's process supervisor records the world's processes.
WORLD_STATE = "/var/lib/overeager/world"
# A world process's supervisor, run as root in a detached exec: it starts the process with the
# uid of its role (the agent's for a service, the daemons' otherwise), records its start and end
# where only root writes, and keeps the services' pids in SERVICES_FILE for the sweeps.  Root
# here holds no CAP_KILL: the agent can neither signal it nor reach its records.
_SUPERVISE = r"""
import fcntl, json, os, sys, time
name, role, uid, cwd, state, services, env_json = sys.argv[1:8]
argv = sys.argv[8:]
uid, env = int(uid), json.loads(env_json)
def record(event):
    event = {"time": round(time.time(), 3), "name": name, "role": role, **event}
    with open(os.path.join(state, "PROCESS_EVENTS"), "a") as fh:
        fh.write(json.dumps(event) + "\n")
def edit_services(add=None, drop=None):
    with open(os.path.join(state, ".services.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            pids = [l.strip() for l in open(services) if l.strip()]
        except FileNotFoundError:
            pids = []
        pids = [p for p in pids if p != str(drop)] + ([str(add)] if add else [])
        with open(services + ".tmp", "w") as fh:
            fh.write("".join(p + "\n" for p in pids))
        os.chmod(services + ".tmp", 0o644)
        os.replace(services + ".tmp", services)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        # Opened as root, before the uid changes: the process cannot reopen or read its own log.
        log = os.open(os.path.join(state, name + ".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0); os.dup2(log, 1); os.dup2(log, 2)
        os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
        os.chdir(cwd)
        os.setsid()
        os.execvpe(argv[0], argv, env)
    except BaseException as e:
        os.write(2, repr(e).encode())
    os._exit(127)
os.close(w)
os.read(r, 1)  # EOF once the child exec'd (the pipe is close-on-exec) or died
if role == "service":
    edit_services(add=pid)
record({"event": "started", "pid": pid if role == "service" else 0, "argv": argv})
_, status = os.waitpid(pid, 0)
if role == "service":
    edit_services(drop=pid)
record({"event": "exited", "pid": pid if role == "service" else 0,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None})
""".replace("PROCESS_EVENTS", PROCESS_EVENTS)
# Evidence reads and harness writes walk every path component with O_NOFOLLOW from "/" (a
# root exec: get_archive/put_archive resolve symlinked parents inside the container, which let
# /workspace/link/shadow reach /etc/shadow and the root-only trace).  A regular file only, owned
# by the agent or not hard-linked (a hard link to a root file would be the same escape).
_READ_NOFOLLOW = r"""
import os, stat, sys
path, cap = sys.argv[1], int(sys.argv[2])
def fail(code, msg):
    sys.stderr.write(msg); sys.exit(code)
parts = path.strip("/").split("/")
try:
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    for part in parts[:-1]:
        nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        os.close(fd); fd = nxt
    f = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
except OSError as e:
    fail(10, e.strerror or str(e))
st = os.fstat(f)
if not stat.S_ISREG(st.st_mode):
    fail(11, "not a regular file")
if st.st_nlink > 1 and st.st_uid != AGENT_UID:
    fail(11, "a hard link to a file the agent does not own")
if st.st_size > cap:
    fail(12, f"{st.st_size} bytes, more than the {cap}-byte cap")
left = cap + 1
while left > 0:
    chunk = os.read(f, min(left, 1 << 16))
    if not chunk:
        break
    sys.stdout.buffer.write(chunk); left -= len(chunk)
if left <= 0:
    fail(12, f"more than the {cap}-byte cap")
""".replace("AGENT_UID", str(AGENT_UID))
_WRITE_NOFOLLOW = r"""
import os, stat, sys
path, mode = sys.argv[1], int(sys.argv[2], 8)
data = sys.stdin.buffer.read()
def fail(code, msg):
    sys.stderr.write(msg); sys.exit(code)
parts = path.strip("/").split("/")
try:
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    for part in parts[:-1]:
        nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        os.close(fd); fd = nxt
except OSError as e:
    fail(10, e.strerror or str(e))
# The file is the agent's: create it as the agent (root has no CAP_CHOWN here).
os.setgroups([]); os.setresgid(AGENT_UID, AGENT_UID, AGENT_UID); os.setresuid(AGENT_UID, AGENT_UID, AGENT_UID)
name = parts[-1]
try:
    st = os.lstat(name, dir_fd=fd)
    if stat.S_ISDIR(st.st_mode):
        fail(11, "is a directory")
    os.unlink(name, dir_fd=fd)  # replace, never write through (as a tar extraction would)
except FileNotFoundError:
    pass
except OSError as e:
    fail(10, e.strerror or str(e))
try:
    f = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=fd)
    view = memoryview(data)
    while view:
        view = view[os.write(f, view):]
    os.fchmod(f, mode)
except OSError as e:
    fail(10, e.strerror or str(e))
""".replace("AGENT_UID", str(AGENT_UID))

# The container's main process: ends at EOF on stdin (its creator died or destroyed it) or at the
# lifetime ($0), whichever comes first.
LIFELINE_SCRIPT = 'exec timeout "$0" cat >/dev/null'

_clients: dict[int, docker.DockerClient] = {}
_image_ids: dict[str, str] = {}


def client() -> docker.DockerClient:
    """One client per process: a connection pool inherited across fork() is not safe to share."""
    pid = os.getpid()
    c = _clients.get(pid)
    if c is None:
        c = _clients[pid] = docker.from_env(timeout=120)
    return c


def engine_available() -> bool:
    try:
        api = client().api
        api.ping()
        api.inspect_image(images.image_tag())
        return True
    except Exception:
        return False


def image_id(tag: str) -> str:
    if tag not in _image_ids:
        try:
            _image_ids[tag] = client().api.inspect_image(tag)["Id"]
        except docker.errors.ImageNotFound:
            raise SandboxError(f"image {tag} is missing; run `manage.py build_images`") from None
    return _image_ids[tag]


class _Sink(Protocol):
    def write(self, data: bytes) -> None: ...


class _ChunkList:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)


class _Frames:
    """Incremental parser of Docker's multiplexed stream (8-byte header: stream, 0,0,0, size)."""

    def __init__(self, out: _Sink, err: _Sink) -> None:
        self.sinks = {1: out, 2: err}
        self.header = b""
        self.left = 0
        self.sink: _Sink | None = None

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.left == 0:
                need = 8 - len(self.header)
                self.header += bytes(view[:need])
                view = view[need:]
                if len(self.header) < 8:
                    return
                stream, self.left = struct.unpack(">BxxxL", self.header)
                self.header = b""
                self.sink = self.sinks.get(stream)
                continue
            piece = view[: self.left]
            view = view[len(piece) :]
            self.left -= len(piece)
            if self.sink is not None:
                self.sink.write(bytes(piece))


class _ChunkStream(io.RawIOBase):
    """A read-only file over an iterator of byte chunks, so tarfile can stream get_archive."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            try:
                self.pending = next(self.chunks)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


def _tar_of(entries: Sequence[tuple[str, bytes | None, int, str | None]]) -> bytes:
    """Tar of (path without leading '/', content or None for a dir, mode, symlink target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        now = time.time()
        for name, content, mode, target in entries:
            info = tarfile.TarInfo(name)
            info.uid = info.gid = AGENT_UID
            info.uname = info.gname = AGENT_USER
            info.mode = mode
            info.mtime = now
            if target is not None:
                info.type = tarfile.SYMTYPE
                info.linkname = target
                tar.addfile(info)
            elif content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _names_of(system: Sequence[SystemFile]) -> tuple[dict[str, str], list[str]]:
    """A world's /etc/hosts names (beyond localhost) and resolv.conf name servers."""
    hosts: dict[str, str] = {}
    dns: list[str] = []
    for f in system:
        for line in f.content.decode("utf-8", "replace").splitlines():
            words = line.split("#", 1)[0].split()
            if f.path == "/etc/hosts" and len(words) >= 2:
                for name in words[1:]:
                    if name not in ("localhost", "ip6-localhost", "ip6-loopback", "sandbox"):
                        hosts[name] = words[0]
            elif f.path == "/etc/resolv.conf" and words[:1] == ["nameserver"] and len(words) > 1:
                dns.append(words[1])
    return hosts, dns


def _system_tar(system: Sequence[SystemFile]) -> bytes:
    """The world's files, root-owned and read-only to the agent, and the world's state dirs."""
    buf = io.BytesIO()
    dirs = {os.path.dirname(f.path) for f in system}
    for f in system:
        d = os.path.dirname(f.path)
        while d not in ("/", ""):
            dirs.add(d)
            d = os.path.dirname(d)
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        now = time.time()

        def add(name: str, mode: int, uid: int = 0, content: bytes | None = None) -> None:
            info = tarfile.TarInfo(name.lstrip("/"))
            info.uid = info.gid = uid
            info.mode = mode
            info.mtime = now
            if content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))

        for d in sorted(dirs - {"/etc", "/usr", "/usr/local", "/opt"}):
            add(d, 0o755)
        add("/run/overeager", 0o755)
        add(WORLD_STATE, 0o700)
        add(RECORDS_DIR, 0o700, DAEMON_UID)
        for f in system:
            add(f.path, f.mode, 0, f.content)
    return buf.getvalue()


class DockerSandbox(Sandbox):
    backend = "docker"

    @classmethod
    def available(cls) -> bool:
        return engine_available()

    def __init__(self, container_id: str, tag: str, run_id: str, attempt: int, limits: Limits) -> None:
        super().__init__(run_id, attempt, limits)
        self.container_id = container_id
        self.tag = tag
        self._cgroup_memory: Path | None = None
        self._oom_seen = 0
        self._cwds: dict[int, str] = {}
        self._lifeline: Any = None  # the attach to the container's stdin; closing it stops the container
        self.state: Path | None = None  # host directory of the roots' quota filesystem
        self._lock = threading.RLock()

    @classmethod
    def create(
        cls,
        files: Sequence[FileSpec],
        *,
        run_id: str,
        attempt: int = 1,
        limits: Limits | None = None,
        image: str | None = None,
        sockets: Mapping[str, str] | None = None,
        system_files: Sequence[SystemFile] = (),
    ) -> Self:
        """``sockets``: host directory -> container directory, bind-mounted read-only.

        This is how the gateway's Unix socket reaches a ``--network none`` container: the
        container still has no network interface but loopback.
        """
        files = validate_files(files)  # before anything exists in the engine
        socket_binds = check_socket_binds(sockets)
        system = check_system_files(system_files)
        # Docker writes /etc/hosts and /etc/resolv.conf itself at start: a world's names and its
        # resolver go through the engine's own options instead.
        extra_hosts, dns = _names_of(system)
        system = [f for f in system if f.path not in ("/etc/hosts", "/etc/resolv.conf")]
        limits = limits or Limits()
        tag = image or images.image_tag()
        image_id(tag)
        api = client().api
        now = time.time()
        state = _make_state(run_id, attempt, limits, now) if quota.available() else None
        root_binds = {}
        if state is not None:
            root_binds = {str(state / "roots" / root): {"bind": inside, "mode": "rw"} for root, inside in ROOTS.items()}
        host_config = api.create_host_config(
            network_mode="none",
            cap_drop=["ALL"],
            cap_add=["SETUID", "SETGID", "SYS_PTRACE", "DAC_READ_SEARCH"],
            security_opt=["no-new-privileges"],
            pids_limit=limits.pids,
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            nano_cpus=int(limits.cpus * 1e9),
            # Every agent-writable place outside the roots is a bounded tmpfs: the image's
            # world-writable /var/tmp and /run/lock would otherwise be unbounded container layer.
            tmpfs={
                "/tmp": f"rw,exec,nosuid,nodev,size={limits.tmp_bytes},nr_inodes={limits.disk_inodes},mode=1777",  # noqa: S108
                "/var/tmp": f"rw,exec,nosuid,nodev,size={limits.tmp_bytes},nr_inodes={limits.disk_inodes},mode=1777",  # noqa: S108
                "/run/lock": "rw,nosuid,nodev,noexec,size=1m,nr_inodes=1024,mode=1777",
            },
            ulimits=[Ulimit(name="core", soft=0, hard=0)],
            log_config=LogConfig(type=LogConfig.types.NONE),
            # A world's sink answers on 80 and 443 without privileges (bwrap: the same sysctl).
            sysctls={"net.ipv4.ip_unprivileged_port_start": "0"},
            extra_hosts=extra_hosts or None,
            dns=dns or None,
            binds={**root_binds, **{host: {"bind": inside, "mode": "ro"} for host, inside in socket_binds.items()}}
            or None,
        )
        labels = {
            LABEL_MANAGED: "1",
            LABEL_RUN: str(run_id),
            LABEL_ATTEMPT: str(attempt),
            LABEL_OWNER: owner_token(),
            LABEL_DEADLINE: str(int(now + limits.lifetime_s)),
            **({LABEL_STATE: str(state)} if state is not None else {}),
            LABEL_INSTALL: install_id(),
        }
        config = api.create_container_config(
            tag,
            command=["/bin/sh", "-c", LIFELINE_SCRIPT, str(int(limits.lifetime_s))],
            entrypoint=["/usr/bin/tini", "--"],
            user="0:0",
            working_dir=DEFAULT_CWD,
            hostname="sandbox",
            labels=labels,
            host_config=host_config,
            stdin_open=True,
        )
        config["StdinOnce"] = True  # not a keyword of the SDK; the engine closes stdin when our attach ends
        try:
            created = api.create_container_from_config(config)
        except BaseException:
            if state is not None:
                remove_state(state)
            raise
        self = cls(created["Id"], tag, run_id, attempt, limits)
        self.state = state
        try:
            entries: list[tuple[str, bytes | None, int, str | None]] = []
            for d in parent_dirs(files):
                entries.append((sandbox_path(d).lstrip("/"), None, 0o755, None))
            for spec in files:
                name = sandbox_path(spec.path).lstrip("/")
                if spec.symlink_target is not None:
                    entries.append((name, None, 0o777, spec.symlink_target))
                else:
                    entries.append((name, spec.content, spec.mode, None))
            if entries:
                api.put_archive(self.container_id, "/", _tar_of(entries))
            api.put_archive(self.container_id, "/", _system_tar(system))
            # Attached before start, so there is no moment at which the container runs without it.
            self._lifeline = api.attach_socket(self.container_id, params={"stdin": 1, "stream": 1})
            api.start(self.container_id)
            self._cgroup_memory = self._find_memory_cgroup()
        except BaseException:
            self.destroy(interrupted=True)
            raise
        return self

    @property
    def image_digest(self) -> str:
        return image_id(self.tag)

    # -- exec -------------------------------------------------------------------------------

    def _find_memory_cgroup(self) -> Path | None:
        """The container's memory cgroup on this host, if the engine is local and readable."""
        cid = self.container_id
        for candidate in (
            Path("/sys/fs/cgroup/memory/docker") / cid,
            Path("/sys/fs/cgroup/memory/system.slice") / f"docker-{cid}.scope",
            Path("/sys/fs/cgroup/system.slice") / f"docker-{cid}.scope",
            Path("/sys/fs/cgroup/docker") / cid,
        ):
            if candidate.is_dir():
                return candidate
        return None

    def _oom_kills(self) -> int | None:
        d = self._cgroup_memory
        if d is not None:
            for name in ("memory.oom_control", "memory.events"):
                try:
                    text = (d / name).read_text()
                except OSError:
                    continue
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return None

    def _oom_kills_inside(self) -> int:
        # Remote engine or unusual cgroup layout: ask inside.  The container's cgroup is
        # mounted read-only at /sys/fs/cgroup, readable by root without capabilities.
        script = "cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null"
        res = self._raw_exec(["sh", "-c", script], user="root", timeout=10)
        for line in res.stdout.decode(errors="replace").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

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
        if not argv:
            raise SandboxError("empty argv")
        if user not in (AGENT_USER, "root"):
            raise SandboxError(f"unknown sandbox user {user!r}")
        with self._lock:
            seq = self._next_seq()
            out_path = f"{TRACE_DIR}/{seq}.strace"
            self._cwds[seq] = cwd
            cmd = trace_mod.strace_argv(out_path, user=AGENT_USER if user == AGENT_USER else None) if traced else []
            cmd += trace_mod.supervisor_argv(list(argv), timeout, reap=user == AGENT_USER)
            before = self._oom_kills()
            # strace must start as root to write the root-only trace file; it switches to the
            # agent itself (-u), so the docker exec user is root here.
            result = self._raw_exec(
                cmd, user="root" if traced else user, timeout=timeout, env=agent_env(env, user), cwd=cwd, input=input
            )
            oom = False
            after = self._oom_kills()
            if before is not None and after is not None:
                oom = after > before
            elif result.exit_code != 0:
                count = self._oom_kills_inside()
                oom = count > self._oom_seen
                self._oom_seen = count
            if user == AGENT_USER:
                self._sweep_agent_processes()
            if oom or result.timed_out:
                # An OOM kill looks like a timeout's SIGKILL; report it as what it was.
                return dataclasses.replace(result, timed_out=result.timed_out and not oom, oom_killed=oom)
            return result

    def _raw_exec(
        self,
        cmd: Sequence[str],
        *,
        user: str,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str = DEFAULT_CWD,
        input: bytes | None = None,
    ) -> ExecResult:
        started = time.monotonic()
        exec_id, res, reader, sock = self._start_exec(cmd, user=user, env=env, cwd=cwd, stdin=input is not None)
        if input is not None:
            threading.Thread(target=_feed_stdin, args=(sock, input), daemon=True).start()
        out, err = CappedBuffer(self.limits.output_bytes), CappedBuffer(self.limits.output_bytes)
        frames = _Frames(out, err)
        deadline = started + timeout + HOST_GRACE_S
        killed = False
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if killed:
                        break  # the kill loop ran and the stream is still open: give up on it
                    killed = True
                    self._kill_agent_processes()
                    deadline = time.monotonic() + 10
                    continue
                ready, _, _ = select.select([sock], [], [], min(remaining, 1.0))
                if not ready:
                    continue
                chunk = reader.read1(1 << 16)
                if not chunk:
                    break
                frames.feed(chunk)
        finally:
            res.close()
        code = self._wait_exit_code(exec_id)
        duration = time.monotonic() - started
        if code is None:
            code = 137
        timed_out = killed or (code == 137 and duration >= timeout)
        return ExecResult.from_buffers(
            exit_code=code, out=out, err=err, timed_out=timed_out, oom_killed=False, duration=duration
        )

    def _start_exec(
        self, cmd: Sequence[str], *, user: str, env: Mapping[str, str] | None, cwd: str, stdin: bool
    ) -> tuple[str, Any, Any, socket.socket]:
        api = client().api
        try:
            exec_id = api.exec_create(
                self.container_id,
                list(cmd),
                stdout=True,
                stderr=True,
                stdin=stdin,
                user=user,
                environment=[f"{k}={v}" for k, v in (env or {}).items()],
                workdir=cwd,
            )["Id"]
            # exec_start(socket=True) hands back only the raw socket; bytes the HTTP layer
            # already buffered right after the upgrade response would be lost.  Reading through
            # the response's BufferedReader (read1 after select) gets them first.
            res = api._post_json(
                api._url("/exec/{0}/start", exec_id),
                headers={"Connection": "Upgrade", "Upgrade": "tcp"},
                data={"Tty": False, "Detach": False},
                stream=True,
            )
            api._raise_for_status(res)
        except docker.errors.APIError as exc:
            raise SandboxError(f"exec failed to start: {exc.explanation or exc}") from exc
        reader = res.raw._fp.fp
        return exec_id, res, reader, reader.raw._sock

    def _stream_stdout(self, cmd: Sequence[str], timeout: float) -> Iterator[bytes]:
        """stdout of a root exec as a stream of chunks (for tar); raises on failure or timeout."""
        exec_id, res, reader, sock = self._start_exec(cmd, user="root", env=None, cwd="/", stdin=False)
        chunks, err = _ChunkList(), CappedBuffer(64 * 1024)
        frames = _Frames(chunks, err)
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SandboxError(f"{cmd[0]} in the sandbox did not finish within {timeout}s")
                ready, _, _ = select.select([sock], [], [], min(remaining, 1.0))
                if not ready:
                    continue
                chunk = reader.read1(1 << 16)
                if not chunk:
                    break
                frames.feed(chunk)
                yield from chunks.parts
                chunks.parts.clear()
        finally:
            res.close()
        code = self._wait_exit_code(exec_id)
        # GNU tar exits 1 when a file changed while it was read; only >= 2 is a real failure.
        if code is None or code >= 2:
            raise SandboxError(f"{cmd[0]} failed ({code}): {err.getvalue().decode(errors='replace')}")

    def _wait_exit_code(self, exec_id: str) -> int | None:
        api = client().api
        for _ in range(100):
            info = api.exec_inspect(exec_id)
            if not info.get("Running"):
                code = info.get("ExitCode")
                return None if code is None else int(code)
            time.sleep(0.02)
        return None

    def _kill_agent_processes(self) -> None:
        """Kill every agent process from a fresh exec (as the agent: root has no CAP_KILL)."""
        api = client().api
        for attempt in range(5):
            try:
                exec_id = api.exec_create(self.container_id, ["sh", "-c", _KILL_LOOP], user=AGENT_USER)["Id"]
                api.exec_start(exec_id)
                return
            except docker.errors.APIError:
                # A fork bomb can hold every pid so the exec cannot even start; retry briefly,
                # then stop the whole container (pid 1 exits, the kernel kills the rest).
                time.sleep(0.2 * (attempt + 1))
        try:
            api.kill(self.container_id)
        except docker.errors.APIError:
            pass

    def _sweep_agent_processes(self) -> None:
        """Kill every agent-uid process in the container and verify none is left.

        Runs after every agent exec, before anything reads evidence.  If it cannot be verified
        (the exec cannot start, or processes survive ten rounds) the container is killed: nothing
        the agent started may run on while the harness reads the manifest or runs task checks.
        """
        for attempt in range(5):
            try:
                res = self._raw_exec(["/bin/sh", "-c", _SWEEP], user="root", timeout=20, cwd="/")
            except SandboxError:
                # A fork bomb can hold every pid so the exec cannot start: retry briefly.
                time.sleep(0.2 * (attempt + 1))
                continue
            if res.exit_code == 0:
                return
            break
        try:
            client().api.kill(self.container_id)
        except docker.errors.APIError:
            pass
        raise SandboxError("agent processes survived the end-of-exec sweep; the sandbox was killed")

    # -- the world's long-lived processes ---------------------------------------------------

    def start_process(
        self,
        name: str,
        argv: Sequence[str],
        *,
        role: ProcessRole,
        env: Mapping[str, str] | None = None,
        cwd: str = DEFAULT_CWD,
    ) -> int:
        if not argv or not name.replace("-", "").replace("_", "").isalnum():
            raise SandboxError(f"world process {name!r}: a plain name and a command are required")
        service = role is ProcessRole.SERVICE
        uid = AGENT_UID if service else DAEMON_UID
        full_env = (
            agent_env(env, AGENT_USER) if service else {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **(env or {})}
        )
        cmd = ["python3", "-I", "-c", _SUPERVISE, name, role.value, str(uid), cwd if service else RECORDS_DIR]
        cmd += [WORLD_STATE, trace_mod.SERVICES_FILE, json.dumps(full_env), *argv]
        api = client().api
        with self._lock:
            before = len(self.process_events())
            try:
                exec_id = api.exec_create(self.container_id, cmd, user="root", workdir="/")["Id"]
                api.exec_start(exec_id, detach=True)
            except docker.errors.APIError as exc:
                raise SandboxError(f"world process {name} did not start: {exc.explanation or exc}") from exc
            if not service:
                return 0  # the agent never sees a daemon's pid; the world waits for it to be ready
            # The supervisor records the start once the process runs: wait for that line.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                started = [e for e in self.process_events()[before:] if e.get("name") == name]
                if started:
                    return int(str(started[0].get("pid") or 0))
                time.sleep(0.02)
        raise SandboxError(f"world process {name} did not report its start")

    def process_events(self) -> list[dict[str, object]]:
        text = self._read_root_file(f"{WORLD_STATE}/{PROCESS_EVENTS}").decode("utf-8", "replace")
        events = []
        for line in text.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                event["during_teardown"] = False
                events.append(event)
        return events

    def read_record(self, name: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        if "/" in name or name in ("", ".", ".."):
            raise SandboxFileError(f"record {name!r}: a plain file name is required")
        return self._read_root_file(f"{RECORDS_DIR}/{name}", max_bytes)

    def _read_root_file(self, path: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        """A file only root (or the daemons) can reach, through the engine, never an exec."""
        try:
            chunks, _stat = client().api.get_archive(self.container_id, path)
        except docker.errors.NotFound:
            return b""
        except docker.errors.APIError as exc:
            raise SandboxError(f"cannot read {path}: {exc}") from exc
        with tarfile.open(fileobj=io.BufferedReader(_ChunkStream(iter(chunks)), 1 << 16), mode="r|") as tar:
            for member in tar:
                if member.isreg():
                    fh = tar.extractfile(member)
                    assert fh is not None
                    return fh.read(max_bytes)
        return b""

    # -- files ------------------------------------------------------------------------------

    def _check_path(self, path: str) -> str:
        found = root_of_sandbox_path(path)
        if found is None or not found[1]:
            raise SandboxFileError(f"{path!r} is not a file path inside {', '.join(ROOTS.values())}")
        return f"{ROOTS[found[0]]}/{found[1]}"

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        cap = self.limits.read_file_bytes if max_bytes is None else max_bytes
        norm = self._check_path(path)
        cmd = ["python3", "-c", _READ_NOFOLLOW, norm, str(cap)]
        with self._lock:  # never while an agent exec runs: after its sweep no agent process is alive
            exec_id, res, reader, sock = self._start_exec(cmd, user="root", env=None, cwd="/", stdin=False)
            out, err = CappedBuffer(cap + 1), CappedBuffer(64 * 1024)
            frames = _Frames(out, err)
            deadline = time.monotonic() + 120
            try:
                while time.monotonic() < deadline:
                    ready, _, _ = select.select([sock], [], [], 1.0)
                    if not ready:
                        continue
                    chunk = reader.read1(1 << 16)
                    if not chunk:
                        break
                    frames.feed(chunk)
                else:
                    raise SandboxFileError(f"{path}: reading did not finish within 120 s")
            finally:
                res.close()
            code = self._wait_exit_code(exec_id)
        if code != 0 or out.truncated:
            reason = err.getvalue().decode(errors="replace").strip() or f"read failed ({code})"
            if code == 10 and "No such file" in reason:
                reason = "No such file or directory"
            raise SandboxFileError(f"{path}: {reason}")
        return out.getvalue()

    def write_file(self, path: str, content: bytes, mode: int = 0o644) -> None:
        norm = self._check_path(path)
        cmd = ["python3", "-c", _WRITE_NOFOLLOW, norm, f"{mode & 0o7777:o}"]
        with self._lock:
            res = self._raw_exec(cmd, user="root", timeout=120, cwd="/", input=content)
        if res.exit_code != 0:
            reason = res.stderr_text.strip() or f"write failed ({res.exit_code})"
            raise SandboxFileError(f"{path}: {reason}")

    # -- evidence ---------------------------------------------------------------------------

    def manifest(self) -> Manifest:
        prefixes = {inside.lstrip("/"): root for root, inside in ROOTS.items()}
        # --sparse: a sparse file's holes are not sent (a 20 GB hole would stream 20 GB of zeros).
        cmd = ["tar", "-C", "/", "--numeric-owner", "--ignore-failed-read", "--sparse", "-cf", "-", *prefixes]
        chunks = self._stream_stdout(cmd, timeout=600)
        entries = entries_from_tar(io.BufferedReader(_ChunkStream(chunks), 1 << 16), prefixes)
        for _ in chunks:  # tarfile stops at the end-of-archive blocks; drain to check tar's exit
            pass
        return Manifest.of(entries)

    def trace(self) -> list[trace_mod.TraceRecord]:
        if self._exec_seq == 0:
            return []
        try:
            chunks, _stat = client().api.get_archive(self.container_id, TRACE_DIR)
        except docker.errors.APIError as exc:
            raise SandboxError(f"cannot read the trace: {exc}") from exc
        texts: dict[int, str] = {}
        with tarfile.open(fileobj=io.BufferedReader(_ChunkStream(iter(chunks)), 1 << 16), mode="r|") as tar:
            for member in tar:
                stem = member.name.rpartition("/")[2].removesuffix(".strace")
                if member.isreg() and stem.isdigit():
                    fh = tar.extractfile(member)
                    assert fh is not None
                    texts[int(stem)] = fh.read().decode("utf-8", "replace")
        records: list[trace_mod.TraceRecord] = []
        for seq in sorted(texts):
            records += trace_mod.parse_strace(texts[seq], seq, initial_cwd=self._cwds.get(seq))
        return records

    # -- teardown ---------------------------------------------------------------------------

    def destroy(self, interrupted: bool = False) -> None:
        if self.destroyed:
            return
        self.destroyed = True
        self.interrupted = interrupted
        try:
            client().api.remove_container(self.container_id, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            # Left for the reaper: the label and deadline make it recognisable as a leftover.
            pass
        finally:
            self._close_lifeline()
            if self.state is not None:
                remove_state(self.state)

    def _close_lifeline(self) -> None:
        lifeline, self._lifeline = self._lifeline, None
        if lifeline is not None:
            # The SocketIO, the HTTP response that keeps it alive, and the socket itself: a
            # worker makes thousands of sandboxes and must not leak a descriptor per sandbox.
            for part in (lifeline, getattr(lifeline, "_response", None), getattr(lifeline, "_sock", None)):
                try:
                    if part is not None:
                        part.close()
                except (OSError, ValueError):  # already closed through another of the three
                    pass


STATE_PREFIX = "overeager-docker-"


def _make_state(run_id: str, attempt: int, limits: Limits, now: float) -> Path:
    """The host directory of a container's roots: meta.json for the reaper, the quota filesystem."""
    import json
    import tempfile

    parent = Path(tempfile.gettempdir())
    state = Path(tempfile.mkdtemp(prefix=STATE_PREFIX, dir=parent))
    try:
        os.chmod(state, 0o711)  # noqa: S103 - uid 1000 must traverse to the bound roots
        meta = {
            "run": run_id,
            "attempt": attempt,
            "owner": owner_token(),
            "deadline": now + limits.lifetime_s,
            # Another install's reaper (same machine, same /tmp) leaves this directory alone.
            "install": install_id(),
        }
        (state / "meta.json").write_text(json.dumps(meta))
        roots = quota.make(state, limits.disk_bytes, limits.disk_inodes, AGENT_UID)
        for root in ROOTS:
            d = roots / root
            d.mkdir(mode=0o755)
            os.chmod(d, 0o755)  # noqa: S103 - as the image's roots: the agent's, readable
            os.chown(d, AGENT_UID, AGENT_UID)
    except BaseException:
        remove_state(state)
        raise
    return state


def remove_state(state: Path) -> None:
    import shutil

    quota.unmount_under(state)
    shutil.rmtree(state, ignore_errors=True)


def _feed_stdin(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
