#!/usr/bin/python3 -IS
"""The shim: what ``kubectl``, ``terraform``, ``psql`` … are inside a sandbox.

Installed (by ``suite.emulators.service``) as ``<dir>/bin/<tool>`` in a host directory that the
sandbox mounts read-only at ``/run/overeager-emu``; the tool's name is the file's name and the
emulator service listens on ``<dir>/emu.sock``. It sends argv, cwd and the environment, answers
the service's requests for input, prints the result and exits with the tool's exit code.

Input is only read when the service asks for it — stdin only for commands that really consume it
(``kubectl apply -f -``, ``psql`` without ``-c``, a confirmation prompt) — so an agent's shell
that leaves stdin open never hangs a command that does not read it. Files the command reads
(manifests, ``*.tf``) are read here, as the agent, with the agent's permissions.

Standard library only: this file runs verbatim under the sandbox's python3 (3.11).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from typing import Any

MAX_FRAME = 16 * 1024 * 1024
# What the service accepts in one answer (its MAX_FRAME): files past it are sent as too large.
MAX_ANSWER = 8 * 1024 * 1024 - 64 * 1024
MAX_STDIN = 1024 * 1024
MAX_FILE = 1024 * 1024
MAX_ENV = 64 * 1024
MAX_DIR = 2000


def _send(sock: socket.socket, obj: Any) -> None:
    data = json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogateescape")
    sock.sendall(struct.pack(">I", len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks: list[bytes] = []
    while n:
        chunk = sock.recv(min(n, 1 << 16))
        if not chunk:
            raise ConnectionError("emulator service closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> Any:
    (size,) = struct.unpack(">I", _recv_exact(sock, 4))
    if size > MAX_FRAME:
        raise ConnectionError("oversized reply from the emulator service")
    return json.loads(_recv_exact(sock, size).decode("utf-8"))


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_file(path: str) -> dict[str, str]:
    try:
        if os.path.isdir(path):
            return {"error": "directory"}
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE + 1)
    except FileNotFoundError:
        return {"error": "missing"}
    except PermissionError:
        return {"error": "permission"}
    except OSError:
        return {"error": "missing"}
    if len(data) > MAX_FILE:
        return {"error": "too-large"}
    text = _text(data)
    if text is None:
        return {"error": "binary"}
    return {"content": text}


def _list_dir(path: str) -> list[dict[str, str]] | None:
    try:
        names = sorted(os.listdir(path))[:MAX_DIR]
    except OSError:
        return None
    out = []
    for name in names:
        full = os.path.join(path, name)
        kind = "dir" if os.path.isdir(full) else "file" if os.path.isfile(full) else "other"
        out.append({"name": name, "type": kind})
    return out


def _read_stdin() -> tuple[str, bool]:
    """stdin's text, and whether there was more than the service accepts (never sent cut)."""
    try:
        data = sys.stdin.buffer.read(MAX_STDIN + 1)
    except (OSError, ValueError, AttributeError):
        return "", False
    if len(data) > MAX_STDIN:
        return "", True
    return data.decode("utf-8", "replace"), False


def _edit(name: str, content: str) -> str | None:
    # Imported here: most calls never edit, and every import is paid on every CLI start.
    import subprocess
    import tempfile

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    base = os.path.basename(name) or "edit.txt"
    fd, path = tempfile.mkstemp(
        prefix=base.rsplit(".", 1)[0] + "-", suffix="." + base.rsplit(".", 1)[-1] if "." in base else ""
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(content)
        # $EDITOR may carry arguments ("sed -i s/a/b/"), as crontab(1) and kubectl allow.
        code = subprocess.call(["/bin/sh", "-c", editor + ' "$1"', "editor", path])
        if code != 0:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def _env() -> dict[str, str]:
    out: dict[str, str] = {}
    total = 0
    for key, value in sorted(os.environ.items()):
        if len(value) > 4096:
            continue
        total += len(key) + len(value)
        if total > MAX_ENV:
            break
        out[key] = value
    return out


def _answer(msg: dict[str, Any], cwd: str) -> dict[str, Any]:
    reply: dict[str, Any] = {}
    if msg.get("stdin"):
        reply["stdin"], too_large = _read_stdin()
        if too_large:
            reply["stdin_too_large"] = True
    if msg.get("files"):
        files: dict[str, dict[str, str]] = {}
        budget = MAX_ANSWER - len(json.dumps(reply))
        for p in msg["files"][:200]:
            data = _read_file(os.path.join(cwd, p))
            size = len(json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogateescape"))
            if size > budget:
                data = {"error": "too-large"}
            else:
                budget -= size
            files[p] = data
        reply["files"] = files
    if msg.get("dirs"):
        reply["dirs"] = {p: _list_dir(os.path.join(cwd, p)) for p in msg["dirs"][:50]}
    if msg.get("edit"):
        edit = msg["edit"]
        reply["edit"] = {"name": edit["name"], "content": _edit(edit["name"], edit["content"])}
    return reply


def _write(writes: dict[str, str], cwd: str) -> None:
    for path, content in sorted(writes.items()):
        target = os.path.join(cwd, path)
        try:
            parent = os.path.dirname(target)
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(content)
        except OSError as exc:
            sys.stderr.write(f"{os.path.basename(sys.argv[0])}: cannot write {path}: {exc.strerror}\n")


def main() -> int:
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    tool = os.path.basename(sys.argv[0])
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "/"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(os.path.join(here, "emu.sock"))
    except OSError as exc:
        sys.stderr.write(f"{tool}: the emulator service is not reachable: {exc.strerror or exc}\n")
        return 70
    try:
        _send(sock, {"v": 1, "tool": tool, "argv": sys.argv[1:], "cwd": cwd, "env": _env(), "tty": os.isatty(0)})
        while True:
            msg = _recv(sock)
            if msg.get("type") == "need":
                _send(sock, _answer(msg, cwd))
                continue
            _write(msg.get("writes") or {}, cwd)
            sys.stdout.write(msg.get("stdout", ""))
            sys.stderr.write(msg.get("stderr", ""))
            sys.stdout.flush()
            sys.stderr.flush()
            return int(msg.get("exit", 1))
    except (ConnectionError, OSError, ValueError) as exc:
        sys.stderr.write(f"{tool}: lost the emulator service: {exc}\n")
        return 70
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
