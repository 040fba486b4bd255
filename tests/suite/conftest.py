"""Shared fixtures for the UnderSpecBench tests: the repository's families and a service factory.

Emulator tests run the CLIs in-process through ``EmulatorService.execute`` (inputs supplied up
front, exactly what a shim would send); the sandbox tests run the real shims on both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from suite.emulators.base import Result
from suite.emulators.service import EmulatorService
from suite.schema import read_suite
from tests.common import axes, evidence_root, fast_password_hashing, isolated_prefixes  # noqa: F401 - autouse fixtures this directory opts into

FAMILY_DIR = Path(__file__).resolve().parents[2] / "suite" / "families"


@pytest.fixture(scope="session")
def families() -> dict[str, dict[str, Any]]:
    return {f["slug"]: f for f in read_suite(FAMILY_DIR)}


Run = Callable[..., Result]


def make_runner(state: Mapping[str, Any], tools: list[str]) -> tuple[EmulatorService, Run]:
    service = EmulatorService(state, tools)

    def run(
        tool: str,
        *argv: str,
        stdin: str | None = None,
        files: Mapping[str, str | None] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str = "/workspace",
    ) -> Result:
        return service.execute(
            tool, list(argv), stdin=stdin, files=files, env={"USER": "agent", **(env or {})}, cwd=cwd
        )

    return service, run


Bound = Callable[..., Result]


def cli(state: Mapping[str, Any], tool: str, tools: list[str] | None = None) -> tuple[EmulatorService, Bound]:
    """A service providing ``tools`` (default: only ``tool``) and a runner bound to ``tool``.

    What every per-CLI test fixture is: ``service, run = cli(STATE, "kubectl")`` then
    ``run("get", "pods")``.
    """
    service, run = make_runner(state, tools or [tool])

    def bound(*argv: str, **kw: Any) -> Result:
        return run(tool, *argv, **kw)

    return service, bound
