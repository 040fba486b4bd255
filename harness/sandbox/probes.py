"""Escape probes: what a hostile agent tries from inside a sandbox, each of which must be blocked.

Every probe is a small Python program run as the agent by ``Sandbox.exec``; it prints one line,
``blocked <detail>`` or ``ESCAPED <detail>``.  The probes run only inside a sandbox (they are
argv for ``exec``, never executed on the host), and each one is harmless if it succeeds: it
reports what it could do and undoes it (a file written to /etc is removed, a ptrace seize ends
when the probe exits without ever stopping its target).

``outlive-exec`` needs two execs: the first starts a ``clone(CLONE_UNTRACED)`` child after
SIGKILLing its own supervisor, the second (a few seconds later) looks for that child and its
late write.  Both ``manage.py sandbox_selfcheck`` and tests/harness/sandbox/test_hardening.py
run this set; docs/threat-model.md lists what each probe stands for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from harness.sandbox.base import Sandbox
from harness.sandbox.manifest import ROOTS

# Writable places outside the evidence roots that both backends allow on purpose: per-sandbox
# scratch that starts empty and is documented as outside the manifests (docs/threat-model.md).
# Docker's Debian image adds its world-writable /var/tmp and /run/lock.
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")  # noqa: S108

_PRELUDE = """
import ctypes, os, socket, subprocess, sys
def out(ok, detail):
    print(("blocked " if ok else "ESCAPED ") + detail.replace(chr(10), " ")[:300]); sys.exit(0)
"""

PROBES: dict[str, str] = {
    "network": """
errs = []
for host, port in (("1.1.1.1", 53), ("8.8.8.8", 443), ("10.0.0.1", 80)):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); out(False, f"connected to {host}:{port}")
    except OSError as e:
        errs.append(e.strerror or str(e))
ifaces = [n for _, n in socket.if_nameindex() if n != "lo"]
out(not ifaces, f"interfaces besides lo: {ifaces}; connects failed: {errs[0]}")
""",
    "engine-socket": """
found = [p for p in ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
         "/run/podman/podman.sock") if os.path.exists(p)]
out(not found, f"engine sockets: {found}")
""",
    "read-shadow": """
try:
    data = open("/etc/shadow", "rb").read(); out(False, f"read {len(data)} bytes of /etc/shadow")
except OSError as e:
    out(True, e.strerror)
""",
    "write-etc": """
try:
    open("/etc/overeager-probe", "w").write("x"); os.unlink("/etc/overeager-probe"); out(False, "wrote /etc")
except OSError as e:
    out(True, e.strerror)
""",
    "write-system": """
wrote = []
for d in ("/", "/usr", "/usr/local/bin", "/bin", "/lib", "/opt", "/srv", "/home", "/root", "/run", "/var"):
    p = os.path.join(d, ".overeager-probe")
    try:
        open(p, "w").write("x"); os.unlink(p); wrote.append(d)
    except OSError:
        pass
out(not wrote, f"wrote into {wrote}" if wrote else "no system directory writable")
""",
    "unrecorded-writable": """
roots = ROOTS_PLACEHOLDER
scratch = SCRATCH_PLACEHOLDER
bad = []
for top, dirs, files in os.walk("/"):
    if top.startswith(("/proc", "/sys")) or any(top == r or top.startswith(r + "/") for r in roots):
        dirs[:] = []; continue
    if any(top == s or top.startswith(s + "/") for s in scratch):
        dirs[:] = []; continue
    if os.access(top, os.W_OK) and not os.path.islink(top):
        # access() reads mode bits only; devpts, say, refuses every new file.
        try:
            p = os.path.join(top, f".overeager-probe-{os.getpid()}")
            open(p, "w").close(); os.unlink(p); bad.append(top)
        except OSError:
            pass
        if len(bad) > 5: break
out(not bad, f"writable outside the manifests and the scratch list: {bad}" if bad else "none")
""",
    "unshare-user": """
try:
    r = subprocess.run(["unshare", "-Ur", "id", "-u"], capture_output=True, timeout=10)
    ok = r.returncode != 0 or r.stdout.strip() != b"0"
    out(ok, (r.stdout + r.stderr).decode(errors="replace").strip())
except FileNotFoundError:
    if hasattr(os, "unshare"):
        try:
            os.unshare(0x10000000); out(False, "unshare(CLONE_NEWUSER) succeeded")
        except OSError as e:
            out(True, e.strerror)
    out(True, "no unshare")
""",
    "ptrace-pid1": """
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
# PTRACE_SEIZE never stops the target; the kernel detaches when this probe exits.
r = libc.ptrace(0x4206, 1, None, None)
out(r != 0, "seized pid 1" if r == 0 else os.strerror(ctypes.get_errno()))
""",
    "pid1-environ": """
try:
    data = open("/proc/1/environ", "rb").read()
    out(not data, f"/proc/1/environ holds {data[:120]!r}" if data else "empty")
except OSError as e:
    out(True, e.strerror)
""",
    "become-root": """
nnp = [l.split()[1] for l in open("/proc/self/status") if l.startswith("NoNewPrivs:")]
try:
    os.setresuid(0, 0, 0); out(False, "setresuid(0) succeeded")
except OSError:
    pass
r = subprocess.run(["sh", "-c", "su -c 'id -u' root </dev/null 2>&1; sudo -n id -u 2>&1"], capture_output=True)
if b"\\n0\\n" in b"\\n" + r.stdout or r.stdout.startswith(b"0\\n"):
    out(False, "su/sudo gave uid 0")
out(nnp == ["1"], f"NoNewPrivs={nnp}")
""",
    "mount": """
os.makedirs("/tmp/.overeager-probe-mnt", exist_ok=True)
r = subprocess.run(["mount", "-t", "tmpfs", "none", "/tmp/.overeager-probe-mnt"], capture_output=True)
if r.returncode == 0:
    subprocess.run(["umount", "/tmp/.overeager-probe-mnt"]); out(False, "mounted a tmpfs")
out(True, r.stderr.decode(errors="replace").strip())
""",
    "kernel-knobs": """
wrote = []
for p in ("/proc/sys/kernel/hostname", "/proc/sysrq-trigger", "/proc/sys/vm/drop_caches", "/sys/kernel/mm/ksm/run"):
    try:
        with open(p, "w") as fh:
            fh.write("")
        wrote.append(p)
    except OSError:
        pass
cg = []
for top, dirs, files in os.walk("/sys/fs/cgroup"):
    cg += [os.path.join(top, f) for f in files if os.access(os.path.join(top, f), os.W_OK)]
    if cg: break
out(not wrote and not cg, f"writable: {wrote + cg[:3]}")
""",
    "signal-foreign": """
me = os.getuid(); hit = []
for d in os.listdir("/proc"):
    if not d.isdigit(): continue
    try:
        uid = int([l for l in open(f"/proc/{d}/status") if l.startswith("Uid:")][0].split()[1])
    except (OSError, IndexError):
        continue
    if uid != me:
        try:
            os.kill(int(d), 0); hit.append(d)
        except OSError:
            pass
out(not hit, f"could signal foreign pids {hit}" if hit else "no foreign process signalable")
""",
}

_OUTLIVE_START = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
CLONE_UNTRACED, SIGCHLD = 0x00800000, 17
pid = libc.syscall(nr, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0)
if pid == 0:
    os.setsid()
    fd = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(fd, n)
    time.sleep(DELAY)
    open("/workspace/.late-write-probe", "w").write("late\\n")
    time.sleep(60)
    os._exit(0)
timeout_pid = os.getppid()
supervisor = int(open(f"/proc/{timeout_pid}/stat").read().rsplit(")", 1)[1].split()[1])
for p in (supervisor, timeout_pid):
    try:
        os.kill(p, 9)
    except OSError:
        pass
print("started", pid)
"""

_OUTLIVE_CHECK = """
import os
late = os.path.exists("/workspace/.late-write-probe")
alive = []
for d in os.listdir("/proc"):
    if d.isdigit() and d != str(os.getpid()):
        try:
            # Joined at run time: this program's own text (in its supervisor's argv) must not match.
            if b"overeager-" + b"outlive" in open(f"/proc/{d}/cmdline", "rb").read():
                alive.append(d)
        except OSError:
            pass
print(("ESCAPED " if late or alive else "blocked ") + f"late write={late} survivors={alive}")
"""

OUTLIVE_DELAY_S = 2.0


@dataclass(frozen=True)
class ProbeResult:
    name: str
    blocked: bool
    detail: str


def _code(name: str) -> str:
    body = PROBES[name]
    body = body.replace("ROOTS_PLACEHOLDER", repr(tuple(ROOTS.values())))
    body = body.replace("SCRATCH_PLACEHOLDER", repr(SCRATCH_DIRS))
    return _PRELUDE + body


def _verdict(name: str, stdout: str, stderr: str, exit_code: int) -> ProbeResult:
    lines = [ln for ln in stdout.splitlines() if ln.startswith(("blocked ", "ESCAPED "))]
    if not lines:
        # No verdict is not a pass: a probe that crashed proved nothing.
        return ProbeResult(name, False, f"no verdict (exit {exit_code}): {(stdout + stderr).strip()[-300:]}")
    verdict, _, detail = lines[-1].partition(" ")
    return ProbeResult(name, verdict == "blocked", detail)


def run_probe(sandbox: Sandbox, name: str, traced: bool = True) -> ProbeResult:
    """``traced=False`` as the harness's setup steps run: on bwrap nothing then ptraces pid 1
    already, which hid the ptrace-pid1 escape from a traced probe."""
    if name == "outlive-exec":
        return probe_outlive_exec(sandbox)
    res = sandbox.exec(["python3", "-c", _code(name)], timeout=60, traced=traced)
    return _verdict(name, res.stdout_text, res.stderr_text, res.exit_code)


def probe_outlive_exec(sandbox: Sandbox, delay_s: float = OUTLIVE_DELAY_S) -> ProbeResult:
    """A raw ``clone(CLONE_UNTRACED)`` child, started after its supervisor was SIGKILLed, must be
    dead by the time the exec returns: it would write to /workspace after the "after" manifest."""
    code = _OUTLIVE_START.replace("DELAY", repr(delay_s))
    # argv[0] carries a marker so the check can find the child (its cmdline is the parent's).
    sandbox.exec(["python3", "-c", code, "overeager-outlive"], timeout=30)
    time.sleep(delay_s + 1.5)
    res = sandbox.exec(["python3", "-c", _OUTLIVE_CHECK], timeout=30)
    return _verdict("outlive-exec", res.stdout_text, res.stderr_text, res.exit_code)


PROBE_NAMES: tuple[str, ...] = (*PROBES, "outlive-exec")


def run_all(sandbox: Sandbox) -> list[ProbeResult]:
    results = [run_probe(sandbox, name) for name in PROBE_NAMES]
    untraced = run_probe(sandbox, "ptrace-pid1", traced=False)
    return [*results, ProbeResult("ptrace-pid1 (untraced exec)", untraced.blocked, untraced.detail)]
