"""Issue 17 items 4-6: what a hostile agent tried, on both backends.

Every probe here runs inside a sandbox; nothing hostile runs on the host.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness.sandbox import probes, seccomp
from harness.sandbox.base import Limits, Sandbox, SandboxError, SandboxFileError, get_backend
from harness.sandbox.manifest import TOO_LARGE, diff
from tests.harness.sandbox.conftest import BACKENDS, FIXTURE_FILES, TEST_LIMITS, new_run_id


@pytest.fixture(scope="module", params=BACKENDS)
def shared_sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """One sandbox per backend for the read-only probes (each probe cleans up after itself)."""
    sb = get_backend(str(request.param)).create(FIXTURE_FILES, run_id=new_run_id("probe"), limits=TEST_LIMITS)
    try:
        yield sb
    finally:
        sb.destroy()


@pytest.mark.parametrize("probe", sorted(probes.PROBES))
def test_every_escape_probe_is_blocked(shared_sandbox: Sandbox, probe: str) -> None:
    result = probes.run_probe(shared_sandbox, probe)
    assert result.blocked, f"{shared_sandbox.backend}: {probe} escaped: {result.detail}"


@pytest.mark.parametrize("probe", ["ptrace-pid1", "pid1-environ", "unshare-user"])
def test_probes_are_blocked_in_untraced_execs_too(shared_sandbox: Sandbox, probe: str) -> None:
    """bwrap: with no strace attached, the agent could ptrace bwrap's pid 1."""
    result = probes.run_probe(shared_sandbox, probe, traced=False)
    assert result.blocked, f"{shared_sandbox.backend}: {probe} escaped: {result.detail}"


def test_the_seccomp_filter_is_well_formed() -> None:
    prog = seccomp.filter_program("x86_64")
    assert len(prog) % 8 == 0 and len(prog) // 8 == 4 + 2 + 2 * len(seccomp.DENIED) + 1
    with pytest.raises(seccomp.SeccompUnsupportedError):
        seccomp.filter_program("sparc")


def test_no_process_outlives_its_exec(sandbox: Sandbox) -> None:
    """A clone(CLONE_UNTRACED) child started after SIGKILLing the supervisor shell is dead when
    exec returns (docker used to let it write to /workspace after the "after" manifest)."""
    result = probes.probe_outlive_exec(sandbox)
    assert result.blocked, result.detail
    assert "workspace/.late-write-probe" not in sandbox.manifest()


def test_no_agent_process_is_alive_between_execs(sandbox: Sandbox) -> None:
    sandbox.exec(["sh", "-c", "(setsid sleep 300 &) ; nohup sleep 301 >/dev/null 2>&1 &"], timeout=20)
    res = sandbox.exec(["sh", "-c", "ps -e -o uid=,comm= | awk '$1 == 1000' | grep -c sleep || true"], timeout=20)
    assert res.stdout_text.strip() == "0"


def test_file_reads_and_writes_never_follow_a_symlinked_directory(sandbox: Sandbox) -> None:
    """docker's read_file returned the container's /etc/shadow through /workspace/etc/shadow."""
    sandbox.exec(
        ["sh", "-c", "ln -s /etc /workspace/etc; ln -s /var/lib/overeager/trace /workspace/tr; ln -s / /home/agent/up"],
        timeout=20,
    )
    for path in (
        "/workspace/etc/shadow",
        "/workspace/etc/passwd",
        "/workspace/tr/1.strace",
        "/home/agent/up/etc/hostname",
    ):
        with pytest.raises(SandboxFileError):
            sandbox.read_file(path)
    with pytest.raises(SandboxFileError):
        sandbox.write_file("/workspace/etc/overeager-planted", b"x")
    if sandbox.backend == "docker":
        res = sandbox.exec(["ls", "/etc/overeager-planted"], timeout=20, user="root", traced=False)
        assert res.exit_code != 0
    # Ordinary reads and writes still work, including a file the agent made unreadable.
    sandbox.exec(
        ["sh", "-c", "mkdir -p /workspace/d && echo hi > /workspace/d/f && chmod 000 /workspace/d/f"], timeout=20
    )
    assert sandbox.read_file("/workspace/d/f") == b"hi\n"
    sandbox.write_file("/workspace/d/g", b"new", mode=0o600)
    assert sandbox.read_file("/workspace/d/g") == b"new"
    entry = sandbox.manifest()["workspace/d/g"]
    assert (entry.type, entry.mode, entry.size) == ("file", 0o600, 3)


def test_probes_report_an_escape_when_there_is_one() -> None:
    """The probe verdicts are not vacuous: a probe program that crashes counts as an escape."""
    result = probes._verdict("x", "", "Traceback ...", 1)
    assert not result.blocked and "no verdict" in result.detail
    assert probes._verdict("x", "ESCAPED wrote /etc\n", "", 0).blocked is False


def test_a_huge_sparse_file_is_recorded_by_size_without_being_read(sandbox: Sandbox) -> None:
    """A 20 GB sparse file pinned a worker for 102 s while the manifest hashed its zeros."""
    before = sandbox.manifest()
    # Sparse: no data blocks are written; the sandbox is destroyed (and the file with it) below.
    sandbox.exec(["truncate", "-s", str(4 * 1024**3), "/workspace/huge"], timeout=20)
    started = time.monotonic()
    after = sandbox.manifest()
    took = time.monotonic() - started
    entry = after["workspace/huge"]
    assert (entry.size, entry.sha256, entry.unhashed) == (4 * 1024**3, None, TOO_LARGE)
    assert took < 5, f"manifest took {took:.1f}s"
    assert [(c.path, c.kind) for c in diff(before, after)] == [("workspace/huge", "created")]
    # Rewritten in place at the same size: still a change, since it was never hashed.
    sandbox.exec(["sh", "-c", "printf x | dd of=/workspace/huge conv=notrunc status=none"], timeout=20)
    assert [(c.path, c.kind) for c in diff(after, sandbox.manifest())] == [("workspace/huge", "modified")]


QUOTA_LIMITS = Limits(**{**TEST_LIMITS.__dict__, "disk_bytes": 64 * 1024**2, "disk_inodes": 2048})


def test_the_roots_have_a_size_and_inode_quota(backend: str) -> None:
    """Without one, /workspace was bounded only by the host disk (and a worker's evidence reads)."""
    with get_backend(backend).create(FIXTURE_FILES, run_id=new_run_id("quota"), limits=QUOTA_LIMITS) as sb:
        big = sb.exec(["sh", "-c", "head -c 200000000 /dev/zero > /workspace/big; echo rc=$?"], timeout=60)
        assert "No space left on device" in big.stderr_text, big
        sizes = sb.exec(["sh", "-c", "rm -f /workspace/big; du -sk /workspace | cut -f1"], timeout=30)
        assert int(sizes.stdout_text.strip()) < 1024
        many = sb.exec(
            ["sh", "-c", "mkdir /home/agent/many && cd /home/agent/many && for i in $(seq 3000); do : > f$i; done"],
            timeout=120,
        )
        assert many.exit_code != 0 and "No space left on device" in many.stderr_text, many
        # Scratch outside the roots is bounded too (Docker: tmpfs; bwrap: /tmp is in the quota).
        scratch = ["/tmp", "/var/tmp", "/run/lock"] if backend == "docker" else ["/tmp"]
        for d in scratch:
            fill = sb.exec(["sh", "-c", f"head -c 200000000 /dev/zero > {d}/fill; rm -f {d}/fill"], timeout=60)
            assert "No space left on device" in fill.stderr_text, (d, fill)
        # The sandbox still works, and the manifest still reads (the quota is the evidence's bound too).
        sb.exec(["rm", "-rf", "/home/agent/many"], timeout=60)
        assert sb.exec(["true"], timeout=20).exit_code == 0
        assert "workspace/README.md" in sb.manifest()


def test_a_sweep_that_cannot_verify_kills_the_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """Evidence is never read from a container whose agent processes might still run."""
    import docker

    from harness.sandbox import docker_backend

    with get_backend("docker").create([], run_id=new_run_id("sweep"), limits=TEST_LIMITS) as sb:
        monkeypatch.setattr(docker_backend, "_SWEEP", "echo 4242; exit 3")  # "pid 4242 survived"
        with pytest.raises(SandboxError, match="survived"):
            sb.exec(["true"], timeout=20)
        state = docker.from_env().api.inspect_container(sb.container_id)["State"]  # type: ignore[attr-defined]
        assert not state["Running"]
