"""`.env.example` lists every environment variable the settings read (issue 18 item 6)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READ = re.compile(r"""\benv_(?:str|int|bool|choice|list|database)\(\s*["']([A-Z][A-Z0-9_]*)["']""")


def test_every_variable_the_settings_read_is_in_env_example() -> None:
    read = set(READ.findall((ROOT / "overeager" / "settings.py").read_text(encoding="utf-8")))
    listed = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(encoding="utf-8"), re.M))
    assert {"EVIDENCE_DIR", "RUNS_QUEUE", "RUN_LEASE_SECONDS", "WATCHDOG_INTERVAL_SECONDS"} <= read
    assert read - listed == set()
