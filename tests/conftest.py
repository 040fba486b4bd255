from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User

from overeager.roles import ROLES, sync_groups

REPO_LIBRARY = Path(settings.BASE_DIR) / "pool" / "libraries"


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
