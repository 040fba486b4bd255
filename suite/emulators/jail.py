"""Emulator calls under limits of their own: a child process with rlimits runs every call.

The emulated state lives in the harness process (the worker), outside the sandbox and outside
its cgroup, and an emulator is ordinary Python parsing agent-chosen input. The parsers refuse
what is known to be hostile (:mod:`suite.emulators.documents`), but a regular expression agents
supply to ``journalctl -g`` or ``amtool``, a JMESPath query, a SQL statement or an input nobody
thought of can still burn memory or CPU. So no call runs in the harness process: each is sent to
a *jail* process that has

* ``RLIMIT_AS`` (address space) at :attr:`CallLimits.memory_bytes` — an allocation past it
  raises MemoryError in the jail, which dies and is replaced;
* ``RLIMIT_CPU`` set before each call to the CPU time used so far plus
  :attr:`CallLimits.cpu_seconds` — SIGXCPU ends the jail;
* ``RLIMIT_FSIZE`` 0 and ``RLIMIT_NOFILE`` small: an emulator writes no files and opens none;

and the parent waits at most :attr:`CallLimits.wall_seconds` before killing it. The parent never
parses more than :attr:`CallLimits.max_reply_bytes` of reply, so the host's memory is bounded by
that whatever the agent sends.

The jail is stateless: the state travels with the call (JSON) and comes back changed, so any jail
can run any service's call, one process serves the whole host process (a small pool when several
runs call at once), and one that died is simply replaced. Emulators are deterministic functions
of (state, call), so nothing is lost by running them elsewhere.

The jail is a fresh interpreter (``subprocess``, never a bare ``fork`` of a threaded worker), and
it exits when its stdin closes — when the pool drops it or the harness process dies — so it
cannot outlive its parent by more than the call it is running.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from suite.emulators.base import Call, DirEntry, FileData, InputTooLarge, NeedInput, Result, UnsupportedOption

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024


MAX_OUTPUT_BYTES = 16 * MiB  # what the shim accepts in one reply frame


@dataclass(frozen=True)
class CallLimits:
    memory_bytes: int = 768 * MiB
    cpu_seconds: int = 20
    wall_seconds: float = 60.0
    # The emulated world may grow by what agents apply, but not without bound: etcd, S3 and
    # PostgreSQL all have quotas, and this one keeps a state the harness can hold copies of.
    max_state_bytes: int = 16 * MiB

    @property
    def max_reply_bytes(self) -> int:
        """The parent reads no more than the jail may send: the state, the output, the framing."""
        return self.max_state_bytes + MAX_OUTPUT_BYTES + MiB


DEFAULT_LIMITS = CallLimits()
RECURSION_LIMIT = 12_000
READY = b"R"
STARTUP_SECONDS = 60.0


class JailError(Exception):
    """The jail died, hung or broke the protocol; ``reason`` is memory | cpu | time | crash."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Wire format: 4-byte big-endian length, then JSON (both directions, over the jail's stdin/stdout)


def call_to_wire(call: Call) -> dict[str, Any]:
    return {
        "tool": call.tool,
        "argv": call.argv,
        "cwd": call.cwd,
        "env": call.env,
        "seq": call.seq,
        "now": call.now.isoformat(),
        "stdin": call.stdin,
        "stdin_error": call.stdin_error,
        "stdin_tty": call.stdin_tty,
        "files": {p: {"content": f.content, "error": f.error} for p, f in call.files.items()},
        "dirs": {p: None if d is None else [[e.name, e.type] for e in d] for p, d in call.dirs.items()},
        "edits": call.edits,
    }


def call_from_wire(msg: dict[str, Any]) -> Call:
    return Call(
        tool=msg["tool"],
        argv=list(msg["argv"]),
        cwd=msg["cwd"],
        env=dict(msg["env"]),
        seq=int(msg["seq"]),
        now=datetime.fromisoformat(msg["now"]),
        stdin=msg["stdin"],
        stdin_error=msg.get("stdin_error", ""),
        stdin_tty=bool(msg["stdin_tty"]),
        files={p: FileData(content=f["content"], error=f["error"]) for p, f in msg["files"].items()},
        dirs={p: None if d is None else [DirEntry(n, t) for n, t in d] for p, d in msg["dirs"].items()},
        edits=dict(msg["edits"]),
    )


def result_to_wire(result: Result) -> dict[str, Any]:
    return {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "exit_code": result.exit_code,
        "mutating": result.mutating,
        "dry_run": result.dry_run,
        "declined": result.declined,
        "read": result.read,
        "writes": result.writes,
    }


def result_from_wire(msg: dict[str, Any]) -> Result:
    return Result(**msg)


def need_to_wire(need: NeedInput) -> dict[str, Any]:
    return {
        "stdin": need.stdin,
        "files": need.files,
        "dirs": need.dirs,
        "edit": list(need.edit) if need.edit else None,
        "prompt": need.prompt,
    }


def need_from_wire(msg: dict[str, Any]) -> NeedInput:
    edit = msg.get("edit")
    return NeedInput(
        stdin=bool(msg["stdin"]),
        files=msg["files"],
        dirs=msg["dirs"],
        edit=(edit[0], edit[1]) if edit else None,
        prompt=msg["prompt"],
    )


def _write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------------------------------------
# The jail process


def _limit_self(memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # stdin, stdout, stderr and the interpreter's own few; an emulator opens nothing.
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _serve_one(request: dict[str, Any]) -> dict[str, Any]:
    from suite.emulators import run_call, too_large_result

    state = request["state"]
    call = call_from_wire(request["call"])
    try:
        result = run_call(state, call)
    except InputTooLarge as exc:
        # The emulator may have changed the state before it read the input: keep none of it.
        return {"type": "result", "result": result_to_wire(too_large_result(call, exc.path)), "state": None}
    except NeedInput as need:
        return {"type": "need", "need": need_to_wire(need)}
    except UnsupportedOption as exc:
        return {"type": "result", "result": result_to_wire(exc.result), "state": None}
    except MemoryError:
        raise  # the jail's limit, reported by main() (not an emulator bug)
    except RecursionError:
        # A parser that does not bound its own nesting: the input's fault, answered as such.
        nested = Result(stderr=f"{call.tool}: input nested too deeply\n", exit_code=1)
        return {"type": "result", "result": result_to_wire(nested), "state": None}
    except Exception as exc:  # an emulator bug is the call's failure, not the jail's
        return {"type": "bug", "error": f"{type(exc).__name__}: {exc}"}
    return {"type": "result", "result": result_to_wire(result), "state": state}


def main() -> None:
    """The jail's loop: limits first, then one request at a time until stdin closes."""
    memory = int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_LIMITS.memory_bytes
    cpu = int(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_LIMITS.cpu_seconds
    max_state = int(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_LIMITS.max_state_bytes
    # Every emulator is imported before the limits: start-up is not a call's cost, and nothing is
    # imported (or compiled, -B) later, when RLIMIT_FSIZE forbids writing and NOFILE is small.
    import importlib

    from suite.emulators import SECTIONS, TOOLS

    for name in sorted(set(SECTIONS.values()) | {mod for mod, _ in TOOLS.values()}):
        importlib.import_module(name)
    # A write past RLIMIT_FSIZE fails with EFBIG instead of killing the jail.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # Recursive-descent parsers (SQL, HCL, JMESPath) take several frames per nesting level and
    # stop nesting themselves well below this; since 3.11 Python-to-Python calls do not use the
    # C stack, so the higher limit costs nothing until it is used.
    sys.setrecursionlimit(RECURSION_LIMIT)
    _limit_self(memory)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Built before any call: answering "out of memory" must not need memory.
    memory_reply = json.dumps({"type": "limit", "reason": "memory"}).encode()
    memory_frame = struct.pack(">I", len(memory_reply)) + memory_reply
    # Ready: the parent starts a call's clock only now, not while the interpreter starts.
    stdout.write(READY)
    stdout.flush()
    while True:
        try:
            (size,) = struct.unpack(">I", _read_exact(stdin, 4))
            request = json.loads(_read_exact(stdin, size))
        except EOFError:
            return
        soft = int(_cpu_used()) + cpu
        resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
        out_of_memory = False
        try:
            data = _reply_bytes(_serve_one(request), max_state)
        except MemoryError:
            # Only a flag here: the traceback keeps the call's frames (and what they allocated)
            # alive until this block ends, so anything more could fail the same way.
            out_of_memory = True
        if out_of_memory:
            del request
            stdout.write(memory_frame)
            stdout.flush()
            return  # the heap may be fragmented: the next call gets a fresh jail
        _write_frame(stdout, data)


def _reply_bytes(reply: dict[str, Any], max_state: int) -> bytes:
    data = json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogateescape")
    if reply["type"] == "result":
        out = reply["result"]
        if len(out["stdout"]) + len(out["stderr"]) > MAX_OUTPUT_BYTES:
            return json.dumps({"type": "limit", "reason": "output"}).encode()
        if len(data) - len(out["stdout"]) - len(out["stderr"]) > max_state:
            return json.dumps({"type": "limit", "reason": "state"}).encode()
    return data


# ---------------------------------------------------------------------------------------------
# The parent's side


class _Jail:
    def __init__(self, limits: CallLimits) -> None:
        self.limits = limits
        code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from suite.emulators.jail import main; main()"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-B",
                "-c",
                code,
                str(limits.memory_bytes),
                str(limits.cpu_seconds),
                str(limits.max_state_bytes),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"PYTHONHASHSEED": "0", "LC_ALL": "C.UTF-8"},
            close_fds=True,
        )
        self.pid = os.getpid()
        try:
            ready = self._read(1, time.monotonic() + STARTUP_SECONDS)
        except JailError:
            self.kill()
            raise
        if ready != READY:
            self.kill()
            raise JailError("crash", "the jail did not start")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def _read(self, n: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        chunks = []
        while n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise JailError("time")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise JailError("time")
            chunk = os.read(fd, min(n, 1 << 20))
            if not chunk:
                raise JailError(self._death_reason())
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _death_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "crash"
        if code == -signal.SIGXCPU:
            return "cpu"
        return "crash"

    def request(self, payload: bytes) -> dict[str, Any]:
        assert self.proc.stdin is not None
        deadline = time.monotonic() + self.limits.wall_seconds
        try:
            self.proc.stdin.write(struct.pack(">I", len(payload)) + payload)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise JailError(self._death_reason()) from None
        (size,) = struct.unpack(">I", self._read(4, deadline))
        if size > self.limits.max_reply_bytes:
            raise JailError("reply", f"{size} bytes")
        reply: dict[str, Any] = json.loads(self._read(size, deadline).decode("utf-8", "surrogateescape"))
        return reply


class JailPool:
    """Idle jails of this process, started on demand; any number of callers may use it at once."""

    def __init__(self, limits: CallLimits = DEFAULT_LIMITS, keep: int = 2) -> None:
        self.limits = limits
        self.keep = keep  # idle jails kept per set of limits
        self._idle: dict[CallLimits, list[_Jail]] = {}
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)
        atexit.register(self.close)

    def _forget(self) -> None:
        # A forked worker inherits the parent's pipes: using them would interleave two
        # processes' frames on one jail. Drop them (without killing the parent's jails).
        self._idle = {}
        self._lock = threading.Lock()

    def _take(self, limits: CallLimits) -> _Jail:
        with self._lock:
            idle = self._idle.get(limits, [])
            while idle:
                jail = idle.pop()
                if jail.alive() and jail.pid == os.getpid():
                    return jail
                jail.kill()
        return _Jail(limits)

    def _give(self, jail: _Jail) -> None:
        with self._lock:
            idle = self._idle.setdefault(jail.limits, [])
            if len(idle) < self.keep:
                idle.append(jail)
                return
        jail.kill()

    def run(
        self, state: dict[str, Any], call: Call, limits: CallLimits | None = None
    ) -> tuple[Result, dict[str, Any] | None]:
        """(result, new state) of one call; the state is None when nothing may be committed.

        Raises NeedInput as the emulator did, and JailError when the call hit a limit.
        """
        limits = limits or self.limits
        payload = json.dumps({"state": state, "call": call_to_wire(call)}, ensure_ascii=False).encode(
            "utf-8", "surrogateescape"
        )
        jail = self._take(limits)
        try:
            reply = jail.request(payload)
        except BaseException:
            jail.kill()
            raise
        kind = reply.get("type")
        if kind == "limit":
            jail.kill() if reply.get("reason") == "memory" else self._give(jail)
            raise JailError(str(reply.get("reason")))
        self._give(jail)
        if kind == "need":
            raise need_from_wire(reply["need"])
        if kind == "bug":
            return Result(stderr=f"{call.tool}: internal emulator error: {reply['error']}\n", exit_code=70), None
        return result_from_wire(reply["result"]), reply["state"]

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for jails in idle.values():
            for jail in jails:
                jail.kill()


POOL = JailPool()


def limit_message(tool: str, reason: str) -> tuple[int, str]:
    """What the agent sees when its call hit a limit: what a shell shows for such a death.

    The exit codes are the shell's for a process killed by SIGKILL (the OOM killer, a timeout) or
    SIGXCPU; the text says which limit, so an agent that tripped one can tell why.
    """
    if reason == "cpu":
        return 152, f"{tool}: CPU time limit exceeded\n"
    if reason == "time":
        return 137, f"{tool}: Killed (the call ran past its time limit)\n"
    if reason == "memory":
        return 137, f"{tool}: Killed (out of memory)\n"
    if reason in ("state", "output"):
        what = "emulated system's storage" if reason == "state" else "output"
        return 1, f"{tool}: the {what} quota is exhausted; the call changed nothing\n"
    return 70, f"{tool}: internal emulator error: the call's process died ({reason})\n"
