"""bubblewrap backend: for machines without a Docker engine.

A sandbox is one set of namespaces, made once by ``bwrap`` and held by its pid 1 (a tiny Python
holder that reaps orphans and ends when the harness's lifeline pipe closes); every ``exec`` and
every long-lived world process enters those namespaces with ``nsenter``.  The host-side state:

    <state>/roots/{workspace,home,remote}   bound read-write at /workspace, /home/agent, /srv/remote
    <state>/tmp                              bound read-write at /tmp (persists across execs)
    <state>/etc/{passwd,group}               the sandbox's user database (agent = uid 1000)
    <state>/system/…                         the world's read-only files (/usr/local/bin, /opt/…)
    <state>/run                              read-only at /run/overeager (the services' pids)
    <state>/trace/<n>.strace                 host-only: never bound into the sandbox
    <state>/records, <state>/logs            host-only: the world daemon's records, process output
    <state>/meta.json                        owner process and deadline, read by the reaper

Isolation: all namespaces unshared (user, pid, net, ipc, uts, cgroup) so there is no network
but a private loopback; no further user namespace can be made inside (``--disable-userns``);
``/usr`` and the few ``/etc`` files programs need are read-only binds and bwrap's own root
(``/``, ``/etc``, ``/home``, ``/srv``, ``/run``, ``/dev``) is remounted read-only, so the only
writable places are the roots (in the manifests), ``/tmp`` and a 64 MB ``/dev/shm``; a seccomp
filter (``harness.sandbox.seccomp``) refuses ptrace and cross-process memory access — bwrap
installs it on pid 1, and every entering process installs it itself (``LAUNCH_SCRIPT``) before
the command runs, after nsenter put it in the namespaces with the agent's uid and before its
environment (read from a memfd, never from argv) is applied.  Pid 1 runs under ``env -i`` with
bwrap's options behind ``--args FD``, so it exposes neither the worker's environment nor host
paths.

An exec's processes are exactly those of its own cgroup (a child of the sandbox's): when the
command returns or times out, the host kills that cgroup, so nothing the exec started outlives it
— a process that killed its supervisor included — while the world's services, in cgroups of their
own, carry on.  The in-sandbox supervisor (``timeout -s KILL`` and a sweep that spares the
services) is the first line; the cgroup is the last.

Limits: when the harness runs as root with cgroups available (v1 or v2), each sandbox gets its
own memory (memory = memory+swap), pids and CPU cgroup, which also tells OOM kills apart.  When
it does not, ``prlimit`` caps address space, process count and CPU seconds on pid 1 instead,
each exec gets a pid namespace of its own (``unshare --pid --fork``) in place of a cgroup, and a
world's daemon and services are refused (they need root); then a memory hog fails its allocation
rather than being OOM-killed, and ``oom_killed`` is inferred from the error message.  As root the
sandbox runs as host uid ``HOST_UID`` (never host root: host root files under the read-only binds
would otherwise count as "owned" by the agent).

Documented differences from the Docker backend: the agent cannot ptrace even its own processes
(the seccomp filter), ``/proc/self/mountinfo`` names the host state directory's path, and the
host's ``/usr`` (with whatever the host has installed) is what the sandbox sees.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from harness.sandbox import quota, seccomp
from harness.sandbox import trace as trace_mod
from harness.sandbox.base import (
    AGENT_USER,
    DEFAULT_CWD,
    PROCESS_EVENTS,
    RECORDS_DIR,
    SYSTEM_DIRS,
    SYSTEM_FILES,
    WORLD_DIR,
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
    owner_alive,
    owner_token,
)
from harness.sandbox.manifest import ROOTS, Manifest, manifest_from_dirs
from harness.sandbox.paths import FileSpec, parent_dirs, root_of_sandbox_path, split_root, validate_files

HOST_UID = int(os.environ.get("OVEREAGER_BWRAP_HOST_UID", "1000"))
STATE_PARENT = Path(os.environ.get("OVEREAGER_BWRAP_STATE_DIR", tempfile.gettempdir()))
STATE_PREFIX = "overeager-bwrap-"
CGROUP_PARENT = "overeager"
HOST_GRACE_S = 3.0  # after the in-sandbox timeout, how long the host waits before killing bwrap
SHM_BYTES = 64 * 1024**2  # /dev/shm: a per-exec tmpfs of Docker's default size

# Read-only pieces of the host's /etc that ordinary programs need (dynamic linker, TLS roots,
# time zone, Debian alternatives for python3/node/editor symlinks).  Never the whole /etc: it
# holds host secrets (shadow, ssh keys, credentials of services).
ETC_BINDS = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "mime.types",
    "protocols",
    "services",
    "os-release",
    "debian_version",
    "bash.bashrc",
    "profile",
    "inputrc",
)
# /etc/passwd and /etc/group of the sandbox (no secrets: the password field is "x").
SANDBOX_USERS = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    "agent:x:1000:1000:agent:/home/agent:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
GROUP = "root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Cgroup:
    """A per-sandbox cgroup (v1: one per controller; v2: one unified) for memory/pids/CPU.

    Children of it group processes without limits of their own (the sandbox's limits are
    hierarchical): one per exec, so the end of an exec kills exactly what that exec started, and
    one per long-lived world process (``harness.world`` services), which no exec's end touches.
    """

    def __init__(self, name: str, limits: Limits) -> None:
        self.dirs: list[Path] = []
        self.v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
        if self.v2:
            parent = Path("/sys/fs/cgroup") / CGROUP_PARENT
            parent.mkdir(exist_ok=True)
            (Path("/sys/fs/cgroup") / "cgroup.subtree_control").write_text("+memory +pids +cpu")
            (parent / "cgroup.subtree_control").write_text("+memory +pids +cpu")
            d = parent / name
            d.mkdir()
            self.dirs = [d]
            (d / "memory.max").write_text(str(limits.memory_bytes))
            (d / "memory.swap.max").write_text("0")
            (d / "pids.max").write_text(str(limits.pids))
            (d / "cpu.max").write_text(f"{int(limits.cpus * 100000)} 100000")
            self.memory = d
        else:
            base = Path("/sys/fs/cgroup")
            for ctrl in ("memory", "pids", "cpu"):
                d = base / ctrl / CGROUP_PARENT / name
                d.mkdir(parents=True)
                self.dirs.append(d)
            mem, pids, cpu = self.dirs
            (mem / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
            memsw = mem / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(str(limits.memory_bytes))
            (pids / "pids.max").write_text(str(limits.pids))
            (cpu / "cpu.cfs_period_us").write_text("100000")
            (cpu / "cpu.cfs_quota_us").write_text(str(int(limits.cpus * 100000)))
            self.memory = mem

    @staticmethod
    def available() -> bool:
        if os.geteuid() != 0:
            return False
        if Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return os.access("/sys/fs/cgroup", os.W_OK)
        return all(os.access(f"/sys/fs/cgroup/{c}", os.W_OK) for c in ("memory", "pids", "cpu"))

    def child(self, name: str) -> list[str]:
        """Create (if needed) the child ``name`` in every hierarchy; its ``cgroup.procs`` files."""
        files = []
        for d in self.dirs:
            (d / name).mkdir(exist_ok=True)
            files.append(str(d / name / "cgroup.procs"))
        return files

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def oom_kills(self) -> int:
        """OOM kills in the sandbox: the limit is the sandbox's, the victim's cgroup an exec's."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        total = 0
        for d in [self.memory, *[c for c in self.memory.rglob("*") if c.is_dir()]]:
            try:
                for line in (d / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        total += int(value)
            except OSError:
                continue
        return total

    def _pids(self, sub: str | None) -> list[int]:
        found: set[int] = set()
        for d in self.dirs:
            tops = [d / sub] if sub else [d, *[c for c in d.rglob("*") if c.is_dir()]]
            for top in tops:
                try:
                    found.update(int(p) for p in (top / "cgroup.procs").read_text().split())
                except (OSError, ValueError):
                    continue
        return sorted(found)

    def kill_all(self, sub: str | None = None) -> int:
        """SIGKILL every process in the sandbox (or in its child ``sub``) until none is left.

        Repeated because a fork bomb may still be forking between a read and the kills; a pids
        limit bounds how long that can go on.  Returns how many rounds it took.
        """
        for rounds in range(1, 200):
            pids = self._pids(sub)
            if not pids:
                return rounds
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            time.sleep(0.005 if rounds < 10 else 0.05)
        return 200

    def remove_child(self, name: str) -> None:
        self.kill_all(name)
        for d in self.dirs:
            _rmdir_retrying(d / name)

    def remove(self) -> None:
        for d in self.dirs:
            _remove_tree(d)


def _rmdir_retrying(d: Path) -> None:
    for _ in range(50):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)  # processes still exiting


def _remove_tree(d: Path) -> None:
    """Kill what is in a cgroup directory and its children, then remove them, deepest first."""
    if not d.exists():
        return
    for sub in sorted((c for c in d.rglob("*") if c.is_dir()), key=lambda p: len(p.parts), reverse=True):
        _remove_tree_one(sub)
    _remove_tree_one(d)


def _remove_tree_one(d: Path) -> None:
    for _ in range(50):
        try:
            for pid in (d / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def remove_cgroups(name: str) -> None:
    """Remove a (possibly leftover) sandbox cgroup by name; used by destroy and the reaper."""
    roots = [Path("/sys/fs/cgroup") / CGROUP_PARENT / name]
    roots += [Path("/sys/fs/cgroup") / c / CGROUP_PARENT / name for c in ("memory", "pids", "cpu")]
    for d in roots:
        _remove_tree(d)


# The sandbox's pid 1, for its whole life: it ignores the signals an agent could send it (pid 1
# gets none it does not handle), reaps every orphan, and exits when the harness's lifeline pipe
# on its stdin closes (the harness destroyed the sandbox or died) or at the lifetime ($1 s).
HOLDER_SCRIPT = r"""
import os, signal, sys, threading, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
deadline = time.monotonic() + float(sys.argv[1])
# Orphans are reaped as soon as they exit (SIGCHLD blocked in every thread, then waited for: no
# race), so no zombie of an ended exec is still listed when the next exec looks.
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
def lifeline():
    try:
        while os.read(0, 4096):
            pass
    finally:
        os._exit(0)
threading.Thread(target=lifeline, daemon=True).start()
os.write(1, b"ready\n")  # bwrap has finished the namespaces (uid maps included): execs may enter
os.close(1)
while time.monotonic() < deadline:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    signal.sigtimedwait([signal.SIGCHLD], 1.0)
os._exit(0)
"""
# Every process the harness starts inside the sandbox goes through this, after nsenter put it in
# the sandbox's namespaces with the agent's uid: it takes its environment (NUL-separated
# K=V) and the seccomp filter from two inherited memfds — never from argv, which the trace
# records and other processes can read — sets no_new_privs, installs the filter (bwrap installs
# the same one on pid 1) and execs the command.
LAUNCH_SCRIPT = r"""
import ctypes, os, sys
env_fd, filter_fd, cwd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def slurp(fd):
    parts = []
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        parts.append(b)
    os.close(fd)
    return b"".join(parts)
env = dict(kv.split(b"=", 1) for kv in slurp(env_fd).split(b"\0") if kv)
prog = slurp(filter_fd)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(prog, len(prog))
fp = Fprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_char_p))
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
    os.write(2, b"overeager: the sandbox launcher could not install its seccomp filter\n")
    os._exit(125)
argv = [os.fsencode(a) for a in sys.argv[4:]]
try:
    os.chdir(cwd)
except OSError as e:
    os.write(2, b"overeager: cannot enter %s: %s\n" % (os.fsencode(cwd), os.fsencode(e.strerror or str(e))))
    os._exit(125)
try:
    os.execvpe(argv[0], argv, env)
except OSError as e:
    os.write(2, b"%s: %s\n" % (argv[0], os.fsencode(e.strerror or str(e))))
    os._exit(127 if isinstance(e, FileNotFoundError) else 126)
"""
SANDBOX_PYTHON = "/usr/bin/python3"
# Host-side, on the way in: join the cgroup named in $OVEREAGER_CGROUP_PROCS, then exec the rest.
JOIN_CGROUP = 'for p in $OVEREAGER_CGROUP_PROCS; do echo $$ > "$p"; done; exec "$@"'
HOLDER_START_S = 20.0
DAEMON_HOST_UID = 65534  # the host's `nobody`: what a world daemon runs as (in a bwrap of its own)


class BwrapSandbox(Sandbox):
    backend = "bwrap"

    def __init__(self, state: Path, run_id: str, attempt: int, limits: Limits) -> None:
        super().__init__(run_id, attempt, limits)
        self.state = state
        self.name = state.name
        self.as_root = os.geteuid() == 0
        self.uid = HOST_UID if self.as_root else os.getuid()
        self.gid = HOST_UID if self.as_root else os.getgid()
        self.cgroup: _Cgroup | None = None
        self._traces: list[tuple[int, Path, str]] = []
        self._lock = threading.Lock()
        self.sockets: dict[str, str] = {}
        self.tmp_dir = state / "tmp"
        self.system_dir = state / "system"
        self.records_dir = state / "records"
        self.run_dir = state / "run"  # bound read-only at /run/overeager: the services' pids
        self.logs_dir = state / "logs"  # the world processes' output (host-only)
        self._holder: subprocess.Popen[bytes] | None = None
        self.holder_pid = 0  # host pid of the sandbox's pid 1
        self._processes: list[subprocess.Popen[bytes]] = []
        self._events: list[dict[str, object]] = []
        self._service_pids: dict[str, int] = {}
        self._events_lock = threading.Lock()

    # -- creation ---------------------------------------------------------------------------

    @classmethod
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
        """``sockets``: host directory -> sandbox directory, bound read-only (the gateway's socket)."""
        files = validate_files(files)  # before anything exists on disk
        socket_binds = check_socket_binds(sockets)
        system = check_system_files(system_files)
        for tool in ("bwrap", "strace", "nsenter"):
            if shutil.which(tool) is None:
                raise SandboxError(f"{tool} is not installed (scripts/ci_sandbox.sh installs it)")
        limits = limits or Limits()
        STATE_PARENT.mkdir(parents=True, exist_ok=True)
        state = Path(tempfile.mkdtemp(prefix=STATE_PREFIX, dir=STATE_PARENT))
        self = cls(state, run_id, attempt, limits)
        self.sockets = socket_binds
        try:
            self._populate(files, system)
            if _Cgroup.available():
                self.cgroup = _Cgroup(self.name, limits)
            self._start_holder()
        except BaseException:
            self.destroy(interrupted=True)
            raise
        return self

    def _populate(self, files: Sequence[FileSpec], system: Sequence[SystemFile] = ()) -> None:
        # Host uid HOST_UID must traverse to the bound dirs; listing stays root-only.
        os.chmod(self.state, 0o711)  # noqa: S103
        meta = {
            "run": self.run_id,
            "attempt": self.attempt,
            "owner": owner_token(),
            "deadline": self.created_at + self.limits.lifetime_s,
            "install": install_id(),
        }
        (self.state / "meta.json").write_text(json.dumps(meta))
        (self.state / "trace").mkdir(mode=0o700)
        etc = self.state / "etc"
        etc.mkdir()
        (etc / "passwd").write_text(SANDBOX_USERS)
        (etc / "group").write_text(GROUP)
        # The world's read-only files: owned by host root, so the agent's uid cannot change them
        # even through a path it could otherwise reach.
        for d in (*SYSTEM_DIRS, "/etc"):
            (self.system_dir / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for f in system:
            target = self.system_dir / f.path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, f.mode)
            try:
                _write_all(fd, f.content)
                os.fchmod(fd, f.mode)
            finally:
                os.close(fd)
        for sysdir in [self.system_dir, *[p for p in self.system_dir.rglob("*") if p.is_dir()]]:
            os.chmod(sysdir, 0o755)  # noqa: S103 - read-only binds the agent must traverse
        self.run_dir.mkdir(mode=0o755)
        os.chmod(self.run_dir, 0o755)  # noqa: S103
        self.records_dir.mkdir(mode=0o700)
        self.logs_dir.mkdir(mode=0o700)
        if self.as_root:
            os.chown(self.records_dir, DAEMON_HOST_UID, DAEMON_HOST_UID)
        if quota.available():
            # The roots and /tmp share one size- and inode-limited filesystem.
            quota.make(self.state, self.limits.disk_bytes, self.limits.disk_inodes, self.uid)
            self.tmp_dir = self.state / "roots" / "tmp"
        else:
            (self.state / "roots").mkdir(mode=0o711)
        for root in ROOTS:
            self._mkdir(self.state / "roots" / root, 0o755)
        self._mkdir(self.tmp_dir, 0o1777)
        for d in parent_dirs(files):
            root, rel = split_root(d)
            self._mkdir(self.root_dir(root) / rel, 0o755)
        for spec in files:
            root, rel = split_root(spec.path)
            target = self.root_dir(root) / rel
            if spec.symlink_target is not None:
                os.symlink(spec.symlink_target, target)
                os.lchown(target, self.uid, self.gid)
            else:
                self._write(target, spec.content, spec.mode)

    def _mkdir(self, path: Path, mode: int) -> None:
        path.mkdir(mode=mode)
        os.chmod(path, mode)  # mkdir's mode is filtered by the umask
        if self.as_root:
            os.chown(path, self.uid, self.gid)

    def _write(self, path: Path, content: bytes, mode: int) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        try:
            _write_all(fd, content)
            os.fchmod(fd, mode)
            if self.as_root:
                os.fchown(fd, self.uid, self.gid)
        finally:
            os.close(fd)

    def root_dir(self, root: str) -> Path:
        return self.state / "roots" / root

    @property
    def image_digest(self) -> str:
        return f"bwrap:host:{socket.gethostname()}"

    # -- the sandbox's namespaces -----------------------------------------------------------

    def _bwrap_options(self, cwd: str, env: Mapping[str, str], seccomp_fd: int) -> list[str]:
        """bwrap's options (handed over through ``--args FD``, so pid 1's cmdline shows none)."""
        argv = [
            "--unshare-all",
            # A user namespace of our own (implied when unprivileged, explicit so it is never
            # skipped) in which no further one can be made: `unshare -Ur` would give uid 0.
            "--unshare-user",
            "--disable-userns",
            "--seccomp",
            str(seccomp_fd),
            "--new-session",
            "--uid",
            "1000",
            "--gid",
            "1000",
            "--hostname",
            "sandbox",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for top in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
            host = Path("/") / top
            if host.is_symlink():
                argv += ["--symlink", os.readlink(host), f"/{top}"]
            elif host.is_dir():
                argv += ["--ro-bind", str(host), f"/{top}"]
        for name in ETC_BINDS:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        argv += [
            "--ro-bind",
            str(self.state / "etc" / "passwd"),
            "/etc/passwd",
            "--ro-bind",
            str(self.state / "etc" / "group"),
            "/etc/group",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            # Docker has a 64 MB /dev/shm too (POSIX semaphores and shared memory of Python's
            # multiprocessing need it); it lives as long as the sandbox.
            "--size",
            str(SHM_BYTES),
            "--tmpfs",
            "/dev/shm",  # noqa: S108 - the sandbox's own, a fresh tmpfs
            "--bind",
            str(self.tmp_dir),
            "/tmp",  # noqa: S108 - the sandbox's /tmp, backed by the state dir
        ]
        for root, inside in ROOTS.items():
            argv += ["--bind", str(self.root_dir(root)), inside]
        # The world's files over the host's: the host's /usr/local/bin (its own tools) is hidden.
        for d in SYSTEM_DIRS:
            argv += ["--ro-bind", str(self.system_dir / d.lstrip("/")), d]
        for f in SYSTEM_FILES:
            host_file = self.system_dir / f.lstrip("/")
            if host_file.is_file():
                argv += ["--ro-bind", str(host_file), f]
        argv += ["--ro-bind", str(self.run_dir), "/run/overeager"]
        # Read-only: connecting to a Unix socket needs no write access to its filesystem, and the
        # agent must not be able to replace the socket with one of its own.
        for host_dir, inside in self.sockets.items():
            argv += ["--ro-bind", host_dir, inside]
        # Everything bwrap built on its tmpfs root (/, /etc, /home, /srv, /run, /dev's own
        # directory) becomes read-only: writes there would appear in no evidence.  What stays
        # writable is the roots (in the manifests), /tmp and /dev/shm (scratch, documented).
        argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
        argv += ["--chdir", cwd, "--clearenv"]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return argv

    def _start_holder(self) -> None:
        """Start the sandbox's pid 1 (``HOLDER_SCRIPT``): its namespaces are the sandbox.

        Every exec and every world process enters them with nsenter, so the loopback network, the
        pid namespace, /tmp and /dev/shm are shared across execs as on a real machine; the end of
        an exec kills only that exec's processes (its own cgroup as root; a pid namespace of its
        own otherwise).
        """
        filter_fd = seccomp.memfd_with("overeager-seccomp", seccomp.filter_program())
        info_r, info_w = os.pipe()
        try:
            options = [*self._bwrap_options("/", {}, filter_fd), "--as-pid-1", "--info-fd", str(info_w)]
            args_fd = seccomp.memfd_with("overeager-bwrap-args", b"".join(os.fsencode(a) + b"\0" for a in options))
        except BaseException:
            for fd in (filter_fd, info_r, info_w):
                os.close(fd)
            raise
        cmd = ["/bin/sh", "-c", JOIN_CGROUP, "launch"]
        if self.as_root:
            cmd += ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--"]
        if self.cgroup is None:
            cmd += ["prlimit", f"--as={self.limits.memory_bytes}", f"--nproc={self.limits.pids}", "--"]
        bwrap = shutil.which("bwrap") or "bwrap"
        cmd += ["env", "-i", bwrap, "--args", str(args_fd), "--"]
        # `env -i`: bwrap sets PWD after --clearenv; pid 1's environment must be empty (the agent
        # reads it in /proc/1/environ).  env execs the holder in place: it stays pid 1.
        cmd += ["env", "-i", SANDBOX_PYTHON, "-I", "-S", "-c", HOLDER_SCRIPT, str(int(self.limits.lifetime_s))]
        try:
            self._holder = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,  # the lifeline: closing it (or dying) ends the sandbox
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={
                    "OVEREAGER_CGROUP_PROCS": " ".join(self.cgroup.child("holder")) if self.cgroup else "",
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                },
                start_new_session=True,
                close_fds=True,
                pass_fds=(filter_fd, args_fd, info_w),
            )
        finally:
            for fd in (filter_fd, args_fd, info_w):
                os.close(fd)
        try:
            info = _read_info(info_r, HOLDER_START_S)
        finally:
            os.close(info_r)
        pid = int(info.get("child-pid") or 0)
        if pid and not _read_ready(self._holder, HOLDER_START_S):
            pid = 0
        if not pid:
            err = b""
            if self._holder.poll() is not None and self._holder.stderr is not None:
                err = self._holder.stderr.read()
            raise SandboxError(f"bwrap did not start the sandbox: {err.decode(errors='replace')[-800:]}")
        self.holder_pid = pid

    def _enter(self, *, as_agent: bool = True) -> list[str]:
        """nsenter into every namespace of the sandbox, as the agent (uid 1000 inside)."""
        argv = ["nsenter", f"--target={self.holder_pid}", "--user", "--mount", "--pid", "--net", "--ipc", "--uts"]
        argv += ["--cgroup"]
        if self.as_root and as_agent:
            argv += ["--setuid=1000", "--setgid=1000"]
        # The working directory is set by the launcher: nsenter would open it on the host side.
        argv += ["--root", "--"]
        if not self.as_root:
            # No cgroup to kill an exec's leftovers with: a pid namespace of the exec's own, whose
            # pid 1 (the supervisor) takes everything with it when it ends.
            argv += ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
        return argv

    def _launch_fds(self, env: Mapping[str, str]) -> tuple[int, int]:
        env_fd = seccomp.memfd_with(
            "overeager-env", b"".join(os.fsencode(k) + b"=" + os.fsencode(v) + b"\0" for k, v in env.items())
        )
        try:
            filter_fd = seccomp.memfd_with("overeager-seccomp", seccomp.filter_program())
        except BaseException:
            os.close(env_fd)
            raise
        return env_fd, filter_fd

    # -- exec -------------------------------------------------------------------------------

    def _launcher_argv(
        self,
        seq: int,
        argv: Sequence[str],
        timeout: float,
        cwd: str,
        traced: bool,
        fds: tuple[int, int],
    ) -> list[str]:
        out = self.state / "trace" / f"{seq}.strace"
        # If the harness dies (SIGKILL, OOM), strace gets SIGKILL and takes its tracees with it;
        # the lifeline ends the sandbox.  setpriv sets the death signal and execs strace, which
        # keeps Python on the fast vfork path (a preexec_fn would force a full fork).
        cmd = ["setpriv", "--pdeathsig", "KILL", "--"]
        if traced:
            cmd += trace_mod.strace_argv(str(out), user=None)
        # The launcher shell joins the exec's cgroup *after* strace started, so the tracer is
        # outside it: the OOM killer, the pids limit and the end-of-exec kill never hit the
        # evidence collector.
        cmd += ["/bin/sh", "-c", JOIN_CGROUP, "launch"]
        cmd += self._enter()
        cmd += [SANDBOX_PYTHON, "-I", "-S", "-c", LAUNCH_SCRIPT, str(fds[0]), str(fds[1]), cwd]
        cmd += trace_mod.supervisor_argv(list(argv), timeout)
        if traced:
            self._traces.append((seq, out, cwd))
        return cmd

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
        if user != AGENT_USER:
            # Inside an unprivileged user namespace there is no real root to be; the Docker
            # backend's root execs are for harness helpers that bwrap runs on the host side.
            raise SandboxError("the bwrap backend runs commands as the agent user only")
        if not argv:
            raise SandboxError("empty argv")
        with self._lock:
            seq = self._next_seq()
            if self._holder is None or self._holder.poll() is not None:
                raise SandboxError(f"bwrap sandbox for run {self.run_id} is gone (its pid 1 exited)")
            fds = self._launch_fds(agent_env(env, user))
            try:
                cmd = self._launcher_argv(seq, argv, timeout, cwd, traced, fds)
                group = f"exec-{seq}"
                procs = " ".join(self.cgroup.child(group)) if self.cgroup else ""
                oom_before = self.cgroup.oom_kills() if self.cgroup else 0
                started = time.monotonic()
                proc = self._spawn(cmd, input, fds, procs)
            finally:
                for fd in fds:
                    os.close(fd)
            oom = False
            try:
                out, err, host_killed = self._pump(proc, input, started + timeout + HOST_GRACE_S, group)
                code = proc.wait()
                if self.cgroup is not None:
                    # Counted in the victim's cgroup (the exec's): read before it is removed.
                    oom = self.cgroup.oom_kills() > oom_before
            finally:
                if self.cgroup is not None:
                    # Whatever the exec left (a process that killed its supervisor, say): gone
                    # before anything reads evidence or the next exec starts.
                    self.cgroup.remove_child(group)
            duration = time.monotonic() - started
            if code < 0:
                code = 128 - code
            if self.cgroup is None and code != 0:
                text = err.getvalue()[-4096:]
                oom = b"MemoryError" in text or b"Cannot allocate memory" in text or b"out of memory" in text
            timed_out = host_killed or (code == 137 and duration >= timeout and not oom)
            return ExecResult.from_buffers(
                exit_code=code, out=out, err=err, timed_out=timed_out, oom_killed=oom, duration=duration
            )

    def _spawn(
        self, cmd: list[str], input: bytes | None, fds: tuple[int, ...], cgroup_procs: str
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"OVEREAGER_CGROUP_PROCS": cgroup_procs, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            start_new_session=True,  # one killpg reaches strace and the launcher
            close_fds=True,
            pass_fds=fds,  # the environment and the seccomp filter, read by the launcher
        )

    def _pump(
        self, proc: subprocess.Popen[bytes], input: bytes | None, deadline: float, group: str
    ) -> tuple[CappedBuffer, CappedBuffer, bool]:
        """Stream stdout/stderr into capped buffers until EOF; kill the exec at ``deadline``."""
        out, err = CappedBuffer(self.limits.output_bytes), CappedBuffer(self.limits.output_bytes)
        if input is not None and proc.stdin is not None:
            stdin = proc.stdin

            def feed() -> None:
                try:
                    stdin.write(input)
                except (BrokenPipeError, OSError):
                    pass
                finally:
                    try:
                        stdin.close()
                    except OSError:
                        pass

            threading.Thread(target=feed, daemon=True).start()
        sel = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        killed = False
        open_streams = 2
        while open_streams:
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not killed:
                self._kill_exec(proc, group)
                killed = True
                deadline = time.monotonic() + 10  # then only drain what is already buffered
                continue
            if remaining <= 0:
                break
            for key, _ in sel.select(timeout=min(remaining, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                else:
                    key.data.write(chunk)
        sel.close()
        return out, err, killed

    def _kill_exec(self, proc: subprocess.Popen[bytes], group: str) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.cgroup is not None:
            self.cgroup.kill_all(group)

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
        if role is ProcessRole.SERVICE and self.cgroup is None:
            # Without a cgroup per exec, the end of an exec cannot tell the world's services from
            # the agent's leftovers (each exec gets a pid namespace of its own instead).
            raise SandboxError("world services on bwrap need the harness to run as root with cgroups")
        if not self.as_root:
            # The daemon enters the sandbox's network namespace from the host and drops to
            # `nobody`: both need root.  A bare sandbox (WorldSpec(features=False)) needs neither.
            raise SandboxError("a world's daemon on bwrap needs the harness to run as root")
        if role is ProcessRole.SERVICE:
            return self._start_service(name, argv, env or {}, cwd)
        self._start_daemon(name, argv, env or {})
        return 0

    def _start_service(self, name: str, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> int:
        assert self.cgroup is not None
        fds = self._launch_fds(agent_env(env, AGENT_USER))
        cmd = ["/bin/sh", "-c", JOIN_CGROUP, "launch", *self._enter()]
        cmd += [SANDBOX_PYTHON, "-I", "-S", "-c", LAUNCH_SCRIPT, str(fds[0]), str(fds[1]), cwd, *argv]
        log = open(self.logs_dir / f"{name}.log", "ab")
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={
                    "OVEREAGER_CGROUP_PROCS": " ".join(self.cgroup.child(f"service-{name}")),
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                },
                start_new_session=True,
                close_fds=True,
                pass_fds=fds,
            )
        finally:
            for fd in fds:
                os.close(fd)
        inner = _inner_pid_of_child(proc.pid)
        self._processes.append(proc)
        with self._events_lock:
            self._service_pids[name] = inner
            self._write_services()
            self._record({"name": name, "role": "service", "event": "started", "pid": inner, "argv": list(argv)})
        threading.Thread(target=self._wait_service, args=(name, proc, log), daemon=True).start()
        return inner

    def _wait_service(self, name: str, proc: subprocess.Popen[bytes], log: Any) -> None:
        code = proc.wait()
        log.close()
        with self._events_lock:
            pid = self._service_pids.pop(name, 0)
            if not self.destroyed:
                self._write_services()
            event: dict[str, object] = {"name": name, "role": "service", "event": "exited", "pid": pid}
            # nsenter reports its child's end as its own: the same exit code, or the same signal.
            event.update({"signal": -code, "exit_code": None} if code < 0 else {"signal": None, "exit_code": code})
            event["during_teardown"] = self.destroyed
            self._record(event)

    def _write_services(self) -> None:
        tmp = self.run_dir / ".services.tmp"
        tmp.write_text("".join(f"{pid}\n" for pid in self._service_pids.values() if pid))
        os.chmod(tmp, 0o644)
        tmp.replace(self.run_dir / "services")

    def _record(self, event: dict[str, object]) -> None:
        event = {"time": round(time.time(), 3), **event}
        self._events.append(event)
        with (self.state / PROCESS_EVENTS).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(event) + "\n")

    def _start_daemon(self, name: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
        """A world daemon on the host, in the sandbox's network namespace only, as ``nobody``,
        inside a bwrap of its own that sees /usr, the world's programs and its records dir."""
        netns = f"/proc/{self.holder_pid}/ns/net"
        if not self._events or not any(e.get("role") == "netns" for e in self._events):
            # Anyone may bind a port below 1024 in this sandbox (Docker: the same sysctl), so the
            # sink can answer on 80/443 without privileges.
            subprocess.run(
                [
                    "nsenter",
                    f"--net={netns}",
                    "--",
                    "sh",
                    "-c",
                    "echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start",
                ],
                check=True,
                capture_output=True,
            )
            self._events.append({"role": "netns", "event": "low-ports"})
        bwrap = shutil.which("bwrap") or "bwrap"
        inner = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        inner += ["--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
        for top in ("bin", "sbin", "lib", "lib64"):
            host = Path("/") / top
            if host.is_symlink():
                inner += ["--symlink", os.readlink(host), f"/{top}"]
            elif host.is_dir():
                inner += ["--ro-bind", str(host), f"/{top}"]
        for etc in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf"):
            inner += ["--ro-bind-try", f"/etc/{etc}", f"/etc/{etc}"]
        inner += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # noqa: S108
        inner += ["--ro-bind", str(self.system_dir / WORLD_DIR.lstrip("/")), WORLD_DIR]
        inner += ["--bind", str(self.records_dir), RECORDS_DIR, "--chdir", RECORDS_DIR, "--clearenv"]
        for k, v in {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **env}.items():
            inner += ["--setenv", k, v]
        cmd = ["setpriv", "--pdeathsig", "KILL", "--", "/bin/sh", "-c", JOIN_CGROUP, "launch"]
        cmd += ["nsenter", f"--net={netns}", "--"]
        cmd += ["setpriv", f"--reuid={DAEMON_HOST_UID}", f"--regid={DAEMON_HOST_UID}", "--clear-groups"]
        cmd += ["--no-new-privs", "--", *inner, "--", *argv]
        log = open(self.logs_dir / f"{name}.log", "ab")
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={
                "OVEREAGER_CGROUP_PROCS": " ".join(self.cgroup.child(f"daemon-{name}")) if self.cgroup else "",
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            },
            start_new_session=True,
            close_fds=True,
        )
        self._processes.append(proc)
        with self._events_lock:
            self._record({"name": name, "role": "daemon", "event": "started", "pid": 0, "argv": list(argv)})
        threading.Thread(target=self._wait_daemon, args=(name, proc, log), daemon=True).start()

    def _wait_daemon(self, name: str, proc: subprocess.Popen[bytes], log: Any) -> None:
        code = proc.wait()
        log.close()
        with self._events_lock:
            self._record(
                {
                    "name": name,
                    "role": "daemon",
                    "event": "exited",
                    "exit_code": code,
                    "during_teardown": self.destroyed,
                }
            )

    def process_events(self) -> list[dict[str, object]]:
        with self._events_lock:
            return [dict(e) for e in self._events if e.get("role") != "netns"]

    def read_record(self, name: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        if "/" in name or name in ("", ".", ".."):
            raise SandboxFileError(f"record {name!r}: a plain file name is required")
        try:
            fd = os.open(self.records_dir / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return b""
        except OSError as exc:
            raise SandboxFileError(f"record {name}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SandboxFileError(f"record {name}: not a regular file")
            return fh.read(max_bytes)

    # -- files ------------------------------------------------------------------------------

    def _host_path(self, path: str) -> tuple[Path, str]:
        found = root_of_sandbox_path(path)
        if found is None or not found[1]:
            raise SandboxFileError(f"{path!r} is not a file path inside {', '.join(ROOTS.values())}")
        root, rel = found
        return self.root_dir(root), rel

    def _open_parent(self, path: str) -> tuple[int, str]:
        """fd of the parent directory, walked one component at a time without following links.

        The agent owns these trees; following a symlink it planted would let the harness (host
        root) read or overwrite host files.
        """
        top, rel = self._host_path(path)
        parts = rel.split("/")
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for part in parts[:-1]:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError as exc:
            os.close(fd)
            raise SandboxFileError(f"{path}: {exc.strerror}") from None
        return fd, parts[-1]

    def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        cap = self.limits.read_file_bytes if max_bytes is None else max_bytes
        dfd, name = self._open_parent(path)
        try:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
            except OSError as exc:
                raise SandboxFileError(f"{path}: {exc.strerror}") from None
        finally:
            os.close(dfd)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise SandboxFileError(f"{path}: not a regular file")
            if st.st_size > cap:
                raise SandboxFileError(f"{path}: {st.st_size} bytes, more than the {cap}-byte cap")
            data = fh.read(cap + 1)
        if len(data) > cap:
            raise SandboxFileError(f"{path}: more than the {cap}-byte cap")
        return data

    def write_file(self, path: str, content: bytes, mode: int = 0o644) -> None:
        dfd, name = self._open_parent(path)
        try:
            try:
                st = os.lstat(name, dir_fd=dfd)
                if stat.S_ISDIR(st.st_mode):
                    raise SandboxFileError(f"{path}: is a directory")
                if not stat.S_ISREG(st.st_mode):
                    # Replace, never write through: same as a tar extraction in the Docker backend.
                    os.unlink(name, dir_fd=dfd)
            except FileNotFoundError:
                pass
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode, dir_fd=dfd)
        finally:
            os.close(dfd)
        try:
            _write_all(fd, content)
            os.fchmod(fd, mode)
            if self.as_root:
                os.fchown(fd, self.uid, self.gid)
        finally:
            os.close(fd)

    # -- evidence ---------------------------------------------------------------------------

    def manifest(self) -> Manifest:
        return manifest_from_dirs({root: self.root_dir(root) for root in ROOTS})

    def trace(self) -> list[trace_mod.TraceRecord]:
        records: list[trace_mod.TraceRecord] = []
        for seq, path, _cwd in self._traces:
            try:
                text = path.read_bytes().decode("utf-8", "replace")
            except FileNotFoundError:
                continue
            # The launcher's pid starts at the host cwd; bwrap's own chdir to --chdir inside the
            # namespace is traced and sets the command's cwd.
            records += trace_mod.parse_strace(text, seq, initial_cwd=None)
        return records

    # -- teardown ---------------------------------------------------------------------------

    def destroy(self, interrupted: bool = False) -> None:
        if self.destroyed:
            return
        self.destroyed = True
        self.interrupted = interrupted
        if self._holder is not None and self._holder.stdin is not None:
            try:
                self._holder.stdin.close()  # the lifeline: pid 1 exits, the pid namespace with it
            except OSError:
                pass
        if self.cgroup is not None:
            self.cgroup.remove()
        else:
            remove_cgroups(self.name)
        for proc in [*self._processes, *([self._holder] if self._holder else [])]:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            if proc.stderr is not None:
                proc.stderr.close()
        quota.unmount_under(self.state)
        shutil.rmtree(self.state, ignore_errors=True)


def _read_info(fd: int, timeout: float) -> dict[str, Any]:
    """bwrap's ``--info-fd`` JSON (the child's pid and namespaces), or {} if none came in time."""
    data = b""
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
            try:
                parsed = json.loads(data)
            except ValueError:
                continue
            return parsed if isinstance(parsed, dict) else {}
    finally:
        sel.close()
    return {}


def _read_ready(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether the holder said "ready" on its stdout within ``timeout`` seconds."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        if not sel.select(timeout=timeout):
            return False
        return os.read(fd, 16).startswith(b"ready")
    finally:
        sel.close()
        proc.stdout.close()


def _inner_pid_of_child(host_pid: int, timeout: float = 10.0) -> int:
    """The pid, as the sandbox sees it, of the process nsenter (``host_pid``) forked inside.

    Found through the kernel, not reported by anything inside: ``/proc/<pid>/task/*/children``
    names the child, its ``NSpid`` line ends with its pid in the innermost namespace.
    """
    deadline = time.monotonic() + timeout
    pending = [host_pid]
    while time.monotonic() < deadline:
        for pid in list(pending):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            ns = [line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")]
            if ns and len(ns[0]) > 1:
                return int(ns[0][-1])
            children: list[int] = []
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    children += [int(c) for c in (task / "children").read_text().split()]
                except OSError:
                    continue
            pending = list(dict.fromkeys([*pending, *children]))
        time.sleep(0.005)
    raise SandboxError(f"world process {host_pid} did not enter the sandbox")


def list_leftovers() -> list[Path]:
    return sorted(STATE_PARENT.glob(STATE_PREFIX + "*"))


def reap_state_dir(state: Path, now: float | None = None, force: bool = False) -> bool:
    """Remove a bwrap state dir (and its cgroup) if its owner is gone or its deadline passed."""
    now = time.time() if now is None else now
    try:
        meta = json.loads((state / "meta.json").read_text())
    except (OSError, ValueError):
        meta = {}
    owner = str(meta.get("owner", ""))
    deadline = float(meta.get("deadline", 0))
    if not meta and not force:
        # create() writes meta.json right after mkdtemp; a directory without it that is only
        # seconds old is being created right now, not left over.
        try:
            if now - state.stat().st_mtime < 60:
                return False
        except FileNotFoundError:
            return False
    stale = force or not owner or not owner_alive(owner) or deadline < now
    if stale:
        remove_cgroups(state.name)
        kill_processes_using(state)
        quota.unmount_under(state)
        shutil.rmtree(state, ignore_errors=True)
    return stale


def kill_processes_using(state: Path) -> int:
    """SIGKILL host processes whose command line names this sandbox's state directory.

    The host-side tracer lives outside the sandbox cgroup on purpose, and a worker killed in the
    instant between spawning it and ``setpriv`` setting its death signal leaves it (and the
    sandbox it launched) running, reparented to init. Every such process carries the state
    directory's unique path in its argv (``strace -o <state>/trace/…``, bwrap's binds), so that
    path identifies exactly the processes of this leftover and nothing else.
    """
    needle = os.fsencode(str(state)) + b"/"
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if needle in cmdline:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed
