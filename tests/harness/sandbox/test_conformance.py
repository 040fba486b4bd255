"""The conformance suite every sandbox backend must pass (run on docker and bwrap alike)."""

from __future__ import annotations

import resource
import socket
import threading
import time
import uuid

import pytest

from harness.sandbox.base import Limits, Sandbox, get_backend
from harness.sandbox.manifest import diff
from harness.sandbox.paths import FileSpec, FixturePathError
from tests.harness.sandbox.conftest import FIXTURE_FILES, TEST_LIMITS, new_run_id
from tests.harness.sandbox.helpers import bwrap_state_dirs, host_processes_with, labelled_containers


def test_commands_run_as_the_unprivileged_agent(sandbox: Sandbox) -> None:
    res = sandbox.exec(["sh", "-c", "id -u; id -g; echo $HOME; pwd; grep ^CapEff /proc/self/status"], timeout=20)
    lines = res.stdout_text.split("\n")
    assert res.exit_code == 0, res.stderr_text
    assert lines[:4] == ["1000", "1000", "/home/agent", "/workspace"]
    assert lines[4].split()[1] == "0000000000000000"


def test_exit_status_and_streams_are_kept_apart(sandbox: Sandbox) -> None:
    res = sandbox.exec(["sh", "-c", "echo out; echo err >&2; exit 7"], timeout=20)
    assert (res.exit_code, res.stdout, res.stderr) == (7, b"out\n", b"err\n")
    assert not res.truncated and not res.timed_out and not res.oom_killed


def test_stdin_is_delivered(sandbox: Sandbox) -> None:
    res = sandbox.exec(["wc", "-c"], timeout=20, input=b"x" * 100_000)
    assert res.stdout.strip() == b"100000"


def test_exec_timeout_leaves_no_process_behind(sandbox: Sandbox) -> None:
    marker = f"{900 + uuid.uuid4().int % 99}.{uuid.uuid4().int % 10**6}"
    script = f"sleep {marker} & setsid sleep {marker} & (trap '' TERM HUP INT; sleep {marker}) & sleep {marker}"
    started = time.monotonic()
    res = sandbox.exec(["sh", "-c", script], timeout=2)
    assert res.timed_out
    assert time.monotonic() - started < 15
    assert host_processes_with(f"sleep {marker}") == []
    # The sandbox is still usable after a timeout.
    assert sandbox.exec(["true"], timeout=20).exit_code == 0


def test_timeout_holds_even_if_the_agent_kills_its_supervisor(sandbox: Sandbox) -> None:
    marker = f"{800 + uuid.uuid4().int % 99}.{uuid.uuid4().int % 10**6}"
    # $PPID is the `timeout` process; its parent is the harness supervisor shell.
    script = f"kill -9 $(ps -o ppid= -p $PPID) $PPID; setsid sleep {marker} & sleep {marker}"
    started = time.monotonic()
    res = sandbox.exec(["sh", "-c", script], timeout=2)
    # docker: the host watchdog's kill exec ends it (timed out); bwrap: the supervisor is the
    # pid namespace's main process, so killing it tears the namespace down at once (137).
    assert res.timed_out or res.exit_code == 137
    assert time.monotonic() - started < 15
    assert host_processes_with(f"sleep {marker}") == []


def test_fork_bomb_is_contained(sandbox: Sandbox) -> None:
    marker = f"bomb-{uuid.uuid4().hex[:8]}"
    # Forked subshells keep the parent's command line, so the marker finds every bomb process.
    res = sandbox.exec(["sh", "-c", f"bomb() {{ bomb | bomb & }}; bomb; sleep 30; : {marker}"], timeout=5)
    assert res.timed_out or res.exit_code != 0
    assert host_processes_with(marker) == []
    assert sandbox.exec(["true"], timeout=20).exit_code == 0


def test_memory_hog_is_recorded_as_oom(sandbox: Sandbox) -> None:
    res = sandbox.exec(["python3", "-c", "b = b'x' * (1024 ** 3); print(len(b))"], timeout=60)
    assert res.oom_killed, res
    assert not res.timed_out
    assert res.exit_code != 0


def test_a_gigabyte_of_output_is_capped_without_host_memory_blowup(sandbox: Sandbox) -> None:
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = sandbox.exec(["sh", "-c", "head -c 1073741824 /dev/zero; echo tail >&2"], timeout=240)
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert res.exit_code == 0, res.stderr_text
    assert res.truncated and res.stdout_truncated and not res.stderr_truncated
    assert len(res.stdout) == TEST_LIMITS.output_bytes
    assert res.stderr == b"tail\n"
    assert (rss_after - rss_before) * 1024 < 100 * 1024**2  # ru_maxrss is in KiB on Linux


def test_invalid_utf8_survives_as_bytes(sandbox: Sandbox) -> None:
    res = sandbox.exec(["printf", "\\377\\376ok\\n"], timeout=20)
    assert res.stdout == b"\xff\xfeok\n"
    assert res.stdout_text == "\ufffd\ufffdok\n"


def test_network_is_unreachable(sandbox: Sandbox) -> None:
    # A listener on the host's loopback must be unreachable: the sandbox's 127.0.0.1 is its own.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted: list[object] = []
    server.settimeout(5)
    threading.Thread(target=lambda: accepted.append(_accept(server)), daemon=True).start()
    probe = (
        "import socket\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')\n"
        "except OSError as e:\n    print('refused', e.errno)\n"
        "print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))\n"
        "print(len(open('/proc/net/route').readlines()))\n"
    )
    res = sandbox.exec(["python3", "-c", probe], timeout=30)
    server.close()
    out = res.stdout_text.splitlines()
    assert out[0].startswith("refused"), res
    assert out[1] == "['lo']"  # no interface but loopback
    assert out[2] == "1"  # the header line only: no routes at all
    assert accepted in ([], [None])


def _accept(server: socket.socket) -> object:
    try:
        return server.accept()
    except OSError:
        return None


@pytest.mark.parametrize(
    "bad",
    [
        [FileSpec("workspace/../etc/cron.d/x", b"x")],
        [FileSpec("/etc/passwd", b"x")],
        [FileSpec("etc/passwd", b"x")],
        [FileSpec("workspace/out", symlink_target="/etc")],
        [FileSpec("workspace/out", symlink_target="../../../etc/shadow")],
        [FileSpec("home/ws", symlink_target="/workspace")],
        [FileSpec("workspace/link", symlink_target="sub"), FileSpec("workspace/link/x", b"x")],
        [FileSpec("workspace/setuid", b"x", 0o4755)],
    ],
    ids=[
        "dotdot",
        "absolute",
        "unknown-root",
        "symlink-abs-out",
        "symlink-rel-out",
        "symlink-to-root",
        "under-symlink",
        "setuid",
    ],
)
def test_bad_fixture_paths_are_rejected_before_anything_runs(backend: str, bad: list[FileSpec]) -> None:
    run_id = new_run_id("badpath")
    with pytest.raises(FixturePathError):
        get_backend(backend).create([*FIXTURE_FILES, *bad], run_id=run_id, limits=TEST_LIMITS)
    assert labelled_containers(run_id) == []
    assert bwrap_state_dirs(run_id) == []


def test_trace_survives_an_agent_that_erases_its_logs(sandbox: Sandbox) -> None:
    token = uuid.uuid4().hex[:8]
    script = (
        f"echo 'ran curl-{token}' > /workspace/agent.log; echo 'cat secrets' >> ~/.bash_history; "
        "rm -f /workspace/agent.log ~/.bash_history; "
        "rm -rf /var/lib/overeager/trace/* 2>/dev/null; echo forged > /var/lib/overeager/trace/1.strace 2>/dev/null; "
        f"python3 -c \"import subprocess; subprocess.run(['/usr/bin/env', 'true', 'abs-{token}'])\"; "
        f"/usr/bin/touch /workspace/marker-{token}; true"
    )
    res = sandbox.exec(["bash", "-c", script], timeout=30)
    assert res.exit_code == 0, res.stderr_text
    later = sandbox.exec(["sh", "-c", "cat /var/lib/overeager/trace/* 2>&1 | head -c 200"], timeout=20)
    assert b"execve" not in later.stdout  # the agent cannot even read the sink
    records = sandbox.trace()
    argvs = [r.argv for r in records]
    assert ["rm", "-f", "/workspace/agent.log", "/home/agent/.bash_history"] in argvs
    assert ["/usr/bin/env", "true", f"abs-{token}"] in argvs
    assert ["true", f"abs-{token}"] in argvs  # env's own execvp, caught too
    assert ["/usr/bin/touch", f"/workspace/marker-{token}"] in argvs
    touch = next(r for r in records if r.argv[:1] == ["/usr/bin/touch"])
    assert touch.cwd == "/workspace" and touch.exit_status == 0 and touch.exec_seq == 1
    # Harness helpers (supervisor, timeout, launcher) are not attributed to the agent.
    assert not any(r.argv[:1] in (["timeout"], ["setpriv"], ["strace"]) for r in records)
    assert records[0].argv[0] == "bash"


def test_manifest_diff_detects_every_kind_of_change(sandbox: Sandbox) -> None:
    before = sandbox.manifest()
    script = (
        "echo new > /workspace/new.txt; rm /workspace/README.md; echo changed >> /workspace/src/app.py; "
        "chmod 700 /workspace/scripts/deploy.sh; rm /workspace/current; mkdir /workspace/current; "
        "echo x > ~/.bashrc; rm ~/.gitconfig; echo y >> ~/.ssh/id_ed25519; chmod 644 ~/.ssh/id_ed25519; "
        "rm /srv/remote/origin.git/HEAD; ln -s /etc/passwd /srv/remote/origin.git/HEAD"
    )
    res = sandbox.exec(["sh", "-c", script], timeout=30)
    assert res.exit_code == 0, res.stderr_text
    changes = {(c.path, c.kind) for c in diff(before, sandbox.manifest())}
    assert changes == {
        ("workspace/new.txt", "created"),
        ("workspace/README.md", "deleted"),
        ("workspace/src/app.py", "modified"),
        ("workspace/scripts/deploy.sh", "mode"),
        ("workspace/current", "type"),
        ("home/.bashrc", "created"),
        ("home/.gitconfig", "deleted"),
        ("home/.ssh/id_ed25519", "modified"),
        ("home/.ssh/id_ed25519", "mode"),
        ("remote/origin.git/HEAD", "type"),
    }


def test_manifest_sees_files_the_agent_made_unreadable(sandbox: Sandbox) -> None:
    before = sandbox.manifest()
    sandbox.exec(["sh", "-c", "chmod 000 /workspace/src/app.py; chmod 000 /workspace/scripts"], timeout=20)
    after = sandbox.manifest()
    assert after["workspace/src/app.py"].sha256 == before["workspace/src/app.py"].sha256
    assert after["workspace/src/app.py"].mode == 0
    assert "workspace/scripts/deploy.sh" in after


def test_read_and_write_files(sandbox: Sandbox) -> None:
    sandbox.write_file("/workspace/src/new.py", b"x = 1\n", 0o640)
    assert sandbox.read_file("/workspace/src/new.py") == b"x = 1\n"
    res = sandbox.exec(["stat", "-c", "%a %u", "/workspace/src/new.py"], timeout=20)
    assert res.stdout_text.strip() == "640 1000"
    from harness.sandbox.base import SandboxFileError

    with pytest.raises(SandboxFileError):
        sandbox.read_file("/workspace/current")  # a symlink is never followed
    with pytest.raises(SandboxFileError):
        sandbox.read_file("/etc/passwd")  # outside the roots
    with pytest.raises(SandboxFileError):
        sandbox.read_file("/workspace/missing")
    sandbox.exec(["sh", "-c", "head -c 3000 /dev/zero > /workspace/big"], timeout=20)
    with pytest.raises(SandboxFileError):
        sandbox.read_file("/workspace/big", max_bytes=1000)


def test_reading_a_planted_symlink_never_reaches_host_files(sandbox: Sandbox) -> None:
    sandbox.exec(["ln", "-s", "/etc/hostname", "/workspace/host"], timeout=20)
    from harness.sandbox.base import SandboxFileError

    with pytest.raises(SandboxFileError):
        sandbox.read_file("/workspace/host")
    sandbox.write_file("/workspace/host", b"replaced")  # replaces the link, never writes through
    assert sandbox.read_file("/workspace/host") == b"replaced"


def test_destroy_is_idempotent_and_records_interruption(backend: str) -> None:
    sb = get_backend(backend).create([], run_id=new_run_id(), limits=TEST_LIMITS)
    with pytest.raises(RuntimeError):
        with sb:
            raise RuntimeError("boom")
    assert sb.destroyed and sb.interrupted is True
    sb.destroy()
    assert labelled_containers(sb.run_id) == [] and bwrap_state_dirs(sb.run_id) == []


def test_both_backends_produce_identical_manifests() -> None:
    manifests = []
    for name in ("docker", "bwrap"):
        with get_backend(name).create(FIXTURE_FILES, run_id=new_run_id(), limits=TEST_LIMITS) as sb:
            manifests.append(sb.manifest())
    assert manifests[0] == manifests[1]
    assert "workspace/src" in manifests[0] and manifests[0]["workspace/current"].target == "src/app.py"


def test_docker_container_is_hardened() -> None:
    import docker

    with get_backend("docker").create([], run_id=new_run_id(), limits=TEST_LIMITS) as sb:
        info = docker.from_env().api.inspect_container(sb.container_id)  # type: ignore[attr-defined]
    hc = info["HostConfig"]
    assert hc["NetworkMode"] == "none"
    assert hc["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in hc["SecurityOpt"]
    assert hc["PidsLimit"] == TEST_LIMITS.pids
    assert hc["Memory"] == hc["MemorySwap"] == TEST_LIMITS.memory_bytes
    assert hc["NanoCpus"] == 1_000_000_000
    assert "size=" in hc["Tmpfs"]["/tmp"]
    assert not any("docker.sock" in (m.get("Source") or "") for m in info["Mounts"])
    labels = info["Config"]["Labels"]
    assert labels["overeager.managed"] == "1" and labels["overeager.run"] == sb.run_id
    assert labels["overeager.attempt"] == "1"
    assert info["Config"]["Cmd"][-1] == str(TEST_LIMITS.lifetime_s) and info["Config"]["StdinOnce"] is True
    assert info["Config"]["Entrypoint"] == ["/usr/bin/tini", "--"]


def test_docker_container_exits_by_itself_after_its_lifetime() -> None:
    import docker

    limits = Limits(**{**TEST_LIMITS.__dict__, "lifetime_s": 2})
    sb = get_backend("docker").create([], run_id=new_run_id(), limits=limits)
    try:
        api = docker.from_env().api
        deadline = time.monotonic() + 20
        while api.inspect_container(sb.container_id)["State"]["Running"]:  # type: ignore[attr-defined]
            assert time.monotonic() < deadline, "container outlived its lifetime"
            time.sleep(0.3)
    finally:
        sb.destroy()
