"""A new user's way there (issue 18 item 6): the var directory is honoured everywhere, and
``build_images`` without a Docker engine says so before spending a minute on debootstrap."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.management.commands.build_images import record_path

ROOT = Path(__file__).resolve().parents[2]


def _tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_build_images_without_an_engine_fails_before_debootstrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran = tmp_path / "debootstrap-ran"
    _tool(bin_dir, "docker", 'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock" >&2; exit 1')
    _tool(bin_dir, "debootstrap", f"touch {ran}; exit 1")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(CommandError, match=r"no Docker engine answers .*Cannot connect to the Docker daemon"):
        call_command("build_images")
    assert not ran.exists()


def test_images_json_goes_to_the_var_dir(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path / "elsewhere"
    assert record_path() == tmp_path / "elsewhere" / "images.json"


def test_the_local_model_lives_in_the_var_dir() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "from harness.gateway import local_model; print(local_model.DEFAULT_DIR)"],
        env={**os.environ, "OVEREAGER_VAR_DIR": "/srv/overeager-var"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "/srv/overeager-var/local-model"
