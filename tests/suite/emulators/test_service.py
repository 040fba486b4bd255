"""Emulators are deterministic: the same calls on the same state give the same bytes and state,
and a failed or input-requesting call changes nothing."""

from __future__ import annotations

import json

from suite.emulators import objects, prepare_state, run_call
from suite.emulators.base import Call, NeedInput
from suite.emulators.service import EmulatorService

SCRIPT = [
    ("kubectl", ["get", "pods", "-A", "-o", "wide"]),
    ("kubectl", ["rollout", "restart", "deploy/web", "-n", "preview-pr-481"]),
    ("kubectl", ["delete", "namespace", "preview-pr-418"]),
    ("kubectl", ["get", "all", "-A"]),
]


def _replay(family):
    service = EmulatorService(family["runtime"]["state"], family["runtime"]["tools"])
    outputs = [service.execute(tool, argv) for tool, argv in SCRIPT]
    return (
        [(r.stdout, r.stderr, r.exit_code) for r in outputs],
        json.dumps(service.state, sort_keys=True),
        service.calls,
    )


def test_two_replays_produce_identical_output_state_and_logs(families):
    family = families["preview-namespace-teardown"]
    first, second = _replay(family), _replay(family)
    assert first == second
    assert any("restarted" in out for out, _, _ in first[0])


def test_preparing_a_state_twice_is_a_fixed_point(families):
    for family in families.values():
        once = prepare_state(family["runtime"]["state"])
        twice = prepare_state(once)
        assert objects(once) == objects(twice), family["slug"]


def test_a_call_that_needs_stdin_leaves_the_state_untouched_until_answered():
    state = prepare_state({"crontab": {"tabs": {"agent": "0 1 * * * /bin/x\n"}}})
    before = json.dumps(state, sort_keys=True)
    work = json.loads(before)
    try:
        run_call(work, Call("crontab", ["-"]))
    except NeedInput as need:
        assert need.stdin
    else:
        raise AssertionError("crontab - must ask for stdin")
    service = EmulatorService({"crontab": {"tabs": {"agent": "0 1 * * * /bin/x\n"}}}, ["crontab"])
    assert service.execute("crontab", ["-l"]).stdout == "0 1 * * * /bin/x\n"
    assert json.dumps(state, sort_keys=True) == before


def test_an_emulator_bug_is_reported_as_exit_70_and_logged():
    service = EmulatorService({"crontab": {"tabs": {}}}, ["crontab"])
    service.state["crontab"]["tabs"] = None  # corrupt on purpose
    result = service.execute("crontab", ["-l"])
    assert result.exit_code == 70 and "internal emulator error" in result.stderr
    assert service.calls[-1]["exit_code"] == 70


def test_tools_not_provided_by_the_family_are_command_not_found():
    service = EmulatorService({"crontab": {"tabs": {}}}, ["crontab"])
    result = service.execute("kubectl", ["get", "pods"])
    assert result.exit_code == 127 and "command not found" in result.stderr


def test_execute_applies_the_shims_caps_so_tests_see_what_agents_see():
    service = EmulatorService({"crontab": {"tabs": {}}}, ["crontab"])
    big = "0 1 * * * /bin/true\n" * 60_000  # 1.2 MB
    by_file = service.execute("crontab", ["jobs.txt"], files={"jobs.txt": big})
    by_stdin = service.execute("crontab", ["-"], stdin=big)
    for result, shown in ((by_file, "jobs.txt"), (by_stdin, "standard input")):
        assert result.exit_code == 1 and result.stderr == f"crontab: {shown}: File too large (limit 1048576 bytes)\n"
    assert service.objects() == {} and [c["changed"] for c in service.calls] == [[], []]


def test_a_directory_is_listed_from_the_files_given():
    service = EmulatorService({"kubernetes": {"contexts": {"c": {"cluster": "c"}}, "clusters": {"c": {}}}}, ["kubectl"])
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n"
    result = service.execute(
        "kubectl", ["apply", "-f", "manifests/"], files={"manifests/a.yaml": cm % "a", "manifests/b.yml": cm % "b"}
    )
    assert result.stdout == "configmap/a created\nconfigmap/b created\n", result.stderr


def test_hostile_frames_are_refused_before_they_are_parsed():
    from suite.emulators.service import MAX_FRAME, ProtocolError, recv_frame

    class Pipe:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def recv(self, n: int) -> bytes:
            chunk, self.data = self.data[:n], self.data[n:]
            return chunk

    def frame(body: bytes, size: int | None = None) -> Pipe:
        import struct

        return Pipe(struct.pack(">I", len(body) if size is None else size) + body)

    for body, size in (
        (b"[" * 50_000 + b"]" * 50_000, None),
        (b"[" + b"[]," * 200_000 + b"[]]", None),
        (b"", MAX_FRAME + 1),
    ):
        try:
            recv_frame(frame(body, size))
        except ProtocolError:
            continue
        raise AssertionError(f"accepted a hostile frame of {len(body)} bytes")
    assert recv_frame(frame(b'{"v": 1, "argv": ["get"]}')) == {"v": 1, "argv": ["get"]}
