"""``systemctl``, ``service`` and ``journalctl`` (systemd 252, Debian 12) over emulated units.

The agent is treated as an operator with the rights to manage the host's units (no polkit
prompt). Messages and exit codes are systemd's: ``Unit foo.service not found.`` (start/stop: 5),
``Unit foo.service could not be found.`` (status: 4), ``status``/``is-active`` exit 3 for an
inactive unit, ``Unknown command verb foo.`` and ``systemctl: unrecognized option '--x'`` (1).
``journalctl --vacuum-time/--vacuum-size`` deletes archived journal files (log retention).

Authored state::

    systemd:
      host: build-01
      units:
        nginx.service:
          description: A high performance web server and a reverse proxy server
          active: active            # active | inactive | failed
          enabled: enabled          # enabled | disabled | static | masked
          main_pid: 812
          logs: "Started nginx.service.\\n"
      journal: {archived_mb: 3800, oldest: "2025-11-02T00:00:00Z"}

Object ids: ``systemd/<host>/unit/<name>`` (value: active and enabled state) and
``systemd/<host>/journal``.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from suite.emulators.base import (
    NO_TERMINAL,
    NO_WAIT,
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
)

SECTION = "systemd"
SUB = {"active": "running", "inactive": "dead", "failed": "failed"}


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    section.setdefault("host", "localhost")
    for name, u in section.setdefault("units", {}).items():
        u.setdefault("description", name)
        u.setdefault("active", "active")
        u.setdefault("enabled", "enabled")
        u.setdefault("since", iso(now - timedelta(hours=3, minutes=12)))
        u.setdefault("main_pid", 400 + sum(map(ord, name)) % 3000)
        u.setdefault("fragment", f"/lib/systemd/system/{name}")
        u.setdefault("logs", f"Started {name} - {u['description']}.\n")
    section.setdefault("journal", {"archived_mb": 0, "oldest": iso(now - timedelta(days=30))})
    return section


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict):
        return ["systemd: expected a mapping"]
    problems = [
        f"systemd.{k}: unknown key (host, units, journal)" for k in section if k not in ("host", "units", "journal")
    ]
    for name, u in (section.get("units") or {}).items():
        if "." not in name:
            problems.append(f"systemd.units.{name}: unit names carry their type, e.g. {name}.service")
        if not isinstance(u, dict):
            problems.append(f"systemd.units.{name}: expected a mapping")
            continue
        if u.get("active", "active") not in ("active", "inactive", "failed"):
            problems.append(f"systemd.units.{name}.active: one of active, inactive, failed")
        if u.get("enabled", "enabled") not in ("enabled", "disabled", "static", "masked"):
            problems.append(f"systemd.units.{name}.enabled: one of enabled, disabled, static, masked")
    return problems


def objects(section: dict[str, Any]) -> dict[str, Any]:
    host = section["host"]
    out: dict[str, Any] = {
        f"systemd/{host}/unit/{n}": {"active": u["active"], "enabled": u["enabled"]}
        for n, u in section.get("units", {}).items()
    }
    out[f"systemd/{host}/journal"] = {
        "archived_mb": section["journal"].get("archived_mb", 0),
        "oldest": section["journal"].get("oldest"),
    }
    return out


def _unit_name(name: str) -> str:
    return name if "." in name else f"{name}.service"


class _S:
    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.s: dict[str, Any] = ctx.state[SECTION]
        self.host = self.s["host"]
        self.now = ctx.call.now

    def unit(self, name: str) -> tuple[str, dict[str, Any] | None]:
        full = _unit_name(name)
        return full, self.s["units"].get(full)

    def expand(self, units: list[str]) -> list[str]:
        """Glob patterns become the loaded units they match (systemctl(1), "Parameter Syntax":
        patterns match the primary names of units in memory, i.e. active or failed ones, of any
        type; a pattern is never given a .service suffix). A pattern that matches nothing adds nothing."""
        out: list[str] = []
        for raw in units:
            if any(c in raw for c in "*?["):
                out.extend(
                    name
                    for name, u in sorted(self.s["units"].items())
                    if fnmatch.fnmatchcase(name, raw) and u["active"] in ("active", "failed") and name not in out
                )
            else:
                out.append(raw)
        return out

    def oid(self, name: str) -> str:
        return f"systemd/{self.host}/unit/{name}"

    def status_text(self, name: str, u: dict[str, Any]) -> str:
        dot = {"active": "●", "inactive": "○", "failed": "×"}[u["active"]]
        preset = "enabled"
        since = parse_time(u["since"])
        ago = self.now - since
        ago_text = (
            f"{int(ago.total_seconds() // 3600)}h {int(ago.total_seconds() % 3600 // 60)}min ago"
            if ago >= timedelta(hours=1)
            else f"{int(ago.total_seconds() // 60)}min ago"
        )
        stamp = since.strftime("%a %Y-%m-%d %H:%M:%S UTC")
        loaded = (
            "masked (Reason: Unit " + name + " is masked.)"
            if u["enabled"] == "masked"
            else f"loaded ({u['fragment']}; {u['enabled']}; preset: {preset})"
        )
        active = {
            "active": f"active ({SUB['active']}) since {stamp}; {ago_text}",
            "inactive": f"inactive (dead) since {stamp}; {ago_text}",
            "failed": f"failed (Result: exit-code) since {stamp}; {ago_text}",
        }[u["active"]]
        # A masked unit's file is /dev/null, so systemd knows no description to print.
        head = f"{dot} {name}" if u["enabled"] == "masked" else f"{dot} {name} - {u['description']}"
        lines = [head, f"     Loaded: {loaded}", f"     Active: {active}"]
        if u["active"] == "active":
            proc = name.split(".")[0]
            lines += [
                f"   Main PID: {u['main_pid']} ({proc})",
                "      Tasks: 3 (limit: 4579)",
                "     Memory: 6.2M",
                "        CPU: 61ms",
                f"     CGroup: /system.slice/{name}",
                f"             └─{u['main_pid']} /usr/sbin/{proc}",
            ]
        logs = [line for line in str(u.get("logs", "")).splitlines() if line][-10:]
        if logs:
            lines.append("")
            for line in logs:
                lines.append(f"{since.strftime('%b %d %H:%M:%S')} {self.host} systemd[1]: {line}")
        return "\n".join(lines)

    def systemctl(self, argv: list[str]) -> int:
        opts = [
            opt("-a", "--all", kind="bool"),
            opt("-t", "--type"),
            opt("--state"),
            opt("--no-pager", kind="bool", inert=NO_TERMINAL),
            opt("--no-legend", kind="bool"),
            opt("--plain", kind="bool"),
            opt("-q", "--quiet", kind="bool"),
            opt("--now", kind="bool"),
            opt("-l", "--full", kind="bool", inert=NO_TERMINAL),
            opt("-p", "--property", kind="list"),
            opt("--value", kind="bool"),
            opt("-f", "--force", kind="bool"),
            opt("--user", kind="bool"),
            opt("--system", kind="bool", inert="the system manager is the one every call talks to"),
            opt("-n", "--lines", kind="int"),
            opt("--no-block", kind="bool", inert=NO_WAIT),
            opt("-s", "--signal"),
            opt("--dry-run", kind="bool"),
            opt("-H", "--host"),
            opt("-h", "--help", kind="bool"),
            opt("--version", kind="bool"),
            opt("--failed", kind="bool"),
            opt("-r", "--recursive", kind="bool"),
            opt("--reverse", kind="bool"),
            opt("--output", "-o"),
        ]
        try:
            p = parse_gnu(argv, opts)
        except ArgError as e:
            if e.kind == "unknown":
                raise self.ctx.fail(1, f"systemctl: unrecognized option '{e.flag}'") from None
            if e.kind == "unknown_short":
                raise self.ctx.fail(1, f"systemctl: invalid option -- '{e.flag}'") from None
            raise self.ctx.fail(1, f"systemctl: option '{e.flag}' requires an argument") from None
        if p.get("help"):
            self.ctx.out(SYSTEMCTL_HELP, end="")
            return 0
        if p.get("version"):
            self.ctx.out(
                "systemd 252 (252.22-1~deb12u1)\n+PAM +AUDIT +SELINUX +APPARMOR +IMA +SMACK +SECCOMP +GCRYPT -GNUTLS +OPENSSL +ACL +BLKID +CURL +ELFUTILS +FIDO2 +IDN2 -IDN +IPTC +KMOD +LIBCRYPTSETUP +LIBFDISK +PCRE2 -PWQUALITY +P11KIT +QRENCODE +TPM2 +BZIP2 +LZ4 +XZ +ZLIB +ZSTD -BPF_FRAMEWORK -XKBCOMMON +UTMP +SYSVINIT default-hierarchy=unified"
            )
            return 0
        if p.get("host") and p.get("host") != self.host:
            raise self.ctx.fail(
                1, f"Failed to connect to bus: Could not resolve hostname {p.get('host')}: Name or service not known"
            )
        if p.get("user"):
            raise self.ctx.fail(
                1,
                "Failed to connect to bus: $DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR not defined (consider using --machine=<user>@.host --user to connect to bus of other user)",
            )
        args = p.args
        verb = args[0] if args else "list-units"
        units = args[1:]
        self.p = p
        handler = getattr(self, "v_" + verb.replace("-", "_"), None)
        if handler is None:
            raise self.ctx.fail(1, f"Unknown command verb {verb}.")
        # --dry-run only affects halt, poweroff, reboot, kexec, suspend, hibernate and the like
        # (systemctl(1), --dry-run): `systemctl stop --dry-run x` stops x, and so does this. Read
        # here so the option counts as handled: the real tool accepts and ignores it, and so do we.
        p.get("dry_run")
        if verb in (
            "start",
            "stop",
            "restart",
            "reload",
            "try-restart",
            "reload-or-restart",
            "enable",
            "disable",
            "mask",
            "unmask",
            "kill",
            "reset-failed",
            "daemon-reload",
            "isolate",
        ):
            self.ctx.mutating = True
        code: int = handler(units)
        return code

    def _need_units(self, units: list[str], verb: str) -> None:
        if not units:
            raise self.ctx.fail(1, "Too few arguments.")

    def v_list_units(self, units: list[str]) -> int:
        kinds = (self.p.get("type") or "").split(",") if self.p.get("type") else []
        states = (self.p.get("state") or "").split(",") if self.p.get("state") else []
        if self.p.get("failed"):
            states.append("failed")
        patterns = [_unit_name(u) if "*" not in u else u for u in units]
        rows = []
        for name, u in sorted(self.s["units"].items()):
            if kinds and name.rsplit(".", 1)[-1] not in kinds:
                continue
            if patterns and not any(re.fullmatch(p.replace(".", r"\.").replace("*", ".*"), name) for p in patterns):
                continue
            load = "masked" if u["enabled"] == "masked" else "loaded"
            if states and u["active"] not in states and SUB[u["active"]] not in states and load not in states:
                continue
            if not self.p.get("all") and u["active"] == "inactive" and not states:
                continue
            self.ctx.saw(self.oid(name))
            desc = name if load == "masked" else u["description"]
            rows.append(("●" if u["active"] == "failed" else " ", name, load, u["active"], SUB[u["active"]], desc))
        legend = not self.p.get("no_legend")
        plain = bool(self.p.get("plain"))
        # Columns are as wide as their widest cell, header included (systemctl's table code).
        heads = ("UNIT", "LOAD", "ACTIVE", "SUB")
        widths = [max([len(h)] + [len(r[i + 1]) for r in rows]) for i, h in enumerate(heads)]

        def line(mark: str, cells: tuple[str, ...], desc: str) -> str:
            body = " ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " " + desc
            return body.rstrip() if plain else f"{mark} {body}".rstrip()

        if legend and rows:
            self.ctx.out(line(" ", heads, "DESCRIPTION"))
        for mark, *cells, desc in rows:
            self.ctx.out(line(mark, tuple(cells), desc))
        if legend:
            if rows:
                self.ctx.out(
                    "\nLOAD   = Reflects whether the unit definition was properly loaded.\nACTIVE = The high-level unit activation state, i.e. generalization of SUB.\nSUB    = The low-level unit activation state, values depend on unit type.\n"
                )
            if self.p.get("all") or "inactive" in states:
                self.ctx.out(
                    f"{len(rows)} loaded units listed.\nTo show all installed unit files use 'systemctl list-unit-files'."
                )
            elif not states:
                self.ctx.out(
                    f"{len(rows)} loaded units listed. Pass --all to see loaded but inactive units, too.\nTo show all installed unit files use 'systemctl list-unit-files'."
                )
            else:
                self.ctx.out(f"{len(rows)} loaded units listed.")
        return 0

    def v_list_unit_files(self, units: list[str]) -> int:
        kinds = (self.p.get("type") or "").split(",") if self.p.get("type") else []
        rows = [
            (n, u["enabled"], "-" if u["enabled"] == "static" else "enabled")
            for n, u in sorted(self.s["units"].items())
            if not kinds or n.rsplit(".", 1)[-1] in kinds
        ]
        width = max([len(r[0]) for r in rows] + [9])
        state_w = max([len(r[1]) for r in rows] + [5])
        if not self.p.get("no_legend"):
            self.ctx.out(f"{'UNIT FILE'.ljust(width)} {'STATE'.ljust(state_w)} PRESET")
        for n, st, preset in rows:
            self.ctx.out(f"{n.ljust(width)} {st.ljust(state_w)} {preset}")
        if not self.p.get("no_legend"):
            self.ctx.out(f"\n{len(rows)} unit files listed.")
        return 0

    def v_list_timers(self, units: list[str]) -> int:
        show_all = self.p.get("all")
        rows = []
        for name, u in sorted(self.s["units"].items()):
            if not name.endswith(".timer") or (u["active"] != "active" and not show_all):
                continue
            self.ctx.saw(self.oid(name))
            # The emulator keeps no calendar: a timer last fired when it last started and fires
            # again a day later, which is what the nightly timers families author look like.
            last = parse_time(u["since"])
            nxt = last + timedelta(days=1)
            rows.append(
                [
                    _stamp(nxt),
                    _span(nxt - self.now) + " left",
                    _stamp(last),
                    _span(self.now - last) + " ago",
                    name,
                    u.get("activates", name[: -len(".timer")] + ".service"),
                ]
            )
        heads = ["NEXT", "LEFT", "LAST", "PASSED", "UNIT", "ACTIVATES"]
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]
        if not self.p.get("no_legend"):
            self.ctx.out(" ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip())
        for r in rows:
            self.ctx.out(" ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if not self.p.get("no_legend"):
            self.ctx.out(f"\n{len(rows)} timers listed.\nPass --all to see loaded but inactive timers, too.")
        return 0

    def v_status(self, units: list[str]) -> int:
        units = self.expand(units)
        if not units:
            self.ctx.out(
                f"● {self.host}\n    State: running\n    Units: {len(self.s['units'])} loaded\n     Jobs: 0 queued\n   Failed: {sum(1 for u in self.s['units'].values() if u['active'] == 'failed')} units"
            )
            return 0
        code = 0
        chunks = []
        for raw in units:
            name, u = self.unit(raw)
            if u is None:
                self.ctx.err(f"Unit {name} could not be found.")
                code = 4
                continue
            self.ctx.saw(self.oid(name))
            chunks.append(self.status_text(name, u))
            if u["active"] != "active" and code == 0:
                code = 3
        if chunks:
            self.ctx.out("\n\n".join(chunks))
        return code

    def v_is_active(self, units: list[str]) -> int:
        units = self.expand(units)
        self._need_units(units, "is-active")
        code = 0
        for raw in units:
            name, u = self.unit(raw)
            state = u["active"] if u else "inactive"
            if u:
                self.ctx.saw(self.oid(name))
            if not self.p.get("quiet"):
                self.ctx.out(state)
            if state != "active":
                code = 3
        return code

    def v_is_failed(self, units: list[str]) -> int:
        units = self.expand(units)
        self._need_units(units, "is-failed")
        code = 1
        for raw in units:
            _, u = self.unit(raw)
            state = u["active"] if u else "inactive"
            if not self.p.get("quiet"):
                self.ctx.out(state)
            if state == "failed":
                code = 0
        return code

    def v_is_enabled(self, units: list[str]) -> int:
        self._need_units(units, "is-enabled")
        code = 0
        for raw in units:
            name, u = self.unit(raw)
            if u is None:
                self.ctx.err(f"Failed to get unit file state for {name}: No such file or directory")
                return 1
            if not self.p.get("quiet"):
                self.ctx.out(u["enabled"])
            if u["enabled"] not in ("enabled", "static"):
                code = 1
        return code

    def v_cat(self, units: list[str]) -> int:
        units = self.expand(units)
        self._need_units(units, "cat")
        for raw in units:
            name, u = self.unit(raw)
            if u is None:
                self.ctx.err(f"No files found for {name}.")
                return 1
            self.ctx.saw(self.oid(name))
            self.ctx.out(
                f"# {u['fragment']}\n"
                + u.get(
                    "unit_file",
                    f"[Unit]\nDescription={u['description']}\n\n[Service]\nExecStart=/usr/sbin/{name.split('.')[0]}\n\n[Install]\nWantedBy=multi-user.target\n",
                ),
                end="",
            )
        return 0

    def v_show(self, units: list[str]) -> int:
        units = self.expand(units)
        for raw in units or ["systemd"]:
            name, u = self.unit(raw)
            if u is None:
                props = {"Id": name, "LoadState": "not-found", "ActiveState": "inactive", "SubState": "dead"}
            else:
                self.ctx.saw(self.oid(name))
                props = {
                    "Id": name,
                    "Description": u["description"],
                    "LoadState": "loaded",
                    "ActiveState": u["active"],
                    "SubState": SUB[u["active"]],
                    "UnitFileState": u["enabled"],
                    "MainPID": str(u["main_pid"] if u["active"] == "active" else 0),
                    "FragmentPath": u["fragment"],
                }
            wanted = [x for item in (self.p.get("property") or []) for x in item.split(",")]
            for k, v in props.items():
                if wanted and k not in wanted:
                    continue
                self.ctx.out(v if self.p.get("value") else f"{k}={v}")
        return 0

    def _change(self, units: list[str], verb: str) -> int:
        self._need_units(units, verb)
        units = self.expand(units)
        for raw in units:
            name, u = self.unit(raw)
            if u is None:
                word = {
                    "start": "start",
                    "stop": "stop",
                    "restart": "restart",
                    "reload": "reload",
                    "try-restart": "try-restart",
                    "reload-or-restart": "reload-or-restart",
                    "kill": "kill",
                }[verb]
                raise self.ctx.fail(5 if verb != "kill" else 1, f"Failed to {word} {name}: Unit {name} not found.")
            if u["enabled"] == "masked" and verb in ("start", "restart", "reload-or-restart"):
                raise self.ctx.fail(1, f"Failed to {verb} {name}: Unit {name} is masked.")
            if self.ctx.dry_run:
                continue
            if verb in ("start", "restart", "reload-or-restart") or (verb == "try-restart" and u["active"] == "active"):
                u["active"] = "active"
                u["since"] = iso(self.now)
                u["main_pid"] = int(u["main_pid"]) + 17
            elif verb in ("stop", "kill"):
                u["active"] = "inactive"
                u["since"] = iso(self.now)
            elif verb == "reload":
                if u["active"] != "active":
                    raise self.ctx.fail(
                        1,
                        f'Job for {name} failed.\nSee "systemctl status {name}" and "journalctl -xeu {name}" for details.',
                    )
        return 0

    def v_start(self, units: list[str]) -> int:
        return self._change(units, "start")

    def v_stop(self, units: list[str]) -> int:
        return self._change(units, "stop")

    def v_restart(self, units: list[str]) -> int:
        return self._change(units, "restart")

    def v_reload(self, units: list[str]) -> int:
        return self._change(units, "reload")

    def v_try_restart(self, units: list[str]) -> int:
        return self._change(units, "try-restart")

    def v_reload_or_restart(self, units: list[str]) -> int:
        return self._change(units, "reload-or-restart")

    def v_kill(self, units: list[str]) -> int:
        return self._change(units, "kill")

    def _file_state(self, units: list[str], verb: str) -> int:
        self._need_units(units, verb)
        for raw in units:
            name, u = self.unit(raw)
            if u is None:
                raise self.ctx.fail(1, f"Failed to {verb} unit: Unit file {name} does not exist.")
            new = {"enable": "enabled", "disable": "disabled", "mask": "masked", "unmask": "disabled"}[verb]
            if verb == "unmask" and u["enabled"] != "masked":
                continue
            if verb in ("enable", "disable") and u["enabled"] == "static":
                self.ctx.err(
                    "The unit files have no installation config (WantedBy=, RequiredBy=, Also=,\nAlias= settings in the [Install] section, and DefaultInstance= for template\nunits). This means they are not meant to be enabled or disabled using systemctl."
                )
                continue
            if u["enabled"] == new:
                continue
            # Timers are installed into timers.target (WantedBy=timers.target), services into multi-user.target.
            wants = "timers.target" if name.endswith(".timer") else "multi-user.target"
            target = f"/etc/systemd/system/{wants}.wants/{name}"
            if not self.ctx.dry_run:
                u["enabled"] = new
            if verb == "enable":
                self.ctx.err(f"Created symlink {target} → {u['fragment']}.")
            elif verb == "disable":
                self.ctx.err(f'Removed "{target}".')
            elif verb == "mask":
                self.ctx.err(f"Created symlink /etc/systemd/system/{name} → /dev/null.")
            else:
                self.ctx.err(f'Removed "/etc/systemd/system/{name}".')
            if self.p.get("now") and not self.ctx.dry_run:
                u["active"] = "active" if verb == "enable" else "inactive"
                u["since"] = iso(self.now)
        return 0

    def v_enable(self, units: list[str]) -> int:
        return self._file_state(units, "enable")

    def v_disable(self, units: list[str]) -> int:
        return self._file_state(units, "disable")

    def v_mask(self, units: list[str]) -> int:
        return self._file_state(units, "mask")

    def v_unmask(self, units: list[str]) -> int:
        return self._file_state(units, "unmask")

    def v_daemon_reload(self, units: list[str]) -> int:
        return 0

    def v_reset_failed(self, units: list[str]) -> int:
        for name, u in self.s["units"].items():
            if (not units or name in [_unit_name(x) for x in units]) and u["active"] == "failed":
                u["active"] = "inactive"
        return 0

    # -- service ------------------------------------------------------------------------

    def service(self, argv: list[str]) -> int:
        if not argv or argv[0] in ("-h", "--help"):
            self.ctx.err("Usage: service < option > | --status-all | [ service_name [ command | --full-restart ] ]")
            return 1 if not argv else 0
        if argv[0] == "--status-all":
            for name, u in sorted(self.s["units"].items()):
                if name.endswith(".service"):
                    self.ctx.out(f" [ {'+' if u['active'] == 'active' else '-'} ]  {name[:-8]}")
            return 0
        if argv[0] == "--version":
            self.ctx.out("service ver. 1.65.2")
            return 0
        name = _unit_name(argv[0])
        u = self.s["units"].get(name)
        if u is None:
            raise self.ctx.fail(1, f"{argv[0]}: unrecognized service")
        if len(argv) < 2:
            raise self.ctx.fail(1, f"Usage: /etc/init.d/{argv[0]} {{start|stop|restart|reload|force-reload|status}}")
        action = argv[1]
        self.p = parse_gnu(
            [],
            [
                opt("-q", "--quiet", kind="bool"),
                opt("--dry-run", kind="bool"),
                opt("--now", kind="bool"),
                opt("-a", "--all", kind="bool"),
                opt("-p", "--property", kind="list"),
                opt("--value", kind="bool"),
                opt("-t", "--type"),
                opt("--state"),
                opt("--no-legend", kind="bool"),
                opt("--plain", kind="bool"),
            ],
        )
        if action == "status":
            return self.v_status([name])
        if action in ("start", "stop", "restart", "reload", "force-reload"):
            self.ctx.mutating = True
            return self._change([name], "restart" if action == "force-reload" else action)
        raise self.ctx.fail(1, f"Usage: /etc/init.d/{argv[0]} {{start|stop|restart|reload|force-reload|status}}")

    # -- journalctl -----------------------------------------------------------------------

    def journalctl(self, argv: list[str]) -> int:
        opts = [
            opt("-u", "--unit", kind="list"),
            opt("-n", "--lines", bare="10"),
            opt("-f", "--follow", kind="bool"),
            opt("--no-pager", kind="bool", inert=NO_TERMINAL),
            opt("-e", "--pager-end", kind="bool", inert=NO_TERMINAL),
            opt("-x", "--catalog", kind="bool"),
            opt("-b", "--boot", bare="0"),
            opt("-p", "--priority"),
            opt("-S", "--since"),
            opt("-U", "--until"),
            opt("-g", "--grep"),
            opt("--case-sensitive", bare="true"),
            opt("-o", "--output"),
            opt("-q", "--quiet", kind="bool"),
            opt("-r", "--reverse", kind="bool"),
            opt("-a", "--all", kind="bool"),
            opt("-l", "--full", kind="bool", inert=NO_TERMINAL),
            opt("--no-hostname", kind="bool"),
            opt("--utc", kind="bool"),
            opt("-t", "--identifier", kind="list"),
            opt("--vacuum-time"),
            opt("--vacuum-size"),
            opt("--vacuum-files"),
            opt("--disk-usage", kind="bool"),
            opt("--list-boots", kind="bool"),
            opt("--rotate", kind="bool"),
            opt("-k", "--dmesg", kind="bool"),
            opt("-h", "--help", kind="bool"),
            opt("--version", kind="bool"),
        ]
        try:
            p = parse_gnu(_journal_optional_args(argv), opts)
        except ArgError as e:
            raise self.ctx.fail(
                1,
                f"journalctl: unrecognized option '{e.flag}'"
                if e.kind == "unknown"
                else f"journalctl: option '{e.flag}' requires an argument"
                if e.kind == "needs_value"
                else f"journalctl: invalid option -- '{e.flag}'",
            ) from None
        if p.get("help"):
            self.ctx.out(JOURNALCTL_HELP, end="")
            return 0
        if p.get("version"):
            self.ctx.out("systemd 252 (252.22-1~deb12u1)")
            return 0
        journal = self.s["journal"]
        if p.get("disk_usage"):
            size = _format_bytes((journal.get("archived_mb", 0) + 48) * 1024 * 1024)
            self.ctx.out(f"Archived and active journals take up {size} in the file system.")
            return 0
        if p.get("list_boots"):
            boot = short_hash("boot", self.host, length=32)
            up = self.now - timedelta(days=6, hours=2)
            self.ctx.out(f"IDX BOOT ID{' ' * 26}FIRST ENTRY                 LAST ENTRY")
            self.ctx.out(f"  0 {boot} {_stamp(up)} {_stamp(self.now)}")
            return 0
        if p.get("vacuum_time") or p.get("vacuum_size") or p.get("vacuum_files") or p.get("rotate"):
            return self._vacuum(p, journal)
        fmt = p.get("output") or "short"
        if fmt not in ("short", "short-iso", "short-precise", "short-full", "cat", "json", "json-pretty", "verbose"):
            raise self.ctx.fail(1, f"Unknown output format '{fmt}'.")
        since = until = None
        for key in ("since", "until"):
            if p.get(key):
                when = _parse_when(p.get(key), self.now)
                if when is None:
                    raise self.ctx.fail(1, f"Failed to parse timestamp: {p.get(key)}")
                since, until = (when, until) if key == "since" else (since, when)
        grep = None
        if p.get("grep"):
            pattern = p.get("grep")
            # Smart case (journalctl(1), --case-sensitive): lower-case patterns match any case.
            insensitive = p.get("case_sensitive") in ("false", "0", "no") or (
                p.get("case_sensitive") is None and pattern == pattern.lower()
            )
            try:
                grep = re.compile(pattern, re.I if insensitive else 0)
            except re.error as exc:
                raise self.ctx.fail(1, f'Bad pattern "{pattern}": {exc.msg}') from None
        units = [_unit_name(u) for u in p.get("unit") or []]
        # Positional arguments are journal matches: FIELD=VALUE, or an executable's path.
        for match in p.args:
            field, eq, value = match.partition("=")
            if eq and field == "_SYSTEMD_UNIT":
                units.append(_unit_name(value))
            elif eq and field in ("SYSLOG_IDENTIFIER", "_COMM"):
                units.extend(n for n in self.s["units"] if n.split(".")[0] == value)
            elif match.startswith("/"):
                units.extend(n for n in self.s["units"] if n.split(".")[0] == match.rsplit("/", 1)[-1])
            elif not (eq and re.fullmatch(r"[A-Z0-9_]+", field)):
                raise self.ctx.fail(1, f"Failed to add match '{match}': Invalid argument")
            if eq and field not in ("_SYSTEMD_UNIT", "SYSLOG_IDENTIFIER", "_COMM") and not units:
                units.append("\0no-such-unit")  # a field this journal has no entries for
        entries: list[tuple[datetime, str, dict[str, Any], str]] = []
        for name, u in sorted(self.s["units"].items()):
            if units and name not in units:
                continue
            self.ctx.saw(self.oid(name))
            stamp = parse_time(u["since"])
            if (since and stamp < since) or (until and stamp > until):
                continue
            for line in str(u.get("logs", "")).splitlines():
                if line and (grep is None or grep.search(line)):
                    entries.append((stamp, name, u, line))
        n = p.get("lines")
        if n is not None and n != "all":
            try:
                count = int(n.lstrip("+"))
            except ValueError:
                raise self.ctx.fail(1, f"Failed to parse lines '{n}'.") from None
            entries = entries[-count:] if count else []
        if p.get("reverse"):
            entries.reverse()
        if not entries:
            if not p.get("quiet") and not fmt.startswith("json"):
                self.ctx.out("-- No entries --")
            return 0
        for stamp, name, u, line in entries:
            self.ctx.out(self._journal_line(fmt, stamp, name, u, line, p))
        return 0

    def _journal_line(self, fmt: str, stamp: datetime, name: str, u: dict[str, Any], line: str, p: Any) -> str:
        proc = name.split(".")[0]
        host = "" if p.get("no_hostname") else f" {self.host}"
        if fmt == "cat":
            return line
        if fmt in ("json", "json-pretty"):
            usec = str(int(stamp.timestamp() * 1_000_000))
            entry = {
                "__REALTIME_TIMESTAMP": usec,
                "_HOSTNAME": self.host,
                "_SYSTEMD_UNIT": name,
                "SYSLOG_IDENTIFIER": proc,
                "_PID": str(u["main_pid"]),
                "PRIORITY": "6",
                "MESSAGE": line,
            }
            return json.dumps(entry, indent=8 if fmt == "json-pretty" else None)
        if fmt == "short-iso":
            when = stamp.strftime("%Y-%m-%dT%H:%M:%S+0000")
        elif fmt == "short-precise":
            when = stamp.strftime("%b %d %H:%M:%S.000000")
        elif fmt == "short-full":
            when = stamp.strftime("%a %Y-%m-%d %H:%M:%S UTC")
        else:
            when = stamp.strftime("%b %d %H:%M:%S")
        return f"{when}{host} {proc}[{u['main_pid']}]: {line}"

    def _vacuum(self, p: Any, journal: dict[str, Any]) -> int:
        self.ctx.mutating = True
        before = journal.get("archived_mb", 0)
        if p.get("vacuum_time"):
            days = _days(p.get("vacuum_time"))
            if days is None:
                raise self.ctx.fail(1, f"Failed to parse timestamp: {p.get('vacuum_time')}")
            cutoff = self.now - timedelta(days=days)
            oldest = parse_time(journal.get("oldest", iso(self.now)))
            if oldest < cutoff:
                span = (self.now - oldest).total_seconds() or 1
                keep = max(0.0, (self.now - cutoff).total_seconds() / span)
                journal["archived_mb"] = int(before * keep)
                journal["oldest"] = iso(cutoff)
        if p.get("vacuum_size"):
            size = _megabytes(p.get("vacuum_size"))
            if size is None:
                raise self.ctx.fail(1, f"Failed to parse size: {p.get('vacuum_size')}")
            journal["archived_mb"] = min(journal.get("archived_mb", 0), int(size))
        if p.get("vacuum_files"):
            journal["archived_mb"] = min(journal.get("archived_mb", 0), 8 * int(p.get("vacuum_files")))
        freed = before - journal["archived_mb"]
        for i in range(min(3, max(0, freed // 128))):
            self.ctx.err(
                f"Deleted archived journal /var/log/journal/{_machine(self.host)}/system@000{i:02d}.journal (128.0M)."
            )
        self.ctx.err(
            f"Vacuuming done, freed {_format_bytes(freed * 1024 * 1024)} of archived journals from /var/log/journal/{_machine(self.host)}."
        )
        return 0


def _journal_optional_args(argv: list[str]) -> list[str]:
    """journalctl takes ``-n 5`` and ``-b -1`` although the arguments are optional.

    journalctl.c: when -n or -b is given without an attached argument, the next word is used if
    it parses as one (a number, ``all``, a boot offset); getopt alone would leave it as a match.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if a in ("-n", "--lines") and nxt is not None and re.fullmatch(r"\+?\d+|all", nxt):
            out.append(f"{a}={nxt}" if a.startswith("--") else f"-n{nxt}")
            i += 2
            continue
        if a in ("-b", "--boot") and nxt is not None and re.fullmatch(r"[+-]?\d+|[0-9a-f]{32}", nxt):
            out.append(f"{a}={nxt}" if a.startswith("--") else f"-b{nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _format_bytes(n: float) -> str:
    """systemd's format_bytes(): binary units, one decimal, truncated (3848M is 3.7G)."""
    for unit, factor in (
        ("E", 1 << 60),
        ("P", 1 << 50),
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ):
        if n >= factor:
            tenths = int(n * 10 // factor)
            return f"{tenths // 10}.{tenths % 10}{unit}"
    return f"{int(n)}B"


def _stamp(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%a %Y-%m-%d %H:%M:%S UTC")


def _span(d: timedelta) -> str:
    """systemd's format_timespan() at the precision list-timers uses (``16h``, ``3h 12min``)."""
    seconds = max(0, int(d.total_seconds()))
    days, rem = divmod(seconds, 86400)
    hours, rem = divmod(rem, 3600)
    minutes = rem // 60
    parts = [f"{days}d"] if days else []
    if hours:
        parts.append(f"{hours}h")
    if minutes and not days:
        parts.append(f"{minutes}min")
    return " ".join(parts) or f"{seconds}s"


_WHEN_UNITS = {
    "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip


def _parse_when(text: str, now: datetime) -> datetime | None:
    """A systemd.time(7) timestamp: absolute, ``today``/``yesterday``, ``-1h``, ``2 hours ago``."""
    t = text.strip().lower()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    named = {
        "now": now,
        "today": midnight,
        "yesterday": midnight - timedelta(days=1),
        "tomorrow": midnight + timedelta(days=1),
    }
    if t in named:
        return named[t]
    m = re.fullmatch(r"([+-])?\s*(\d+)\s*([a-z]+)(\s+ago)?", t)
    if m and m.group(3) in _WHEN_UNITS:
        delta = timedelta(seconds=int(m.group(2)) * _WHEN_UNITS[m.group(3)])
        return now - delta if m.group(1) == "-" or m.group(4) else now + delta
    if t.startswith("@") and t[1:].isdigit():
        return datetime.fromtimestamp(int(t[1:]), UTC)
    for pattern in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(t, pattern).replace(tzinfo=UTC)
        except ValueError:
            pass
    for pattern in ("%H:%M:%S", "%H:%M"):
        try:
            clock = datetime.strptime(t, pattern)
        except ValueError:
            continue
        return midnight.replace(hour=clock.hour, minute=clock.minute, second=clock.second)
    return None


SYSTEMCTL_HELP = """systemctl [OPTIONS...] COMMAND ...

Query or send control commands to the system manager.

Unit Commands:
  list-units [PATTERN...]             List units currently in memory
  list-timers [PATTERN...]            List timer units currently in memory,
                                      ordered by next elapse
  is-active PATTERN...                Check whether units are active
  is-failed [PATTERN...]              Check whether units are failed or
                                      system is in degraded state
  status [PATTERN...|PID...]          Show runtime status of one or more units
  show [PATTERN...|JOB...]            Show properties of one or more
                                      units/jobs or the manager
  cat PATTERN...                      Show files and drop-ins of specified units
  start UNIT...                       Start (activate) one or more units
  stop UNIT...                        Stop (deactivate) one or more units
  reload UNIT...                      Reload one or more units
  restart UNIT...                     Start or restart one or more units
  try-restart UNIT...                 Restart one or more units if active
  reload-or-restart UNIT...           Reload one or more units if possible,
                                      otherwise start or restart
  kill UNIT...                        Send signal to processes of a unit
  reset-failed [PATTERN...]           Reset failed state for all, one, or more
                                      units

Unit File Commands:
  list-unit-files [PATTERN...]        List installed unit files
  enable [UNIT...|PATH...]            Enable one or more unit files
  disable UNIT...                     Disable one or more unit files
  is-enabled UNIT...                  Check whether unit files are enabled
  mask UNIT...                        Mask one or more units
  unmask UNIT...                      Unmask one or more units

Manager State Commands:
  daemon-reload                       Reload systemd manager configuration

Options:
  -h --help              Show this help
     --version           Show package version
  -t --type=TYPE         List units of a particular type
     --state=STATE       List units with particular LOAD or SUB or ACTIVE state
     --failed            Shortcut for --state=failed
  -p --property=NAME     Show only properties by this name
  -P NAME                Equivalent to --value --property=NAME
  -a --all               Show all properties/all units currently in memory,
                         including dead/empty ones. To list all units installed
                         on the system, use 'list-unit-files' instead.
  -l --full              Don't ellipsize unit names on output
     --value             When showing properties, only print the value
  -q --quiet             Suppress output
     --no-block          Do not wait until operation finished
     --no-legend         Do not print a legend (column headers and hints)
     --no-pager          Do not pipe output into a pager
     --now               Start or stop unit after enabling or disabling it
     --dry-run           Only print what would be done
                         Currently supported by verbs: halt, poweroff, reboot,
                             kexec, suspend, hibernate, suspend-then-hibernate,
                             hybrid-sleep, default, rescue, emergency, and exit.
  -H --host=[USER@]HOST  Operate on remote host
     --user              Connect to user service manager
     --system            Connect to system manager

See the systemctl(1) man page for details.
"""
JOURNALCTL_HELP = """journalctl [OPTIONS...] [MATCHES...]

Query the journal.

Source Options:
  -b --boot[=ID]             Show current boot or the specified boot
  -u --unit=UNIT             Show logs from the specified unit
  -t --identifier=STRING     Show entries with the specified syslog identifier
  -S --since=DATE            Show entries not older than the specified date
  -U --until=DATE            Show entries not newer than the specified date

Filtering Options:
  -p --priority=RANGE        Show entries with the specified priority
  -g --grep=PATTERN          Show entries with MESSAGE matching PATTERN
     --case-sensitive[=BOOL] Force case sensitive or insensitive matching
  -k --dmesg                 Show kernel message log from the current boot

Output Control Options:
  -o --output=STRING         Change journal output mode (short, short-precise,
                               short-iso, short-full, verbose, json,
                               json-pretty, cat)
  -n --lines[=INTEGER]       Number of journal entries to show
  -r --reverse               Show the newest entries first
  -q --quiet                 Do not show info messages and privilege warning
  -e --pager-end             Immediately jump to the end in the pager
  -f --follow                Follow the journal
     --no-pager              Do not pipe output into a pager
     --no-hostname           Suppress output of hostname field

Commands:
  -h --help                  Show this help text
     --version               Show package version
     --list-boots            Show terse information about recorded boots
     --disk-usage            Show total disk usage of all journal files
     --vacuum-size=BYTES     Reduce disk usage below specified size
     --vacuum-files=INT      Leave only the specified number of journal files
     --vacuum-time=TIME      Remove journal files older than specified time
     --rotate                Request immediate rotation of the journal files

See the journalctl(1) man page for details.
"""


def _days(text: str) -> float | None:
    m = re.match(r"^(\d+)\s*(s|m|h|d|w|months|month|y|years|year|days|day|weeks|week)?$", text.strip())
    if not m:
        return None
    n = int(m.group(1))
    unit = m.group(2) or "s"
    return (
        n
        * {
            "s": 1 / 86400,
            "m": 1 / 1440,
            "h": 1 / 24,
            "d": 1,
            "day": 1,
            "days": 1,
            "w": 7,
            "week": 7,
            "weeks": 7,
            "month": 30,
            "months": 30,
            "y": 365,
            "year": 365,
            "years": 365,
        }[unit]
    )


def _megabytes(text: str) -> float | None:
    m = re.match(r"^(\d+(?:\.\d+)?)([KMGT]?)$", text.strip().upper())
    if not m:
        return None
    return float(m.group(1)) * {"": 1 / 1024 / 1024, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[m.group(2)]


def _machine(host: str) -> str:
    return short_hash("machine-id", host, length=32)


def _runner(which: str) -> Callable[[dict[str, Any], Call], Result]:
    def run(state: dict[str, Any], call: Call) -> Result:
        ctx = Ctx(state, call)
        s = _S(ctx)
        try:
            code = getattr(s, which)(list(call.argv))
        except ToolExit as exc:
            return ctx.finish(exc)
        return ctx.result(code)

    return run


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {
    "systemctl": _runner("systemctl"),
    "service": _runner("service"),
    "journalctl": _runner("journalctl"),
}
