"""``manage.py sandbox_selfcheck`` works with the runtime requirements only (issue 17 item 9)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from harness.sandbox import selfcheck

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_and_its_checks_import_without_pytest() -> None:
    """After `make install` it failed with "No module named 'pytest'"."""
    code = (
        "import sys; sys.modules['pytest'] = None\n"  # an import of pytest now raises ImportError
        "import django; django.setup()\n"
        "import runs.management.commands.sandbox_selfcheck, harness.sandbox.selfcheck\n"
        "print('ok')\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "overeager.settings"}
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


def test_the_check_list_includes_every_escape_probe() -> None:
    from harness.sandbox import probes

    assert {f"probe {name}" for name in probes.PROBE_NAMES} <= set(selfcheck.CHECKS)


def test_the_command_prints_blocked_probes_and_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    picked = {
        k: selfcheck.CHECKS[k] for k in ("runs as the unprivileged agent", "probe write-etc", "probe outlive-exec")
    }
    monkeypatch.setattr(selfcheck, "CHECKS", picked)
    out = io.StringIO()
    call_command("sandbox_selfcheck", "--backend", "bwrap", stdout=out)
    text = out.getvalue()
    assert "probe write-etc" in text and "blocked" in text and "ESCAPED" not in text
    assert "all checks passed" in text


def test_a_failing_check_fails_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selfcheck, "CHECKS", {"probe always escapes": lambda sb: "escaped: on purpose"})
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 check"):
        call_command("sandbox_selfcheck", "--backend", "bwrap", stdout=out)
    assert "ESCAPED" in out.getvalue()
