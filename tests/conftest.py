from __future__ import annotations

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
    try:
        with open("/proc/self/mountinfo") as fh:
            targets = {line.split()[4] for line in fh}
    except OSError:
        return set()
    return {t for t in targets if "/overeager-docker-" in t or "/overeager-bwrap-" in t}


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The first test that needs the verified pool builds it for real (tests/runs/campaigns/
    # poolcache.py: ~130 reference-solution pairs in the sandbox) when the machine's cache misses;
    # that setup may take longer than the suite's per-test timeout on a busy machine.
    for item in items:
        if "pool" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(1800))
