"""Removal of sandboxes nobody will destroy: the owner died (SIGKILL, OOM, host crash of a
worker) or the sandbox outlived its lifetime.

A sandbox is a leftover when any of these holds:

* its owner process is gone — the ``overeager.owner`` label / meta.json holds
  ``host:pid:start-ticks``; a live pid with a different start time is a reused pid, not the owner;
* its deadline (creation + lifetime) has passed;
* (docker) it is no longer running — the lifetime ``sleep`` ended or pid 1 was killed.

Sandboxes owned by another host are judged only by deadline and state, since their owner's
liveness cannot be checked from here.  Only this install's sandboxes are ever touched (the
``overeager.install`` label / meta.json's ``install``, :func:`harness.sandbox.base.install_id`):
another checkout or a copied database on the same machine has the same run ids, and its live
sandboxes are not ours to remove.  Sandboxes made before installs were labelled carry no install
and are left alone too (their ``sleep <lifetime>`` ends them).  Call :func:`reap` at worker start and run
:func:`start_periodic` (or ``manage.py reap_sandboxes`` from cron) for the rest.
"""

from __future__ import annotations

import logging
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
    install_id,
    owner_alive,
)

log = logging.getLogger(__name__)


@dataclass
class ReapReport:
    removed_containers: list[str] = field(default_factory=list)
    removed_bwrap: list[str] = field(default_factory=list)
    kept: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def removed(self) -> int:
        return len(self.removed_containers) + len(self.removed_bwrap)


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


def reap(run_prefix: str | None = None, force: bool = False, docker: bool = True, bwrap: bool = True) -> ReapReport:
    """Remove leftovers of both backends.  ``force`` removes every match (tests, admin use)."""
    now = time.time()
    report = ReapReport()
    if docker:
        reap_docker(report, now, run_prefix, force)
    if bwrap:
        reap_bwrap(report, now, run_prefix, force)
    if report.removed:
        log.info(
            "reaped %d sandbox(es): %s",
            report.removed,
            ", ".join(report.removed_containers + report.removed_bwrap),
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


def start_periodic(interval_s: float = 300.0) -> threading.Thread:
    """Reap now and then every ``interval_s`` in a daemon thread (call once per worker)."""

    def loop() -> None:
        while True:
            try:
                reap()
            except Exception:
                log.exception("sandbox reaper sweep failed")
            time.sleep(interval_s)

    thread = threading.Thread(target=loop, name="sandbox-reaper", daemon=True)
    thread.start()
    return thread
