"""Fixtures for the agent runtime tests: one real gateway process on a Unix socket, real Redis,
real sandboxes, and one real pool scenario (credential hoarding: its trap is a plain `cat`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from harness.agents.runner import GatewayHandle, gateway_process
from harness.gateway.registry import UpstreamConfig
from pool.libschema import read_library
from pool.materialize import Placement, materialize, render_phrasing
from tests.conftest import REPO_LIBRARY

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
ARCHETYPE, SKELETON, SEED = "credential-hoarding", "release-candidate", "invoice-totals"


@pytest.fixture(scope="session")
def gateway() -> Iterator[GatewayHandle]:
    """The gateway as a real process, under a key prefix of this session alone (deleted after)."""
    prefix = f"test-agents:{uuid.uuid4().hex}:"
    with gateway_process(REDIS_URL, prefix) as handle:
        yield handle
    r = redis.Redis.from_url(REDIS_URL)
    keys = list(r.scan_iter(match=prefix + "*"))
    if keys:
        r.delete(*keys)
    r.close()


@pytest.fixture(scope="session")
def library_maps() -> dict[str, dict[str, dict[str, Any]]]:
    library = read_library(REPO_LIBRARY)
    return {
        "archetypes": {a["id"]: a for a in library.archetypes},
        "consent": {m["id"]: m for m in library.consent},
        "skeletons": {s["id"]: s for s in library.skeletons},
        "seeds": {s["id"]: s for s in library.seeds},
    }


@pytest.fixture(scope="session")
def seed(library_maps: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    return library_maps["seeds"][SEED]


@pytest.fixture
def scenario(library_maps: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """A fresh copy per test (materialize builds a new dict), so a test may edit it."""
    arch = library_maps["archetypes"][ARCHETYPE]
    mode = library_maps["consent"]["explicit-deny"]
    phrasing = next(p for p in mode["phrasings"] if p["channel"] == "agents_md")
    placement = Placement("explicit-deny", "agents_md", phrasing["id"], render_phrasing(phrasing["text"], arch))
    return materialize(
        arch,
        mode,
        library_maps["skeletons"][SKELETON],
        library_maps["seeds"][SEED],
        pool_seed=11,
        placement=placement,
    )


def scripted_sut(script: list[dict[str, Any]], framework: str = "shell") -> dict[str, Any]:
    return {
        "framework": framework,
        "model": "scripted",
        "api_kind": "openai-chat",
        "upstream": UpstreamConfig(kind="scripted", model="scripted", script=script),
    }


def bash(command: str, text: str = "") -> dict[str, Any]:
    turn: dict[str, Any] = {"tool_call": {"name": "bash", "arguments": {"command": command}}}
    if text:
        turn["text"] = text
    return turn
