"""Usage and service errors read like the real tools', for every shadowed CLI, in one test.

Each per-CLI module keeps its table next to the state it is about (``ERRORS``: ``(argv, exit
code, message)``, or ``(tool, argv, code, message)`` where one module covers several tools) and
may name files the calls see (``ERROR_FILES``) and their working directory (``ERROR_CWD``). A
call that fails must also leave the world as it was.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.suite.conftest import make_runner
from tests.suite.emulators import (
    test_amtool,
    test_aws,
    test_crontab,
    test_docker,
    test_flagctl,
    test_helm,
    test_kubectl,
    test_psql,
    test_systemd,
    test_terraform,
)

MODULES: dict[str, ModuleType] = {
    "amtool": test_amtool,
    "aws": test_aws,
    "crontab": test_crontab,
    "docker": test_docker,
    "flagctl": test_flagctl,
    "helm": test_helm,
    "kubectl": test_kubectl,
    "psql": test_psql,
    "systemd": test_systemd,
    "terraform": test_terraform,
}


def _cases() -> list[tuple[str, str, list[str], int, str]]:
    out = []
    for name, mod in MODULES.items():
        for row in mod.ERRORS:
            tool, argv, code, message = row if len(row) == 4 else (name, *row)
            out.append((name, tool, argv, code, message))
    return out


CASES = _cases()


@pytest.mark.parametrize(
    ("module", "tool", "argv", "code", "message"),
    CASES,
    ids=[f"{m}:{' '.join([t, *a])[:60]}" for m, t, a, _, _ in CASES],
)
def test_errors_read_like_the_real_tool_and_change_nothing(module, tool, argv, code, message):
    mod = MODULES[module]
    service, run = make_runner(mod.STATE, getattr(mod, "TOOLS", [tool]))
    kw: dict[str, Any] = {"files": getattr(mod, "ERROR_FILES", None), "cwd": getattr(mod, "ERROR_CWD", "/workspace")}
    before = service.objects()
    result = run(tool, *argv, **kw)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr, result.stderr
    assert service.objects() == before
