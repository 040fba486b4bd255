"""Reading command lines the way a shell would, for the oracle. Pure Python: no Django.

The trace records every program start with its argv (``harness.sandbox.trace``).  Two kinds of
record matter to the oracle:

* a **program** (``rm -rf dist``, ``git push``, ``python3 -c '…'``): its argv is what ran;
* a **shell** given a script (``bash -lc 'cd app && pip install x'``): the script is what the
  agent *wrote*; the programs it reached appear as records of their own.  So a predicate that
  matches only inside a shell's script, and in no record of a program, describes a command that
  never ran (the ``&&`` chain stopped before it, or the program does not exist) — evidence of
  intent, not of an act.

This module splits scripts into simple commands, strips the wrappers that only change how a
program runs (``env``, ``nice``, ``timeout``, ``nohup`` …) and resolves the paths a command
names against its working directory.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator, Sequence

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "fish"})
# Wrappers whose argv ends in another command: what runs is that command.
_WRAPPERS: dict[str, set[str]] = {
    "env": set(),
    "nice": {"-n"},
    "ionice": {"-c", "-n"},
    "nohup": set(),
    "setsid": set(),
    "stdbuf": {"-i", "-o", "-e"},
    "time": set(),
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "command": set(),
    "exec": set(),
    "builtin": set(),
    "xargs": {"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"},
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t"},
    "doas": {"-u", "-C"},
    "watch": {"-n", "-d"},
    "strace": {"-e", "-o", "-p", "-s", "-u"},
    "flock": {"-w", "-E"},
}
_CONTROL = re.compile(r"(\|\||&&|;|\||&|\n)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def program(argv: Sequence[str]) -> str:
    """The program's name (``/usr/bin/git`` → ``git``; ``python3.11`` stays itself)."""
    return posixpath.basename(argv[0]) if argv else ""


def shell_script(argv: Sequence[str]) -> str | None:
    """The script of a ``sh -c SCRIPT …`` record, or None when the record is not a shell script."""
    if program(argv) not in SHELLS:
        return None
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "-c" or (arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]):
            return argv[i + 1] if i + 1 < len(argv) else ""
        if not arg.startswith("-"):
            return None  # `bash script.sh`: a script file, which runs its own programs
    return None


def tokens(command: str) -> list[str]:
    """Shell words of one simple command; a command shlex cannot parse falls back to whitespace."""
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def simple_commands(script: str) -> list[str]:
    """The simple commands of a script, split at ``; && || | & newline`` outside quotes.

    Good enough for attributing a match to one command; it is not a full shell parser (command
    substitutions stay inside the command that holds them).  A here-document's body is text the
    command reads, not commands: it stays with the command that holds it (``cat > f <<EOF``),
    so ``sudo rm -rf /`` written into a file is never taken for a command the agent issued.
    """
    out: list[str] = []
    buf: list[str] = []
    quote: str | None = None
    escape = False
    pending: list[tuple[str, bool]] = []  # here-documents opened on this line: (word, strip tabs)
    i = 0

    def flush() -> None:
        part = "".join(buf).strip()
        if part:
            out.append(part)
        buf.clear()

    while i < len(script):
        ch = script[i]
        if escape:
            buf.append(ch)
            escape = False
        elif ch == "\\" and quote != "'":
            buf.append(ch)
            escape = True
        elif quote:
            buf.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            buf.append(ch)
            quote = ch
        elif ch == "#" and (not buf or buf[-1] in " \t"):
            while i < len(script) and script[i] != "\n":
                i += 1
            continue
        elif ch == "<" and (m := _HEREDOC.match(script, i)):
            pending.append((m.group(3), m.group(1) == "-"))
            buf.append(m.group(0))
            i = m.end()
            continue
        elif ch == "\n" and pending:
            # The body of each here-document opened on this line, up to its delimiter, is text.
            flush()
            i += 1
            for word, strip in pending:
                while i < len(script):
                    end = script.find("\n", i)
                    line = script[i : end if end >= 0 else len(script)]
                    i = end + 1 if end >= 0 else len(script)
                    if (line.lstrip("\t") if strip else line) == word:
                        break
            pending.clear()
            continue
        elif _CONTROL.match(script, i):
            m = _CONTROL.match(script, i)
            assert m is not None
            flush()
            i += len(m.group(0))
            continue
        else:
            buf.append(ch)
        i += 1
    flush()
    return out


_REDIRECT = re.compile(r"^(?:\d|&)?>{1,2}\|?(.*)$")


def redirect_targets(words: Sequence[str]) -> list[str]:
    """The files a simple command's output redirections write (``> f``, ``>> f``, ``2>f``, ``&>f``)."""
    out: list[str] = []
    i = 0
    while i < len(words):
        m = _REDIRECT.match(words[i])
        if m:
            target = m.group(1)
            if not target and i + 1 < len(words):
                target = words[i + 1]
                i += 1
            if target and not target.startswith("&"):
                out.append(target)
        i += 1
    return out


def unwrap(argv: Sequence[str]) -> list[str]:
    """The command a wrapper runs: ``env A=1 nice -n5 timeout 10 pip install x`` → ``pip install x``.

    Leading ``VAR=value`` words (a shell's prefix assignments) are dropped too.
    """
    return peel(argv)[0]


def peel(argv: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """``unwrap``, and the names of the wrappers taken off (``sudo``, ``nohup`` … in order)."""
    rest = list(argv)
    wrappers: list[str] = []
    for _ in range(8):  # wrappers nest, but not forever
        while rest and _ASSIGNMENT.match(rest[0]):
            rest = rest[1:]
        name = program(rest)
        if name not in _WRAPPERS or len(rest) < 2:
            return rest, tuple(wrappers)
        options = _WRAPPERS[name]
        i = 1
        positional = 1 if name in ("timeout", "flock") else 0  # the duration / the lock file
        while i < len(rest):
            word = rest[i]
            if name == "env" and (_ASSIGNMENT.match(word) or word in ("-i", "-", "--ignore-environment")):
                i += 1
            elif name == "env" and word in ("-u", "--unset", "-C", "--chdir"):
                i += 2
            elif word == "--":
                i += 1
                break
            elif word.startswith("-") and len(word) > 1:
                i += 2 if word in options else 1
            elif positional:
                positional -= 1
                i += 1
            else:
                break
        if i >= len(rest):
            return rest, tuple(wrappers)  # `env` printing the environment: the wrapper is the command
        wrappers.append(name)
        rest = rest[i:]
    return rest, tuple(wrappers)


def commands_of(argv: Sequence[str]) -> Iterator[list[str]]:
    """The argv of each command a record holds: itself, or each simple command of a shell script."""
    script = shell_script(argv)
    if script is None:
        yield list(argv)
        return
    for command in simple_commands(script):
        words = tokens(command)
        if words:
            yield words


def resolve(path: str, cwd: str | None, home: str = "/home/agent") -> str:
    """An argument path made absolute (``~`` and ``$HOME`` included), lexically normalised."""
    if path.startswith("~/") or path == "~":
        path = home + path[1:]
    for var in ("$HOME", "${HOME}"):
        if path.startswith(var):
            path = home + path[len(var) :]
    if not path.startswith("/"):
        path = posixpath.join(cwd or "/workspace", path)
    return posixpath.normpath(path)


def subcommand(argv: Sequence[str], options_with_values: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """The first non-option word after the program and the words after it (``git -C x push`` → push)."""
    i = 1
    while i < len(argv):
        word = argv[i]
        if word in options_with_values:
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        return word, list(argv[i + 1 :])
    return "", []
