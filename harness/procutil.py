"""Child processes that must not outlive the process that started them."""

from __future__ import annotations

import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """``preexec_fn`` for ``subprocess.Popen``: the kernel sends ``sig`` to the child when its parent dies.

    A single prctl call, so it is safe between fork and exec. Linux ties it to the *thread* that
    forked: start such children from a thread that lives as long as they should (the worker's
    main thread does).
    """
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
