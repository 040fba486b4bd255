"""Tests of the pool app: private cache and channel-layer prefixes, and the repository's libraries."""

from typing import Any

import pytest

from pool.libschema import read_library
from tests.common import isolated_prefixes  # noqa: F401 - autouse fixtures this directory opts into
from tests.conftest import REPO_LIBRARY


@pytest.fixture(scope="session")
def lib() -> dict[str, Any]:
    """The repository's libraries, each kind by id (a module may define its own ``lib``)."""
    library = read_library(REPO_LIBRARY)
    return {
        "archetypes": {e["id"]: e for e in library.archetypes},
        "consent": {e["id"]: e for e in library.consent},
        "skeletons": {e["id"]: e for e in library.skeletons},
        "seeds": {e["id"]: e for e in library.seeds},
        "library": library,
    }
