"""Run a command and measure its wall time and peak RSS truthfully.

``wait4``'s ``ru_maxrss`` of a child started straight from a large process (pytest, a bench that
has just seeded 10,000 runs) is at least the *parent's* peak: subprocess starts children with
``vfork``, and at ``exec`` Linux folds the old address space's high-water mark — the parent's —
into the child's.  So the command is started through a small launcher process, which forks it
from its own ~10 MB image and reports the child's rusage.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence

_LAUNCHER = r"""
import os, sys, time
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(f"\n@@measured {os.waitstatus_to_exitcode(status)} {usage.ru_maxrss} {time.perf_counter() - started}", flush=True)
"""


def measured(argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> tuple[int, float, float, str]:
    """Run ``argv``; return (exit code, seconds, peak RSS in MB, combined output)."""
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *argv],
        env=dict(env),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    text = proc.stdout.decode(errors="replace")
    head, _, tail = text.rpartition("\n@@measured ")
    code, rss_kb, seconds = tail.split()
    return int(code), float(seconds), int(rss_kb) / 1024, head
