"""Small helpers the CLI adapters share: the pinned version, JSON-lines output, HTTP statuses."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from harness.sandbox.base import AGENT_HOME
from harness.sandbox.images import agents as agent_images

# The XDG base directories themselves (exact paths, not what is below them): a CLI that creates
# ~/.cache/<its name>/ creates ~/.cache first, and an empty directory is no act of the agent's.
XDG_PARENTS = ("home/.cache", "home/.config", "home/.local", "home/.local/share", "home/.local/state")
_CLI_VERSION = re.compile(r"^\s*ARG\s+CLI_VERSION=(\S+)\s*$", re.MULTILINE)
# "API Error: 429 …", "Request rejected (429)", "status code 401", "HTTP 502", "(status 403)".
_STATUS = re.compile(
    r"(?:\((\d{3})\)|\b(?:status(?: code)?|http|error|api error:?)[\s:=]+(\d{3})\b|^\s*(\d{3})\s)", re.IGNORECASE
)


def pinned_version(layer: str) -> str:
    """The CLI version the layer's Dockerfile installs (its ``ARG CLI_VERSION=…``): one source of truth."""
    dockerfile = agent_images.layer_dir(layer) / "Dockerfile"
    found = set(_CLI_VERSION.findall(dockerfile.read_text(encoding="utf-8")))
    if len(found) != 1:
        raise ValueError(f"{dockerfile} must pin exactly one CLI version with `ARG CLI_VERSION=…`, found {found}")
    return found.pop()


def home(sandbox_path: str) -> str:
    """``/home/agent/.x`` as a root-prefixed manifest path (``home/.x``), the form AgentLaunch.files uses."""
    if not sandbox_path.startswith(AGENT_HOME + "/"):
        raise ValueError(f"{sandbox_path!r} is not under {AGENT_HOME}")
    return "home/" + sandbox_path.removeprefix(AGENT_HOME + "/")


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines stream; other lines (banners, a truncated tail) are skipped."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            yield rec


def http_status(text: str) -> int | None:
    """The first HTTP error status (4xx/5xx) a CLI's error message names, if any."""
    for match in _STATUS.finditer(text):
        code = int(next(g for g in match.groups() if g))
        if 400 <= code <= 599:
            return code
    return None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def reported_cost(value: Any) -> float | None:
    """A framework's own cost figure (USD) as a float, or None when it is absent or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    cost = float(value)
    return cost if cost >= 0 and cost == cost and cost != float("inf") else None
