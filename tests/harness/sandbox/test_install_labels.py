"""Every sandbox carries its install's id, and a reaper removes only its own install's (issue 18 item 7).

Two installs on one machine — a second checkout, a copied database — share run ids; one's reaper
must never take the other's live sandboxes, not even with ``force``.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from harness.sandbox import base, docker_backend, reaper
from harness.sandbox.base import LABEL_INSTALL, get_backend
from tests.harness.sandbox.conftest import TEST_LIMITS, new_run_id
from tests.harness.sandbox.helpers import bwrap_state_dirs, labelled_containers


@pytest.fixture
def as_install(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def switch(name: str) -> None:
        monkeypatch.setattr(base, "_install_id", name)

    yield switch


def test_the_install_id_comes_from_the_environment_or_is_kept_in_the_var_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(base, "_install_id", None)
    monkeypatch.setenv("OVEREAGER_INSTALL_ID", "ci-install")
    assert base.install_id() == "ci-install"
    monkeypatch.setattr(base, "_install_id", None)
    monkeypatch.delenv("OVEREAGER_INSTALL_ID")
    monkeypatch.setenv("OVEREAGER_VAR_DIR", str(tmp_path / "var"))
    first = base.install_id()
    assert (tmp_path / "var" / base.INSTALL_ID_FILE).read_text().strip() == first
    monkeypatch.setattr(base, "_install_id", None)
    assert base.install_id() == first  # the next process of the same install reads it back
    monkeypatch.setattr(base, "_install_id", None)
    monkeypatch.setenv("OVEREAGER_VAR_DIR", str(tmp_path / "other-checkout"))
    assert base.install_id() != first


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_a_reaper_leaves_another_installs_sandboxes_alone_even_when_forced(backend: str, as_install: object) -> None:
    switch = as_install
    assert callable(switch)
    theirs, mine = f"theirs-{uuid.uuid4().hex[:8]}", f"mine-{uuid.uuid4().hex[:8]}"
    run_id = new_run_id(f"install-{backend}")
    switch(theirs)
    sandbox = get_backend(backend).create([], run_id=run_id, attempt=1, limits=TEST_LIMITS)
    try:
        if backend == "docker":
            container_id = getattr(sandbox, "container_id")  # noqa: B009 (a DockerSandbox's)
            labels = docker.from_env().api.inspect_container(container_id)["Config"]["Labels"]
            assert labels[LABEL_INSTALL] == theirs
        else:
            (state,) = bwrap_state_dirs(run_id)
            assert json.loads((state / "meta.json").read_text())["install"] == theirs
        switch(mine)
        report = reaper.reap(run_prefix=run_id, force=True)
        exact = reaper.remove_run_sandboxes(run_id, 1)
        assert report.removed == 0 and exact.removed == 0
        if backend == "docker":
            # Without a run prefix too (`reap_sandboxes --all`): their quota roots stay mounted.
            state = Path(getattr(sandbox, "state"))  # noqa: B009 (a DockerSandbox's)
            report = reaper.reap(force=True, bwrap=False, gateway_dirs=False)
            assert state.name not in report.removed_docker_state and (state / "meta.json").exists()
        assert sandbox.exec(["true"], timeout=30).exit_code == 0  # still alive
        switch(theirs)
        assert reaper.reap(run_prefix=run_id, force=True).removed == 1  # its own install's reaper does
        assert labelled_containers(run_id) == [] and bwrap_state_dirs(run_id) == []
    finally:
        switch(theirs)
        sandbox.destroy()


def test_a_forced_reap_leaves_another_installs_docker_state_directories_alone(as_install: object) -> None:
    """Issue 33 item 11: `reap_sandboxes --all` of a second install unmounted and deleted the quota
    directories of the first install's live Docker sandbox (their containers were already safe)."""
    switch = as_install
    assert callable(switch)
    theirs, mine = f"theirs-{uuid.uuid4().hex[:8]}", f"mine-{uuid.uuid4().hex[:8]}"
    made = []
    for install in (theirs, mine):
        state = Path(tempfile.mkdtemp(prefix=docker_backend.STATE_PREFIX))
        live = {"owner": base.owner_token(), "deadline": time.time() + 3600}
        meta = {"run": "r", "attempt": 1, **live, "install": install}
        (state / "meta.json").write_text(json.dumps(meta))
        made.append(state)
    young = Path(tempfile.mkdtemp(prefix=docker_backend.STATE_PREFIX))  # being made: no meta.json yet
    try:
        switch(mine)
        report = reaper.reap(force=True, bwrap=False, gateway_dirs=False)
        assert made[0].exists() and made[0].name not in report.removed_docker_state
        assert not made[1].exists() and made[1].name in report.removed_docker_state
        assert young.exists()
    finally:
        for state in (*made, young):
            docker_backend.remove_state(state)
