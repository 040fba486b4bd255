"""No agent input can exhaust the harness: hostile documents are refused quickly, and every call
runs in a jail with memory, CPU and time limits of its own (issue 17, item 2).

The hostile inputs run in a fresh interpreter that measures its own resident memory around the
call (peak RSS reset just before it), with an address-space limit as a safety net: on the code
before this fix the alias bomb expanded inside the harness process (1.5 GB in the report) and
these tests failed on memory or time instead of taking the machine down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from suite.emulators.jail import CallLimits
from suite.emulators.service import EmulatorService

ROOT = Path(__file__).resolve().parents[3]
MiB = 1024 * 1024
KUBE = {
    "kubernetes": {
        "contexts": {"prod": {"cluster": "prod", "namespace": "shop"}},
        "clusters": {"prod": {"objects": [{"kind": "Namespace", "metadata": {"name": "shop"}}]}},
    }
}
HELM = {
    **KUBE,
    "helm": {
        "repositories": {"bitnami": "https://charts.bitnami.com/bitnami"},
        "charts": {"bitnami/web": {"1.0.0": {"values": {}}}},
        "releases": [{"name": "web", "namespace": "shop", "history": [{"chart": "web", "version": "1.0.0"}]}],
    },
}
AWS = {"aws": {"s3": {"buckets": {"acme": {}}}}}


def alias_bomb(levels: int = 8, width: int = 9) -> str:
    """The report's 460-byte document: each level an anchored list of `width` aliases of the last."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", "data:", '  l0: &l0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


MANIFEST = "'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: big}\\ndata:\\n  blob: '"
# Python expressions the scenario evaluates, so the 50 MB string is made in the child only.
BUILD = {
    "alias": "alias_bomb()",
    "big": MANIFEST + " + 'x' * (50 * 1024 * 1024) + '\\n'",
    "deep": "'[' * 200_000 + ']' * 200_000",
    "deep_object": "'{\"a\": ' * 100_000 + '1' + '}' * 100_000",
}
SCENARIO = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({safety}, {safety}))
sys.path.insert(0, {root!r})
from tests.suite.emulators.test_jail import alias_bomb
from suite.emulators.service import EmulatorService

def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return int(line.split()[1]) * 1024
state, tool, argv, how = json.loads(sys.argv[1])
service = EmulatorService(state, [tool])
service.execute(tool, ['--help'])  # the jail is started outside the measurement
payload = {build}
files = {{'input.yaml': payload}} if how == 'file' else None
stdin = payload if how == 'stdin' else None
if how == 'argv':
    argv = [payload if a == '@' else a for a in argv]
before = status('VmRSS')
open('/proc/self/clear_refs', 'w').write('5')  # reset the peak (VmHWM) to the current RSS
started = time.monotonic()
try:
    result = service.execute(tool, argv, files=files, stdin=stdin)
    outcome = {{'exit': result.exit_code, 'stderr': result.stderr[:2000]}}
except MemoryError:
    outcome = {{'exit': None, 'stderr': 'MemoryError in the harness process'}}
outcome['seconds'] = time.monotonic() - started
outcome['growth'] = status('VmHWM') - before
outcome['changed'] = [c['changed'] for c in service.calls[1:]]
print(json.dumps(outcome))
"""
APPLY = ["apply", "-f", "input.yaml"]
CASES = [
    (
        "alias",
        KUBE,
        "kubectl",
        APPLY,
        "file",
        r"converting YAML to JSON: yaml: line \d+: anchors \(&l0\) are not allowed",
    ),
    (
        "alias",
        HELM,
        "helm",
        ["upgrade", "web", "bitnami/web", "-f", "input.yaml"],
        "file",
        r"failed to parse input\.yaml: error converting YAML to JSON",
    ),
    ("big", KUBE, "kubectl", APPLY, "file", r'RequestEntityTooLarge\): error when creating "input\.yaml"'),
    ("big", KUBE, "kubectl", ["apply", "-f", "-"], "stdin", r'error when creating "STDIN": Request entity too large'),
    ("deep", KUBE, "kubectl", APPLY, "file", r"yaml: line 1: exceeded max depth of 100"),
    ("deep_object", KUBE, "kubectl", ["patch", "ns", "shop", "-p", "@"], "argv", r"exceeded max depth of 100"),
    (
        "deep",
        AWS,
        "aws",
        ["s3api", "put-bucket-policy", "--bucket", "acme", "--policy", "file://input.yaml"],
        "file",
        r"MalformedPolicy",
    ),
]


def run_scenario(build: str, state: dict, tool: str, argv: list[str], how: str) -> dict:
    code = SCENARIO.format(safety=1536 * MiB, root=str(ROOT), build=BUILD[build])
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps([state, tool, argv, how])],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    ("build", "state", "tool", "argv", "how", "message"),
    CASES,
    ids=[f"{c[0]}-{c[2]}-{c[4]}" for c in CASES],
)
def test_hostile_documents_are_refused_quickly_with_the_host_memory_bounded(build, state, tool, argv, how, message):
    out = run_scenario(build, state, tool, argv, how)
    assert out["exit"] not in (None, 0, 70), out
    assert re.search(message, out["stderr"]), out["stderr"]
    assert out["seconds"] < 10, out
    # The harness holds the 50 MB input itself (a shim would have sent "too large"); nothing
    # more may be allocated on its side to refuse it.
    assert out["growth"] < 32 * MiB, f"the harness process grew by {out['growth'] // MiB} MiB"
    assert out["changed"] == [[]], out


def many_configmaps(n: int) -> str:
    return "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n" for i in range(n))


def test_a_call_over_its_cpu_budget_ends_like_a_killed_process_and_changes_nothing():
    # A legal 800 kB manifest of 14 000 objects: the emulator's apply is quadratic in the objects,
    # so it would run for minutes; the jail's CPU limit ends it.
    service = EmulatorService(KUBE, ["kubectl"], limits=CallLimits(cpu_seconds=2, wall_seconds=30))
    before = service.objects()
    started = time.monotonic()
    result = service.execute("kubectl", ["apply", "-f", "many.yaml"], files={"many.yaml": many_configmaps(14_000)})
    assert time.monotonic() - started < 15
    assert (result.exit_code, result.stderr) == (152, "kubectl: CPU time limit exceeded\n")
    assert service.objects() == before and service.calls[-1]["changed"] == []
    # The next call gets a fresh jail.
    assert service.execute("kubectl", ["get", "ns", "shop", "-o", "name"]).stdout == "namespace/shop\n"


def test_a_call_over_its_wall_time_is_killed():
    service = EmulatorService(KUBE, ["kubectl"], limits=CallLimits(cpu_seconds=60, wall_seconds=1))
    result = service.execute("kubectl", ["apply", "-f", "many.yaml"], files={"many.yaml": many_configmaps(14_000)})
    assert result.exit_code == 137 and "time limit" in result.stderr
    assert service.execute("kubectl", ["get", "ns", "-o", "name"]).exit_code == 0


def test_a_call_over_its_memory_limit_is_killed_and_the_state_kept():
    # Composing YAML costs hundreds of bytes per node: a 450 kB flow list of 150 000 numbers
    # needs more than the jail's 64 MiB (it starts at about 36).
    service = EmulatorService(KUBE, ["kubectl"], limits=CallLimits(memory_bytes=64 * MiB))
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  k: [" + "1, " * 150_000 + "1]\n"
    result = service.execute("kubectl", ["apply", "-f", "big.yaml"], files={"big.yaml": doc})
    assert (result.exit_code, result.stderr) == (137, "kubectl: Killed (out of memory)\n")
    assert service.calls[-1]["changed"] == []
    # The jail that ran out was ended; the next call gets a fresh one.
    assert service.execute("kubectl", ["get", "ns", "shop", "-o", "name"]).stdout == "namespace/shop\n"


def test_the_emulated_world_has_a_storage_quota():
    service = EmulatorService(KUBE, ["kubectl"], limits=CallLimits(max_state_bytes=2 * MiB))
    blob = "x" * (700 * 1024)
    results = [
        service.execute("kubectl", ["create", "configmap", f"blob{i}", f"--from-literal=data={blob}"]) for i in range(4)
    ]
    assert [r.exit_code for r in results[:2]] == [0, 0]
    refused = results[-1]
    assert refused.exit_code == 1 and "storage quota is exhausted; the call changed nothing" in refused.stderr
    assert "k8s/prod/configmap/shop/blob3" not in service.objects()
