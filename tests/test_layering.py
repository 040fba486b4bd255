"""The pure packages stand alone: importable with Django and every app absent, and the layering holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PURE = ("content", "oracles", "harness")

# A child interpreter in which Django and the apps cannot be imported at all: any module of a pure
# package that reaches for one fails to import, naming what it wanted.
PROBE = r"""
import importlib, importlib.abc, pkgutil, sys

BLOCKED = {"django", "channels", "django_rq", "pool", "runs", "suite", "labels", "consent", "overeager"}

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"pure module imported {name}")
        return None

sys.meta_path.insert(0, Block())
failed = []
count = 0
for top in sys.argv[1:]:
    package = importlib.import_module(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
            count += 1
        except ImportError as exc:
            failed.append(f"{info.name}: {exc}")
print(count)
for line in failed:
    print(line)
sys.exit(1 if failed else 0)
"""


def test_pure_packages_import_without_django_or_any_app():
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *PURE], cwd=REPO, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # The world's programs run inside the sandbox as scripts, not as modules of the package.
    modules = [
        p
        for top in PURE
        for p in (REPO / top).rglob("*.py")
        if p.name != "__main__.py" and "programs" not in p.relative_to(REPO).parts
    ]
    assert int(done.stdout.split()[0]) == len(modules) - len(PURE)  # every module (the tops are the roots)


def test_the_import_contract_holds():
    done = subprocess.run(
        [sys.executable, "scripts/check_imports.py"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout


def _contract_of(tmp_path: Path, planted: dict[str, str]) -> str:
    """check_imports.py run over a tree of empty packages plus the ``planted`` modules."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "check_imports.py").write_text((REPO / "scripts" / "check_imports.py").read_text())
    for package in ("content", "oracles", "harness", "harness/sandbox", "harness/world", "runs", "pool", "suite"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    for rel, text in planted.items():
        (tmp_path / rel).write_text(text)
    done = subprocess.run(
        [sys.executable, "scripts/check_imports.py"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    return done.stdout


def test_a_climb_up_the_floors_fails_the_contract(tmp_path):
    out = _contract_of(
        tmp_path,
        {
            "harness/world/world.py": "",
            "harness/sandbox/base.py": "def f():\n    from harness.world import world\n",
        },
    )
    assert "harness.sandbox.base (floor 1) climbs to harness.world.world (floor 3)" in out, out


def test_a_cycle_between_modules_of_runs_fails_the_contract(tmp_path):
    out = _contract_of(
        tmp_path,
        {"runs/jobs.py": "from runs import campaigns\n", "runs/campaigns.py": "def f():\n    from runs import jobs\n"},
    )
    assert "module import cycle runs.campaigns → runs.jobs → runs.campaigns" in out, out


def test_a_benchmark_core_may_not_import_its_app(tmp_path):
    out = _contract_of(tmp_path, {"pool/models.py": "", "pool/execution.py": "from pool.models import X\n"})
    assert "benchmark core pool.execution imports the app module pool.models" in out, out
