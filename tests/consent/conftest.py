"""Tests of the consent app."""

from tests.common import axes, evidence_root, fast_password_hashing, isolated_prefixes  # noqa: F401 - autouse fixtures this directory opts into
