"""Fixtures for the dashboard tests: private cache and channel prefixes, evidence dir, axes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard import factories


@pytest.fixture(autouse=True)
def private_prefixes(settings: Any) -> Iterator[str]:
    prefix = factories.isolate_prefixes(settings)
    yield prefix
    factories.drop_prefix(settings, prefix)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    # role_users hashes six passwords; PBKDF2 makes that a second per test. Logins here use force_login.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def evidence_root(tmp_path: Path, settings: Any) -> Path:
    settings.EVIDENCE_DIR = tmp_path / "evidence"
    return settings.EVIDENCE_DIR


@pytest.fixture
def axes(db: None) -> tuple[list[tuple[str, str]], list[str]]:
    return factories.axes()
