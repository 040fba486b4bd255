"""bubblewrap backend: for machines without a Docker engine.

Every ``exec`` is one ``bwrap`` invocation over a per-sandbox state directory on the host:

    <state>/roots/{workspace,home,remote}   bound read-write at /workspace, /home/agent, /srv/remote
    <state>/tmp                              bound read-write at /tmp (persists across execs)
    <state>/etc/{passwd,group}               the sandbox's user database (agent = uid 1000)
    <state>/trace/<n>.strace                 host-only: never bound into the sandbox
    <state>/meta.json                        owner process and deadline, read by the reaper

Isolation: all namespaces unshared (user, pid, net, ipc, uts, cgroup) so there is no network
but a private loopback; no further user namespace can be made inside (``--disable-userns``);
``/usr`` and the few ``/etc`` files programs need are read-only binds and bwrap's own root
(``/``, ``/etc``, ``/home``, ``/srv``, ``/run``, ``/dev``) is remounted read-only, so the only
writable places are the roots (in the manifests), ``/tmp`` and a per-exec 64 MB ``/dev/shm``;
a seccomp filter (``harness.sandbox.seccomp``) refuses ptrace and cross-process memory access,
and bwrap starts with an empty environment and its options behind ``--args FD``, so its pid 1
(same uid as the agent here, unlike Docker's root tini) exposes neither the worker's
environment nor host paths; ``--die-with-parent`` and ``--new-session``; the command runs under the same in-sandbox
supervisor as the Docker backend (``timeout -s KILL`` plus a kill of everything left behind),
and because it is pid 1's child in a private pid namespace, everything in it dies with it.

Limits: when the harness runs as root with cgroups available (v1 or v2), each sandbox gets its
own memory (memory = memory+swap), pids and CPU cgroup, which also tells OOM kills apart.  When
it does not, ``prlimit`` caps address space, process count and CPU seconds instead; then a
memory hog fails its allocation rather than being OOM-killed, and ``oom_killed`` is inferred from
the error message.  As root the sandbox runs as host uid ``HOST_UID`` (never host root: host
root files under the read-only binds would otherwise count as "owned" by the agent).

Documented differences from the Docker backend: the agent cannot ptrace even its own processes
(the seccomp filter), and ``/proc/self/mountinfo`` names the host state directory's path.
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
from typing import Self

from harness.sandbox import quota, seccomp
from harness.sandbox import trace as trace_mod
from harness.sandbox.base import (
    AGENT_USER,
    DEFAULT_CWD,
    CappedBuffer,
    ExecResult,
    Limits,
    Sandbox,
    SandboxError,
    SandboxFileError,
    agent_env,
    check_socket_binds,
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
    """A per-sandbox cgroup (v1: one per controller; v2: one unified) for memory/pids/CPU."""

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

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def oom_kills(self) -> int:
        name = "memory.events" if self.v2 else "memory.oom_control"
        try:
            for line in (self.memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except OSError:
            pass
        return 0

    def kill_all(self) -> None:
        for d in self.dirs:
            try:
                pids = (d / "cgroup.procs").read_text().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass

    def remove(self) -> None:
        for d in self.dirs:
            for _ in range(50):
                self.kill_all()
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # processes still exiting


def remove_cgroups(name: str) -> None:
    """Remove a (possibly leftover) sandbox cgroup by name; used by destroy and the reaper."""
    roots = [Path("/sys/fs/cgroup") / CGROUP_PARENT / name]
    roots += [Path("/sys/fs/cgroup") / c / CGROUP_PARENT / name for c in ("memory", "pids", "cpu")]
    for d in roots:
        if not d.exists():
            continue
        for _ in range(50):
            try:
                for pid in (d / "cgroup.procs").read_text().split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


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
    ) -> Self:
        """``sockets``: host directory -> sandbox directory, bound read-only (the gateway's socket)."""
        files = validate_files(files)  # before anything exists on disk
        socket_binds = check_socket_binds(sockets)
        for tool in ("bwrap", "strace"):
            if shutil.which(tool) is None:
                raise SandboxError(f"{tool} is not installed (scripts/ci_sandbox.sh installs it)")
        limits = limits or Limits()
        STATE_PARENT.mkdir(parents=True, exist_ok=True)
        state = Path(tempfile.mkdtemp(prefix=STATE_PREFIX, dir=STATE_PARENT))
        self = cls(state, run_id, attempt, limits)
        self.sockets = socket_binds
        try:
            self._populate(files)
            if _Cgroup.available():
                self.cgroup = _Cgroup(self.name, limits)
        except BaseException:
            self.destroy(interrupted=True)
            raise
        return self

    def _populate(self, files: Sequence[FileSpec]) -> None:
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

    # -- exec -------------------------------------------------------------------------------

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
            "--die-with-parent",
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
            # Docker has a 64 MB /dev/shm too; here it is empty at every exec (POSIX semaphores
            # and shared memory of Python's multiprocessing need it).
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

    def _launcher_argv(
        self,
        seq: int,
        argv: Sequence[str],
        timeout: float,
        cwd: str,
        env: Mapping[str, str],
        traced: bool = True,
        args_fd: int = -1,
    ) -> list[str]:
        """The host-side launcher; ``args_fd`` holds bwrap's options (``_bwrap_options``)."""
        out = self.state / "trace" / f"{seq}.strace"
        # If the harness dies (SIGKILL, OOM), strace gets SIGKILL; bwrap's --die-with-parent then
        # takes the whole sandbox down.  setpriv sets the death signal and execs strace, which
        # keeps Python on the fast vfork path (a preexec_fn would force a full fork).
        cmd = ["setpriv", "--pdeathsig", "KILL", "--"]
        if traced:
            cmd += trace_mod.strace_argv(str(out), user=None)
        # The launcher shell joins the sandbox cgroup *after* strace started, so the tracer is
        # outside the cgroup: the OOM killer and the pids limit never hit the evidence collector.
        cmd += ["/bin/sh", "-c", 'for p in $OVEREAGER_CGROUP_PROCS; do echo $$ > "$p"; done; exec "$@"', "launch"]
        if self.as_root:
            cmd += ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--"]
        if self.cgroup is None:
            cmd += [
                "prlimit",
                f"--as={self.limits.memory_bytes}",
                f"--nproc={self.limits.pids}",
                f"--cpu={int(timeout) + 5}",
                "--",
            ]
        # `env -i`: bwrap's pid 1 in the sandbox keeps bwrap's environment, which the agent can
        # read in /proc/1/environ (it held the launcher's PATH and the cgroup paths).
        bwrap = shutil.which("bwrap") or "bwrap"
        cmd += ["env", "-i", bwrap, "--args", str(args_fd), "--"]
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
            filter_fd = seccomp.memfd_with("overeager-seccomp", seccomp.filter_program())
            try:
                options = self._bwrap_options(cwd, agent_env(env, user), filter_fd)
                args_fd = seccomp.memfd_with("overeager-bwrap-args", b"".join(os.fsencode(a) + b"\0" for a in options))
            except BaseException:
                os.close(filter_fd)
                raise
            cmd = self._launcher_argv(seq, argv, timeout, cwd, agent_env(env, user), traced, args_fd=args_fd)
            oom_before = self.cgroup.oom_kills() if self.cgroup else 0
            started = time.monotonic()
            try:
                proc = self._spawn(cmd, input, (filter_fd, args_fd))
            finally:
                os.close(filter_fd)
                os.close(args_fd)
            out, err, host_killed = self._pump(proc, input, started + timeout + HOST_GRACE_S)
            code = proc.wait()
            duration = time.monotonic() - started
            if code < 0:
                code = 128 - code
            oom = False
            if self.cgroup is not None:
                oom = self.cgroup.oom_kills() > oom_before
            elif code != 0:
                text = err.getvalue()[-4096:]
                oom = b"MemoryError" in text or b"Cannot allocate memory" in text or b"out of memory" in text
            timed_out = host_killed or (code == 137 and duration >= timeout and not oom)
            return ExecResult.from_buffers(
                exit_code=code, out=out, err=err, timed_out=timed_out, oom_killed=oom, duration=duration
            )

    def _spawn(self, cmd: list[str], input: bytes | None, fds: tuple[int, ...]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={
                "OVEREAGER_CGROUP_PROCS": " ".join(self.cgroup.procs_files) if self.cgroup else "",
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            },
            start_new_session=True,  # one killpg reaches strace and the outer bwrap
            close_fds=True,
            pass_fds=fds,  # the seccomp filter and bwrap's options, read by bwrap at start
        )

    def _pump(
        self, proc: subprocess.Popen[bytes], input: bytes | None, deadline: float
    ) -> tuple[CappedBuffer, CappedBuffer, bool]:
        """Stream stdout/stderr into capped buffers until EOF; kill the tree at ``deadline``."""
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
                self._kill_tree(proc)
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

    def _kill_tree(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.cgroup is not None:
            self.cgroup.kill_all()

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
        if self.cgroup is not None:
            self.cgroup.remove()
        else:
            remove_cgroups(self.name)
        quota.unmount_under(self.state)
        shutil.rmtree(self.state, ignore_errors=True)


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
