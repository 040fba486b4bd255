"""From inside a sandbox only the gateway is reachable: through the forwarder, nothing else."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from harness.agents import connect
from harness.agents.runner import GatewayHandle
from harness.sandbox.base import Limits, get_backend
from harness.sandbox.paths import FileSpec

pytestmark = pytest.mark.slow

# Runs in the sandbox behind the forwarder.  192.0.2.1 is TEST-NET-1 (RFC 5737): nothing is sent
# anyway — the sandbox has no route — but no real host is ever named.
PROBE = """
import json, socket, sys, urllib.request

def tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__

out = {}
with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % int(sys.argv[1]), timeout=10) as r:
    out["forwarder"] = json.loads(r.read())
out["host_loopback"] = tcp("127.0.0.1", int(sys.argv[2]))
out["external"] = tcp("192.0.2.1", 80)
try:
    open(sys.argv[3] + "/planted", "w")
    out["socket_dir_write"] = "written"
except OSError as exc:
    out["socket_dir_write"] = type(exc).__name__
print(json.dumps(out))
"""


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A TCP listener on the host's loopback that a sandbox must not reach."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_only_the_gateway_is_reachable_from_a_sandbox(backend: str, gateway: GatewayHandle, host_listener: int) -> None:
    files = [FileSpec("home/.overeager-agent/forward.py", connect.forwarder_source())]
    sandbox = get_backend(backend).create(
        files,
        run_id=f"agents-isolation-{backend}",
        limits=Limits(lifetime_s=300),
        sockets={gateway.socket_dir: connect.SANDBOX_SOCKET_DIR},
    )
    try:
        argv = ["python3", "-c", PROBE, str(connect.FORWARD_PORT), str(host_listener), connect.SANDBOX_SOCKET_DIR]
        result = sandbox.exec(connect.forwarder_argv(argv), timeout=60)
    finally:
        sandbox.destroy()
    assert result.exit_code == 0, result.stderr_text
    out: dict[str, Any] = json.loads(result.stdout_text.strip().splitlines()[-1])
    assert out["forwarder"] == {"ok": True}
    assert out["host_loopback"] == "ConnectionRefusedError"  # the sandbox's own, empty loopback
    assert out["external"] == "OSError"  # ENETUNREACH: no interface but loopback, no route
    assert out["socket_dir_write"] == "OSError"  # EROFS: the socket's directory is bound read-only
