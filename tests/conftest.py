from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User

from overeager.roles import ROLES, sync_groups

REPO_LIBRARY = Path(settings.BASE_DIR) / "pool" / "libraries"


class LeftoverSandboxWarning(UserWarning):
    """A test module left a sandbox's quota filesystem mounted on the host."""


def _quota_mounts() -> set[str]:
    """This install's sandbox quota mounts: the mount table is the machine's, and under xdist the
    other worker (an install of its own) has live sandboxes that are not this module's doing."""
    from harness.sandbox.base import install_id

    try:
        with open("/proc/self/mountinfo") as fh:
            targets = {line.split()[4] for line in fh}
    except OSError:
        return set()
    mine = install_id()
    return {
        t
        for t in targets
        if ("/overeager-docker-" in t or "/overeager-bwrap-" in t) and _install_of(Path(t).parent) in (mine, None)
    }


def _install_of(state: Path) -> str | None:
    """The install a sandbox's state directory belongs to (its meta.json), None when unreadable."""
    import json

    try:
        return str(json.loads((state / "meta.json").read_text()).get("install", "")) or None
    except (OSError, ValueError, AttributeError):
        return None


@pytest.fixture(scope="module", autouse=True)
def _sandbox_mounts_left_by_the_module() -> Iterator[None]:
    """Name the module that leaves a quota mount behind (it outlives the module's own fixtures).

    A warning, not a failure: a worker a test stops mid-run leaves its sandbox to the reaper, which
    is the product's design; but a mount nobody reaps shows up in a later test's host checks, and
    this says where it came from. (A CI run once failed the SIGKILL test on two such mounts.)
    """
    before = _quota_mounts()
    yield
    if left := sorted(_quota_mounts() - before):
        warnings.warn(f"sandbox quota mount(s) left mounted: {', '.join(left)}", LeftoverSandboxWarning, stacklevel=1)


@pytest.fixture(scope="session", autouse=True)
def _static_files_as_in_the_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Pages render and serve the static files of the tree, not a collected copy: `make
    check-deploy` collects into var/static before the tests, and a copy collected before an edit
    would serve stale JavaScript to the browser tests (tests/overeager/test_static_files.py runs
    the collected case in processes of its own)."""
    from django.test.utils import override_settings

    with override_settings(STATIC_ROOT=str(tmp_path_factory.mktemp("static-root"))):
        yield


@pytest.fixture
def library_copy(tmp_path: Path) -> Path:
    """A private copy of the repository's libraries that a test may break."""
    target = tmp_path / "libraries"
    shutil.copytree(REPO_LIBRARY, target)
    return target


@pytest.fixture
def role_users(db: None) -> dict[str, User]:
    """One user per role, plus a logged-in user with no role and a superuser."""
    sync_groups()
    users = {}
    for role in ROLES:
        user = User.objects.create_user(role, password="pw-" + role, is_staff=True)
        user.groups.add(Group.objects.get(name=role))
        users[role] = user
    users["norole"] = User.objects.create_user("norole", password="pw-norole")
    users["admin"] = User.objects.create_superuser("admin", password="pw-admin")
    return users


def pytest_configure(config: pytest.Config) -> None:
    # Under pytest-xdist each worker is an install of its own: sandboxes, their labels and the
    # reapers are install-scoped, so one worker's reaper never takes the other's live sandboxes.
    # Set in the environment too: the rq workers and daphne a test starts inherit it.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        from harness.sandbox import base

        own = f"{base.install_id()}-{worker}"
        os.environ["OVEREAGER_INSTALL_ID"] = own
        base._install_id = own


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The first test that needs the verified pool builds it for real (tests/runs/campaigns/
    # poolcache.py: ~130 reference-solution pairs in the sandbox) when the machine's cache misses;
    # that setup may take longer than the suite's per-test timeout on a busy machine.
    for item in items:
        if "pool" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(1800))
        # One browser server and one Chromium at a time, on one xdist worker (they share
        # var/test-artifacts and are the heaviest processes of the suite).
        if "tests/browser/" in item.nodeid or item.nodeid.startswith("browser/"):
            item.add_marker(pytest.mark.xdist_group("browser"))
