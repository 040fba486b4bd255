"""Tests of the project package: private prefixes, fast password hashing."""

from tests.common import fast_password_hashing, isolated_prefixes  # noqa: F401 - autouse fixtures this directory opts into
