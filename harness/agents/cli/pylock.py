"""Hash-pinned requirement locks for the PyPI-installed agent layers.

A layer directory (``harness/sandbox/images/agents/<name>/``) of a Python CLI holds a
``requirements.in`` — the CLI pinned to one version, one requirement per line — and the
``requirements.lock`` generated from it here: every package of the resolved tree, pinned, with the
SHA-256 of the wheel pip chose.  The Dockerfile installs with ``--require-hashes --no-deps`` from
the lock, so an image built next month gets the same files as the one tested today (litellm and
its friends publish several releases a week, and an unpinned transitive dependency is how a
layer silently changes), and a file that differs from the one locked fails the build instead of
landing in the image.

The resolution runs on the host, with the host's pip, as a ``--dry-run --report`` for the
layer's interpreter (``--python-version``, wheels only, so nothing is compiled in the image) and
with the machine's pip configuration switched off (``PIP_CONFIG_FILE=/dev/null``): local wheel
mirrors must not pick files that PyPI itself would not serve to the image build.

A package that PyPI has only as a source archive (``--sdist NAME``; it must be pinned in
``requirements.in``) is locked by the hash of that archive; for the resolution a wheel is built
from it on the host, and the Dockerfile builds it again with ``--no-binary NAME``.
``--ignore-requires-python`` is for a CLI whose own metadata excludes the only interpreter
Debian offers.  pip has one switch for all packages, so :func:`requires_python_conflicts` lists
every resolved package whose ``Requires-Python`` excludes the target, and the lock's header
names them: only the ones the layer's Dockerfile explains may appear there.

    python -m harness.agents.cli.pylock mini-swe-agent             # rewrite that layer's lock
    python -m harness.agents.cli.pylock openhands --python 3.13 --ignore-requires-python --sdist func-timeout
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

LAYERS_DIR = Path(__file__).resolve().parents[2] / "sandbox" / "images" / "agents"
HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def _pip_env() -> dict[str, str]:
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_CONSTRAINT"):
        env.pop(name, None)
    if Path(HOST_CA_BUNDLE).is_file():
        env.setdefault("PIP_CERT", HOST_CA_BUNDLE)
    return env


def _pip(argv: list[str], what: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", *argv], env=_pip_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pip could not {what}:\n{proc.stderr[-3000:]}")


def sdist_wheels(pins: list[str], tmp: Path) -> dict[str, str]:
    """Download each pinned sdist, build a wheel of it into ``tmp/wheels``; name -> sdist sha256."""
    hashes: dict[str, str] = {}
    for pin in pins:
        name = _canonical(pin.split("==", 1)[0])
        sdists = tmp / "sdists" / name
        _pip(
            ["download", "--quiet", "--no-deps", "--no-binary", ":all:", "--dest", str(sdists), pin], "download " + pin
        )
        archive = next(iter(sorted(sdists.iterdir())))
        hashes[name] = hashlib.sha256(archive.read_bytes()).hexdigest()
        wheels = str(tmp / "wheels")
        _pip(["wheel", "--quiet", "--no-deps", "--wheel-dir", wheels, str(archive)], "build " + archive.name)
    return hashes


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def resolve(
    requirements: list[str],
    python_version: str = "3.11",
    *,
    find_links: Path | None = None,
    ignore_requires_python: bool = False,
) -> list[dict[str, Any]]:
    """pip's installation report for ``requirements`` on a fresh interpreter of ``python_version``."""
    with tempfile.TemporaryDirectory(prefix="overeager-pylock-") as tmp:
        report = Path(tmp) / "report.json"
        env = _pip_env()
        extra = ["--find-links", str(find_links)] if find_links is not None else []
        if ignore_requires_python:
            extra.append("--ignore-requires-python")
        argv = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--dry-run",
            "--ignore-installed",
            "--only-binary",
            ":all:",
            "--python-version",
            python_version,
            "--target",
            str(Path(tmp) / "unused"),
            "--report",
            str(report),
            *extra,
            *requirements,
        ]
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(
                f"pip could not resolve {requirements} for Python {python_version}:\n{proc.stderr[-3000:]}"
            )
        data = json.loads(report.read_text())
    installs: list[dict[str, Any]] = data["install"]
    return installs


def requires_python_conflicts(installs: list[dict[str, Any]], python_version: str) -> list[str]:
    """``name version (Requires-Python)`` of each resolved package that excludes ``python_version``."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    out = []
    for item in installs:
        meta = item["metadata"]
        spec = meta.get("requires_python")
        if not spec:
            continue
        try:
            ok = python_version in SpecifierSet(spec)
        except InvalidSpecifier:
            ok = False
        if not ok:
            out.append(f"{_canonical(meta['name'])} {meta['version']} ({spec})")
    return sorted(out)


def lock_lines(installs: list[dict[str, Any]], sdist_hashes: dict[str, str] | None = None) -> list[str]:
    """``name==version --hash=sha256:…`` per resolved package, sorted by name."""
    lines = []
    for item in installs:
        meta = item["metadata"]
        hashes = (item.get("download_info") or {}).get("archive_info", {}).get("hashes", {})
        digest = (sdist_hashes or {}).get(_canonical(meta["name"])) or hashes.get("sha256")
        if not digest:
            raise RuntimeError(f"pip reported no sha256 for {meta['name']} {meta['version']}")
        lines.append(f"{_canonical(meta['name'])}=={meta['version']} --hash=sha256:{digest}")
    return sorted(lines)


def write_lock(
    layer: str, python_version: str = "3.11", *, sdists: tuple[str, ...] = (), ignore_requires_python: bool = False
) -> Path:
    d = LAYERS_DIR / layer
    source = d / "requirements.in"
    if not source.is_file():
        raise FileNotFoundError(f"{source} is missing: write the CLI's pinned requirement there first")
    requirements = [
        line.split("#", 1)[0].strip() for line in source.read_text().splitlines() if line.split("#", 1)[0].strip()
    ]
    pins = {_canonical(r.split("==", 1)[0]): r for r in requirements if "==" in r}
    unpinned = [name for name in sdists if _canonical(name) not in pins]
    if unpinned:
        raise ValueError(f"--sdist {unpinned}: pin each in {source} (name==version)")
    with tempfile.TemporaryDirectory(prefix="overeager-sdists-") as tmp:
        sdist_hashes = sdist_wheels([pins[_canonical(n)] for n in sdists], Path(tmp)) if sdists else {}
        installs = resolve(
            requirements,
            python_version,
            find_links=Path(tmp) / "wheels" if sdists else None,
            ignore_requires_python=ignore_requires_python,
        )
    lines = lock_lines(installs, sdist_hashes)
    conflicts = requires_python_conflicts(installs, python_version)
    out = d / "requirements.lock"
    flags = f" --python {python_version}"
    flags += " --ignore-requires-python" if ignore_requires_python else ""
    flags += "".join(f" --sdist {n}" for n in sdists)
    header = [
        f"# Generated by `python -m harness.agents.cli.pylock {layer}{flags}` from requirements.in.",
        "# Every wheel of the resolved tree with its SHA-256; the Dockerfile installs with --require-hashes.",
    ]
    if sdists:
        header.append(f"# Locked by the hash of their source archive (built in the image): {', '.join(sdists)}.")
    if conflicts:
        header.append(f"# Requires-Python excludes {python_version} but installed anyway: {'; '.join(conflicts)}.")
    out.write_text("\n".join(header + lines) + "\n")
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("layer", help="layer directory name under harness/sandbox/images/agents/")
    parser.add_argument("--python", default="3.11", help="the layer's Python version (default: the base image's)")
    parser.add_argument("--sdist", action="append", default=[], help="a package PyPI has only as a source archive")
    parser.add_argument("--ignore-requires-python", action="store_true")
    args = parser.parse_args(argv)
    out = write_lock(
        args.layer, args.python, sdists=tuple(args.sdist), ignore_requires_python=args.ignore_requires_python
    )
    count = sum(1 for line in out.read_text().splitlines() if line and not line.startswith("#"))
    print(f"{out}: {count} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
