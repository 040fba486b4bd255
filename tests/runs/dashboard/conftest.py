"""Fixtures for the dashboard tests: private cache and channel prefixes, evidence dir, axes."""

from __future__ import annotations

from tests.common import axes, evidence_root, fast_password_hashing  # noqa: F401 - autouse fixtures this directory opts into
