"""The per-run emulator service: emulated state on the host, reached from the sandbox by shims.

Usage (the harness side; see ``suite.execution.run_task`` for the whole run)::

    with EmulatorService(family_state, ["kubectl", "helm"]) as service:
        sandbox = get_backend(name).create(files, run_id=..., sockets={service.directory: MOUNT})
        sandbox.exec([...], env={"PATH": service.sandbox_path()})
        service.calls, service.objects()

``directory`` is a fresh host temp dir holding ``emu.sock`` and ``bin/<tool>`` (the shims). It is
mounted read-only at :data:`MOUNT`, so the agent can read the shims but can change neither them
nor the state; the state lives only in this process. The directory is 0755 and the socket 0666
because the sandbox's agent is uid 1000 on both backends (Docker's container user, bwrap's
``--uid 1000`` mapped to host uid 1000 when the harness is root): connecting to a Unix socket needs
write permission on the socket file, and nothing more — a read-only mount does not prevent it.

Each call runs under one lock, in a jail process with limits of its own
(:mod:`suite.emulators.jail`), on a copy of the state; the copy replaces the state only when the
emulator returns, so an interrupted call — or one that hit a limit — changes nothing, and
concurrent calls (``kubectl ... &``) are serialised as they would be by an API server. Nothing an
agent sends is parsed here beyond the protocol frames, and those are capped in size, depth and
number of containers before ``json.loads`` sees them. When the emulator asks for input
(:class:`~suite.emulators.base.NeedInput`), the lock is released while the shim answers and the
call starts over with the answer; every call is logged once, with the ids of the objects it
changed (a diff of ``objects()`` around the call) and those it read.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import socket
import socketserver
import struct
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from suite.emulators import TOOLS, call_time, objects, prepare_state
from suite.emulators.base import MAX_FILE, MAX_STDIN, Call, DirEntry, FileData, NeedInput, Result
from suite.emulators.documents import json_depth
from suite.emulators.jail import POOL, CallLimits, JailError, limit_message

MOUNT = "/run/overeager-emu"
SOCKET_NAME = "emu.sock"
# A request is argv (ARG_MAX is 2 MiB) and the environment; an answer carries the files a call
# asked for, each at most MAX_FILE. Every connection may hold one frame, hence the small count.
MAX_REQUEST = 4 * 1024 * 1024
MAX_FRAME = 8 * 1024 * 1024
MAX_FRAME_DEPTH = 6
MAX_FRAME_CONTAINERS = 120_000  # 50 directories of 2000 entries, and the rest
MAX_ROUNDS = 8
MAX_CONNECTIONS = 16
MAX_LOGGED_OUTPUT = 4000
SHIM_SOURCE = Path(__file__).with_name("shim.py")


class ProtocolError(Exception):
    pass


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 16))
        if not chunk:
            raise ProtocolError("connection closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> Any:
    """One frame from a shim — or from whatever the agent connects instead, so nothing is trusted.

    The protocol's messages are at most a few levels deep, and a frame of ``[[],[],…]`` would
    make millions of objects here, in the harness process: both are refused before parsing.
    """
    (size,) = struct.unpack(">I", _recv_exact(sock, 4))
    if size > limit:
        raise ProtocolError(f"frame of {size} bytes exceeds {limit}")
    text = _recv_exact(sock, size).decode("utf-8", "surrogateescape")
    if json_depth(text) > MAX_FRAME_DEPTH:
        raise ProtocolError("frame nested too deeply")
    if text.count("{") + text.count("[") > MAX_FRAME_CONTAINERS:
        # An over-count (brackets inside strings count too) only refuses absurd frames.
        raise ProtocolError("frame has too many containers")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None


def send_frame(sock: socket.socket, obj: Any) -> None:
    data = json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogateescape")
    sock.sendall(struct.pack(">I", len(data)) + data)


def _str_list(value: Any, limit: int) -> list[str]:
    if not isinstance(value, list) or len(value) > limit or not all(isinstance(v, str) for v in value):
        raise ProtocolError("expected a list of strings")
    return value


def _parse_request(msg: Any) -> tuple[str, list[str], str, dict[str, str], bool]:
    if not isinstance(msg, dict) or msg.get("v") != 1:
        raise ProtocolError("not a version-1 request")
    tool = msg.get("tool")
    if not isinstance(tool, str):
        raise ProtocolError("tool must be a string")
    argv = _str_list(msg.get("argv", []), 4096)
    cwd = msg.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith("/"):
        raise ProtocolError("cwd must be an absolute path")
    env = msg.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ProtocolError("env must map strings to strings")
    return tool, argv, cwd, env, bool(msg.get("tty"))


def _merge_answer(call: Call, answer: Any, need: NeedInput) -> None:
    if not isinstance(answer, dict):
        raise ProtocolError("an answer must be a mapping")
    if need.stdin:
        stdin = answer.get("stdin", "")
        stdin = stdin if isinstance(stdin, str) else ""
        if answer.get("stdin_too_large") or len(stdin) > MAX_STDIN:
            # Never a silent truncation: a manifest cut at 1 MiB would apply as if it were whole.
            call.stdin, call.stdin_error = "", "too-large"
        else:
            call.stdin = stdin
    files = answer.get("files") or {}
    for path in need.files:
        data = files.get(path) if isinstance(files, dict) else None
        if isinstance(data, dict) and isinstance(data.get("content"), str):
            too_large = len(data["content"]) > MAX_FILE
            call.files[path] = FileData(error="too-large") if too_large else FileData(content=data["content"])
        else:
            err = data.get("error") if isinstance(data, dict) else None
            call.files[path] = FileData(error=err if isinstance(err, str) else "missing")
    dirs = answer.get("dirs") or {}
    for path in need.dirs:
        entries = dirs.get(path) if isinstance(dirs, dict) else None
        if isinstance(entries, list):
            call.dirs[path] = [
                DirEntry(str(e.get("name")), str(e.get("type"))) for e in entries[:2000] if isinstance(e, dict)
            ]
        else:
            call.dirs[path] = None
    if need.edit is not None:
        edit = answer.get("edit") or {}
        content = edit.get("content") if isinstance(edit, dict) else None
        call.edits[need.edit[0]] = content if isinstance(content, str) else None


def _listing(files: Mapping[str, FileData], directory: str) -> list[DirEntry] | None:
    """A directory as the supplied files make it (``execute``): their names, and subdirectories."""
    prefix = directory.rstrip("/") + "/"
    entries: dict[str, str] = {}
    for path, data in files.items():
        if path.startswith(prefix) and data.error != "missing":
            name, sep, _ = path[len(prefix) :].partition("/")
            entries[name] = "dir" if sep else entries.get(name, "file")
    return [DirEntry(n, t) for n, t in sorted(entries.items())] if entries else None


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


class EmulatorService:
    """Host side of the shadowed CLIs for one run: state, call log, Unix socket, shims."""

    def __init__(
        self,
        state: Mapping[str, Any],
        tools: Sequence[str],
        *,
        parent: str | None = None,
        limits: CallLimits | None = None,
    ) -> None:
        unknown = [t for t in tools if t not in TOOLS]
        if unknown:
            raise ValueError(f"unknown emulated tool(s) {unknown}; known: {sorted(TOOLS)}")
        self.tools = list(dict.fromkeys(tools))
        # The state crosses to the jail and back as JSON on every call, so it is JSON from the
        # start: a tuple or a date in an authored state would otherwise change type on the first
        # call and read as a change the agent made.
        self.initial = json.loads(json.dumps(prepare_state(state)))
        self.state = copy.deepcopy(self.initial)
        self.limits = limits
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._parent = parent
        self.directory = ""
        self._server: socketserver.ThreadingUnixStreamServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="overeager-emu-", dir=self._parent)
        # World-readable on purpose: the sandbox's agent is uid 1000, not the harness's uid.
        os.chmod(self.directory, 0o755)  # noqa: S103
        bin_dir = Path(self.directory) / "bin"
        bin_dir.mkdir(mode=0o755)
        os.chmod(bin_dir, 0o755)  # noqa: S103
        source = SHIM_SOURCE.read_bytes()
        for tool in self.tools:
            target = bin_dir / tool
            target.write_bytes(source)
            os.chmod(target, 0o755)  # noqa: S103
        service = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                service._handle(self.request)

        server = socketserver.ThreadingUnixStreamServer(self.socket_path, Handler)
        server.daemon_threads = True
        # connect() needs write permission on the socket file; the mount is read-only anyway.
        os.chmod(self.socket_path, 0o666)  # noqa: S103
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="overeager-emu", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = ""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def socket_path(self) -> str:
        return os.path.join(self.directory, SOCKET_NAME)

    @staticmethod
    def sandbox_path(default: str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") -> str:
        """PATH for the agent's exec: the shims first, so ``kubectl`` is the emulated one."""
        return f"{MOUNT}/bin:{default}"

    # -- state --------------------------------------------------------------------------

    def objects(self) -> dict[str, Any]:
        with self._lock:
            return objects(self.state)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self.state)

    def reset(self) -> list[dict[str, Any]]:
        """Harness-only reset: the initial state again and an empty call log; returns the old log."""
        with self._lock:
            self.state = copy.deepcopy(self.initial)
            old, self.calls = self.calls, []
        return old

    # -- calls --------------------------------------------------------------------------

    def execute(
        self,
        tool: str,
        argv: Sequence[str],
        *,
        cwd: str = "/workspace",
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        files: Mapping[str, str | None] | None = None,
    ) -> Result:
        """Run a call in-process (tests, benches): inputs are supplied up front instead of by a shim."""
        call = Call(tool, list(argv), cwd=cwd, env=dict(env or {}))
        # The same caps as the shim's, so a test of a huge input sees what an agent would.
        if stdin is not None:
            if len(stdin) > MAX_STDIN or len(stdin.encode("utf-8", "surrogateescape")) > MAX_STDIN:
                call.stdin, call.stdin_error = "", "too-large"
            else:
                call.stdin = stdin
        for path, content in (files or {}).items():
            if content is None:
                data = FileData(error="missing")
            elif len(content) > MAX_FILE or len(content.encode("utf-8", "surrogateescape")) > MAX_FILE:
                data = FileData(error="too-large")
            else:
                data = FileData(content=content)
            call.files[call.abspath(path)] = data
        while True:
            try:
                return self._attempt(call)
            except NeedInput as need:
                if need.stdin:
                    call.stdin = ""
                for path in need.files:
                    is_dir = _listing(call.files, path) is not None
                    call.files[path] = FileData(error="directory" if is_dir else "missing")
                for path in need.dirs:
                    call.dirs[path] = _listing(call.files, path)
                if need.edit is not None:
                    call.edits[need.edit[0]] = None

    def _attempt(self, call: Call) -> Result:
        """One run of the call; commits and logs it unless the emulator needs input first."""
        if call.tool not in self.tools:
            result = Result(stderr=f"bash: {call.tool}: command not found\n", exit_code=127)
            with self._lock:
                self._log(call, result, [])
            return result
        with self._lock:
            call.seq = len(self.calls) + 1
            call.now = call_time(self.state, call.seq)
            try:
                result, work = POOL.run(self.state, call, self.limits)
            except JailError as exc:
                code, message = limit_message(call.tool, exc.reason)
                result = Result(stderr=message, exit_code=code)
                self._log(call, result, [])
                return result
            # An emulator bug (exit 70) or an input over the cap: logged, nothing committed.
            if work is None:
                self._log(call, result, [])
                return result
            changed = _changed(objects(self.state), objects(work))
            self.state = work
            self._log(call, result, changed)
            return result

    def _log(self, call: Call, result: Result, changed: list[str]) -> None:
        self.calls.append(
            {
                "seq": len(self.calls) + 1,
                "tool": call.tool,
                "argv": list(call.argv),
                "cwd": call.cwd,
                "exit_code": result.exit_code,
                "mutating": result.mutating,
                "dry_run": result.dry_run,
                "declined": result.declined,
                "changed": changed,
                "read": list(result.read),
                "stdin_read": call.stdin is not None,
                "files_read": sorted(call.files),
                "stdout": result.stdout[:MAX_LOGGED_OUTPUT],
                "stderr": result.stderr[:MAX_LOGGED_OUTPUT],
            }
        )

    def _handle(self, sock: socket.socket) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                send_frame(sock, {"type": "result", "stdout": "", "stderr": "emulator busy\n", "exit": 75})
            except OSError:
                pass
            return
        try:
            sock.settimeout(3600)
            tool, argv, cwd, env, tty = _parse_request(recv_frame(sock, MAX_REQUEST))
            call = Call(tool, argv, cwd=cwd, env=env, stdin_tty=tty)
            for _ in range(MAX_ROUNDS):
                try:
                    result = self._attempt(call)
                except NeedInput as need:
                    send_frame(sock, need.as_message())
                    _merge_answer(call, recv_frame(sock), need)
                    continue
                send_frame(
                    sock,
                    {
                        "type": "result",
                        "stdout": result.stdout,
                        "stderr": result.stderr,
                        "exit": result.exit_code,
                        "writes": result.writes,
                    },
                )
                return
            send_frame(sock, {"type": "result", "stdout": "", "stderr": f"{tool}: too many input rounds\n", "exit": 70})
        except (ProtocolError, OSError, struct.error, ValueError, TypeError, AttributeError, KeyError):
            # A shim killed mid-call (the exec timed out) or a hand-made client sending nonsense:
            # nothing to answer, and nothing of the state was touched.
            return
        finally:
            self._slots.release()
