"""The machine's test cache: results of expensive, deterministic test work, keyed by content.

Outside the checkout (``$OVEREAGER_TEST_CACHE``, default ``~/.cache/overeager/test-cache``), so a
fresh clone on the same machine — CI's — reuses it. A key hashes everything the cached result
depends on: the inputs' content and the code that produced it (``code_digest``), so any change
to either is a miss and the work is done again; nothing is ever invalidated by hand.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from django.conf import settings

CACHE_DIR = Path(os.environ.get("OVEREAGER_TEST_CACHE") or Path.home() / ".cache" / "overeager" / "test-cache")
BASE = Path(settings.BASE_DIR)


@functools.cache
def code_digest(*tops: str) -> str:
    """A digest of the Python files under ``tops`` (paths relative to the checkout; files or dirs)."""
    h = hashlib.sha256()
    for top in tops:
        root = BASE / top
        paths = [root] if root.is_file() else sorted(root.rglob("*.py"))
        for path in paths:
            if "migrations" in path.parts or "__pycache__" in path.parts:
                continue
            h.update(str(path.relative_to(BASE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cache_dir(name: str) -> Path:
    path = CACHE_DIR / name
    path.mkdir(parents=True, exist_ok=True)
    return path
