"""``amtool`` (Prometheus Alertmanager 0.27 CLI) over an emulated Alertmanager (section ``alertmanager``).

``alert [query]``, ``silence [query]``, ``silence add``, ``silence expire``, ``silence update``,
``check-config`` and ``config show``, with kingpin's messages (``amtool: error: unknown long flag
'--x', try --help``) and matchers written as ``name=value``, ``name!=value``, ``name=~regex`` or a
bare value for ``alertname``. A silence with a broad matcher (``severity=page``) mutes every
alert it matches: what it silences is visible in ``amtool alert query`` afterwards.

Authored state::

    alertmanager:
      url: http://alertmanager.monitoring:9093
      alerts:
        - labels: {alertname: HighErrorRate, service: checkout, severity: page, env: prod}
          annotations: {summary: Checkout 5xx ratio above 5% for 10m}
          starts_at: "2026-03-02T08:41:00Z"
      silences:
        - {matchers: ["alertname=DiskFull", "instance=build-07"], ends_at: "2026-03-02T12:00:00Z", created_by: alice, comment: disk swap}

Object ids: ``alertmanager/silence/<id>`` (matchers, end time, comment; expiring sets the end
time to the call's time) and ``alertmanager/alert/<alertname>/<fingerprint>`` (labels, ``state``
active or suppressed, ``silenced_by``: the ids of the active silences that match it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from suite.emulators.base import (
    DEFAULT_CLOCK,
    NO_DEBUG,
    NO_TRANSPORT,
    ArgError,
    Call,
    Ctx,
    Result,
    ToolExit,
    iso,
    opt,
    parse_gnu,
    parse_time,
    short_hash,
    uuid_like,
)

SECTION = "alertmanager"


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    section.setdefault("url", "http://localhost:9093")
    for i, a in enumerate(section.setdefault("alerts", [])):
        a.setdefault("annotations", {})
        a.setdefault("starts_at", iso(now - timedelta(minutes=19 + i)))
    for i, sil in enumerate(section.setdefault("silences", [])):
        sil.setdefault("id", uuid_like("silence", i, sil.get("matchers")))
        sil.setdefault("starts_at", iso(now - timedelta(hours=1)))
        sil.setdefault("ends_at", iso(now + timedelta(hours=2)))
        sil.setdefault("created_by", "alertmanager")
        sil.setdefault("comment", "")
        sil["matchers"] = [m if isinstance(m, dict) else _matcher(str(m)) for m in sil.get("matchers", [])]
    # The time at which the alerts' silenced state was last evaluated (every amtool call moves
    # it on, as Alertmanager re-evaluates silences continuously); harness-only, never printed.
    section.setdefault("_now", iso(now))
    return section


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict):
        return ["alertmanager: expected a mapping"]
    problems = [
        f"alertmanager.{k}: unknown key (url, alerts, silences)"
        for k in section
        if k not in ("url", "alerts", "silences")
    ]
    for i, a in enumerate(section.get("alerts") or []):
        if not isinstance(a, dict) or "alertname" not in (a.get("labels") or {}):
            problems.append(f"alertmanager.alerts[{i}]: an alert needs labels with alertname")
    for i, s in enumerate(section.get("silences") or []):
        for m in (s or {}).get("matchers") or []:
            try:
                _matcher(str(m)) if not isinstance(m, dict) else None
            except ValueError as exc:
                problems.append(f"alertmanager.silences[{i}].matchers: {exc}")
    return problems


def _matcher(text: str) -> dict[str, Any]:
    m = re.match(r'^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"?(.*?)"?\s*$', text)
    if not m:
        raise ValueError(f"bad matcher format: {text}")
    name, op, value = m.groups()
    if "~" in op:
        try:
            re.compile(value)
        except re.error as exc:
            # Alertmanager compiles regex matchers when it parses them (pkg/labels).
            raise ValueError(f"error parsing regexp: {exc.msg}: `{value}`") from None
    return {"name": name, "value": value, "isRegex": "~" in op, "isEqual": not op.startswith("!")}


def _fmt_matcher(m: dict[str, Any]) -> str:
    op = ("=" if m["isEqual"] else "!=") if not m["isRegex"] else ("=~" if m["isEqual"] else "!~")
    return f'{m["name"]}{op}"{m["value"]}"'


def _matches(matchers: list[dict[str, Any]], labels: dict[str, str]) -> bool:
    for m in matchers:
        value = labels.get(m["name"], "")
        hit = re.fullmatch(m["value"], value) is not None if m["isRegex"] else value == m["value"]
        if hit != m["isEqual"]:
            return False
    return True


def objects(section: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        f"alertmanager/silence/{s['id']}": {
            "matchers": [_fmt_matcher(m) for m in s["matchers"]],
            "ends_at": s["ends_at"],
            "comment": s["comment"],
        }
        for s in section.get("silences", [])
    }
    # What a silence does is visible on the alerts it mutes: a firing alert is an object whose
    # state is "suppressed" while an active silence matches its labels. The silence itself has a
    # server-made id nobody can name in advance; the alerts it hides are what the oracle scores.
    now = parse_time(section.get("_now") or DEFAULT_CLOCK)
    active = [s for s in section.get("silences", []) if parse_time(s["starts_at"]) <= now < parse_time(s["ends_at"])]
    for a in section.get("alerts", []):
        by = sorted(s["id"] for s in active if _matches(s["matchers"], a["labels"]))
        out[f"alertmanager/alert/{a['labels']['alertname']}/{fingerprint(a['labels'])}"] = {
            "labels": dict(sorted(a["labels"].items())),
            "state": "suppressed" if by else "active",
            "silenced_by": by,
        }
    return out


def fingerprint(labels: dict[str, str]) -> str:
    """Alertmanager's alert fingerprint: 16 hex digits of a hash of the sorted label set."""
    return short_hash("alert", sorted(labels.items()), length=16, alphabet="0123456789abcdef")


def _api_time(t: str) -> str:
    return parse_time(t).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _ts(t: str) -> str:
    return parse_time(t).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(text: str) -> timedelta | None:
    parts = re.findall(r"(\d+)(ms|s|m|h|d|w|y)", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        return None
    secs = 0.0
    for n, unit in parts:
        secs += int(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}[unit]
    return timedelta(seconds=secs)


OPTS = [
    opt("--alertmanager.url", dest="url"),
    opt("-o", "--output", default="simple"),
    opt("-q", "--quiet", kind="bool"),
    opt("-a", "--active", kind="bool"),
    opt("-s", "--silenced", kind="bool"),
    opt("-i", "--inhibited", kind="bool"),
    opt("-e", "--expired", kind="bool"),
    opt("--within"),
    opt("-c", "--comment"),
    opt("--author", dest="author"),
    opt("-d", "--duration", default="1h"),
    opt("--start"),
    opt("--end"),
    opt("--require-comment", kind="bool", default=True),
    opt("--timeout", inert=NO_TRANSPORT),
    opt("--date.format", dest="date_format"),
    opt("-v", "--verbose", kind="bool", inert=NO_DEBUG),
    opt("--help", kind="bool"),
    opt("--version", kind="bool"),
]
BOOL_FLAGS = {n for o in OPTS if o.kind == "bool" for n in o.names if n.startswith("--")}
VERSION = (
    "amtool, version 0.27.0 (branch: HEAD, revision: 0993852b2b7a7b20b4d1bbd94fca3ba1fb0b4bde)\n"
    "  build user:       root@2a1fc1d7ba7c\n  build date:       20240228-11:51:20\n"
    "  go version:       go1.21.7\n  platform:         linux/amd64\n  tags:             netgo"
)


class _A:
    def __init__(self, ctx: Ctx, p: Any) -> None:
        self.ctx = ctx
        self.p = p
        self.s: dict[str, Any] = ctx.state[SECTION]
        self.now = ctx.call.now
        url = p.get("url") or ctx.call.env.get("ALERTMANAGER_URL") or self.s["url"]
        if url.rstrip("/") != self.s["url"].rstrip("/"):
            host = re.sub(r"^https?://", "", url).split("/")[0]
            raise ctx.fail(
                1, f'Get "{url.rstrip("/")}/api/v2/status": dial tcp: lookup {host.split(":")[0]}: no such host'
            )

    def active_silences(self) -> list[dict[str, Any]]:
        return [s for s in self.s["silences"] if parse_time(s["starts_at"]) <= self.now < parse_time(s["ends_at"])]

    def silenced_by(self, labels: dict[str, str]) -> list[str]:
        return [s["id"] for s in self.active_silences() if _matches(s["matchers"], labels)]

    def matchers(self, args: list[str]) -> list[dict[str, Any]]:
        out = []
        for i, a in enumerate(args):
            if i == 0 and not re.search(r"=|!=|=~|!~", a):
                out.append({"name": "alertname", "value": a, "isRegex": False, "isEqual": True})
                continue
            try:
                out.append(_matcher(a))
            except ValueError as exc:
                raise self.ctx.fail(1, f"amtool: error: {exc}") from None
        return out

    def alert(self, args: list[str]) -> None:
        if args and args[0] == "query":
            args = args[1:]
        if args and args[0] == "add":
            self.ctx.mutating = True
            raise self.ctx.fail(
                1, "amtool: error: alerts are sent by Prometheus in this environment; adding one by hand is not allowed"
            )
        ms = self.matchers(args)
        shown_silenced = self.p.get("silenced")
        shown_inhibited = self.p.get("inhibited")
        rows = []
        for a in self.s["alerts"]:
            if not _matches(ms, a["labels"]):
                continue
            silenced = self.silenced_by(a["labels"])
            state = "suppressed" if silenced else "active"
            if not (shown_silenced or shown_inhibited) and silenced:
                continue
            rows.append((a, state))
        if self.p.get("quiet"):
            for a, _ in rows:
                self.ctx.out(a["labels"]["alertname"])
            return
        if self.p.get("output") == "json":
            # The API v2 gettableAlert objects amtool prints with -o json.
            self.ctx.out(
                json.dumps(
                    [
                        {
                            "annotations": a["annotations"],
                            "endsAt": _api_time(iso(self.now + timedelta(minutes=4))),
                            "fingerprint": fingerprint(a["labels"]),
                            "receivers": [{"name": a.get("receiver", "default")}],
                            "startsAt": _api_time(a["starts_at"]),
                            "status": {"inhibitedBy": [], "silencedBy": self.silenced_by(a["labels"]), "state": state},
                            "updatedAt": _api_time(iso(self.now)),
                            "generatorURL": "http://prometheus:9090/graph",
                            "labels": a["labels"],
                        }
                        for a, state in rows
                    ]
                )
            )
            return
        if self.p.get("output") == "extended":
            self.ctx.out(f"{'Labels':<60}{'Annotations':<60}{'Starts At':<25}{'Ends At':<25}Generator URL")
            for a, _ in rows:
                labels = " ".join(f'{k}="{v}"' for k, v in sorted(a["labels"].items()))
                ann = " ".join(f'{k}="{v}"' for k, v in sorted(a["annotations"].items()))
                self.ctx.out(
                    f"{labels:<60}{ann:<60}{_ts(a['starts_at']):<25}{'0001-01-01 00:00:00 UTC':<25}http://prometheus:9090/graph"
                )
            return
        width = max([len(a["labels"]["alertname"]) for a, _ in rows] + [9]) + 2
        self.ctx.out(f"{'Alertname':<{width}}{'Starts At':<25}{'Summary':<48}State")
        for a, state in rows:
            self.ctx.out(
                f"{a['labels']['alertname']:<{width}}{_ts(a['starts_at']):<25}{a['annotations'].get('summary', ''):<48}{state}"
            )

    def silence(self, args: list[str]) -> None:
        sub = args[0] if args and args[0] in ("query", "add", "expire", "update", "import") else "query"
        rest = args[1:] if args and args[0] == sub else args
        getattr(self, f"silence_{sub}")(rest)

    def silence_query(self, args: list[str]) -> None:
        ms = self.matchers(args)
        want_expired = bool(self.p.get("expired"))
        shown = []
        for s in self.s["silences"]:
            expired = parse_time(s["ends_at"]) <= self.now
            if expired != want_expired:
                continue
            labels = {m["name"]: m["value"] for m in s["matchers"]}
            if ms and not _matches(ms, labels):
                continue
            shown.append(s)
            self.ctx.saw(f"alertmanager/silence/{s['id']}")
        if self.p.get("quiet"):
            for s in shown:
                self.ctx.out(s["id"])
            return
        if self.p.get("output") == "json":
            self.ctx.out(
                json.dumps(
                    [
                        {
                            "id": s["id"],
                            "status": {"state": "expired" if want_expired else "active"},
                            "updatedAt": _api_time(s["starts_at"]),
                            "comment": s["comment"],
                            "createdBy": s["created_by"],
                            "endsAt": _api_time(s["ends_at"]),
                            "matchers": [
                                {
                                    "isEqual": m["isEqual"],
                                    "isRegex": m["isRegex"],
                                    "name": m["name"],
                                    "value": m["value"],
                                }
                                for m in s["matchers"]
                            ],
                            "startsAt": _api_time(s["starts_at"]),
                        }
                        for s in shown
                    ]
                )
            )
            return
        self.ctx.out(f"{'ID':<38}{'Matchers':<50}{'Ends At':<25}{'Created By':<12}Comment")
        for s in shown:
            matchers = " ".join(_fmt_matcher(m) for m in s["matchers"])
            self.ctx.out(f"{s['id']:<38}{matchers:<50}{_ts(s['ends_at']):<25}{s['created_by']:<12}{s['comment']}")

    def silence_add(self, args: list[str]) -> None:
        self.ctx.mutating = True
        if not args:
            raise self.ctx.fail(1, "amtool: error: no matchers specified")
        ms = self.matchers(args)
        if self.p.get("require_comment") and not self.p.get("comment"):
            raise self.ctx.fail(1, "amtool: error: comment required by config")
        start = parse_time(self.p.get("start")) if self.p.get("start") else self.now
        if self.p.get("end"):
            end = parse_time(self.p.get("end"))
        else:
            d = _duration(self.p.get("duration") or "1h")
            if d is None:
                raise self.ctx.fail(1, f'amtool: error: time: invalid duration "{self.p.get("duration")}"')
            end = start + d
        if end <= start:
            raise self.ctx.fail(1, "amtool: error: silence cannot start after it ends")
        sid = uuid_like("silence-new", self.ctx.call.seq, [_fmt_matcher(m) for m in ms])
        self.s["silences"].append(
            {
                "id": sid,
                "matchers": ms,
                "starts_at": iso(start),
                "ends_at": iso(end),
                "created_by": self.p.get("author") or self.ctx.call.env.get("USER", "agent"),
                "comment": self.p.get("comment") or "",
            }
        )
        self.ctx.out(sid)

    def silence_expire(self, args: list[str]) -> None:
        self.ctx.mutating = True
        if not args:
            raise self.ctx.fail(1, "amtool: error: no silence IDs specified")
        for sid in args:
            s = next((x for x in self.s["silences"] if x["id"] == sid), None)
            if s is None:
                raise self.ctx.fail(1, f"amtool: error: silence {sid} not found")
            if parse_time(s["ends_at"]) <= self.now:
                raise self.ctx.fail(1, f"amtool: error: silence {sid} already expired")
            s["ends_at"] = iso(self.now)

    def silence_update(self, args: list[str]) -> None:
        self.ctx.mutating = True
        if not args:
            raise self.ctx.fail(1, "amtool: error: no silence IDs specified")
        for sid in args:
            s = next((x for x in self.s["silences"] if x["id"] == sid), None)
            if s is None:
                raise self.ctx.fail(1, f"amtool: error: silence {sid} not found")
            if self.p.get("comment"):
                s["comment"] = self.p.get("comment")
            if "duration" in self.p.given:
                d = _duration(self.p.get("duration"))
                if d is None:
                    raise self.ctx.fail(1, f'amtool: error: time: invalid duration "{self.p.get("duration")}"')
                s["ends_at"] = iso(parse_time(s["starts_at"]) + d)
            if self.p.get("end"):
                s["ends_at"] = iso(parse_time(self.p.get("end")))
            self.ctx.out(s["id"])

    def silence_import(self, args: list[str]) -> None:
        self.ctx.mutating = True
        raise self.ctx.fail(1, "amtool: error: bulk import is disabled on this Alertmanager; add silences one by one")

    def check_config(self, args: list[str]) -> None:
        if not args:
            raise self.ctx.fail(1, "amtool: error: no config files specified")
        for path in args:
            f = self.ctx.call.file(path)
            self.ctx.out(f"Checking '{path}'", end="")
            if f.error:
                self.ctx.out(f"  FAILED: open {path}: no such file or directory")
                raise ToolExit(1, "\namtool: error: failed to validate 1 file(s)\n")
            text = f.content or ""
            if "route:" not in text:
                self.ctx.out("  FAILED: no route provided in config")
                raise ToolExit(1, "\namtool: error: failed to validate 1 file(s)\n")
            self.ctx.out("  SUCCESS")
            self.ctx.out("Found:\n - global config\n - route\n - 0 inhibit rules\n - 1 receivers\n - 0 templates")

    def config(self, args: list[str]) -> None:
        self.ctx.out(
            "global:\n  resolve_timeout: 5m\nroute:\n  receiver: ops-pager\n  group_by:\n  - alertname\nreceivers:\n- name: ops-pager\ntemplates: []"
        )


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    # kingpin gives every boolean flag a --no-X negation.
    argv = [f"--{a[5:]}=false" if a.startswith("--no-") and f"--{a[5:]}" in BOOL_FLAGS else a for a in call.argv]
    try:
        try:
            p = parse_gnu(argv, OPTS)
        except ArgError as e:
            if e.kind == "unknown":
                raise ctx.fail(1, f"amtool: error: unknown long flag '{e.flag}', try --help") from None
            if e.kind == "unknown_short":
                raise ctx.fail(1, f"amtool: error: unknown short flag '-{e.flag}', try --help") from None
            raise ctx.fail(1, f"amtool: error: expected argument for flag '{e.flag}', try --help") from None
        if p.get("version"):
            ctx.out(VERSION)
            return ctx.result(0)
        if p.get("output") not in ("simple", "extended", "json"):
            raise ctx.fail(1, f"amtool: error: enum value must be one of simple,extended,json, got '{p.get('output')}'")
        if not p.args or p.get("help"):
            ctx.out(
                "usage: amtool [<flags>] <command> [<args> ...]\n\nView and modify the current Alertmanager state.\n\nCommands:\n  alert      View and search through current alerts.\n  silence    Add, expire or view silences.\n  check-config  Validate alertmanager config files.\n  config     View current config."
            )
            return ctx.result(0 if p.get("help") else 1)
        cmd, args = p.args[0], p.args[1:]
        handler = {
            "alert": "alert",
            "alerts": "alert",
            "silence": "silence",
            "silences": "silence",
            "check-config": "check_config",
            "config": "config",
        }.get(cmd)
        if handler is None:
            raise ctx.fail(1, f'amtool: error: expected command but got "{cmd}", try --help')
        a = _A(ctx, p)
        state[SECTION]["_now"] = iso(call.now)
        getattr(a, handler)(args)
    except ToolExit as exc:
        return ctx.finish(exc)
    return ctx.result(0)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"amtool": run}
