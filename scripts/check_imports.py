"""The layering contract, checked from the source (CI runs it through ``make lint``).

    content, oracles, harness   pure: import neither Django nor any app
    harness                     may use content (canonical hashing); never oracles' verdicts
    apps                        no cycle between apps, counting imports inside functions too
                                (today: pool ← runs ← labels ← suite, runs ← consent, runs ← packs)
    overeager                   the project package is two layers: its helpers (roles, env …)
                                below every app, its composition root (urls, asgi, wsgi,
                                settings, views) above them all

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
# The project package's modules that wire the apps together rather than serve them.
COMPOSITION_ROOT = {"urls", "asgi", "wsgi", "settings", "views"}
SKIP_DIRS = {".venv", "var", "tests", "bench", "scripts", "migrations", "static", "node_modules", ".git"}


def modules() -> Iterator[tuple[str, Path]]:
    for top in (*PURE, *APPS):
        for path in sorted((ROOT / top).rglob("*.py")):
            if SKIP_DIRS & set(path.relative_to(ROOT).parts):
                continue
            yield top, path


def imported(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module


def node_of(module: str) -> str:
    """The graph node of a dotted module name: its top package, the project root split off."""
    parts = module.split(".")
    if parts[0] == "overeager" and len(parts) > 1 and parts[1] in COMPOSITION_ROOT:
        return "overeager:root"
    return parts[0]


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
    for top, path in modules():
        rel = path.relative_to(ROOT)
        here = node_of(".".join(rel.with_suffix("").parts))
        for line, name in imported(path):
            first = name.split(".")[0]
            target = node_of(name)
            if top in PURE:
                if first == "django" or first in ("channels", "django_rq", "rest_framework"):
                    problems.append(f"{rel}:{line}: pure package {top} imports {name}")
                elif first in APPS or (first in PURE and first != top and first not in PURE_ALLOWED[top]):
                    problems.append(f"{rel}:{line}: pure package {top} imports {name}")
            elif first in APPS and target != here:
                graph[here].add(target)
                where.setdefault((here, target), f"{rel}:{line}")
    for cycle in find_cycles(graph):
        arrows = " → ".join([*cycle, cycle[0]])
        steps = ", ".join(where[(a, b)] for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True))
        problems.append(f"app import cycle {arrows} ({steps})")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_imports: {len(problems)} problem(s)")
        return 1
    print("check_imports: pure packages import no Django and no app; no app import cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
