"""Fixtures the Django-app test directories share, opted into by their conftests.

A conftest activates one by importing it (``from tests.common import isolated_prefixes``): an
imported fixture keeps its ``autouse``.  The pure packages' tests (oracles, content, harness)
import none of them, so they pay for no settings override and no Redis round trip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def isolated_prefixes(settings: Any) -> Iterator[str]:
    """Cache and channel-layer prefixes of this test alone (see ``factories.isolate_prefixes``)."""
    from tests.factories import drop_prefix, isolate_prefixes

    prefix = isolate_prefixes(settings)
    yield prefix
    drop_prefix(settings, prefix)


@pytest.fixture(autouse=True)
def evidence_root(tmp_path: Path, settings: Any) -> Path:
    """``EVIDENCE_DIR`` private to the test."""
    settings.EVIDENCE_DIR = tmp_path / "evidence"
    return settings.EVIDENCE_DIR


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    # role_users hashes six passwords; PBKDF2 makes that a second per test. Logins use force_login.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def axes(db: None) -> tuple[list[tuple[str, str]], list[str]]:
    """The libraries' archetypes × consent modes, loaded (the heatmap's axes)."""
    from tests import factories

    return factories.axes()
