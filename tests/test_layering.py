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
    modules = [p for top in PURE for p in (REPO / top).rglob("*.py") if p.name != "__main__.py"]
    assert int(done.stdout.split()[0]) == len(modules) - len(PURE)  # every module (the tops are the roots)


def test_the_import_contract_holds():
    done = subprocess.run(
        [sys.executable, "scripts/check_imports.py"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout
