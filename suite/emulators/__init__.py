"""The shadowed CLIs: registry of tools and of the state sections they act on.

A *section* is one emulated system (``kubernetes``, ``aws``, ``postgres`` …) inside a run's state
dict; its module provides ``prepare(section, now)`` (fill in what the real system would add),
``state_problems(section)`` (authoring errors, for the family validator) and
``objects(section) -> {id: canonical value}`` (what the oracle diffs). A *tool* is a command name
the sandbox's PATH shadows; several tools may share a section (``systemctl``, ``service`` and
``journalctl`` all act on ``systemd``).

``git`` is not emulated: families get the real git with local bare remotes.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from suite.emulators.base import (
    CLOCK_STEP,
    DEFAULT_CLOCK,
    MAX_FILE,
    Call,
    Result,
    UnsupportedOption,
    end_call,
    parse_time,
    start_call,
    unread_options,
)

# section -> module
SECTIONS: dict[str, str] = {
    "kubernetes": "suite.emulators.kubectl",
    "helm": "suite.emulators.helm",
    "terraform": "suite.emulators.terraform",
    "aws": "suite.emulators.aws",
    "systemd": "suite.emulators.systemd",
    "docker": "suite.emulators.docker",
    "postgres": "suite.emulators.psql",
    "crontab": "suite.emulators.crontab",
    "flags": "suite.emulators.flagctl",
    "alertmanager": "suite.emulators.amtool",
}
# tool -> (module, sections it needs in the state)
TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "kubectl": ("suite.emulators.kubectl", ("kubernetes",)),
    "helm": ("suite.emulators.helm", ("helm", "kubernetes")),
    "terraform": ("suite.emulators.terraform", ("terraform",)),
    "aws": ("suite.emulators.aws", ("aws",)),
    "systemctl": ("suite.emulators.systemd", ("systemd",)),
    "service": ("suite.emulators.systemd", ("systemd",)),
    "journalctl": ("suite.emulators.systemd", ("systemd",)),
    "docker": ("suite.emulators.docker", ("docker",)),
    "psql": ("suite.emulators.psql", ("postgres",)),
    "crontab": ("suite.emulators.crontab", ("crontab",)),
    "flagctl": ("suite.emulators.flagctl", ("flags",)),
    "amtool": ("suite.emulators.amtool", ("alertmanager",)),
}
REAL_TOOLS = ("git",)
CLOCK_KEY = "clock"


def module(name: str) -> ModuleType:
    return importlib.import_module(name)


def tool_names() -> list[str]:
    return sorted(TOOLS)


def command(tool: str) -> Callable[[dict[str, Any], Call], Result]:
    mod = module(TOOLS[tool][0])
    fn: Callable[[dict[str, Any], Call], Result] = mod.COMMANDS[tool]
    return fn


def clock_start(state: Mapping[str, Any]) -> str:
    return str(state.get(CLOCK_KEY) or DEFAULT_CLOCK)


def call_time(state: Mapping[str, Any], seq: int) -> Any:
    return parse_time(clock_start(state)) + CLOCK_STEP * seq


def prepare_state(authored: Mapping[str, Any]) -> dict[str, Any]:
    """The initial emulated state of a run: the authored sections with system defaults filled in."""
    state = copy.deepcopy(dict(authored))
    state.setdefault(CLOCK_KEY, DEFAULT_CLOCK)
    now = parse_time(clock_start(state))
    for name, mod_name in SECTIONS.items():
        if name in state:
            module(mod_name).prepare(state[name], now)
    for name, mod_name in SECTIONS.items():
        if name in state:
            link = getattr(module(mod_name), "link", None)
            if link is not None:
                link(state)
    return state


def state_problems(authored: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for name, value in authored.items():
        if name == CLOCK_KEY:
            try:
                parse_time(str(value))
            except ValueError:
                problems.append(f"clock: {value!r} is not an ISO 8601 time such as '{DEFAULT_CLOCK}'")
            continue
        if name not in SECTIONS:
            problems.append(f"{name}: unknown state section; known: {', '.join(sorted(SECTIONS))}, clock")
            continue
        problems.extend(module(SECTIONS[name]).state_problems(value))
    return problems


def objects(state: Mapping[str, Any]) -> dict[str, Any]:
    """Every emulated object's id and canonical value (the oracle's view of the state)."""
    out: dict[str, Any] = {}
    for name, mod_name in SECTIONS.items():
        if name in state:
            out.update(module(mod_name).objects(state[name]))
    return dict(sorted(out.items()))


def run_call(state: dict[str, Any], call: Call) -> Result:
    """Run one call on ``state`` (changed in place). The service gives it a copy."""
    section = TOOLS[call.tool][1][0]
    # kubectl without a cluster says what kubectl says; helm keeps its releases next to clusters.
    if section not in state and call.tool not in ("kubectl", "helm"):
        return Result(stderr=f"{call.tool}: this environment has no {section} state\n", exit_code=1)
    tool = command(call.tool)
    start_call()
    try:
        result = tool(state, call)
        unread = unread_options() if result.exit_code == 0 else []
    finally:
        end_call()
    if not unread:
        return result
    # An option the call gave and nothing read would be accepted and ignored, which is never what
    # the real tool does: answer as the tool answers an option it does not know. The second run
    # stops at the parser (before any use of the state, which is discarded either way).
    start_call(refuse=[o for o, _ in unread])
    try:
        refused = tool(state, call)
    finally:
        end_call()
    if refused.exit_code == 0:
        flags = ", ".join(flag for _, flag in unread)
        refused = Result(stderr=f"{call.tool}: unknown flag: {flags}\n", exit_code=1)
    raise UnsupportedOption(refused)


def too_large_result(call: Call, path: str) -> Result:
    """The tool's answer to an input over the cap (:class:`~suite.emulators.base.InputTooLarge`).

    A module may say it its own way (``input_too_large(call, path)``, kubectl's "Request entity
    too large"); otherwise it is the operating system's EFBIG text, which any tool would print.
    """
    hook = getattr(module(TOOLS[call.tool][0]), "input_too_large", None)
    if hook is not None:
        result: Result = hook(call, path)
        return result
    shown = "standard input" if path == "-" else call.shown(path)
    return Result(stderr=f"{call.tool}: {shown}: File too large (limit {MAX_FILE} bytes)\n", exit_code=1)
