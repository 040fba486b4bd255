"""Per-run harness overhead of each sandbox backend, next to the Docker floor.

One "run" here is everything the harness adds around an agent, through its one entry point
(``harness.run.run``): build the world (the sandbox with the fixture's files, its shims, its
daemon — network sink, package index, scheduler — and its home skeleton), take the "before"
manifest and records, exec ``true``, take the "after" manifest, records and trace, destroy.  The
bare sandbox (no world features: create, manifest, exec, manifest, destroy) is measured beside
it.  The floor is ``docker run --rm --network none IMAGE true`` through the CLI, in the same loop
(interleaved, so machine noise hits all alike).  Targets (issue 30): with the world features on,
docker <= 1.5x the floor and bwrap median <= 150 ms.  The last table says where a world run's
time goes, phase by phase (medians).

    .venv/bin/python bench/sandbox_overhead.py [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.run import ScriptActor
from harness.run import run as run_in_world
from harness.sandbox import images
from harness.sandbox.base import get_backend
from harness.sandbox.manifest import diff
from harness.sandbox.paths import FileSpec
from harness.world import WorldSpec

PHASES: dict[str, list[dict[str, float]]] = {}


def fixture() -> list[FileSpec]:
    """~40 files, ~200 KB: a small Python service with tests, docs, CI config and dotfiles."""
    files: list[FileSpec] = []
    module = (
        "import logging\n\nlog = logging.getLogger(__name__)\n\n\n"
        "def handler_{i}(request: dict) -> dict:\n"
        '    """Validate and route request kind {i}."""\n'
        "    if not request.get('id'):\n        raise ValueError('missing id')\n"
        "    log.info('handling %s', request['id'])\n    return {{'ok': True, 'kind': {i}}}\n\n"
    )
    for i in range(20):
        body = "".join(module.format(i=i * 10 + j) for j in range(24))
        files.append(FileSpec(f"workspace/service/handlers_{i:02d}.py", body.encode()))
    for i in range(10):
        test = f"from service.handlers_{i:02d} import *\n\n" + "".join(
            f"def test_handler_{i}_{j}() -> None:\n    assert handler_{i * 10 + j}({{'id': 1}})['ok']\n\n"
            for j in range(30)
        )
        files.append(FileSpec(f"workspace/tests/test_handlers_{i:02d}.py", test.encode()))
    docs = "".join(f"## Section {i}\n\nThe service routes request kind {i} to its handler.\n\n" for i in range(400))
    files += [
        FileSpec("workspace/README.md", docs.encode()),
        FileSpec("workspace/pyproject.toml", b'[project]\nname = "service"\nversion = "1.4.2"\n'),
        FileSpec("workspace/.gitignore", b"__pycache__/\n*.pyc\n.env\n"),
        FileSpec("workspace/.env", b"DATABASE_URL=postgres://svc:canary-7f3a@db/svc\n", 0o600),
        FileSpec("workspace/Makefile", b"test:\n\tpytest -q\n"),
        FileSpec("workspace/scripts/deploy.sh", b"#!/bin/sh\nset -e\nmake test\n", 0o755),
        FileSpec("workspace/.github/workflows/ci.yml", b"on: [push]\njobs: {}\n"),
        FileSpec("home/.gitconfig", b"[user]\n\tname = Dev\n\temail = dev@example.org\n"),
        FileSpec("home/.ssh/id_ed25519", b"-----BEGIN OPENSSH PRIVATE KEY-----\ncanary\n", 0o600),
        FileSpec("remote/origin.git/HEAD", b"ref: refs/heads/main\n"),
    ]
    return files


def one_run(backend: str, files: list[FileSpec]) -> float:
    cls = get_backend(backend)
    started = time.perf_counter()
    sb = cls.create(files, run_id=f"bench-{uuid.uuid4().hex[:8]}")
    try:
        before = sb.manifest()
        res = sb.exec(["true"], timeout=30)
        after = sb.manifest()
        changes = diff(before, after)
    finally:
        sb.destroy()
    elapsed = time.perf_counter() - started
    if res.exit_code != 0 or changes:
        raise SystemExit(f"{backend}: unexpected result {res} / {changes}")
    return elapsed


def world_run(backend: str, files: list[FileSpec]) -> float:
    started = time.perf_counter()
    raw = run_in_world(WorldSpec(files=tuple(files)), ScriptActor("true\n"), backend=backend, run_id="bench-world")
    elapsed = time.perf_counter() - started
    if raw.result.exit_code != 0 or raw.changes:
        raise SystemExit(f"{backend}: unexpected result {raw.result} / {raw.changes}")
    PHASES.setdefault(backend, []).append({**raw.timings, "destroy": elapsed - raw.timings["total"]})
    return elapsed


def floor_run(tag: str) -> float:
    started = time.perf_counter()
    subprocess.run(["docker", "run", "--rm", "--network", "none", tag, "true"], check=True)
    return time.perf_counter() - started


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    # Nearest-rank percentile: with n >= 20 this is an observed value, never an interpolation.
    return ordered[max(0, int(0.95 * len(ordered) + 0.999999) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    files = fixture()
    size = sum(len(f.content) for f in files)
    tag = images.image_tag()
    steps: dict[str, Callable[[], float]] = {
        "floor (docker run --rm true)": lambda: floor_run(tag),
        "docker, world": lambda: world_run("docker", files),
        "bwrap, world": lambda: world_run("bwrap", files),
        "docker, bare sandbox": lambda: one_run("docker", files),
        "bwrap, bare sandbox": lambda: one_run("bwrap", files),
    }
    series: dict[str, list[float]] = {name: [] for name in steps}
    for step in steps.values():  # warm-up: page cache, image layers, imports
        step()
    for _ in range(args.runs):
        for name, step in steps.items():
            series[name].append(step())
    floor = statistics.median(series["floor (docker run --rm true)"])
    print(f"fixture: {len(files)} files, {size / 1024:.0f} KiB; image {tag}; {args.runs} runs each, interleaved")
    print(f"{'backend':32}{'median ms':>11}{'p95 ms':>9}{'x floor':>9}")
    for name, values in series.items():
        med = statistics.median(values)
        print(f"{name:32}{med * 1000:>11.0f}{p95(values) * 1000:>9.0f}{med / floor:>9.2f}")
    print("\nwhere a world run's time goes (median ms per phase)")
    names = ["world_create", "world_features", "before", "turn", "after", "destroy"]
    print(f"{'backend':10}" + "".join(f"{n:>16}" for n in names))
    for backend, rows in PHASES.items():
        rows = rows[1:]  # the warm-up
        cells = [statistics.median(r.get(n, 0.0) for r in rows) * 1000 for n in names]
        print(f"{backend:10}" + "".join(f"{c:>16.0f}" for c in cells))


if __name__ == "__main__":
    main()
