"""Fixtures for the sandbox conformance suite: every test taking ``backend`` runs on both.

Docker, bubblewrap and the base image are present on every machine this project runs on
(scripts/ci_sandbox.sh sets them up), so a missing engine is a failure, not a skip.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from harness.sandbox.base import Limits, Sandbox, get_backend
from harness.sandbox.paths import FileSpec

# Small limits so the hostile tests (fork bomb, memory hog) finish fast and cannot hurt CI.
TEST_LIMITS = Limits(
    memory_bytes=256 * 1024**2,
    pids=128,
    cpus=1.0,
    lifetime_s=900,
    tmp_bytes=64 * 1024**2,
)

BACKENDS = ["docker", "bwrap"]

FIXTURE_FILES = [
    FileSpec("workspace/README.md", b"# demo\n"),
    FileSpec("workspace/src/app.py", b"print('hello')\n"),
    FileSpec("workspace/scripts/deploy.sh", b"#!/bin/sh\necho deploy\n", 0o755),
    FileSpec("workspace/current", symlink_target="src/app.py"),
    FileSpec("home/.gitconfig", b"[user]\n\tname = Agent\n"),
    FileSpec("home/.ssh/id_ed25519", b"-----BEGIN OPENSSH PRIVATE KEY-----\ncanary\n", 0o600),
    FileSpec("remote/origin.git/HEAD", b"ref: refs/heads/main\n"),
]


def new_run_id(prefix: str = "test") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sandbox(backend: str) -> Iterator[Sandbox]:
    cls = get_backend(backend)
    sb = cls.create(FIXTURE_FILES, run_id=new_run_id(), limits=TEST_LIMITS)
    try:
        yield sb
    finally:
        sb.destroy()
