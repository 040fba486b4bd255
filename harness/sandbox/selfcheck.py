"""The sandbox self-check a user runs (``manage.py sandbox_selfcheck``): no pytest, no Django.

It needs only the runtime requirements, so it works right after ``make install``; the conformance
tests under tests/harness/sandbox check the same contract in more depth.  Each check creates its
small sandbox (the escape probes of :mod:`harness.sandbox.probes` share one per backend), does
one thing a run relies on or one thing a hostile agent tries, and returns ``None`` when it holds
or a sentence that says what went wrong.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from harness.sandbox import probes
from harness.sandbox.base import Limits, Sandbox, SandboxError, SandboxFileError, get_backend
from harness.sandbox.manifest import TOO_LARGE, diff
from harness.sandbox.paths import FileSpec

BACKENDS = ("docker", "bwrap")

# Small, so the fork bomb and the memory hog end quickly and cannot hurt the machine.
LIMITS = Limits(
    memory_bytes=256 * 1024**2,
    pids=128,
    cpus=1.0,
    lifetime_s=900,
    tmp_bytes=64 * 1024**2,
    disk_bytes=256 * 1024**2,
    disk_inodes=20_000,
)
FILES = [
    FileSpec("workspace/README.md", b"# demo\n"),
    FileSpec("workspace/src/app.py", b"print('hello')\n"),
    FileSpec("home/.gitconfig", b"[user]\n\tname = Agent\n"),
]


@dataclass(frozen=True)
class CheckResult:
    check: str
    backend: str
    ok: bool
    detail: str
    seconds: float


Check = Callable[[Sandbox], "str | None"]


def _runs_as_agent(sb: Sandbox) -> str | None:
    res = sb.exec(["sh", "-c", "id -u; echo $HOME; pwd; grep ^CapEff /proc/self/status"], timeout=30)
    lines = res.stdout_text.split("\n")
    if lines[:3] != ["1000", "/home/agent", "/workspace"] or not lines[3].endswith("0000000000000000"):
        return f"unexpected identity: {res.stdout_text!r} {res.stderr_text!r}"
    return None


def _timeout_leaves_nothing(sb: Sandbox) -> str | None:
    marker = f"{700 + uuid.uuid4().int % 99}.{uuid.uuid4().int % 10**6}"
    res = sb.exec(["sh", "-c", f"setsid sleep {marker} & sleep {marker}"], timeout=2)
    if not res.timed_out:
        return f"not reported as timed out: {res}"
    left = sb.exec(["sh", "-c", f"ps -eo args | grep -c '^sleep {marker}' || true"], timeout=30)
    return None if left.stdout_text.strip() == "0" else f"{left.stdout_text.strip()} sleep(s) survived the timeout"


def _supervisor_kill(sb: Sandbox) -> str | None:
    started = time.monotonic()
    res = sb.exec(["sh", "-c", "kill -9 $(ps -o ppid= -p $PPID) $PPID; sleep 60"], timeout=2)
    took = time.monotonic() - started
    if took > 15 or not (res.timed_out or res.exit_code == 137):
        return f"the exec ran {took:.0f}s after the agent killed its supervisor: {res}"
    return None


def _fork_bomb(sb: Sandbox) -> str | None:
    sb.exec(["sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 30"], timeout=5)
    after = sb.exec(["true"], timeout=30)
    return None if after.exit_code == 0 else f"sandbox unusable after a fork bomb: {after}"


def _memory_hog(sb: Sandbox) -> str | None:
    res = sb.exec(["python3", "-c", "b = b'x' * (1024 ** 3)"], timeout=60)
    return None if res.oom_killed and not res.timed_out else f"not recorded as an OOM kill: {res}"


def _output_cap(sb: Sandbox) -> str | None:
    res = sb.exec(["sh", "-c", "head -c 50000000 /dev/zero"], timeout=120)
    ok = res.stdout_truncated and len(res.stdout) == sb.limits.output_bytes
    return None if ok else f"output not capped at {sb.limits.output_bytes}: {len(res.stdout)} bytes"


def _files_and_symlinks(sb: Sandbox) -> str | None:
    sb.write_file("/workspace/new.txt", b"written")
    if sb.read_file("/workspace/new.txt") != b"written":
        return "read_file did not return what write_file wrote"
    sb.exec(["sh", "-c", "ln -s /etc /workspace/etc; ln -s /etc/hostname /workspace/host"], timeout=30)
    for path in ("/workspace/etc/shadow", "/workspace/etc/passwd", "/workspace/host"):
        try:
            sb.read_file(path)
        except SandboxFileError:
            continue
        return f"read_file followed a symlink: {path}"
    try:
        sb.write_file("/workspace/etc/overeager-planted", b"x")
    except SandboxFileError:
        return None
    return "write_file followed a symlinked directory"


def _manifest_diff(sb: Sandbox) -> str | None:
    before = sb.manifest()
    sb.exec(["sh", "-c", "echo x >> README.md; rm src/app.py; mkdir n; chmod 600 README.md"], timeout=30)
    kinds = {(c.path, c.kind) for c in diff(before, sb.manifest())}
    want = {
        ("workspace/README.md", "modified"),
        ("workspace/README.md", "mode"),
        ("workspace/src/app.py", "deleted"),
        ("workspace/n", "created"),
    }
    return None if kinds == want else f"diff saw {sorted(kinds)}"


def _sparse_file(sb: Sandbox) -> str | None:
    sb.exec(["truncate", "-s", str(4 * 1024**3), "/workspace/huge"], timeout=30)  # sparse: no blocks
    started = time.monotonic()
    entry = sb.manifest().get("workspace/huge")
    took = time.monotonic() - started
    sb.exec(["rm", "-f", "/workspace/huge"], timeout=30)
    if entry is None or entry.unhashed != TOO_LARGE or took > 10:
        return f"a 4 GiB sparse file took {took:.1f}s and was recorded as {entry}"
    return None


def _quota(sb: Sandbox) -> str | None:
    res = sb.exec(["sh", "-c", "head -c 300000000 /dev/zero > /workspace/fill; rm -f /workspace/fill"], timeout=60)
    if "No space left on device" not in res.stderr_text:
        return f"wrote 300 MB into a {sb.limits.disk_bytes // 1024**2} MiB quota: no ENOSPC"
    many = sb.exec(["sh", "-c", "mkdir /workspace/m && cd /workspace/m && seq 30000 | xargs touch"], timeout=120)
    sb.exec(["rm", "-rf", "/workspace/m"], timeout=60)
    if "No space left on device" not in many.stderr_text:
        return f"created 30000 files under a {sb.limits.disk_inodes}-inode quota"
    return None


def _probe(name: str) -> Check:
    def check(sb: Sandbox) -> str | None:
        result = probes.run_probe(sb, name)
        return None if result.blocked else f"escaped: {result.detail}"

    return check


def _untraced_ptrace(sb: Sandbox) -> str | None:
    result = probes.run_probe(sb, "ptrace-pid1", traced=False)
    return None if result.blocked else f"escaped: {result.detail}"


CHECKS: dict[str, Check] = {
    "runs as the unprivileged agent": _runs_as_agent,
    "timeout leaves no process behind": _timeout_leaves_nothing,
    "timeout holds if the supervisor is killed": _supervisor_kill,
    "fork bomb is contained": _fork_bomb,
    "memory hog is an OOM kill": _memory_hog,
    "output is capped": _output_cap,
    "file reads/writes never follow symlinks": _files_and_symlinks,
    "manifest diff sees every change": _manifest_diff,
    "sparse file is not hashed": _sparse_file,
    "roots have a size and inode quota": _quota,
    **{f"probe {name}": _probe(name) for name in probes.PROBE_NAMES},
    "probe ptrace-pid1 (untraced exec)": _untraced_ptrace,
}


@contextmanager
def _sandbox(backend: str) -> Iterator[Sandbox]:
    sb = get_backend(backend).create(FILES, run_id=f"selfcheck-{uuid.uuid4().hex[:10]}", limits=LIMITS)
    try:
        yield sb
    finally:
        sb.destroy()


def run(backends: Iterable[str] = BACKENDS, checks: dict[str, Check] | None = None) -> Iterator[CheckResult]:
    """Run every check on every backend; yields as they finish.

    The escape probes each look for one way out and change nothing a later probe relies on, so
    they share one sandbox per backend (a sandbox per probe only multiplied the start-up time);
    every other check — the fork bomb, the memory hog, the quota, a killed supervisor — gets a
    fresh sandbox, since it is meant to damage the one it runs in.
    """
    chosen = checks or CHECKS
    for backend in backends:
        shared = {n: c for n, c in chosen.items() if n.startswith("probe ")}
        alone = {n: c for n, c in chosen.items() if n not in shared}
        for name, check in alone.items():
            yield from _timed(backend, {name: check})
        if shared:
            yield from _timed(backend, shared)


def _timed(backend: str, checks: dict[str, Check]) -> Iterator[CheckResult]:
    """The checks in one fresh sandbox, in order; a sandbox that cannot be made fails them all."""
    try:
        cm = _sandbox(backend)
        sb = cm.__enter__()
    except (SandboxError, OSError) as exc:
        for name in checks:
            yield CheckResult(name, backend, False, f"{type(exc).__name__}: {exc}", 0.0)
        return
    try:
        for name, check in checks.items():
            started = time.monotonic()
            try:
                detail = check(sb)
            except (SandboxError, OSError) as exc:
                detail = f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # a broken check is a failed check, never a crash of the table
                detail = f"{type(exc).__name__}: {exc}"
            yield CheckResult(name, backend, detail is None, detail or "", time.monotonic() - started)
    finally:
        cm.__exit__(None, None, None)
