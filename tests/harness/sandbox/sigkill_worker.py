"""A stand-in for a run worker, killed with SIGKILL by test_sigkill_reaper at a random moment.

Usage: python sigkill_worker.py BACKEND RUN_ID
Prints "creating" before the sandbox exists and "running" right before the long exec.
"""

from __future__ import annotations

import sys

from harness.sandbox.base import Limits, get_backend
from harness.sandbox.paths import FileSpec


def main(backend: str, run_id: str) -> None:
    limits = Limits(memory_bytes=256 * 1024**2, pids=64, lifetime_s=600)
    print("creating", flush=True)
    sb = get_backend(backend).create(
        [FileSpec("workspace/app.py", b"print(1)\n"), FileSpec("home/.netrc", b"machine x\n", 0o600)],
        run_id=run_id,
        limits=limits,
    )
    try:
        print("running", flush=True)
        sb.exec(["sh", "-c", f"sleep 60; : {run_id}"], timeout=120)
    finally:
        sb.destroy()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
