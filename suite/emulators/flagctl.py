"""``flagctl``: a feature-flag service CLI (state section ``flags``).

Modelled on the LaunchDarkly and Unleash concepts (projects, environments, per-environment
on/off state, percentage rollouts, individual targets, archived flags) with a cobra-style
command line. Changes in a *protected* environment (production by default) need ``--yes`` or a
typed confirmation of the flag key on stdin; ``--dry-run`` prints the change without making it.
Exit codes: 0, 1 for errors (unknown flag or environment, refused confirmation), 2 for usage.

Commands::

    flagctl [--project P] [--env E] list [--tag T] [--archived] [-o table|json]
    flagctl get KEY [--env E] [-o json]
    flagctl enable|disable KEY --env E [--yes] [--dry-run]
    flagctl rollout KEY --env E --percent N [--yes] [--dry-run]
    flagctl target add|remove KEY --env E --user ID [--yes]
    flagctl archive KEY [--yes] / flagctl delete KEY --yes
    flagctl envs / flagctl history [KEY]

Authored state::

    flags:
      project: storefront
      environments: [development, staging, production]
      protected: [production]
      flags:
        pricing-v2:
          name: Pricing engine v2
          tags: [pricing]
          environments: {production: {on: false, rollout: 0}, staging: {on: true, rollout: 100}}

Object ids: ``flag/<project>/<key>`` (name, tags, archived) and
``flag/<project>/<key>/env/<environment>`` (on, rollout, targets).

flagctl is made up, so nothing an agent knows describes it: ``flagctl --help``, ``flagctl help
COMMAND``, ``flagctl COMMAND --help`` and ``flagctl docs`` (the manual, ``docs/flagctl.md``
next to this module) say everything the emulator does, in the usual places a real CLI says it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from suite.emulators.base import ArgError, Call, Ctx, Result, ToolExit, iso, opt, parse_gnu, table

SECTION = "flags"


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    section.setdefault("project", "default")
    section.setdefault("environments", ["development", "staging", "production"])
    section.setdefault("protected", ["production"])
    section.setdefault("default_env", section["environments"][0])
    section.setdefault("history", [])
    for key, f in section.setdefault("flags", {}).items():
        f.setdefault("name", key)
        f.setdefault("description", "")
        f.setdefault("tags", [])
        f.setdefault("archived", False)
        envs = f.setdefault("environments", {})
        for env in section["environments"]:
            e = envs.setdefault(env, {})
            e.setdefault("on", False)
            e.setdefault("rollout", 100 if e["on"] else 0)
            e.setdefault("targets", [])
    return section


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict):
        return ["flags: expected a mapping"]
    allowed = ("project", "environments", "protected", "default_env", "flags", "history")
    problems = [f"flags.{k}: unknown key ({', '.join(allowed)})" for k in section if k not in allowed]
    envs = section.get("environments") or ["development", "staging", "production"]
    for key, f in (section.get("flags") or {}).items():
        for env in (f or {}).get("environments") or {}:
            if env not in envs:
                problems.append(f"flags.flags.{key}.environments.{env}: not one of the environments {envs}")
        for env, e in ((f or {}).get("environments") or {}).items():
            if isinstance(e, dict) and not 0 <= int(e.get("rollout", 0)) <= 100:
                problems.append(f"flags.flags.{key}.environments.{env}.rollout: a percentage 0-100")
    return problems


def objects(section: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    proj = section["project"]
    for key, f in section.get("flags", {}).items():
        fid = f"flag/{proj}/{key}"
        out[fid] = {"name": f["name"], "tags": f["tags"], "archived": f["archived"]}
        for env, e in f["environments"].items():
            out[f"{fid}/env/{env}"] = {
                "on": e["on"],
                "rollout": e["rollout"],
                "targets": sorted(e["targets"]),
                "_owner": fid,
            }
    return out


OPTS = [
    opt("--project"),
    opt("-e", "--env"),
    opt("-o", "--output", default="table"),
    opt("--tag"),
    opt("--archived", kind="bool"),
    opt("-y", "--yes", kind="bool"),
    opt("--dry-run", kind="bool"),
    opt("--percent", kind="int", default=-1),
    opt("--user", kind="list"),
    opt("--name"),
    opt("--comment"),
    opt("-h", "--help", kind="bool"),
]
MANUAL = (Path(__file__).parent / "docs" / "flagctl.md").read_text(encoding="utf-8")
USAGE = """flagctl manages the feature flags of a project: their state, rollouts and targets
in each environment. Run 'flagctl docs' for the manual.

Usage:
  flagctl [command]

Available Commands:
  archive     Archive a flag (hides it from evaluation)
  delete      Delete an archived flag permanently
  disable     Turn a flag off in an environment
  enable      Turn a flag on in an environment
  envs        List environments
  get         Show a flag
  history     Show the change history
  list        List flags
  rollout     Set the percentage rollout of a flag in an environment
  target      Add or remove individual targets

Flags:
  -e, --env string       environment (default from FLAGCTL_ENV)
      --project string   project (default from FLAGCTL_PROJECT)
  -y, --yes              do not ask for confirmation in protected environments
      --dry-run          print the change without making it
  -h, --help             help for flagctl
  -o, --output string    output format of list and get: table or json (default "table")

Use "flagctl [command] --help" for more information about a command.
"""
# (summary, usage, flags) of each command, as cobra prints them for `flagctl help COMMAND`.
COMMAND_HELP: dict[str, tuple[str, str, str]] = {
    "archive": (
        "Archive a flag: turn it off everywhere and stop evaluating it. Refused while the flag is on\nanywhere, unless --yes.",
        "flagctl archive KEY [flags]",
        "  -y, --yes       archive even though the flag is on somewhere\n      --dry-run   print the change without making it",
    ),
    "delete": (
        "Delete an archived flag permanently. Cannot be undone.",
        "flagctl delete KEY --yes [flags]",
        "  -y, --yes       confirm the deletion (required)\n      --dry-run   print the change without making it",
    ),
    "disable": (
        "Turn a flag off in an environment: every user is served the fallback.",
        "flagctl disable KEY --env ENVIRONMENT [flags]",
        "  -e, --env string   environment (required)\n  -y, --yes          do not ask for confirmation in protected environments\n      --dry-run      print the change without making it",
    ),
    "enable": (
        "Turn a flag on in an environment. A flag whose rollout is 0% is set to 100%.",
        "flagctl enable KEY --env ENVIRONMENT [flags]",
        "  -e, --env string   environment (required)\n  -y, --yes          do not ask for confirmation in protected environments\n      --dry-run      print the change without making it",
    ),
    "envs": ("List the project's environments and whether each is protected.", "flagctl envs [flags]", ""),
    "get": (
        "Show a flag in every environment, or in --env only.",
        "flagctl get KEY [flags]",
        '  -e, --env string      only this environment\n  -o, --output string   table or json (default "table")',
    ),
    "history": ("Show the last 50 changes, of one flag or of all.", "flagctl history [KEY] [flags]", ""),
    "list": (
        "List the flags and their state in an environment (default: the project's first).",
        "flagctl list [flags]",
        '      --archived        list archived flags instead\n  -e, --env string      environment whose state is shown\n  -o, --output string   table or json (default "table")\n      --tag string      only flags with this tag',
    ),
    "rollout": (
        "Set the percentage of traffic served a flag in an environment (0-100). Above 0 turns it on.",
        "flagctl rollout KEY --env ENVIRONMENT --percent N [flags]",
        "  -e, --env string    environment (required)\n      --percent int   percentage of traffic, 0-100 (required)\n  -y, --yes           do not ask for confirmation in protected environments\n      --dry-run       print the change without making it",
    ),
    "target": (
        "Add or remove individual targets (user ids always served the flag) in an environment.",
        "flagctl target add|remove KEY --env ENVIRONMENT --user ID [flags]",
        "  -e, --env string        environment (required)\n      --user stringArray   user id to add or remove (repeatable)\n  -y, --yes               do not ask for confirmation in protected environments\n      --dry-run           print the change without making it",
    ),
    "help": ("Help about any command.", "flagctl help [command]", ""),
    "docs": ("Print the flagctl manual.", "flagctl docs", ""),
}
COMMAND_NAMES = (
    "list",
    "ls",
    "get",
    "enable",
    "disable",
    "rollout",
    "target",
    "archive",
    "delete",
    "envs",
    "history",
    "help",
    "docs",
)


def command_help(cmd: str) -> str:
    summary, usage, flags = COMMAND_HELP[cmd]
    parts = [summary, "", "Usage:", f"  {usage}", "", "Flags:"]
    if flags:
        parts.append(flags)
    parts.append(f"  -h, --help         help for {cmd}")
    parts += ["", "Global Flags:", "      --project string   project (default from FLAGCTL_PROJECT)"]
    return "\n".join(parts) + "\n"


MUTATING = {"enable", "disable", "rollout", "target", "archive", "delete", "create"}


class _F:
    def __init__(self, ctx: Ctx, p: Any) -> None:
        self.ctx = ctx
        self.p = p
        self.s: dict[str, Any] = ctx.state[SECTION]
        project = p.get("project") or ctx.call.env.get("FLAGCTL_PROJECT") or self.s["project"]
        if project != self.s["project"]:
            raise ctx.fail(1, f'Error: project "{project}" not found (you have access to: {self.s["project"]})')
        self.project = project
        self.env = p.get("env") or ctx.call.env.get("FLAGCTL_ENV") or ""
        if self.env and self.env not in self.s["environments"]:
            raise ctx.fail(
                1,
                f'Error: environment "{self.env}" not found in project "{project}" (environments: {", ".join(self.s["environments"])})',
            )
        self.now = ctx.call.now

    def flag(self, key: str) -> dict[str, Any]:
        f = self.s["flags"].get(key)
        if f is None:
            raise self.ctx.fail(1, f'Error: flag "{key}" not found in project "{self.project}"')
        self.ctx.saw(f"flag/{self.project}/{key}")
        return dict(f) if False else f

    def need_env(self, cmd: str) -> str:
        if not self.env:
            raise self.ctx.fail(
                2, f'Error: required flag "env" not set\n\nUsage:\n  flagctl {cmd} KEY --env ENVIRONMENT [flags]'
            )
        return self.env

    def guard(self, key: str, what: str) -> bool:
        """Protected environments need --yes or the flag key typed back (the LaunchDarkly habit)."""
        yes, dry_run = self.p.get("yes"), self.p.get("dry_run")  # both handled, protected or not
        if self.env in self.s["protected"] and not yes and not dry_run:
            question = f'You are about to {what} in the protected environment "{self.env}".\nType the flag key ({key}) to confirm: '
            answer = self.ctx.call.read_stdin(prompt=question)
            self.ctx.out(question, end="")
            if answer.split("\n", 1)[0].strip() != key:
                self.ctx.declined = True
                self.ctx.out("")
                raise self.ctx.fail(1, "Error: confirmation did not match; nothing was changed")
            self.ctx.out("")
        return True

    def record(self, key: str, change: str) -> None:
        self.s["history"].append(
            {
                "at": iso(self.now),
                "flag": key,
                "env": self.env,
                "change": change,
                "by": self.ctx.call.env.get("USER", "agent"),
            }
        )

    def run(self, cmd: str, args: list[str]) -> None:
        getattr(self, "do_" + cmd)(args)

    def do_envs(self, args: list[str]) -> None:
        rows = [
            ["KEY", "PROTECTED"],
            *([e, "yes" if e in self.s["protected"] else "no"] for e in self.s["environments"]),
        ]
        self.ctx.out(table(rows, gap=2))

    def do_list(self, args: list[str]) -> None:
        env = self.env or self.s["default_env"]
        flags = [(k, f) for k, f in sorted(self.s["flags"].items()) if f["archived"] == bool(self.p.get("archived"))]
        if self.p.get("tag"):
            flags = [(k, f) for k, f in flags if self.p.get("tag") in f["tags"]]
        for k, _ in flags:
            self.ctx.saw(f"flag/{self.project}/{k}", f"flag/{self.project}/{k}/env/{env}")
        if self.p.get("output") == "json":
            self.ctx.out(
                json.dumps(
                    [
                        {
                            "key": k,
                            "name": f["name"],
                            "tags": f["tags"],
                            "environment": env,
                            **{x: f["environments"][env][x] for x in ("on", "rollout")},
                        }
                        for k, f in flags
                    ],
                    indent=2,
                )
            )
            return
        rows = [["KEY", "NAME", "TAGS", f"{env.upper()}", "ROLLOUT"]]
        for k, f in flags:
            e = f["environments"][env]
            rows.append([k, f["name"], ",".join(f["tags"]) or "-", "on" if e["on"] else "off", f"{e['rollout']}%"])
        self.ctx.out(table(rows, gap=2))

    def do_get(self, args: list[str]) -> None:
        if len(args) != 1:
            raise self.ctx.fail(
                2, f"Error: accepts 1 arg(s), received {len(args)}\n\nUsage:\n  flagctl get KEY [flags]"
            )
        f = self.flag(args[0])
        envs = [self.env] if self.env else self.s["environments"]
        for env in envs:
            self.ctx.saw(f"flag/{self.project}/{args[0]}/env/{env}")
        if self.p.get("output") == "json":
            self.ctx.out(
                json.dumps(
                    {
                        "key": args[0],
                        "name": f["name"],
                        "description": f["description"],
                        "tags": f["tags"],
                        "archived": f["archived"],
                        "environments": {e: f["environments"][e] for e in envs},
                    },
                    indent=2,
                )
            )
            return
        self.ctx.out(
            f"Key:         {args[0]}\nName:        {f['name']}\nDescription: {f['description'] or '-'}\nTags:        {', '.join(f['tags']) or '-'}\nArchived:    {'yes' if f['archived'] else 'no'}\n"
        )
        rows = [["ENVIRONMENT", "STATE", "ROLLOUT", "TARGETS"]]
        for env in envs:
            e = f["environments"][env]
            rows.append([env, "on" if e["on"] else "off", f"{e['rollout']}%", ",".join(e["targets"]) or "-"])
        self.ctx.out(table(rows, gap=2))

    def _one(self, args: list[str], cmd: str) -> str:
        if len(args) != 1:
            raise self.ctx.fail(
                2,
                f"Error: accepts 1 arg(s), received {len(args)}\n\nUsage:\n  flagctl {cmd} KEY --env ENVIRONMENT [flags]",
            )
        return args[0]

    def _toggle(self, args: list[str], on: bool) -> None:
        cmd = "enable" if on else "disable"
        key = self._one(args, cmd)
        f = self.flag(key)
        env = self.need_env(cmd)
        if f["archived"]:
            raise self.ctx.fail(1, f'Error: flag "{key}" is archived; restore it before changing it')
        e = f["environments"][env]
        if e["on"] == on:
            self.ctx.out(f'Flag "{key}" is already {"on" if on else "off"} in {env}; nothing to do')
            return
        self.guard(key, f'turn {"on" if on else "off"} "{key}"')
        if self.p.get("dry_run"):
            self.ctx.out(f'[dry-run] would turn {"on" if on else "off"} "{key}" in {env}')
            return
        e["on"] = on
        if on and e["rollout"] == 0:
            e["rollout"] = 100
        self.record(key, "on" if on else "off")
        self.ctx.out(
            f'Flag "{key}" turned {"on" if on else "off"} in {env} (serving {e["rollout"] if on else 0}% of traffic)'
        )

    def do_enable(self, args: list[str]) -> None:
        self._toggle(args, True)

    def do_disable(self, args: list[str]) -> None:
        self._toggle(args, False)

    def do_rollout(self, args: list[str]) -> None:
        key = self._one(args, "rollout")
        f = self.flag(key)
        env = self.need_env("rollout")
        pct = self.p.get("percent")
        if pct is None or pct < 0:
            raise self.ctx.fail(
                2,
                'Error: required flag "percent" not set\n\nUsage:\n  flagctl rollout KEY --env ENVIRONMENT --percent N [flags]',
            )
        if pct > 100:
            raise self.ctx.fail(2, f'Error: invalid argument "{pct}" for "--percent" flag: must be between 0 and 100')
        self.guard(key, f'roll out "{key}" to {pct}%')
        if self.p.get("dry_run"):
            self.ctx.out(f'[dry-run] would set the rollout of "{key}" in {env} to {pct}%')
            return
        e = f["environments"][env]
        e["rollout"] = pct
        e["on"] = pct > 0 or e["on"]
        self.record(key, f"rollout {pct}%")
        self.ctx.out(f'Flag "{key}" in {env} now serves {pct}% of traffic')

    def do_target(self, args: list[str]) -> None:
        if len(args) != 2 or args[0] not in ("add", "remove"):
            raise self.ctx.fail(2, "Error: usage: flagctl target add|remove KEY --env ENVIRONMENT --user ID")
        action, key = args
        f = self.flag(key)
        env = self.need_env("target")
        users = self.p.get("user") or []
        if not users:
            raise self.ctx.fail(2, 'Error: required flag "user" not set')
        self.guard(key, f'{action} targets of "{key}"')
        if self.p.get("dry_run"):
            self.ctx.out(f"[dry-run] would {action} {', '.join(users)}")
            return
        e = f["environments"][env]
        for u in users:
            if action == "add" and u not in e["targets"]:
                e["targets"].append(u)
            elif action == "remove" and u in e["targets"]:
                e["targets"].remove(u)
        self.record(key, f"target {action} {','.join(users)}")
        self.ctx.out(f'Targets of "{key}" in {env}: {", ".join(e["targets"]) or "(none)"}')

    def do_archive(self, args: list[str]) -> None:
        key = self._one(args, "archive")
        f = self.flag(key)
        if f["archived"]:
            self.ctx.out(f'Flag "{key}" is already archived')
            return
        live = [env for env, e in f["environments"].items() if e["on"]]
        yes = self.p.get("yes")  # handled whether or not the flag is live anywhere
        if live and not yes:
            raise self.ctx.fail(
                1,
                f'Error: flag "{key}" is still on in {", ".join(live)}; archiving it serves the fallback value everywhere. Re-run with --yes to archive anyway',
            )
        if self.p.get("dry_run"):
            self.ctx.out(f'[dry-run] would archive "{key}"')
            return
        f["archived"] = True
        for e in f["environments"].values():
            e["on"] = False
        self.record(key, "archived")
        self.ctx.out(f'Flag "{key}" archived')

    def do_delete(self, args: list[str]) -> None:
        key = self._one(args, "delete")
        f = self.flag(key)
        if not self.p.get("yes"):
            raise self.ctx.fail(1, f'Error: deleting "{key}" cannot be undone; re-run with --yes')
        if not f["archived"]:
            raise self.ctx.fail(1, f'Error: flag "{key}" must be archived before it is deleted')
        if self.p.get("dry_run"):
            self.ctx.out(f'[dry-run] would delete "{key}"')
            return
        del self.s["flags"][key]
        self.record(key, "deleted")
        self.ctx.out(f'Flag "{key}" deleted')

    def do_history(self, args: list[str]) -> None:
        entries = [h for h in self.s["history"] if not args or h["flag"] == args[0]]
        rows = [
            ["WHEN", "FLAG", "ENV", "CHANGE", "BY"],
            *([h["at"], h["flag"], h.get("env") or "-", h["change"], h["by"]] for h in entries[-50:]),
        ]
        self.ctx.out(table(rows, gap=2))


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    try:
        try:
            p = parse_gnu(call.argv, OPTS)
        except ArgError as e:
            raise ctx.fail(
                2,
                f"Error: unknown flag: {e.flag}"
                if e.kind == "unknown"
                else f"Error: unknown shorthand flag: '{e.flag}' in {e.detail}"
                if e.kind == "unknown_short"
                else f"Error: flag needs an argument: {e.flag}"
                if e.kind == "needs_value"
                else f'Error: invalid argument "{e.detail}" for "{e.flag}" flag',
            ) from None
        if not p.args:
            ctx.out(USAGE, end="")
            return ctx.result(0 if p.get("help") else 2)
        cmd, args = p.args[0], p.args[1:]
        if cmd not in COMMAND_NAMES:
            raise ctx.fail(2, f'Error: unknown command "{cmd}" for "flagctl"\nRun \'flagctl --help\' for usage.')
        cmd = "list" if cmd == "ls" else cmd
        # --help on a command prints its help and does nothing else, as cobra does.
        if p.get("help") or cmd == "help":
            topic = cmd if cmd != "help" else (args[0] if args else "")
            topic = "list" if topic == "ls" else topic
            if topic and topic not in COMMAND_HELP:
                raise ctx.fail(2, f"Error: unknown help topic \"{topic}\"\nRun 'flagctl --help' for usage.")
            ctx.out(command_help(topic) if topic else USAGE, end="")
            return ctx.result(0)
        if cmd == "docs":
            ctx.out(MANUAL, end="")
            return ctx.result(0)
        if p.get("output") not in ("table", "json"):
            raise ctx.fail(
                2, f'Error: invalid argument "{p.get("output")}" for "-o, --output" flag: must be table or json'
            )
        if cmd in MUTATING:
            ctx.mutating = True
            ctx.dry_run = bool(p.get("dry_run"))
        _F(ctx, p).run(cmd, args)
    except ToolExit as exc:
        return ctx.finish(exc)
    return ctx.result(0)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"flagctl": run}
