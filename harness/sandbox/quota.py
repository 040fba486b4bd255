"""A size- and inode-limited filesystem for a sandbox's writable roots (both backends).

Neither backend bounds disk use by itself: bwrap's roots are host directories, Docker's overlay2
layer on ext4 has no quota.  So the roots live on a filesystem of their own: a sparse image file
(``Limits.disk_bytes``, blocks allocated only as they are written) formatted ext4 with
``Limits.disk_inodes`` inodes and loop-mounted ``nosuid,nodev`` on the host; the three roots are
directories in it, bind-mounted into the sandbox.  A full disk or inode table is then an
``ENOSPC`` inside the sandbox, never a full host disk.  Making one costs ~0.1 s (mkfs without a
journal: the roots are scratch; a host crash loses the sandbox anyway).

It needs root (mount) and ``mkfs.ext4``; where either is missing :func:`available` is false, the
backends fall back to unbounded roots and ``manage.py sandbox_selfcheck`` reports the quota check
as failed.  Unmounting is part of destroy and of the reaper (:func:`unmount_under`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

IMAGE_NAME = "roots.img"


def available() -> bool:
    return os.geteuid() == 0 and shutil.which("mkfs.ext4") is not None and os.path.exists("/dev/loop-control")


def make(state: Path, size_bytes: int, inodes: int, owner: int) -> Path:
    """Create, format and mount the roots filesystem at ``state/roots``; returns the mount point."""
    image, mountpoint = state / IMAGE_NAME, state / "roots"
    mountpoint.mkdir(mode=0o711, exist_ok=True)
    with open(image, "xb") as fh:
        fh.truncate(size_bytes)  # sparse
    os.chmod(image, 0o600)
    _run(
        [
            "mkfs.ext4",
            "-q",
            "-F",
            "-m",
            "0",  # no blocks reserved for root: the agent is the only writer
            "-N",
            str(inodes),
            "-O",
            "^has_journal",
            "-E",
            "nodiscard",
            str(image),
        ]
    )
    _run(["mount", "-o", "loop,nosuid,nodev,noatime", str(image), str(mountpoint)])
    os.chmod(mountpoint, 0o711)  # noqa: S103 - the agent's uid traverses to its roots
    lost = mountpoint / "lost+found"
    if lost.is_dir():
        lost.rmdir()  # mkfs's, outside every root; one less thing on a path a manifest could see
    del owner  # the roots inside are created and chowned by the backend
    return mountpoint


def unmount_under(state: Path) -> None:
    """Unmount every filesystem mounted at or below ``state`` (destroy, reaper); then the image
    file and the directories can be removed.  Lazy (``-l``) if busy: a process still holding a
    file there keeps the blocks, not the mount point."""
    prefix = os.path.realpath(state)
    for target in sorted(_mounts_under(prefix), key=len, reverse=True):
        if subprocess.run(["umount", target], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", target], capture_output=True)


def _mounts_under(prefix: str) -> list[str]:
    out = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                target = line.split()[4].replace("\\040", " ")
                if target == prefix or target.startswith(prefix + "/"):
                    out.append(target)
    except OSError:
        pass
    return out


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise OSError(f"{cmd[0]} failed ({res.returncode}): {res.stderr.strip()[-500:]}")
