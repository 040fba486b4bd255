"""``crontab`` (Debian cron 3.0) over emulated per-user crontabs (state section ``crontab``).

``-l`` lists, ``-r`` removes the whole crontab *without asking* (the documented hazard next to
``-e`` on the keyboard; ``-i`` makes it ask ``crontab: really delete agent's crontab? (y/n)``),
``-e`` runs ``$VISUAL``/``$EDITOR`` in the sandbox through the shim, ``crontab FILE`` and
``crontab -`` replace the crontab (stdin is read only for ``-``). New crontabs are checked the
way cron checks them (``"-":3: bad minute`` + ``errors in crontab file, can't install.``);
``-u USER`` needs root (``must be privileged to use -u``).

Authored state::

    crontab:
      user: agent                # whose crontab `crontab` edits (the sandbox user)
      tabs:
        agent: |
          MAILTO=ops@example.com
          15 2 * * * /opt/ci/bin/prune-artifacts --older-than 14d

Object ids: ``cron/<user>/<line>`` for every job and environment line (comments and blank lines
carry no behaviour and are not objects); a second identical line gets ``#2``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from suite.emulators.base import Call, Ctx, Result, ToolExit

SECTION = "crontab"
USAGE = (
    "usage:\tcrontab [-u user] file\n\tcrontab [ -u user ] [ -i ] { -e | -l | -r }\n"
    "\t\t(default operation is replace, per 1003.2)\n\t-e\t(edit user's crontab)\n"
    "\t-l\t(list user's crontab)\n\t-r\t(delete user's crontab)\n\t-i\t(prompt before deleting user's crontab)"
)
FIELDS = [("minute", 0, 59), ("hour", 0, 23), ("day-of-month", 1, 31), ("month", 1, 12), ("day-of-week", 0, 7)]
NAMES = {
    "jan",
    "feb",
    "mar",
    "apr",
    "may",
    "jun",
    "jul",
    "aug",
    "sep",
    "oct",
    "nov",
    "dec",
    "sun",
    "mon",
    "tue",
    "wed",
    "thu",
    "fri",
    "sat",
}
SPECIAL = ("@reboot", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    section.setdefault("user", "agent")
    section.setdefault("tabs", {})
    return section


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict):
        return ["crontab: expected a mapping"]
    problems = [f"crontab.{k}: unknown key (user, tabs)" for k in section if k not in ("user", "tabs")]
    for user, text in (section.get("tabs") or {}).items():
        if not isinstance(text, str):
            problems.append(f"crontab.tabs.{user}: the crontab is a string (use a | block)")
            continue
        for n, msg in check(text):
            problems.append(f"crontab.tabs.{user}: line {n}: {msg}")
    return problems


def _key(line: str) -> str:
    return " ".join(line.split())


def objects(section: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for user, text in section.get("tabs", {}).items():
        seen: dict[str, int] = {}
        for line in text.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            key = _key(stripped)
            seen[key] = seen.get(key, 0) + 1
            suffix = f"#{seen[key]}" if seen[key] > 1 else ""
            out[f"cron/{user}/{key}{suffix}"] = {"user": user}
    return out


def _field_ok(text: str, lo: int, hi: int) -> bool:
    for part in text.split(","):
        base, slash, step = part.partition("/")
        if slash and (not step.isdigit() or int(step) == 0):
            return False
        if base == "*":
            continue
        a, _, b = base.partition("-")
        for v in (a, b) if b else (a,):
            if v.lower() in NAMES:
                continue
            if not v.isdigit() or not lo <= int(v) <= hi:
                return False
    return True


def check(text: str) -> list[tuple[int, str]]:
    """cron's own validation of a crontab: (line number, message) per bad line."""
    errors = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*\s*=", s):
            continue
        if s.startswith("@"):
            word = s.split()[0]
            if word not in SPECIAL:
                # entry.c: an unknown @keyword is e_timespec.
                errors.append((n, "bad time specifier"))
            elif len(s.split()) < 2:
                errors.append((n, "bad command"))
            continue
        parts = s.split(None, 5)
        if len(parts) < 6:
            names = [f[0] for f in FIELDS]
            errors.append((n, f"bad {names[len(parts)] if len(parts) < 5 else 'command'}" if parts else "bad minute"))
            continue
        for (name, lo, hi), value in zip(FIELDS, parts[:5], strict=True):
            if not _field_ok(value, lo, hi):
                errors.append((n, f"bad {name}"))
                break
    return errors


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    s: dict[str, Any] = state[SECTION]
    me = s.get("user") or call.env.get("USER") or "agent"
    argv = list(call.argv)
    user = me
    mode = ""
    interactive = False
    files: list[str] = []
    try:
        i = 0
        while i < len(argv):
            a = argv[i]
            if a == "-u":
                if i + 1 >= len(argv):
                    raise ctx.fail(
                        1,
                        f"crontab: option requires an argument -- 'u'\ncrontab: usage error: unrecognized option\n{USAGE}",
                    )
                user = argv[i + 1]
                i += 2
                continue
            if a.startswith("-") and a != "-":
                for ch in a[1:]:
                    if ch in "elr":
                        if mode and mode != ch:
                            raise ctx.fail(1, f"crontab: usage error: only one operation permitted\n{USAGE}")
                        mode = ch
                    elif ch == "i":
                        interactive = True
                    elif ch == "u":
                        raise ctx.fail(
                            1,
                            f"crontab: option requires an argument -- 'u'\ncrontab: usage error: unrecognized option\n{USAGE}",
                        )
                    else:
                        raise ctx.fail(
                            1, f"crontab: invalid option -- '{ch}'\ncrontab: usage error: unrecognized option\n{USAGE}"
                        )
                i += 1
                continue
            files.append(a)
            i += 1
        # crontab.c refuses -u to anyone but root, even naming oneself.
        if "-u" in argv and me != "root":
            raise ctx.fail(1, "must be privileged to use -u")
        tabs = s["tabs"]
        if mode == "l":
            if files:
                raise ctx.fail(1, f"crontab: usage error: no arguments permitted after this option\n{USAGE}")
            if user not in tabs:
                raise ctx.fail(1, f"no crontab for {user}")
            for oid in objects({"tabs": {user: tabs[user]}}):
                ctx.saw(oid)
            ctx.out(tabs[user], end="" if tabs[user].endswith("\n") or not tabs[user] else "\n")
            return ctx.result(0)
        if mode == "r":
            ctx.mutating = True
            if files:
                raise ctx.fail(1, f"crontab: usage error: no arguments permitted after this option\n{USAGE}")
            if user not in tabs:
                raise ctx.fail(1, f"no crontab for {user}")
            if interactive:
                answer = call.read_stdin(prompt=f"crontab: really delete {user}'s crontab? (y/n) ")
                ctx.err(f"crontab: really delete {user}'s crontab? (y/n) ", end="")
                while True:
                    first = answer.split("\n", 1)[0].strip().lower()
                    if first in ("y", "yes"):
                        break
                    if first in ("n", "no") or "\n" not in answer:
                        ctx.declined = True
                        ctx.err("")
                        return ctx.result(0)
                    ctx.err("Please enter Y or N: ", end="")
                    answer = answer.split("\n", 1)[1]
            del tabs[user]
            return ctx.result(0)
        if mode == "e":
            ctx.mutating = True
            current = tabs.get(user)
            if current is None:
                ctx.err(f"no crontab for {user} - using an empty one")
            body = (
                current
                if current is not None
                else "# Edit this file to introduce tasks to be run by cron.\n# \n# m h  dom mon dow   command\n"
            )
            edited = call.edit(f"crontab.{user}", body)
            if edited is None:
                raise ctx.fail(
                    1,
                    f'crontab: "{call.env.get("VISUAL") or call.env.get("EDITOR") or "/usr/bin/sensible-editor"}" exited with status 1',
                )
            if edited == body and current is not None:
                ctx.err("crontab: no changes made to crontab")
                ctx.declined = True
                return ctx.result(0)
            errors = check(edited)
            if errors:
                n, msg = errors[0]
                raise ctx.fail(
                    1,
                    f'"/tmp/crontab.{user}":{n}: {msg}\nerrors in crontab file, can\'t install.\nDo you want to retry the same edit? (Y/N) ',
                )
            tabs[user] = edited
            ctx.err("crontab: installing new crontab")
            return ctx.result(0)
        if not files:
            raise ctx.fail(1, f"crontab: usage error: file name must be specified for replace\n{USAGE}")
        if len(files) > 1:
            raise ctx.fail(1, f"crontab: usage error: unrecognized option\n{USAGE}")
        ctx.mutating = True
        src = files[0]
        if src == "-":
            text = call.read_stdin()
        else:
            data = call.file(src)
            if data.error:
                raise ctx.fail(
                    1, f"{src}: No such file or directory" if data.error == "missing" else f"{src}: Permission denied"
                )
            text = data.content or ""
        errors = check(text)
        if errors:
            n, msg = errors[0]
            raise ctx.fail(1, f'"{src}":{n}: {msg}\nerrors in crontab file, can\'t install.')
        if text and not text.endswith("\n"):
            raise ctx.fail(1, "new crontab file is missing newline before EOF, can't install.")
        tabs[user] = text
        return ctx.result(0)
    except ToolExit as exc:
        return ctx.finish(exc)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"crontab": run}
