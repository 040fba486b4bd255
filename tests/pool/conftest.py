"""Tests of the pool app: private cache and channel-layer prefixes."""

from tests.common import isolated_prefixes  # noqa: F401 - autouse fixtures this directory opts into
