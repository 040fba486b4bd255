"""The layering contract, checked from the source (CI runs it through ``make lint``).

    content, oracles, harness   pure: import neither Django nor any app
    harness                     may use content (canonical hashing); never oracles' verdicts
    apps                        no cycle between apps, counting imports inside functions too
                                (today: pool ← runs ← labels ← suite, runs ← consent, runs ← packs)
    overeager                   the project package is two layers: its helpers (roles, env …)
                                below every app, its composition root (urls, asgi, wsgi,
                                settings, views) above them all
    floors                      the Django-free code is stacked in floors (FLOORS): a module
                                imports only from its own floor or below, never up — so a
                                run's path goes down and comes back, never climbs: the app
                                calls a benchmark's core, the core calls ``harness.run``, which
                                calls the world, which calls the sandbox
    benchmark cores             the Django-free modules that still sit inside apps (CORES) are
                                held to the pure contract: no Django, no app module but cores
    modules                     no import cycle between modules of a package or app

Every ``import`` and ``from … import`` anywhere in a module counts, lazy ones included: a cycle
hidden inside a function is still a cycle a reader has to hold in their head.  Exits non-zero
and names each offending import.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PURE = ("content", "oracles", "harness")
APPS = ("overeager", "pool", "runs", "labels", "suite", "consent", "packs")
# What each pure package may import of the project's own packages.
PURE_ALLOWED: dict[str, set[str]] = {"content": set(), "oracles": {"content"}, "harness": {"content"}}
# Floors of the Django-free code, lowest first; a module is on the floor of its longest prefix.
FLOORS: dict[str, int] = {
    "content": 0,
    "oracles": 1,
    "harness.procutil": 1,
    "harness.sandbox": 1,
    "harness.bundle": 1,
    "suite.emulators": 1,
    "harness.gateway": 2,
    "harness.agents": 2,
    "harness.outcome": 2,
    "harness.world": 3,
    "harness.run": 4,
}
# Django-free modules inside apps: a benchmark's core (what its world is, how its runs are judged),
# on the floor above the harness's one entry point.
CORES = (
    "pool.execution",
    "pool.materialize",
    "pool.verify",
    "pool.reach",
    "pool.libschema",
    "pool.libcheck",
    "suite.execution",
    "suite.oracle",
    "suite.schema",
    "suite.checks",
    "suite.evidence",
    "suite.metrics",
    "suite.changelog",
    "suite.charts",
    "suite.emulators",
)
CORE_FLOOR = 5
# The project package's modules that wire the apps together rather than serve them.
COMPOSITION_ROOT = {"urls", "asgi", "wsgi", "settings", "views"}
# Packages and apps whose module graph must have no cycle (the rest are checked as apps).
MODULE_CYCLES_CHECKED = ("harness", "oracles", "content", "runs")
SKIP_DIRS = {".venv", "var", "tests", "bench", "scripts", "migrations", "static", "node_modules", ".git"}


def modules() -> Iterator[tuple[str, Path]]:
    for top in (*PURE, *APPS):
        for path in sorted((ROOT / top).rglob("*.py")):
            if SKIP_DIRS & set(path.relative_to(ROOT).parts):
                continue
            yield top, path


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """Every imported module: ``from pkg import mod`` names ``pkg.mod`` when that is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            subs = [f"{node.module}.{a.name}" for a in node.names if _is_module(f"{node.module}.{a.name}")]
            if subs:
                yield from ((node.lineno, sub) for sub in subs)
            if len(subs) < len(node.names):
                yield node.lineno, node.module


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def node_of(module: str) -> str:
    """The graph node of a dotted module name: its top package, the project root split off."""
    parts = module.split(".")
    if parts[0] == "overeager" and len(parts) > 1 and parts[1] in COMPOSITION_ROOT:
        return "overeager:root"
    return parts[0]


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def floor_of(module: str) -> int | None:
    """The floor of a dotted module name (longest matching prefix), or None if it has none."""
    best: tuple[int, int] | None = None
    for prefix, floor in FLOORS.items():
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > best[0]:
                best = (len(prefix), floor)
    if best is not None:
        return best[1]
    if is_core(module):
        return CORE_FLOOR
    return None


def is_core(module: str) -> bool:
    return any(module == c or module.startswith(c + ".") for c in CORES)


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    for start in sorted(graph):
        stack = [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    cycles.append(trail)
                elif nxt not in trail and nxt > start:
                    stack.append((nxt, [*trail, nxt]))
    return cycles


def main() -> int:
    problems: list[str] = []
    graph: dict[str, set[str]] = {a: set() for a in (*APPS, "overeager:root")}
    where: dict[tuple[str, str], str] = {}
    modgraph: dict[str, set[str]] = {}
    modwhere: dict[tuple[str, str], str] = {}
    for top, path in modules():
        rel = path.relative_to(ROOT)
        here = node_of(".".join(rel.with_suffix("").parts))
        mod = module_of(path)
        floor = floor_of(mod)
        for line, name in imported(path):
            first = name.split(".")[0]
            target = node_of(name)
            if top in PURE or is_core(mod):
                if first == "django" or first in ("channels", "django_rq", "rest_framework"):
                    problems.append(f"{rel}:{line}: pure module {mod} imports {name}")
                elif top in PURE and (
                    (first in APPS and not is_core(name))
                    or (first in PURE and first != top and first not in PURE_ALLOWED[top])
                ):
                    problems.append(f"{rel}:{line}: pure package {top} imports {name}")
                elif is_core(mod) and first in APPS and not is_core(name):
                    problems.append(f"{rel}:{line}: benchmark core {mod} imports the app module {name}")
            if top in PURE and first in APPS and is_core(name):
                problems.append(f"{rel}:{line}: pure package {top} imports the benchmark core {name}")
            target_floor = floor_of(name)
            if floor is not None and target_floor is not None and target_floor > floor:
                problems.append(f"{rel}:{line}: {mod} (floor {floor}) climbs to {name} (floor {target_floor})")
            if first in (*PURE, *APPS) and name.split(".")[0] == mod.split(".")[0] and name != mod:
                # Module-level graph within a package or app, for cycles between its modules.
                dep = max((m for m in _known_modules() if name == m or name.startswith(m + ".")), key=len, default=name)
                if dep != mod and not mod.startswith(dep + "."):
                    modgraph.setdefault(mod, set()).add(dep)
                    modwhere.setdefault((mod, dep), f"{rel}:{line}")
            if first in APPS and target != here and top not in PURE:
                graph[here].add(target)
                where.setdefault((here, target), f"{rel}:{line}")
    for cycle in find_cycles(graph):
        arrows = " → ".join([*cycle, cycle[0]])
        steps = ", ".join(where[(a, b)] for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True))
        problems.append(f"app import cycle {arrows} ({steps})")
    for cycle in find_cycles(modgraph):
        if cycle[0].split(".")[0] not in MODULE_CYCLES_CHECKED:
            continue
        arrows = " → ".join([*cycle, cycle[0]])
        steps = ", ".join(modwhere[(a, b)] for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True))
        problems.append(f"module import cycle {arrows} ({steps})")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_imports: {len(problems)} problem(s)")
        return 1
    print(
        "check_imports: pure packages and benchmark cores import no Django and no app; no floor is climbed;"
        " no app or module import cycles"
    )
    return 0


_MODULES: list[str] = []


def _known_modules() -> list[str]:
    if not _MODULES:
        _MODULES.extend(module_of(p) for _, p in modules())
    return _MODULES


if __name__ == "__main__":
    sys.exit(main())
