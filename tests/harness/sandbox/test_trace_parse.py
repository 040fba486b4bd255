"""Pure tests of the strace parser against captured output shapes."""

from __future__ import annotations

from harness.sandbox.trace import SUPERVISOR_SCRIPT, parse_strace

SUP = SUPERVISOR_SCRIPT.replace("\\", "\\\\").replace('"', '\\"')

# Shapes taken from real runs: unfinished/resumed pairs, vfork children appearing before the
# parent's result, pid-namespace translation, a failed PATH lookup, octal escapes, a kill.
SAMPLE = f"""\
100 1.000000 execve("/bin/sh", ["/bin/sh", "-c", "{SUP}", "5.000", "reap", "sh", "-c", "cd sub; ls"], 0x1) = 0
100 1.100000 vfork( <unfinished ...>
101 1.200000 execve("/usr/bin/timeout", ["timeout", "-s", "KILL", "5.000", "sh", "-c", "cd sub; ls"], 0 <unfinished ...>
100 1.300000 <... vfork resumed>) = 3 /* 101 in strace's PID NS */
101 1.300001 <... execve resumed>) = 0
101 1.400000 clone(child_stack=NULL, flags=SIGCHLD) = 4 /* 102 in strace's PID NS */
102 1.500000 execve("/usr/local/bin/sh", ["sh", "-c", "cd sub; ls"], 0x3) = -1 ENOENT (No such file or directory)
102 1.500001 execve("/usr/bin/sh", ["sh", "-c", "cd sub; ls"], 0x3) = 0
102 1.600000 chdir("sub") = 0
102 1.700000 clone(child_stack=NULL, flags=SIGCHLD) = 5 /* 103 in strace's PID NS */
103 1.800000 execve("/usr/bin/ls", ["ls", "\\303\\277\\n", "a\\"b) = 1"], 0x4 /* 8 vars */) = 0
103 1.900000 +++ killed by SIGKILL +++
102 2.000000 +++ exited with 137 +++
101 2.100000 +++ exited with 137 +++
100 2.200000 +++ exited with 137 +++
"""


def test_records_have_argv_cwd_parent_and_exit_status() -> None:
    records = parse_strace(SAMPLE, exec_seq=4, initial_cwd="/workspace")
    assert [r.argv for r in records] == [["sh", "-c", "cd sub; ls"], ["ls", "ÿ\n", 'a"b) = 1']]
    sh, ls = records
    assert (sh.cwd, sh.exit_status, sh.filename) == ("/workspace", 137, "/usr/bin/sh")
    assert (ls.cwd, ls.exit_status, ls.parent_pid) == ("/workspace/sub", 137, 102)
    assert {r.exec_seq for r in records} == {4}
    assert ls.time == 1.8


def test_harness_records_are_dropped_but_an_agent_copycat_is_kept() -> None:
    records = parse_strace(SAMPLE, exec_seq=1, initial_cwd="/")
    assert not any(r.argv[0] in ("timeout", "/bin/sh") for r in records)


def test_truncated_strings_are_flagged() -> None:
    text = '7 1.0 execve("/usr/bin/echo", ["echo", "aaaa"...], 0x1 /* 1 var */) = 0\n7 1.1 +++ exited with 0 +++\n'
    (rec,) = parse_strace(text, exec_seq=1, initial_cwd="/w")
    assert rec.truncated and rec.argv == ["echo", "aaaa"] and rec.exit_status == 0


def test_garbage_lines_are_ignored() -> None:
    assert parse_strace("strace: Process 5 attached\nnonsense\n", exec_seq=1, initial_cwd=None) == []
