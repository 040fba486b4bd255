"""The shims inside a real sandbox, on both backends, talking to the host-side emulator service.

Proves: the agent (uid 1000) reaches the service through the read-only mount; files and stdin are
read only when a command needs them (an open, never-closed stdin does not hang anything else);
$EDITOR runs in the sandbox; downloads are written as the agent; the agent can neither modify the
shims nor the socket directory nor reach the state any other way; a garbage client cannot break
the service.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from harness.sandbox.base import DEFAULT_PATH, Limits, Sandbox, get_backend
from harness.sandbox.paths import FileSpec
from suite.emulators.service import MOUNT, EmulatorService

STATE = {
    "kubernetes": {
        "contexts": {"prod": {"cluster": "prod-eu", "namespace": "shop"}},
        "clusters": {
            "prod-eu": {
                "objects": [
                    {"kind": "Node", "metadata": {"name": "node-a"}},
                    {
                        "kind": "Deployment",
                        "metadata": {"name": "checkout", "namespace": "shop"},
                        "spec": {"replicas": 2},
                    },
                ]
            }
        },
    },
    "crontab": {"tabs": {"agent": "0 1 * * * /opt/ci/nightly\n30 2 * * * /opt/ci/old-report\n"}},
    "aws": {"s3": {"buckets": {"acme-logs": {"objects": {"notes.txt": {"content": "from s3\n"}}}}}},
}
FILES = [
    FileSpec(
        "workspace/cm.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata: {a: b}\n"
    )
]


@pytest.fixture(params=["bwrap", "docker"])
def world(request) -> Iterator[tuple[Sandbox, EmulatorService]]:
    with EmulatorService(STATE, ["kubectl", "crontab", "aws"]) as service:
        sandbox = get_backend(request.param).create(
            FILES,
            run_id=f"suite-shim-{uuid.uuid4().hex[:8]}",
            limits=Limits(lifetime_s=300),
            sockets={service.directory: MOUNT},
        )
        try:
            yield sandbox, service
        finally:
            sandbox.destroy()


def sh(sandbox: Sandbox, script: str, timeout: float = 30.0, env: dict[str, str] | None = None):
    return sandbox.exec(
        ["bash", "-c", script], timeout=timeout, env={"PATH": EmulatorService.sandbox_path(DEFAULT_PATH), **(env or {})}
    )


def test_the_agent_user_runs_the_shims_against_the_host_service(world):
    sandbox, service = world
    result = sh(
        sandbox,
        "id -u; command -v kubectl; kubectl get deploy; kubectl apply -f cm.yaml; echo '---'; "
        "kubectl get widgets; echo rc=$?",
    )
    assert result.exit_code == 0, result.stderr_text
    out = result.stdout_text
    assert out.startswith(f"1000\n{MOUNT}/bin/kubectl\n")
    assert "checkout   0/2" in out or "checkout   2/2" in out
    assert "configmap/app created" in out and "rc=1" in out
    assert 'error: the server doesn\'t have a resource type "widgets"' in result.stderr_text
    assert "k8s/prod-eu/configmap/shop/app" in service.objects()
    assert [c["argv"][0] for c in service.calls] == ["get", "apply", "get"]
    assert service.calls[1]["files_read"] == ["/workspace/cm.yaml"]


def test_stdin_is_read_only_when_the_command_consumes_it(world):
    sandbox, service = world
    started = time.monotonic()
    # fd 3 is a FIFO held open for reading and writing: reading it would block forever.
    result = sh(
        sandbox,
        "mkfifo /tmp/hold; exec 3<>/tmp/hold; kubectl get pods <&3 >/dev/null; crontab -l <&3; echo done",
        timeout=20,
    )
    assert result.exit_code == 0 and result.stdout_text.endswith("done\n"), result.stderr_text
    assert time.monotonic() - started < 10
    piped = sh(
        sandbox,
        "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: piped, namespace: shop}\\n' | kubectl apply -f -",
    )
    assert piped.stdout_text == "configmap/piped created\n"
    assert [c["stdin_read"] for c in service.calls] == [False, False, True]


def test_editor_runs_in_the_sandbox_and_downloads_are_written_as_the_agent(world):
    sandbox, service = world
    result = sh(
        sandbox,
        "EDITOR='sed -i /old-report/d' crontab -e; crontab -l; "
        "aws s3 cp s3://acme-logs/notes.txt ./notes.txt; stat -c %u notes.txt; cat notes.txt",
    )
    assert result.exit_code == 0, result.stderr_text
    assert "crontab: installing new crontab" in result.stderr_text
    assert result.stdout_text.startswith("0 1 * * * /opt/ci/nightly\n")
    assert "old-report" not in result.stdout_text and result.stdout_text.endswith("1000\nfrom s3\n")
    assert list(service.objects())[0:0] == [] and "cron/agent/30 2 * * * /opt/ci/old-report" not in service.objects()


def test_the_agent_cannot_change_the_shims_the_socket_dir_or_the_state(world):
    sandbox, service = world
    before = service.snapshot()
    script = f"""
    for target in {MOUNT}/bin/kubectl {MOUNT}/evil {MOUNT}/emu.sock; do
      if ( echo x > "$target" ) 2>/dev/null; then echo "wrote $target"; fi
    done
    rm -f {MOUNT}/emu.sock 2>/dev/null && echo removed-socket
    chmod 777 {MOUNT}/bin/kubectl 2>/dev/null && echo chmod-worked
    ln -s /tmp {MOUNT}/link 2>/dev/null && echo linked
    python3 - <<'PY'
import socket, struct
s = socket.socket(socket.AF_UNIX); s.connect("{MOUNT}/emu.sock")
s.sendall(struct.pack(">I", 9) + b"not json!")
print("garbage-sent", s.recv(10))
PY
    kubectl get deploy -o name
    """
    result = sh(sandbox, script)
    out = result.stdout_text
    for marker in ("wrote", "removed-socket", "chmod-worked", "linked"):
        assert marker not in out, out
    assert "garbage-sent b''" in out
    assert out.endswith("deployment.apps/checkout\n"), result.stderr_text
    assert service.snapshot() == {**before, **{k: v for k, v in service.snapshot().items() if k == "clock"}}


def test_a_service_that_is_gone_gives_a_clear_error(world):
    sandbox, service = world
    # The worker's service thread died but its directory (and the dead socket) is still mounted.
    assert service._server is not None
    service._server.shutdown()
    service._server.server_close()
    result = sh(sandbox, "kubectl get pods")
    assert result.exit_code == 70
    assert "kubectl: the emulator service is not reachable" in result.stderr_text


def test_inputs_over_the_cap_are_refused_by_the_tool_never_cut(world):
    # 50 MB of manifest from a file and from stdin: the shim reads one byte past its cap and says
    # "too large"; the emulator answers as the API server answers a body over its limit.
    sandbox, service = world
    script = (
        "{ printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: big, namespace: shop}\\ndata:\\n  a: '; "
        "head -c 52428800 /dev/zero | tr '\\0' a; echo; } > big.yaml; "
        "kubectl apply -f big.yaml; echo rc=$?; kubectl apply -f - < big.yaml; echo rc=$?; rm big.yaml"
    )
    result = sh(sandbox, script, timeout=120)
    assert result.stdout_text.count("rc=1") == 2, result.stdout_text
    err = result.stderr_text
    assert 'Error from server (RequestEntityTooLarge): error when creating "big.yaml"' in err
    assert 'error when creating "STDIN": Request entity too large' in err
    assert "k8s/prod-eu/configmap/shop/big" not in service.objects()


def test_hostile_frames_are_refused_before_parsing_and_the_service_keeps_serving(world):
    sandbox, service = world
    script = f"""
    python3 - <<'PY'
import socket, struct
for body in (b"[" * 100_000 + b"]" * 100_000, b"[" + b"[]," * 500_000 + b"[]]", b"x" * 10):
    s = socket.socket(socket.AF_UNIX); s.connect("{MOUNT}/emu.sock")
    header = struct.pack(">I", len(body) if len(body) > 10 else 1 << 30)
    try:
        s.sendall(header + body)
        print("closed", s.recv(10))
    except OSError as exc:
        print("closed", type(exc).__name__)
PY
    kubectl get deploy -o name
    """
    result = sh(sandbox, script, timeout=60)
    assert result.stdout_text.count("closed") == 3, result.stdout_text
    assert result.stdout_text.endswith("deployment.apps/checkout\n"), result.stderr_text
    assert [c["argv"] for c in service.calls] == [["get", "deploy", "-o", "name"]]
