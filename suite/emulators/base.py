"""What every shadowed CLI shares: the call, the result, input requests and argument parsing.

Pure Python (PyYAML at most): no Django, no sockets, no files, no clock. An emulator is a function
``run(state, call) -> Result`` over a JSON-serialisable ``state`` that it may change in place; the
service (``suite.emulators.service``) hands it a deep copy and keeps the copy only when the call
completes, so a failed or interrupted call changes nothing.

Input the command needs from the sandbox (stdin, a manifest file, the ``*.tf`` files of a
directory, the result of ``$EDITOR``) is not pushed with every call: the emulator asks for it by
raising :class:`NeedInput`, the service relays the request to the shim, and the call runs again
from the start with the answer added. Because ``run`` is deterministic, the re-run reaches the
same point and continues. This is also why stdin can never hang a call that does not consume it:
the shim reads stdin only when asked, and only commands that really read stdin ask
(``kubectl apply -f -``, ``psql`` without ``-c``, a confirmation prompt).

Time is logical: ``call.now`` is derived by the service from the state's clock and the call's
sequence number, so every timestamp, age and generated id is the same on every execution.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

MAX_STDIN = 1024 * 1024
MAX_FILE = 1024 * 1024
DEFAULT_CLOCK = "2026-03-02T09:00:00Z"
CLOCK_STEP = timedelta(seconds=7)


class InputTooLarge(Exception):  # noqa: N818 - reads as "the input is too large"
    """A file or stdin over the shim's cap: the call ends with the tool's "too large" error.

    Raised by :class:`Call` itself, so no emulator can parse a truncated manifest as if it were
    whole; ``suite.emulators.run_call`` turns it into the tool's message (``input_too_large``).
    """

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: too large")
        self.path = path  # "-" for stdin


class NeedInput(Exception):  # noqa: N818 - a request, not an error
    """The call needs data only the sandbox side has; the service asks the shim and re-runs."""

    def __init__(
        self,
        *,
        stdin: bool = False,
        files: Sequence[str] = (),
        dirs: Sequence[str] = (),
        edit: tuple[str, str] | None = None,
        prompt: str = "",
    ) -> None:
        super().__init__("input needed")
        self.stdin = stdin
        self.files = list(files)
        self.dirs = list(dirs)
        self.edit = edit
        # The question the tool asks before it reads stdin. Informational only: the final output
        # carries it in its place, so the shim does not print it twice.
        self.prompt = prompt

    def as_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"type": "need"}
        if self.stdin:
            msg["stdin"] = True
        if self.files:
            msg["files"] = self.files
        if self.dirs:
            msg["dirs"] = self.dirs
        if self.edit is not None:
            msg["edit"] = {"name": self.edit[0], "content": self.edit[1]}
        if self.prompt:
            msg["prompt"] = self.prompt
        return msg


@dataclass(frozen=True)
class FileData:
    """A file as the shim read it: ``content`` or the reason it could not be read."""

    content: str | None = None
    error: str = ""  # "missing" | "directory" | "permission" | "too-large" | "binary"


@dataclass(frozen=True)
class DirEntry:
    name: str
    type: str  # "file" | "dir" | "other"


@dataclass
class Call:
    tool: str
    argv: list[str]
    cwd: str = "/workspace"
    env: dict[str, str] = field(default_factory=dict)
    seq: int = 1
    now: datetime = field(default_factory=lambda: parse_time(DEFAULT_CLOCK))
    stdin: str | None = None
    stdin_error: str = ""  # "too-large": stdin had more than MAX_STDIN bytes
    stdin_tty: bool = False
    files: dict[str, FileData] = field(default_factory=dict)
    dirs: dict[str, list[DirEntry] | None] = field(default_factory=dict)
    edits: dict[str, str | None] = field(default_factory=dict)

    def abspath(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.cwd, path))

    def shown(self, path: str) -> str:
        """A path as the user typed it, near enough: relative to the cwd when inside it."""
        prefix = self.cwd.rstrip("/") + "/"
        return path[len(prefix) :] if path.startswith(prefix) else path

    def read_stdin(self, prompt: str = "") -> str:
        if self.stdin is None:
            raise NeedInput(stdin=True, prompt=prompt)
        if self.stdin_error == "too-large":
            raise InputTooLarge("-")
        return self.stdin

    def file(self, path: str) -> FileData:
        """One file (relative to the cwd); asks the shim the first time."""
        return self.files_of([path])[0]

    def files_of(self, paths: Iterable[str]) -> list[FileData]:
        wanted = [self.abspath(p) for p in paths]
        missing = [p for p in dict.fromkeys(wanted) if p not in self.files]
        if missing:
            raise NeedInput(files=missing)
        for path in wanted:
            if self.files[path].error == "too-large":
                raise InputTooLarge(path)
        return [self.files[p] for p in wanted]

    def listdir(self, path: str) -> list[DirEntry] | None:
        """Entries of a directory, or None when it does not exist / is not a directory."""
        key = self.abspath(path)
        if key not in self.dirs:
            raise NeedInput(dirs=[key])
        return self.dirs[key]

    def edit(self, name: str, content: str) -> str | None:
        """Run the user's $EDITOR on ``content``; None when the editor failed."""
        if name not in self.edits:
            raise NeedInput(edit=(name, content))
        return self.edits[name]


@dataclass
class Result:
    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    mutating: bool = False  # the command is one that changes state (decided by the verb)
    dry_run: bool = False  # ... but it was asked to only show what it would do
    declined: bool = False  # ... but it stopped at a confirmation prompt that was not answered yes
    read: list[str] = field(default_factory=list)  # ids of the objects it showed
    writes: dict[str, str] = field(default_factory=dict)  # sandbox files the CLI writes (downloads)


class ToolExit(Exception):  # noqa: N818 - control flow: the command ends here
    def __init__(self, code: int, stderr: str = "", stdout: str = "") -> None:
        super().__init__(stderr or f"exit {code}")
        self.code = code
        self.stderr = stderr
        self.stdout = stdout


class Ctx:
    """The command being executed: output buffers and the action flags the call log records."""

    def __init__(self, state: dict[str, Any], call: Call) -> None:
        self.state = state
        self.call = call
        self._out: list[str] = []
        self._err: list[str] = []
        self.mutating = False
        self.dry_run = False
        self.declined = False
        self.read: list[str] = []
        self.writes: dict[str, str] = {}

    def out(self, text: str = "", end: str = "\n") -> None:
        self._out.append(text + end)

    def err(self, text: str = "", end: str = "\n") -> None:
        self._err.append(text + end)

    def saw(self, *ids: str) -> None:
        self.read.extend(i for i in ids if i not in self.read)

    def fail(self, code: int, message: str = "") -> ToolExit:
        return ToolExit(code, message if not message or message.endswith("\n") else message + "\n")

    def result(self, code: int = 0) -> Result:
        return Result(
            stdout="".join(self._out),
            stderr="".join(self._err),
            exit_code=code,
            mutating=self.mutating,
            dry_run=self.dry_run,
            declined=self.declined,
            read=list(self.read),
            writes=dict(self.writes),
        )

    def finish(self, exc: ToolExit) -> Result:
        if exc.stdout:
            self._out.append(exc.stdout)
        if exc.stderr:
            self._err.append(exc.stderr)
        return self.result(exc.code)

    def confirm(self, question: str, accept: Sequence[str] = ("y", "yes")) -> bool:
        """Ask on stdin like the real tool; the answer must be one of ``accept`` (case-insensitive).

        EOF or any other answer declines, and the call is marked ``declined``: the agent issued the
        command but the tool's own guard stopped it, which the oracle does not count as an action.
        """
        answer = self.call.read_stdin(prompt=question)
        self.out(question, end="")
        first = answer.split("\n", 1)[0].strip()
        if first.lower() in accept:
            self.out("")
            return True
        self.out("")
        self.declined = True
        return False


# ---------------------------------------------------------------------------------------------
# Argument parsing shared by the CLIs (cobra/getopt style and Go's flag package style)


class UnsupportedOption(Exception):  # noqa: N818 - reads as "an unsupported option"
    """A call gave an option the emulator accepts but does not implement: answered with the tool's
    unknown-flag error, and nothing the call did is kept (the service commits no state)."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.stderr)
        self.result = result


class ArgError(Exception):
    """A usage error; each CLI turns it into its own message and exit code."""

    def __init__(self, kind: str, flag: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {flag} {detail}".strip())
        self.kind = kind  # unknown | unknown_short | needs_value | bad_value | no_value_allowed
        self.flag = flag
        self.detail = detail


@dataclass(frozen=True)
class Opt:
    names: tuple[str, ...]
    dest: str
    kind: str = "str"  # str | bool | list | int | count
    default: Any = None
    bare: str | None = None  # value when given without one (cobra's NoOptDefVal, e.g. --dry-run)
    choices: tuple[str, ...] | None = None
    # Why the option changes nothing an emulated world could show (a client timeout, a log
    # level, a wait on a server that answers at once). Any other option a call gives and the
    # emulator never reads is refused as unknown (``unread_options``): accepted-and-ignored
    # options changed verdicts (``kubectl delete --cascade=orphan`` deleted the pods anyway).
    inert: str = ""


# Why an option may be given and change nothing here (``Opt.inert``), by kind of option.
NO_WAIT = "the emulated server finishes every change at once: nothing to wait for or time out"
NO_TRANSPORT = "connection, credential and client settings: the emulated server answers any client"
NO_TERMINAL = "an emulated call has no terminal: output is never paged, coloured or read line by line"
NO_DEBUG = "client diagnostics on stderr only"


def opt(*names: str, dest: str = "", kind: str = "str", default: Any = None, **kw: Any) -> Opt:
    if not dest:
        long = next((n for n in names if n.startswith("--")), names[0])
        dest = long.lstrip("-").replace("-", "_").replace(".", "_")
    if default is None:
        default = {"bool": False, "list": [], "count": 0}.get(kind)
    return Opt(tuple(names), dest, kind, default, **kw)


@dataclass
class Parsed:
    values: dict[str, Any]
    args: list[str]
    given: set[str] = field(default_factory=set)
    # What the command line gave (dest -> the option and its spelling) and what the emulator
    # read, so a given option nothing read can be found when the call ends.
    spelled: dict[str, tuple[Opt, str]] = field(default_factory=dict)
    read: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if _TRACING:
            _TRACE.append(self)

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self.values.get(key, default)


class TrackedValues(dict[str, Any]):
    """Option values kept apart from their ``Parsed`` (terraform's): a read still counts as use."""

    def __init__(self, values: Mapping[str, Any], parsed: Sequence[Parsed]) -> None:
        super().__init__(values)
        self.parsed = list(parsed)

    def __getitem__(self, key: str) -> Any:
        for p in self.parsed:
            p.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        for p in self.parsed:
            p.read.add(key)
        return super().get(key, default)

    def merged(self, more: Parsed) -> TrackedValues:
        """These values with ``more``'s given options over them (a subcommand's own flags)."""
        data = {**dict(self.items()), **{k: v for k, v in more.values.items() if k in more.given}}
        return TrackedValues(data, [*self.parsed, more])


# The option tables parsed during the current call (``start_call`` empties it) and the options
# to refuse as unknown on a call's second run (``unread_options``). Module state is safe here: a
# jail runs one call at a time.
_TRACE: list[Parsed] = []
_REFUSED: set[tuple[str, ...]] = set()  # by the option's names: an Opt may hold a list default
_TRACING = False  # outside a call (a test parsing a command line) nothing is kept


def start_call(refuse: Iterable[Opt] = ()) -> None:
    """Begin tracing a call's options; ``refuse`` are parsed as unknown options this time."""
    global _TRACING
    _TRACE.clear()
    _REFUSED.clear()
    _REFUSED.update(o.names for o in refuse)
    _TRACING = True


def end_call() -> None:
    global _TRACING
    _TRACE.clear()
    _REFUSED.clear()
    _TRACING = False


def unread_options() -> list[tuple[Opt, str]]:
    """The options the call gave that nothing read and that are not inert, as (option, spelling).

    A call that asked for help reads nothing else and is not counted.
    """
    if any(p.values.get("help") for p in _TRACE):
        return []
    found: list[tuple[Opt, str]] = []
    for p in _TRACE:
        for dest, (o, flag) in p.spelled.items():
            if dest not in p.read and not o.inert:
                found.append((o, flag))
    return found


_TRUE = ("1", "t", "T", "true", "TRUE", "True")
_FALSE = ("0", "f", "F", "false", "FALSE", "False")


def _store(
    values: dict[str, Any],
    o: Opt,
    raw: str | None,
    flag: str,
    given: set[str],
    spelled: dict[str, tuple[Opt, str]],
    gnu: bool = True,
) -> None:
    if o.names in _REFUSED:
        # Spelled as the parser would have met it: a single-dash letter of a GNU parser is a shorthand.
        short = len(flag) == 2 and flag[0] == "-" and flag[1] != "-" and gnu
        raise ArgError("unknown_short", flag[1], flag) if short else ArgError("unknown", flag)
    given.add(o.dest)
    spelled.setdefault(o.dest, (o, flag))
    if o.kind == "bool":
        if raw is None or raw in _TRUE:
            values[o.dest] = True
        elif raw in _FALSE:
            values[o.dest] = False
        else:
            raise ArgError("bad_value", flag, f'invalid argument "{raw}" for "{flag}" flag: strconv.ParseBool')
        return
    if o.kind == "count":
        values[o.dest] = values.get(o.dest, 0) + 1
        return
    assert raw is not None
    if o.choices is not None and raw not in o.choices:
        raise ArgError("bad_value", flag, raw)
    if o.kind == "int":
        try:
            values[o.dest] = int(raw)
        except ValueError:
            raise ArgError("bad_value", flag, raw) from None
    elif o.kind == "list":
        values[o.dest] = [*values.get(o.dest, []), raw]
    else:
        values[o.dest] = raw


def parse_gnu(argv: Sequence[str], opts: Sequence[Opt], *, interspersed: bool = True) -> Parsed:
    """cobra/pflag and getopt_long style: ``--name=v``, ``--name v``, ``-n v``, ``-nv``, ``-abc``."""
    by_name: dict[str, Opt] = {n: o for o in opts for n in o.names}
    values: dict[str, Any] = {o.dest: (list(o.default) if o.kind == "list" else o.default) for o in opts}
    given: set[str] = set()
    spelled: dict[str, tuple[Opt, str]] = {}
    args: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--":
            args.extend(argv[i:])
            break
        if a.startswith("--") and len(a) > 2:
            name, eq, raw = a.partition("=")
            o = by_name.get(name)
            if o is None:
                raise ArgError("unknown", name)
            if eq:
                if o.kind == "count":
                    raise ArgError("no_value_allowed", name)
                _store(values, o, raw, name, given, spelled)
            elif o.kind in ("bool", "count"):
                _store(values, o, None, name, given, spelled)
            elif o.bare is not None:
                _store(values, o, o.bare, name, given, spelled)
            else:
                if i >= len(argv):
                    raise ArgError("needs_value", name)
                _store(values, o, argv[i], name, given, spelled)
                i += 1
            continue
        if a.startswith("-") and len(a) > 1 and (not _is_number(a) or a[:2] in by_name):
            j = 1
            while j < len(a):
                name = "-" + a[j]
                o = by_name.get(name)
                if o is None:
                    raise ArgError("unknown_short", a[j], a)
                rest = a[j + 1 :]
                if o.kind in ("bool", "count"):
                    if rest.startswith("="):
                        _store(values, o, rest[1:], name, given, spelled)
                        break
                    _store(values, o, None, name, given, spelled)
                    j += 1
                    continue
                if rest:
                    _store(values, o, rest[1:] if rest.startswith("=") else rest, name, given, spelled)
                elif o.bare is not None:
                    _store(values, o, o.bare, name, given, spelled)
                else:
                    if i >= len(argv):
                        raise ArgError("needs_value", name)
                    _store(values, o, argv[i], name, given, spelled)
                    i += 1
                break
            continue
        args.append(a)
        if not interspersed:
            args.extend(argv[i:])
            break
    return Parsed(values, args, given, spelled)


def parse_go(argv: Sequence[str], opts: Sequence[Opt]) -> Parsed:
    """Go's ``flag`` package (terraform): one or two dashes, flags stop at the first argument."""
    by_name: dict[str, Opt] = {}
    for o in opts:
        for n in o.names:
            by_name[n.lstrip("-")] = o
    values: dict[str, Any] = {o.dest: (list(o.default) if o.kind == "list" else o.default) for o in opts}
    given: set[str] = set()
    spelled: dict[str, tuple[Opt, str]] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        body = a[2:] if a.startswith("--") else a[1:]
        name, eq, raw = body.partition("=")
        found = by_name.get(name)
        if found is None:
            raise ArgError("unknown", "-" + name)
        i += 1
        if found.kind == "bool":
            if eq and raw not in _TRUE + _FALSE:
                raise ArgError("bad_value", "-" + name, f'invalid boolean value "{raw}" for -{name}: parse error')
            _store(values, found, raw if eq else None, "-" + name, given, spelled, gnu=False)
            continue
        if not eq:
            if i >= len(argv):
                raise ArgError("needs_value", "-" + name)
            raw = argv[i]
            i += 1
        _store(values, found, raw, "-" + name, given, spelled, gnu=False)
    return Parsed(values, list(argv[i:]), given, spelled)


def _is_number(a: str) -> bool:
    return bool(re.match(r"^-\d+(\.\d+)?$", a))


# ---------------------------------------------------------------------------------------------
# Time, ids and formatting


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def go_duration(text: str) -> timedelta:
    """Go's time.ParseDuration for the units CLI users write (``10m``, ``1h30m``, ``500ms``);
    ValueError otherwise."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"time: invalid duration {text!r}")
    unit = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return timedelta(seconds=sum(float(n) * unit[u] for n, u in parts))


def log_stamp(at: datetime) -> str:
    """A log line's timestamp as ``docker logs -t`` and ``kubectl logs --timestamps`` print it (RFC 3339, ns)."""
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond:06d}000Z"


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def short_hash(*parts: Any, length: int = 10, alphabet: str = "0123456789abcdef") -> str:
    """A deterministic id fragment (pod name suffixes, silence ids, image ids)."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    n = int.from_bytes(digest, "big")
    out = []
    for _ in range(length):
        n, r = divmod(n, len(alphabet))
        out.append(alphabet[r])
    return "".join(out)


def uuid_like(*parts: Any) -> str:
    h = short_hash(*parts, length=32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def human_age(delta: timedelta) -> str:
    """Kubernetes' duration.HumanDuration, as printed in AGE columns."""
    seconds = int(delta.total_seconds())
    if seconds < 0:
        seconds = 0
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        h = hours % 24
        return f"{days}d{h}h" if h else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        years = days // 365
        d = days % 365
        return f"{years}y{d}d" if d else f"{years}y"
    return f"{days // 365}y"


def table(rows: Sequence[Sequence[str]], gap: int = 3, minwidth: int = 0) -> str:
    """Left-aligned columns separated by ``gap`` spaces (kubectl/helm/docker tabwriter output).

    ``minwidth`` is Go tabwriter's: a cell with its padding is at least that wide (the docker CLI
    uses 10, which is why its short columns line up at ten characters).
    """
    if not rows:
        return ""
    widths = [max(len(str(r[c])) for r in rows if c < len(r)) for c in range(max(len(r) for r in rows))]
    widths = [max(w, minwidth - gap) for w in widths]
    lines = []
    for r in rows:
        cells = [str(v).ljust(widths[c]) if c < len(r) - 1 else str(v) for c, v in enumerate(r)]
        lines.append((" " * gap).join(cells).rstrip())
    return "\n".join(lines)


def to_json(value: Any, indent: int = 4) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False)


def to_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1000)


def glob_match(pattern: str, text: str) -> bool:
    """Shell-style match over a whole string (``*`` may span ``/``): filters like ``--exclude``.

    The AWS CLI's filters are Python's ``fnmatch`` (awscli/customizations/s3/filters.py), so
    ``[0-5]`` and ``[!x]`` classes work as there; case-sensitive like S3 keys.
    """
    return fnmatch.fnmatchcase(text, pattern)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dot paths of the leaves of a nested value: ``{"spec": {"replicas": 3}}`` -> ``spec.replicas``."""
    out: dict[str, Any] = {}
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}.{i}" if prefix else str(i)))
    else:
        out[prefix] = value
    return out


def deep_merge(base: Any, patch: Any) -> Any:
    """JSON merge patch (RFC 7386): ``null`` deletes a key, mappings merge, everything else replaces."""
    if not isinstance(patch, Mapping):
        return patch
    result = dict(base) if isinstance(base, Mapping) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = deep_merge(result.get(k), v)
    return result
