"""A classic-BPF seccomp filter for the bwrap sandbox, assembled here (no libseccomp needed).

bwrap's pid 1 (its reaper) runs as the agent's uid inside the sandbox's user namespace, so
without a filter the agent could ptrace it or read/write its memory; Docker's pid 1 is root and
out of reach.  The filter returns EPERM for the calls that reach into another process's memory
(``ptrace``, ``process_vm_readv``, ``process_vm_writev``); everything else is allowed.  A syscall
made through a foreign ABI (i386 ``int 0x80`` or x32 on x86_64) is refused as a whole, because
its numbers differ and a filter on native numbers would not see the same calls.

Consequence: inside bwrap the agent cannot ``strace``/``gdb`` even its own processes (Docker
allows that); documented in docs/threat-model.md.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

# <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h>
_BPF_LD_W_ABS = 0x20
_BPF_JMP_JEQ_K = 0x15
_BPF_JMP_JGE_K = 0x35
_BPF_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_X32_SYSCALL_BIT = 0x40000000
_OFFSET_NR = 0
_OFFSET_ARCH = 4

# machine -> (AUDIT_ARCH_*, {name: number})
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311}),
    "aarch64": (0xC00000B7, {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271}),
}

DENIED = ("ptrace", "process_vm_readv", "process_vm_writev")


class SeccompUnsupportedError(RuntimeError):
    """No filter is known for this machine's architecture."""


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes:
    """The filter as ``struct sock_filter[]`` bytes, the format ``bwrap --seccomp FD`` reads."""
    machine = machine or platform.machine()
    try:
        audit_arch, numbers = _ARCHES[machine]
    except KeyError:
        raise SeccompUnsupportedError(f"no seccomp filter for {machine}") from None
    deny = _RET_ERRNO | errno.EPERM
    prog = [
        _insn(_BPF_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        _insn(_BPF_JMP_JEQ_K, 1, 0, audit_arch),  # native ABI: go on; else refuse
        _insn(_BPF_RET_K, 0, 0, deny),
        _insn(_BPF_LD_W_ABS, 0, 0, _OFFSET_NR),
    ]
    if machine == "x86_64":
        prog += [_insn(_BPF_JMP_JGE_K, 0, 1, _X32_SYSCALL_BIT), _insn(_BPF_RET_K, 0, 0, deny)]
    for name in DENIED:
        prog += [_insn(_BPF_JMP_JEQ_K, 0, 1, numbers[name]), _insn(_BPF_RET_K, 0, 0, deny)]
    prog.append(_insn(_BPF_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(prog)


def memfd_with(name: str, data: bytes) -> int:
    """An inheritable memfd holding ``data``, positioned at 0 (how bwrap is handed its inputs)."""
    fd = os.memfd_create(name, 0)  # no MFD_CLOEXEC: the launcher chain passes it on to bwrap
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
