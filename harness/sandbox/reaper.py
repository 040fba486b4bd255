"""Removal of sandboxes nobody will destroy: the owner died (SIGKILL, OOM, host crash of a
worker) or the sandbox outlived its lifetime.

A sandbox is a leftover when any of these holds:

* its owner process is gone — the ``overeager.owner`` label / meta.json holds
  ``host:pid:start-ticks``; a live pid with a different start time is a reused pid, not the owner;
* its deadline (creation + lifetime) has passed;
* (docker) it is no longer running — its lifetime ended, its creator died (the stdin lifeline
  closed) or pid 1 was killed.

Sandboxes owned by another host are judged only by deadline and state, since their owner's
liveness cannot be checked from here.  Only this install's sandboxes are ever touched (the
``overeager.install`` label / meta.json's ``install``, :func:`harness.sandbox.base.install_id`):
another checkout or a copied database on the same machine has the same run ids, and its live
sandboxes are not ours to remove.  Sandboxes made before installs were labelled carry no install
and are left alone too (their lifetime ends them).  Call :func:`reap` at worker start and run
:func:`start_periodic` (or ``manage.py reap_sandboxes`` from cron) for the rest; the run worker
does both.

The model gateway's socket directories (``overeager-gw-<pid>-<start ticks>-*`` in the temp
directory) are swept too: a worker killed with SIGKILL never ran the ``finally`` that removes
its directory.  One is removed when its owner is gone and nothing listens on a socket in it.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox import bwrap_backend
from harness.sandbox.base import (
    LABEL_ATTEMPT,
    LABEL_DEADLINE,
    LABEL_INSTALL,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_STATE,
    install_id,
    owner_alive,
    process_start_ticks,
)

log = logging.getLogger(__name__)


@dataclass
class ReapReport:
    removed_containers: list[str] = field(default_factory=list)
    removed_bwrap: list[str] = field(default_factory=list)
    removed_gateway_dirs: list[str] = field(default_factory=list)
    removed_docker_state: list[str] = field(default_factory=list)  # quota roots of gone containers
    kept: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def removed(self) -> int:
        # Docker state dirs are not counted: each belongs to a container counted already, or to
        # one that never started.
        return len(self.removed_containers) + len(self.removed_bwrap) + len(self.removed_gateway_dirs)


def _container_is_leftover(labels: dict[str, str], state: str, now: float) -> bool:
    if state in ("exited", "dead"):
        return True
    try:
        if float(labels.get(LABEL_DEADLINE, "0")) < now:
            return True
    except ValueError:
        return True
    owner = labels.get(LABEL_OWNER, "")
    return not owner or not owner_alive(owner)


def reap_docker(report: ReapReport, now: float, run_prefix: str | None = None, force: bool = False) -> None:
    try:
        from harness.sandbox import docker_backend

        api = docker_backend.client().api
        ours = [f"{LABEL_MANAGED}=1", f"{LABEL_INSTALL}={install_id()}"]
        containers = api.containers(all=True, filters={"label": ours})
    except Exception as exc:
        report.errors.append(f"docker: {exc}")
        return
    import docker.errors

    for c in containers:
        labels = c.get("Labels") or {}
        if run_prefix is not None and not labels.get(LABEL_RUN, "").startswith(run_prefix):
            continue
        if not (force or _container_is_leftover(labels, c.get("State", ""), now)):
            report.kept += 1
            continue
        try:
            api.remove_container(c["Id"], force=True, v=True)
            report.removed_containers.append(c["Id"][:12])
        except docker.errors.NotFound:
            pass  # removed concurrently by its owner or another reaper
        except docker.errors.APIError as exc:
            report.errors.append(f"{c['Id'][:12]}: {exc}")
            continue
        _remove_docker_state(labels.get(LABEL_STATE, ""))
    # State directories whose container never came to be or is gone (owner died in between): only
    # this install's, like the containers — another install's live sandbox mounts its quota roots
    # here too, and --all must not unmount them.  A directory without meta.json yet is being made
    # (by whichever install) unless it is over a minute old.
    mine = install_id()
    for state in sorted(Path(tempfile.gettempdir()).glob(docker_backend.STATE_PREFIX + "*")):
        meta = _bwrap_meta(state)
        if meta is not None and str(meta.get("install", "")) != mine:
            continue
        if meta is None and _younger_than(state, now, 60.0):
            continue
        if run_prefix is not None and not str((meta or {}).get("run", "")).startswith(run_prefix):
            continue
        if bwrap_backend.reap_state_dir(state, now=now, force=force):
            report.removed_docker_state.append(state.name)


def _younger_than(path: Path, now: float, seconds: float) -> bool:
    try:
        return now - path.stat().st_mtime < seconds
    except FileNotFoundError:
        return True  # gone already: nothing to do


def _remove_docker_state(path: str) -> None:
    from harness.sandbox import docker_backend

    # Only a directory this code makes: a label is container metadata, not a path to trust blindly.
    state = Path(path)
    if path and state.parent == Path(tempfile.gettempdir()) and state.name.startswith(docker_backend.STATE_PREFIX):
        docker_backend.remove_state(state)


def reap_bwrap(report: ReapReport, now: float, run_prefix: str | None = None, force: bool = False) -> None:
    mine = install_id()
    for state in bwrap_backend.list_leftovers():
        meta = _bwrap_meta(state)
        if meta is not None and str(meta.get("install", "")) != mine:
            continue  # another install's (or a pre-label one's): judged by its own reaper
        if run_prefix is not None and not str((meta or {}).get("run", "")).startswith(run_prefix):
            continue
        if bwrap_backend.reap_state_dir(state, now=now, force=force):
            report.removed_bwrap.append(state.name)
        else:
            report.kept += 1
    # Cgroups whose state directory is already gone (the owner died during destroy).  Which
    # install they were is no longer known; with no state directory nothing of theirs runs.
    live = {p.name for p in bwrap_backend.list_leftovers()}
    for parent in _cgroup_parents():
        for d in parent.glob(bwrap_backend.STATE_PREFIX + "*"):
            if d.name not in live:
                bwrap_backend.remove_cgroups(d.name)


def _bwrap_meta(state: Path) -> dict[str, object] | None:
    """A state directory's meta.json; None while it is missing (a sandbox being created, or one
    whose creator died before writing it — reap_state_dir judges those by age)."""
    import json

    try:
        meta = json.loads((state / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _cgroup_parents() -> list[Path]:
    base = Path("/sys/fs/cgroup")
    candidates = [base / bwrap_backend.CGROUP_PARENT] + [
        base / c / bwrap_backend.CGROUP_PARENT for c in ("memory", "pids", "cpu")
    ]
    return [p for p in candidates if p.is_dir()]


GATEWAY_DIR_PREFIX = "overeager-gw-"
GATEWAY_DIR_GRACE_S = 60.0  # a directory this young may belong to a gateway still starting


def gateway_dir_prefix(pid: int | None = None) -> str:
    """``mkdtemp`` prefix of a gateway socket directory, naming its owner (pid and start ticks)."""
    pid = os.getpid() if pid is None else pid
    return f"{GATEWAY_DIR_PREFIX}{pid}-{process_start_ticks(pid)}-"


def _gateway_owner_alive(name: str) -> bool:
    pid_s, _, rest = name.removeprefix(GATEWAY_DIR_PREFIX).partition("-")
    ticks, _, _ = rest.partition("-")
    if not pid_s.isdigit():
        return False  # a directory of older code, without an owner in its name
    return str(process_start_ticks(int(pid_s))) == ticks


def _something_listens_in(path: str) -> bool:
    try:
        names = os.listdir(path)
    except OSError:
        return False
    for name in names:
        full = os.path.join(path, name)
        try:
            if not stat.S_ISSOCK(os.lstat(full).st_mode):
                continue
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1.0)
                s.connect(full)
                return True
        except OSError:
            continue
    return False


def reap_gateway_dirs(report: ReapReport, now: float, parent: str | None = None) -> None:
    parent = parent or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(GATEWAY_DIR_PREFIX)]
    except OSError as exc:
        report.errors.append(f"gateway dirs: {exc}")
        return
    for name in names:
        path = os.path.join(parent, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue  # not one this user made: never touched
        if _gateway_owner_alive(name) or now - st.st_mtime < GATEWAY_DIR_GRACE_S or _something_listens_in(path):
            report.kept += 1
            continue
        shutil.rmtree(path, ignore_errors=True)
        report.removed_gateway_dirs.append(name)


def reap(
    run_prefix: str | None = None,
    force: bool = False,
    docker: bool = True,
    bwrap: bool = True,
    gateway_dirs: bool = True,
) -> ReapReport:
    """Remove leftovers of both backends.  ``force`` removes every match (tests, admin use)."""
    now = time.time()
    report = ReapReport()
    if docker:
        reap_docker(report, now, run_prefix, force)
    if bwrap:
        reap_bwrap(report, now, run_prefix, force)
    if gateway_dirs and run_prefix is None:
        reap_gateway_dirs(report, now)
    if report.removed:
        log.info(
            "reaped %d sandbox(es): %s",
            report.removed,
            ", ".join(report.removed_containers + report.removed_bwrap + report.removed_gateway_dirs),
        )
    return report


def remove_run_sandboxes(run_id: str, attempt: int) -> ReapReport:
    """Remove the sandboxes of exactly one run attempt, alive or not (its worker was declared dead).

    Exact label matches, not the prefix match of :func:`reap`: run "12" must not take run "123".
    """
    import json

    report = ReapReport()
    try:
        from harness.sandbox import docker_backend

        api = docker_backend.client().api
        wanted = [
            f"{LABEL_MANAGED}=1",
            f"{LABEL_INSTALL}={install_id()}",
            f"{LABEL_RUN}={run_id}",
            f"{LABEL_ATTEMPT}={attempt}",
        ]
        for c in api.containers(all=True, filters={"label": wanted}):
            try:
                api.remove_container(c["Id"], force=True, v=True)
                report.removed_containers.append(c["Id"][:12])
            except Exception as exc:  # gone already, or the engine is busy: noted
                report.errors.append(f"{c['Id'][:12]}: {exc}")
                continue
            _remove_docker_state((c.get("Labels") or {}).get(LABEL_STATE, ""))
    except Exception as exc:  # no engine on this machine: nothing to remove there
        report.errors.append(f"docker: {exc}")
    for state in bwrap_backend.list_leftovers():
        try:
            meta = json.loads((state / "meta.json").read_text())
        except (OSError, ValueError):
            continue
        mine = str(meta.get("install", "")) == install_id()
        if mine and str(meta.get("run")) == run_id and int(meta.get("attempt", 0)) == attempt:
            if bwrap_backend.reap_state_dir(state, force=True):
                report.removed_bwrap.append(state.name)
    return report


def start_periodic(interval_s: float = 300.0, stop: threading.Event | None = None) -> threading.Thread:
    """Reap now and then every ``interval_s`` in a daemon thread (call once per worker), until
    ``stop`` is set."""
    stop = stop or threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                reap()
            except Exception:
                log.exception("sandbox reaper sweep failed")
            stop.wait(interval_s)

    thread = threading.Thread(target=loop, name="sandbox-reaper", daemon=True)
    thread.start()
    return thread
