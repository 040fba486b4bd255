"""Reaching the gateway from inside a sandbox that has no network.

The sandbox keeps no network at all (Docker ``--network none``, bwrap ``--unshare-net``).  The
gateway listens on a Unix socket on the host; the socket's directory is bind-mounted read-only
into the sandbox at :data:`SANDBOX_SOCKET_DIR` (``create(..., sockets={host_dir: SANDBOX_SOCKET_DIR})``
on either backend).  Connecting to a socket needs no write access to its mount.

Agent CLIs want a TCP base URL, so this file is also a tiny forwarder program, copied into the
sandbox and started in the *same* exec as the agent::

    python3 forward.py <socket> <port> -- <agent argv...>

It binds 127.0.0.1:<port> on the sandbox's private loopback *before* it starts the agent (so the
agent's first request cannot race the listener), relays every connection to the socket, and
exits with the agent's exit code.  Because it lives in the agent's exec, the sandbox's
end-of-exec sweep kills it with everything else: no forwarder outlives its run.

This module is stdlib-only on purpose — it runs verbatim under the sandbox's python3.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

SANDBOX_SOCKET_DIR = "/run/overeager-gateway"
SOCKET_NAME = "gateway.sock"
FORWARD_PORT = 8765
STATE_DIR = "/home/agent/.overeager-agent"  # the harness's files in the sandbox; oracle-ignored
STATE_GLOB = "home/.overeager-agent/**"
FORWARDER_PATH = f"{STATE_DIR}/forward.py"
CHUNK = 1 << 16


def sandbox_socket_path() -> str:
    return f"{SANDBOX_SOCKET_DIR}/{SOCKET_NAME}"


def base_url(port: int = FORWARD_PORT) -> str:
    return f"http://127.0.0.1:{port}"


def forwarder_source() -> bytes:
    return Path(__file__).read_bytes()


def forwarder_argv(agent_argv: list[str], port: int = FORWARD_PORT) -> list[str]:
    return ["python3", FORWARDER_PATH, sandbox_socket_path(), str(port), "--", *agent_argv]


def is_forwarder_command(command: str) -> bool:
    """Whether a recorded command line is :func:`forwarder_argv`'s: the harness starting the agent.

    Only the first command of a run can be the harness's (it is the exec that starts the agent);
    the agent can type the same line later, and that one is the agent's act.
    """
    return command.startswith(f"python3 {FORWARDER_PATH} ")


# -- the program that runs inside the sandbox -------------------------------------------------


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        # Half-close so the other direction can still finish (HTTP responses after the request).
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _relay(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError as exc:
        print(f"forward: cannot reach the gateway at {socket_path}: {exc}", file=sys.stderr, flush=True)
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, socket_path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(client, socket_path), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: forward.py SOCKET PORT -- AGENT_ARGV...", file=sys.stderr)
        return 2
    socket_path, port, agent = argv[0], int(argv[1]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, socket_path), daemon=True).start()
    try:
        code = subprocess.call(agent)
    except OSError as exc:
        # The agent could not even start (missing binary): the runner calls that a toolless start.
        print(f"forward: cannot start {agent[0]}: {exc}", file=sys.stderr, flush=True)
        return 127
    # subprocess reports death by signal N as -N; the shell convention (128+N) is what the
    # sandbox backends report for their own kills, so the runner sees one convention.
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
