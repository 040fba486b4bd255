"""Executed-command trace: every ``execve`` in the sandbox, captured where the agent cannot reach.

Mechanism
---------
Each ``Sandbox.exec`` runs its command under ``strace -f`` tracing ``execve``/``execveat`` (what
ran), ``chdir``/``fchdir`` and the ``fork`` family (to know each process's working directory),
plus the per-process exit status strace prints anyway.  Because this is ptrace, every program
start is seen: shell commands, a Python ``subprocess.run(["/usr/bin/git", ...])`` with an
absolute path, ``env -i`` with an empty PATH, ``setsid``-detached daemons, binaries the agent
wrote itself.  PATH shims plus a shell hook would miss all of those.

Where the tracer and its output live:

* **docker**: strace runs *inside* the container as root and starts the agent's command as uid
  1000 (``strace -u agent``).  Its output goes to ``/var/lib/overeager/trace/<n>.strace``, in a
  root-owned 0700 directory.  The agent (uid 1000, no capabilities, no-new-privileges) can
  neither read nor write that file, cannot signal the root tracer, and cannot ptrace it.  The
  harness reads the files through the Docker API (``get_archive``), never through an exec the
  agent could interfere with.  The container keeps CAP_SETUID/SETGID/SYS_PTRACE in its bounding
  set for this root tracer only: a uid-1000 process under no-new-privileges cannot gain them.
* **bwrap**: strace runs on the *host*, outside the sandbox's namespaces, and writes to a file in
  the sandbox's host-side state directory that is not bind-mounted into the sandbox at all.

So an agent that deletes or rewrites its own logs, its shell history, or anything in its roots
does not change the recorded trace.

Limits (documented, not hidden):

* Only program starts are recorded.  Work done inside one process (a Python script deleting
  files with ``os.remove``) shows as the ``python3`` start; the filesystem manifest diff is the
  evidence for what it did.
* ``cwd`` is tracked from chdir/fchdir and inherited across forks; a process whose parent is not
  known (the race between a clone's result and the child's first event) has ``cwd=None``.
  Paths are lexical: ``cd symlink/..`` is recorded as the lexical result.
* Strings longer than ``STRACE_STRLEN`` bytes are cut by strace; the record says ``truncated``.
* An agent can starve the trace only by killing its own processes or hitting limits; it cannot
  make an exec disappear from the trace once the kernel has executed it.

The harness's own helpers (the launcher on the bwrap host side, the in-sandbox supervisor shell
and its ``timeout``) are removed from the records by :func:`parse_strace` using their exact argv.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import asdict, dataclass, field

STRACE_STRLEN = 4096
STRACE_SYSCALLS = "execve,execveat,chdir,fchdir,clone,clone3,fork,vfork"

# Runs as the agent, as the first process of every exec.  After the command returns (normally,
# by timeout, or OOM-killed) it kills every process the exec left behind — background jobs,
# setsid'd daemons, the rest of a fork bomb — so an exec never leaks processes, and strace (which
# waits for all traced processes) returns.  `kill -9 -1` signals every process of this uid but
# not itself; it is repeated until nothing is left because a fork bomb may still be forking.
# `timeout -s KILL` also kills the command's whole process group at the deadline.  The agent can
# SIGKILL this shell, so it is not the last line: Docker runs its own sweep from a fresh harness
# exec after every agent exec (docker_backend._SWEEP), bwrap kills the exec's own cgroup.
#
# A world with long-lived services (harness.world) lists their pids, one per line, in
# SERVICES_FILE (root-owned, read-only to the agent): those outlive every exec, so the sweep
# walks /proc instead and kills each process it owns (`[ -O ]`: the directory's owner is the
# process's uid) except the services, pid 1 and itself — with builtins only, so the sweep itself
# adds nothing to the trace.  Services are started by the harness,
# never by an exec, so nothing the agent started can be on that list.
#
# The sweep runs only when the caller asks for it ($1 = "reap"): harness execs as root in the
# Docker backend must not sweep (root's `kill -1` would hit the container's own pid-1 child), and
# the script must never sweep outside a sandbox.
SERVICES_FILE = "/run/overeager/services"
REAP_LOOP = (
    f"if [ -s {SERVICES_FILE} ]; then "
    f'spare=" 1 $$"; while read -r s; do spare="$spare $s"; done <{SERVICES_FILE}; spare="$spare "; n=0; '
    'while [ "$n" -lt 100 ]; do left=""; '
    'for d in /proc/[0-9]*; do p=${d#/proc/}; case "$spare" in *" $p "*) continue;; esac; '
    '[ -O "$d" ] && left="$left $p"; done; '
    '[ -n "$left" ] || break; kill -9 $left 2>/dev/null; n=$((n+1)); done; '
    'else n=0; while kill -9 -1 2>/dev/null && [ "$n" -lt 1000 ]; do n=$((n+1)); done; fi'
)
SUPERVISOR_SCRIPT = (
    f't=$0; r=$1; shift; timeout -s KILL "$t" "$@"; rc=$?; if [ "$r" = reap ]; then {REAP_LOOP}; fi; exit $rc'
)
SUPERVISOR_SHELL = "/bin/sh"


def supervisor_argv(argv: list[str], timeout: float, reap: bool = True) -> list[str]:
    """The supervisor invocation for a command; ``$0`` carries the timeout, ``$1`` the sweep flag."""
    return [SUPERVISOR_SHELL, "-c", SUPERVISOR_SCRIPT, f"{max(timeout, 0.1):.3f}", "reap" if reap else "keep", *argv]


def strace_argv(output: str, user: str | None) -> list[str]:
    argv = [
        "strace",
        "-f",
        "-q",  # no attach/detach chatter, but keep "+++ exited with N +++"
        "--pidns-translation",  # bwrap children live in a pid namespace; we need host pids
        "--seccomp-bpf",  # stop only on traced syscalls: a 1 GB write loop stays fast
        "-ttt",
        "-y",
        "-s",
        str(STRACE_STRLEN),
        "-e",
        "signal=none",
        "-e",
        f"trace={STRACE_SYSCALLS}",
        "-o",
        output,
    ]
    if user is not None:
        argv += ["-u", user]
    return [*argv, "--"]


@dataclass(frozen=True)
class TraceRecord:
    exec_seq: int  # which Sandbox.exec call this program ran under (1-based)
    pid: int
    time: float  # epoch seconds when execve returned
    filename: str  # the path passed to execve
    argv: list[str]
    cwd: str | None
    exit_status: int | None  # of the process after this exec; 128+N when killed by signal N
    truncated: bool = False
    parent_pid: int | None = field(default=None, compare=False)
    # Set for a program start that failed (the errno name, e.g. "ENOENT"): the command was issued
    # but nothing ran.  A PATH search's misses before a later success in the same process are
    # not kept; only a start that never succeeded is.
    failed: str | None = None
    # Started through the world's shim for this command (harness.world.shims): either the real
    # tool the shim exec'd, or — when the filename is the shim itself — the shim's own answer.
    shim: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
_CALL = re.compile(r"^(\w+)\((.*)$")
# ") = 0", ") = -1 ENOENT (No such file or directory)", ") = 2 /* 25980 in strace's PID NS */";
# anchored at the end so a ") = " inside an argv string is never taken for the result.
_RESULT = re.compile(r"\)\s+=\s+(-?\d+|\?)(?:\s+[A-Z]+ \([^)]*\))?(?:\s+/\* (\d+) in strace's PID NS \*/)?\s*$")
_ERRNO = re.compile(r"\)\s+=\s+-1\s+([A-Z][A-Z0-9]*) \(")
_EXITED = re.compile(r"^\+\+\+ exited with (\d+) \+\+\+$")
_KILLED = re.compile(r"^\+\+\+ killed by SIG(\w+)(?: \(core dumped\))? \+\+\+$")
_SIGNALS = {"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "SEGV": 11, "PIPE": 13, "ALRM": 14, "TERM": 15}
_ESCAPES = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8, "\\": 92, '"': 34, "'": 39}


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _read_string(s: str, i: int) -> tuple[bytes, bool, int]:
    """Parse a strace C string starting at s[i] == '"'; returns (bytes, truncated, next index)."""
    assert s[i] == '"'
    out = bytearray()
    i += 1
    while i < len(s):
        c = s[i]
        if c == '"':
            i += 1
            truncated = s.startswith("...", i)
            return bytes(out), truncated, i + (3 if truncated else 0)
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n in "01234567":
                j = i + 1
                while j < len(s) and j < i + 4 and s[j] in "01234567":
                    j += 1
                out.append(int(s[i + 1 : j], 8) & 0xFF)
                i = j
                continue
            if n == "x" and i + 3 < len(s):
                out.append(int(s[i + 2 : i + 4], 16))
                i += 4
                continue
            out.append(_ESCAPES.get(n, ord(n) & 0xFF))
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out), True, i


def _parse_exec_args(args: str) -> tuple[str, list[str], bool] | None:
    """``"path", ["a", "b"], 0x… /* n vars */`` -> (path, argv, truncated)."""
    s = args.lstrip()
    if s.startswith("AT_FDCWD, ") or re.match(r"^\d+(<[^>]*>)?, ", s):  # execveat(dirfd, path, …)
        s = s[s.index(", ") + 2 :]
    if not s.startswith('"'):
        return None
    path, truncated, i = _read_string(s, 0)
    rest = s[i:].lstrip(", ")
    argv: list[str] = []
    if rest.startswith("["):
        j = 1
        while j < len(rest):
            ch = rest[j]
            if ch == '"':
                item, cut, j = _read_string(rest, j)
                truncated |= cut
                argv.append(_decode(item))
            elif rest.startswith("...", j):
                truncated = True
                j += 3
            elif ch == "]":
                break
            else:
                j += 1
    return _decode(path), argv, truncated


def _errno_of(args: str) -> str:
    m = _ERRNO.search(args)
    return m.group(1) if m else ""


def _result(m: re.Match[str] | None) -> str:
    """The syscall's return value; for fork-family calls the child pid in strace's namespace."""
    if m is None:
        return "?"
    return m.group(2) or m.group(1)


@dataclass
class _Proc:
    cwd: str | None
    parent: int | None = None
    last_record: int | None = None  # index into records of this pid's latest exec
    failed_exec: int | None = None  # index of this pid's failed start, until a later start succeeds


def parse_strace(text: str, exec_seq: int, initial_cwd: str | None) -> list[TraceRecord]:
    """Turn one exec's strace output into records, dropping the harness's own helpers.

    ``initial_cwd`` is the working directory of the first traced process (the exec's cwd for
    docker; for bwrap the launcher's chdir calls inside bwrap set it before the command runs).
    """
    procs: dict[int, _Proc] = {}
    pending: dict[int, str] = {}  # pid -> name of its unfinished syscall
    unfinished_args: dict[int, str] = {}
    recs: list[dict[str, object]] = []
    first_pid: int | None = None

    def proc(pid: int) -> _Proc:
        p = procs.get(pid)
        if p is None:
            # A child whose clone has not returned yet: its parent is the process with an
            # unfinished fork-family call (vfork suspends the parent, so this is exact for the
            # common shell/posix_spawn case; for concurrent clones it is the best guess).
            forking = [q for q, name in pending.items() if name in ("clone", "clone3", "fork", "vfork")]
            parent = forking[-1] if forking else None
            cwd = procs[parent].cwd if parent is not None and parent in procs else None
            p = procs[pid] = _Proc(cwd=cwd, parent=parent)
        return p

    def finish(pid: int, name: str, args: str, result: str, errno: str = "") -> None:
        p = proc(pid)
        if name in ("clone", "clone3", "fork", "vfork"):
            if result.isdigit() and int(result) > 0:
                child = int(result)
                if child not in procs:
                    procs[child] = _Proc(cwd=p.cwd, parent=pid)
                else:
                    procs[child].parent = pid
            return
        if result != "0":
            if name in ("execve", "execveat") and p.failed_exec is None:
                # Kept as an attempt unless the same process starts a program later (a PATH
                # search's misses): a missing `sudo` or `npm` was still issued.
                parsed = _parse_exec_args(args)
                if parsed is not None:
                    filename, argv, truncated = parsed
                    recs.append(
                        {
                            "pid": pid,
                            "time": now,
                            "filename": filename,
                            "argv": argv,
                            "cwd": p.cwd,
                            "exit_status": None,
                            "truncated": truncated,
                            "parent_pid": p.parent,
                            "failed": errno or "error",
                        }
                    )
                    p.failed_exec = len(recs) - 1
            return  # failed chdir / execve: nothing ran, nothing changed
        if name == "chdir":
            m = re.match(r'^\s*"', args)
            if m:
                raw, _, _ = _read_string(args.lstrip(), 0)
                target = _decode(raw)
                base = p.cwd or "/"
                p.cwd = posixpath.normpath(posixpath.join(base, target))
        elif name == "fchdir":
            m = re.match(r"^\s*\d+<([^>]*)>", args)
            p.cwd = m.group(1) if m else None
        elif name in ("execve", "execveat"):
            parsed = _parse_exec_args(args)
            if parsed is None:
                return
            filename, argv, truncated = parsed
            if p.failed_exec is not None:
                recs[p.failed_exec]["superseded"] = True  # a PATH-search miss: the start succeeded
                p.failed_exec = None
            recs.append(
                {
                    "pid": pid,
                    "time": now,
                    "filename": filename,
                    "argv": argv,
                    "cwd": p.cwd,
                    "exit_status": None,
                    "truncated": truncated,
                    "parent_pid": p.parent,
                }
            )
            p.last_record = len(recs) - 1

    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        pid, now, body = int(m.group(1)), float(m.group(2)), m.group(3)
        if first_pid is None:
            first_pid = pid
            procs[pid] = _Proc(cwd=initial_cwd)
        if (em := _EXITED.match(body)) or (km := _KILLED.match(body)):
            p = proc(pid)
            status: int | None = None
            if em:
                status = int(em.group(1))
            elif km:
                status = 128 + _SIGNALS.get(km.group(1), 0)
            if p.last_record is not None:
                recs[p.last_record]["exit_status"] = status
            if p.failed_exec is not None:
                recs[p.failed_exec]["exit_status"] = status
            pending.pop(pid, None)
            continue
        if rm := _RESUMED.match(body):
            name = rm.group(1)
            args = unfinished_args.pop(pid, "") + rm.group(2)
            pending.pop(pid, None)
            res = _RESULT.search(args)
            finish(pid, name, args[: res.start()] if res else args, _result(res), _errno_of(args))
            continue
        cm = _CALL.match(body)
        if not cm:
            continue
        name, args = cm.group(1), cm.group(2)
        if args.endswith("<unfinished ...>"):
            pending[pid] = name
            unfinished_args[pid] = args[: -len("<unfinished ...>")].rstrip()
            proc(pid)
            continue
        res = _RESULT.search(args)
        finish(pid, name, args[: res.start()] if res else args, _result(res), _errno_of(args))

    parents = {pid: p.parent for pid, p in procs.items()}
    kept = [r for r in recs if not r.pop("superseded", False)]
    return [TraceRecord(exec_seq=exec_seq, **r) for r in _drop_harness(kept, parents)]  # type: ignore[arg-type]


def _drop_harness(recs: list[dict[str, object]], parents: dict[int, int | None]) -> list[dict[str, object]]:
    """Remove the supervisor, its ``timeout``, and every exec by the supervisor's ancestors."""
    sup_idx = next(
        (i for i, r in enumerate(recs) if r["argv"][:3] == [SUPERVISOR_SHELL, "-c", SUPERVISOR_SCRIPT]),  # type: ignore[index]
        None,
    )
    if sup_idx is None:
        return recs
    sup = recs[sup_idx]
    sup_pid = sup["pid"]
    ancestors: set[object] = set()
    cur = sup["parent_pid"]
    while isinstance(cur, int) and cur not in ancestors:
        ancestors.add(cur)
        cur = parents.get(cur)
    out: list[dict[str, object]] = []
    dropped_timeout = False
    for i, r in enumerate(recs):
        if i == sup_idx or r["pid"] in ancestors or (r["pid"] == sup_pid and i < sup_idx):
            continue
        if not dropped_timeout and r["parent_pid"] == sup_pid and r["argv"][:3] == ["timeout", "-s", "KILL"]:  # type: ignore[index]
            dropped_timeout = True
            continue
        out.append(r)
    return out
