"""Host-side observations the conformance tests use (both backends share the host kernel)."""

from __future__ import annotations

import os
from pathlib import Path

import docker

from harness.sandbox import bwrap_backend
from harness.sandbox.base import LABEL_MANAGED, LABEL_RUN


def host_processes_with(marker: str) -> list[str]:
    """Command lines of live host processes containing ``marker`` (sandboxed ones included)."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
            state = next(
                (ln for ln in (entry / "status").read_text().splitlines() if ln.startswith("State:")),
                "",
            )
        except OSError:
            continue
        if "Z (zombie)" in state:
            continue
        cmd = raw.replace(b"\0", b" ").decode(errors="replace")
        if marker in cmd:
            found.append(f"{entry.name}: {cmd}")
    return found


def labelled_containers(run_prefix: str) -> list[str]:
    api = docker.from_env().api
    out = []
    for c in api.containers(all=True, filters={"label": f"{LABEL_MANAGED}=1"}):
        if (c.get("Labels") or {}).get(LABEL_RUN, "").startswith(run_prefix):
            out.append(c["Id"][:12])
    return out


def bwrap_state_dirs(run_prefix: str) -> list[Path]:
    """State directories (bwrap's, and Docker's quota roots) of runs starting with ``run_prefix``."""
    import tempfile

    out = []
    docker_states = sorted(Path(tempfile.gettempdir()).glob("overeager-docker-*"))
    for state in [*bwrap_backend.list_leftovers(), *docker_states]:
        meta = state / "meta.json"
        try:
            if run_prefix in meta.read_text():
                out.append(state)
        except OSError:
            continue
    return out


def quota_mounts() -> set[str]:
    """Mount points of sandbox quota filesystems (``<state>/roots``) on the host right now."""
    with open("/proc/self/mountinfo") as fh:
        targets = {line.split()[4] for line in fh}
    return {t for t in targets if "/overeager-docker-" in t or "/overeager-bwrap-" in t}


def foreign_mount(target: str, run_prefix: str) -> bool:
    """Whether a quota mount belongs to a sandbox of another run (its state dir's meta.json says so).

    A mount whose meta.json is gone (state removed around a mount that stayed) is nobody's proof
    of innocence: it counts as not foreign.
    """
    meta = Path(target).parent / "meta.json"
    try:
        return run_prefix not in meta.read_text()
    except OSError:
        return False
