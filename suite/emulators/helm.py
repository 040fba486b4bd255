"""``helm`` (v3.14) over emulated releases (state section ``helm``).

Releases live per cluster and namespace with their revision history; the cluster is the
current kubectl context's (or ``--kube-context``), so helm and kubectl agree on where they act.
Charts come from the workspace (``./charts/checkout`` with ``Chart.yaml`` and ``values.yaml``,
read through the shim) or from the emulated repositories in the state. Templates are not
rendered: a release is its chart, version and values, which is what an upgrade, a rollback or an
uninstall changes.

Authored state::

    helm:
      repositories: {bitnami: https://charts.bitnami.com/bitnami}
      charts:                      # repository charts: "<repo>/<name>" -> versions
        bitnami/redis: {"18.19.2": {app_version: "7.2.4", values: {architecture: replication}}}
      releases:
        - name: checkout
          namespace: shop
          cluster: prod-eu         # default: the current kubectl context's cluster
          history:                 # oldest first; the last one is the deployed revision
            - {chart: checkout, version: "2.4.0", app_version: "2.4.0", values: {image: {tag: "2.4.0"}}}

Object ids: ``helm/<cluster>/<namespace>/release/<name>``; the value is the deployed revision
(status, chart, app version, user-supplied values, revision number).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import yaml

from suite.emulators.base import (
    NO_DEBUG,
    NO_TRANSPORT,
    NO_WAIT,
    ArgError,
    Call,
    Ctx,
    Parsed,
    Result,
    ToolExit,
    deep_merge,
    iso,
    opt,
    parse_gnu,
    parse_time,
)
from suite.emulators.documents import DocumentError, load_json, load_yaml

SECTION = "helm"
VERSION = 'version.BuildInfo{Version:"v3.14.4", GitCommit:"81c902a123462fd4052bc5e9aa9c513c4c8fc142", GitTreeState:"clean", GoVersion:"go1.21.9"}'
DEFAULT_AGE = timedelta(days=12, hours=5)


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    section.setdefault("repositories", {})
    section.setdefault("charts", {})
    releases = section.setdefault("releases", [])
    for rel in releases:
        rel.setdefault("namespace", "default")
        rel.setdefault("cluster", "")
        history = rel.setdefault("history", [])
        n = len(history)
        for i, rev in enumerate(history):
            rev.setdefault("revision", i + 1)
            rev.setdefault("version", "0.1.0")
            rev.setdefault("app_version", rev["version"])
            rev.setdefault("values", {})
            rev.setdefault("status", "deployed" if i == n - 1 else "superseded")
            rev.setdefault("description", "Install complete" if i == 0 else "Upgrade complete")
            rev.setdefault("updated", iso(now - DEFAULT_AGE + timedelta(days=i, minutes=17 * i)))
    return section


def link(state: dict[str, Any]) -> None:
    """Releases without a cluster belong to the current kubectl context's cluster."""
    for rel in state[SECTION].get("releases", []):
        if not rel.get("cluster"):
            rel["cluster"] = _cluster_of(state, None)


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict):
        return ["helm: expected a mapping"]
    problems = [
        f"helm.{k}: unknown key (repositories, charts, releases)"
        for k in section
        if k not in ("repositories", "charts", "releases")
    ]
    seen = set()
    for i, rel in enumerate(section.get("releases") or []):
        where = f"helm.releases[{i}]"
        if not isinstance(rel, dict) or not isinstance(rel.get("name"), str):
            problems.append(f"{where}: a release needs a name")
            continue
        if not rel.get("history"):
            problems.append(f"{where}.history: a release needs at least one revision")
        for j, rev in enumerate(rel.get("history") or []):
            if not isinstance(rev, dict) or not isinstance(rev.get("chart"), str):
                problems.append(f"{where}.history[{j}]: a revision needs chart (the chart name)")
        key = (rel.get("cluster", ""), rel.get("namespace", "default"), rel["name"])
        if key in seen:
            problems.append(f"{where}: release {rel['name']!r} is declared twice in one namespace")
        seen.add(key)
    return problems


def _cluster_of(state: dict[str, Any], wanted: str | None) -> str:
    kube = state.get("kubernetes") or {}
    contexts = kube.get("contexts") or {}
    name = wanted or kube.get("current_context")
    if name and name in contexts:
        return str(contexts[name].get("cluster", name))
    return str(name or "default")


def _release_cluster(rel: dict[str, Any], state: dict[str, Any]) -> str:
    return rel.get("cluster") or _cluster_of(state, None)


def objects(section: dict[str, Any], state: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rel in section.get("releases", []):
        if not rel.get("history"):
            continue
        current = _current(rel)
        if current is None:
            continue
        cluster = rel.get("cluster") or "default"
        out[f"helm/{cluster}/{rel['namespace']}/release/{rel['name']}"] = {
            "status": current["status"],
            "chart": current["chart"],
            "version": current["version"],
            "app_version": current["app_version"],
            "values": current["values"],
            "revision": current["revision"],
        }
    return out


def _current(rel: dict[str, Any]) -> dict[str, Any] | None:
    for rev in reversed(rel["history"]):
        if rev["status"] in ("deployed", "failed", "pending-upgrade", "pending-install", "pending-rollback"):
            return rev
    return None


def _fmt_time(t: str) -> str:
    return parse_time(t).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "123456 +0000 UTC"


def _ctime(t: str) -> str:
    return parse_time(t).strftime("%a %b %e %H:%M:%S %Y")


def _semver(v: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.+-]", v.lstrip("v"))[:3])


def _table(rows: list[list[str]]) -> str:
    """helm's uitable output: cells padded to the column width and separated by a tab."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("\t".join(r[c].ljust(widths[c]) for c in range(len(r))).rstrip() for r in rows)


HELP = """The Kubernetes package manager

Common actions for Helm:

- helm search:    search for charts
- helm pull:      download a chart to your local directory to view
- helm install:   upload the chart to Kubernetes
- helm list:      list releases of charts

Usage:
  helm [command]

Available Commands:
  dependency  manage a chart's dependencies
  env         helm client environment information
  get         download extended information of a named release
  history     fetch release history
  install     install a chart
  lint        examine a chart for possible issues
  list        list releases
  package     package a chart directory into a chart archive
  pull        download a chart from a repository and (optionally) unpack it in local directory
  push        push a chart to remote
  repo        add, list, remove, update, and index chart repositories
  rollback    roll back a release to a previous revision
  search      search for a keyword in charts
  show        show information of a chart
  status      display the status of the named release
  template    locally render templates
  uninstall   uninstall a release
  upgrade     upgrade a release
  version     print the client version information

Flags:
      --burst-limit int                 client-side default throttling limit (default 100)
      --debug                           enable verbose output
  -h, --help                            help for helm
      --kube-context string             name of the kubeconfig context to use
      --kubeconfig string               path to the kubeconfig file
  -n, --namespace string                namespace scope for this request
      --registry-config string          path to the registry config file (default "~/.config/helm/registry/config.json")
      --repository-cache string         path to the file containing cached repository indexes (default "~/.cache/helm/repository")
      --repository-config string        path to the file containing repository names and URLs (default "~/.config/helm/repositories.yaml")

Use "helm [command] --help" for more information about a command.
"""
# `helm COMMAND --help`: the first paragraph and usage line of helm.sh/docs/helm/helm_<command>/.
COMMAND_HELP: dict[str, tuple[str, str]] = {
    "list": (
        "This command lists all of the releases for a specified namespace (uses current namespace context if namespace not\nspecified).",
        "helm list [flags]",
    ),
    "status": (
        "This command shows the status of a named release.",
        "helm status RELEASE_NAME [flags]",
    ),
    "history": ("History prints historical revisions for a given release.", "helm history RELEASE_NAME [flags]"),
    "get": (
        "This command consists of multiple subcommands which can be used to\nget extended information about the release, including:",
        "helm get [command]",
    ),
    "upgrade": (
        "This command upgrades a release to a new version of a chart.\n\nThe upgrade arguments must be a release and chart. The chart argument can be either: a chart\nreference('example/mariadb'), a path to a chart directory, a packaged chart, or a fully qualified\nURL.",
        "helm upgrade [RELEASE] [CHART] [flags]",
    ),
    "install": (
        "This command installs a chart archive.\n\nThe install argument must be a chart reference, a path to a packaged chart,\na path to an unpacked chart directory or a URL.",
        "helm install [NAME] [CHART] [flags]",
    ),
    "rollback": (
        "This command rolls back a release to a previous revision.\n\nThe first argument of the rollback command is the name of a release, and the\nsecond is a revision (version) number. If this argument is omitted or set to\n0, it will roll back to the previous release.",
        "helm rollback <RELEASE> [REVISION] [flags]",
    ),
    "uninstall": (
        "This command takes a release name and uninstalls the release.",
        "helm uninstall RELEASE_NAME [...] [flags]",
    ),
    "repo": (
        "This command consists of multiple subcommands to interact with chart repositories.",
        "helm repo [command]",
    ),
    "search": (
        "Search provides the ability to search for Helm charts in the various places\nthey can be stored.",
        "helm search [command]",
    ),
    "show": (
        "This command consists of multiple subcommands to display information about a chart",
        "helm show [command]",
    ),
    "template": ("Render chart templates locally and display the output.", "helm template [NAME] [CHART] [flags]"),
    "lint": (
        "This command takes a path to a chart and runs a series of tests to verify that\nthe chart is well-formed.",
        "helm lint PATH [flags]",
    ),
    "version": ("Show the version for Helm.", "helm version [flags]"),
    "env": ("Env prints out all the environment information in use by Helm.", "helm env [flags]"),
}


def command_help(cmd: str) -> str:
    summary, usage = COMMAND_HELP.get(cmd, (f"helm {cmd}", f"helm {cmd} [flags]"))
    lines = [summary, "", "Usage:", f"  {usage}", "", "Flags:"]
    for o in sorted(COMMANDS_OPTS.get(cmd, []), key=lambda o: o.names[-1]):
        short = next((n for n in o.names if len(n) == 2), "")
        long = next(n for n in o.names if n.startswith("--"))
        kind = {"bool": "", "list": " stringArray", "int": " int"}.get(o.kind, " string")
        lines.append(f"  {short + ',' if short else '   '} {long}{kind}")
    lines.append(f"  -h, --help   help for {cmd}")
    lines += [
        "",
        "Global Flags:",
        "      --debug                           enable verbose output",
        "  -n, --namespace string                namespace scope for this request",
    ]
    return "\n".join(lines) + "\n"


GLOBAL = [
    opt("-n", "--namespace"),
    opt("--kube-context"),
    opt("--kubeconfig", inert=NO_TRANSPORT),
    opt("--debug", kind="bool", inert=NO_DEBUG),
    opt("--burst-limit", inert=NO_TRANSPORT),
    opt("--registry-config", inert=NO_TRANSPORT),
    opt("--repository-cache", inert=NO_TRANSPORT),
    opt("--repository-config", inert=NO_TRANSPORT),
    opt("-h", "--help", kind="bool"),
]
OUT = opt("-o", "--output", default="table")
UPGRADE = [
    opt("-i", "--install", kind="bool"),
    opt("-f", "--values", kind="list"),
    opt("--set", kind="list"),
    opt("--set-string", kind="list"),
    opt("--set-json", kind="list"),
    opt("--reuse-values", kind="bool"),
    opt("--reset-values", kind="bool"),
    opt("--reset-then-reuse-values", kind="bool"),
    opt("--version"),
    opt("--dry-run", bare="client"),
    opt(
        "--atomic",
        kind="bool",
        inert="an emulated install or upgrade never fails part-way: nothing to roll back or clean up",
    ),
    opt("--wait", kind="bool", inert=NO_WAIT),
    opt("--wait-for-jobs", kind="bool", inert=NO_WAIT),
    opt("--timeout", inert=NO_WAIT),
    opt("--create-namespace", kind="bool"),
    opt("--description"),
    opt("--force", kind="bool"),
    opt("--history-max", kind="int"),
    opt(
        "--cleanup-on-fail",
        kind="bool",
        inert="an emulated install or upgrade never fails part-way: nothing to roll back or clean up",
    ),
    opt("--no-hooks", kind="bool", inert="the emulated charts define no hooks"),
    opt("--devel", kind="bool"),
    opt("--generate-name", kind="bool"),
    opt("--repo"),
    OUT,
]
COMMANDS_OPTS: dict[str, list[Any]] = {
    "list": [
        OUT,
        opt("-A", "--all-namespaces", kind="bool"),
        opt("-a", "--all", kind="bool"),
        opt("-q", "--short", kind="bool"),
        opt("--deployed", kind="bool"),
        opt("--failed", kind="bool"),
        opt("--pending", kind="bool"),
        opt("--superseded", kind="bool"),
        opt("--uninstalled", kind="bool"),
        opt("--uninstalling", kind="bool"),
        opt("-f", "--filter"),
        opt("-m", "--max", kind="int"),
        opt("--no-headers", kind="bool"),
        opt("-d", "--date", kind="bool"),
        opt("-r", "--reverse", kind="bool"),
        opt("-l", "--selector"),
    ],
    "status": [
        OUT,
        opt("--revision", kind="int", default=0),
        opt("--show-desc", kind="bool"),
        opt("--show-resources", kind="bool"),
    ],
    "history": [OUT, opt("--max", kind="int", default=256)],
    "get": [OUT, opt("-a", "--all", kind="bool"), opt("--revision", kind="int", default=0), opt("--template")],
    "upgrade": UPGRADE,
    "install": UPGRADE,
    "rollback": [
        opt("--dry-run", kind="bool"),
        opt("--wait", kind="bool", inert=NO_WAIT),
        opt("--timeout", inert=NO_WAIT),
        opt("--force", kind="bool"),
        opt(
            "--cleanup-on-fail",
            kind="bool",
            inert="an emulated install or upgrade never fails part-way: nothing to roll back or clean up",
        ),
        opt("--no-hooks", kind="bool", inert="the emulated charts define no hooks"),
        opt("--recreate-pods", kind="bool"),
        opt("--history-max", kind="int"),
        opt("--wait-for-jobs", kind="bool", inert=NO_WAIT),
    ],
    "uninstall": [
        opt("--keep-history", kind="bool"),
        opt("--dry-run", kind="bool"),
        opt("--wait", kind="bool", inert=NO_WAIT),
        opt("--timeout", inert=NO_WAIT),
        opt("--no-hooks", kind="bool", inert="the emulated charts define no hooks"),
        opt("--cascade"),
        opt("--description"),
        opt("--ignore-not-found", kind="bool"),
    ],
    "repo": [OUT, opt("--force-update", kind="bool")],
    "search": [OUT, opt("-l", "--versions", kind="bool"), opt("--version"), opt("--devel", kind="bool")],
    "show": [opt("--version"), opt("--repo"), opt("--devel", kind="bool")],
    "template": [
        *UPGRADE,
        opt("--show-only", kind="list"),
        opt("--output-dir"),
        opt("--release-name", kind="bool"),
        opt("--is-upgrade", kind="bool"),
    ],
    "lint": [
        opt("-f", "--values", kind="list"),
        opt("--set", kind="list"),
        opt("--strict", kind="bool"),
        opt("--quiet", kind="bool"),
    ],
    "version": [opt("--short", kind="bool"), opt("--template")],
    "env": [],
    "dependency": [],
    "package": [
        opt("-d", "--destination"),
        opt("--version"),
        opt("--app-version"),
        opt("-u", "--dependency-update", kind="bool"),
    ],
    "pull": [opt("--version"), opt("--untar", kind="bool"), opt("-d", "--destination"), opt("--repo")],
    "push": [],
}
ALIASES = {
    "ls": "list",
    "delete": "uninstall",
    "del": "uninstall",
    "un": "uninstall",
    "hist": "history",
    "dep": "dependency",
    "dependencies": "dependency",
    "fetch": "pull",
}
MUTATING = {"upgrade", "install", "rollback", "uninstall"}


class _H:
    def __init__(self, ctx: Ctx, cmd: str, p: Parsed) -> None:
        self.ctx = ctx
        self.cmd = cmd
        self.p = p
        self.section: dict[str, Any] = ctx.state.setdefault(SECTION, prepare({}, ctx.call.now))
        self.now = ctx.call.now
        kube = ctx.state.get("kubernetes") or {}
        context = p.get("kube_context")
        if context and kube.get("contexts") and context not in kube["contexts"]:
            raise ctx.fail(1, f'Error: Kubernetes cluster unreachable: context "{context}" does not exist')
        self.cluster = _cluster_of(ctx.state, context)
        ctx_ns = ((kube.get("contexts") or {}).get(context or kube.get("current_context") or "") or {}).get("namespace")
        self.ns: str = p.get("namespace") or ctx.call.env.get("HELM_NAMESPACE") or ctx_ns or "default"
        for rel in self.section.get("releases", []):
            if not rel.get("cluster"):
                rel["cluster"] = _cluster_of(ctx.state, None)

    def releases(self, all_ns: bool = False) -> list[dict[str, Any]]:
        out = [
            r
            for r in self.section["releases"]
            if r["cluster"] == self.cluster and (all_ns or r["namespace"] == self.ns)
        ]
        return sorted(out, key=lambda r: (r["namespace"], r["name"]))

    def find(self, name: str) -> dict[str, Any] | None:
        for r in self.releases():
            if r["name"] == name:
                return r
        return None

    def oid(self, rel: dict[str, Any]) -> str:
        return f"helm/{rel['cluster']}/{rel['namespace']}/release/{rel['name']}"

    def need_args(self, n: int, usage: str, at_most: int | None = None) -> list[str]:
        args = self.p.args
        top = at_most if at_most is not None else n
        if not n <= len(args) <= top:
            word = "argument" if n == 1 else "arguments"
            if at_most is None:
                msg = f'Error: "helm {self.cmd}" requires {n} {word}'
            else:
                msg = (
                    f'Error: "helm {self.cmd}" requires at least {n} {word}'
                    if len(args) < n
                    else f'Error: "helm {self.cmd}" accepts at most {at_most} arguments'
                )
            usage = usage if usage.startswith("helm ") else f"helm {usage}"
            raise self.ctx.fail(1, f"{msg}\n\nUsage:  {usage}")
        return args

    def run(self) -> None:
        getattr(self, "do_" + self.cmd)()

    def status_block(self, rel: dict[str, Any], rev: dict[str, Any], *, notes: bool = True) -> None:
        self.ctx.out(f"NAME: {rel['name']}")
        self.ctx.out(f"LAST DEPLOYED: {_ctime(rev['updated'])}")
        self.ctx.out(f"NAMESPACE: {rel['namespace']}")
        self.ctx.out(f"STATUS: {rev['status']}")
        self.ctx.out(f"REVISION: {rev['revision']}")
        self.ctx.out("TEST SUITE: None")
        if notes and rev.get("notes"):
            self.ctx.out("NOTES:\n" + rev["notes"].rstrip("\n"))

    # read-only ------------------------------------------------------------------------

    def do_version(self) -> None:
        self.ctx.out("v3.14.4+g81c902a" if self.p.get("short") else VERSION)

    def do_env(self) -> None:
        self.ctx.out(f'HELM_NAMESPACE="{self.ns}"\nHELM_KUBECONTEXT=""\nHELM_BIN="helm"')

    def do_list(self) -> None:
        p = self.p
        rels = self.releases(all_ns=p.get("all_namespaces"))
        wanted = {s for s in ("deployed", "failed", "pending", "superseded", "uninstalled", "uninstalling") if p.get(s)}
        rows = [["NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION"]]
        data = []
        for rel in rels:
            last = rel["history"][-1]
            status = last["status"]
            if p.get("all"):
                pass
            elif wanted:
                if not any(status.startswith(w) for w in wanted):
                    continue
            elif status not in ("deployed", "failed"):
                continue
            # --filter is a Go regular expression matched against the release name (helm_list).
            if p.get("filter") and not self._filter(p.get("filter")).search(rel["name"]):
                continue
            self.ctx.saw(self.oid(rel))
            chart = f"{last['chart']}-{last['version']}"
            rows.append(
                [
                    rel["name"],
                    rel["namespace"],
                    str(last["revision"]),
                    _fmt_time(last["updated"]),
                    status,
                    chart,
                    last["app_version"],
                ]
            )
            data.append(
                {
                    "name": rel["name"],
                    "namespace": rel["namespace"],
                    "revision": str(last["revision"]),
                    "updated": _fmt_time(last["updated"]),
                    "status": status,
                    "chart": chart,
                    "app_version": last["app_version"],
                }
            )
        if p.get("short"):
            for r in rows[1:]:
                self.ctx.out(r[0])
            return
        if p.get("output") in ("json", "yaml"):
            self.ctx.out(
                json.dumps(data) if p.get("output") == "json" else yaml.safe_dump(data, sort_keys=False),
                end="\n" if p.get("output") == "json" else "",
            )
            return
        if p.get("no_headers"):
            rows = rows[1:]
            if not rows:
                return
        self.ctx.out(_table(rows))

    def _filter(self, pattern: str) -> re.Pattern[str]:
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise self.ctx.fail(1, f"Error: error parsing regexp: {exc.msg}: `{pattern}`") from None

    def _rel_or_fail(self, name: str, prefix: str = "Error: release: not found") -> dict[str, Any]:
        rel = self.find(name)
        if rel is None:
            raise self.ctx.fail(1, prefix)
        return rel

    def _rev(self, rel: dict[str, Any], number: int) -> dict[str, Any]:
        if number:
            for rev in rel["history"]:
                if rev["revision"] == number:
                    return rev
            raise self.ctx.fail(1, "Error: release: not found")
        return rel["history"][-1]

    def do_status(self) -> None:
        (name,) = self.need_args(1, "helm status RELEASE_NAME [flags]")
        rel = self._rel_or_fail(name)
        self.ctx.saw(self.oid(rel))
        rev = self._rev(rel, self.p.get("revision"))
        if self.p.get("output") == "json":
            self.ctx.out(
                json.dumps(
                    {
                        "name": rel["name"],
                        "namespace": rel["namespace"],
                        "version": rev["revision"],
                        "info": {"status": rev["status"], "description": rev["description"]},
                        "chart": {
                            "metadata": {
                                "name": rev["chart"],
                                "version": rev["version"],
                                "appVersion": rev["app_version"],
                            }
                        },
                        "config": rev["values"],
                    }
                )
            )
            return
        self.status_block(rel, rev)
        if self.p.get("show_desc"):
            self.ctx.out(f"DESCRIPTION: {rev['description']}")

    def do_history(self) -> None:
        (name,) = self.need_args(1, "helm history RELEASE_NAME [flags]")
        rel = self._rel_or_fail(name)
        self.ctx.saw(self.oid(rel))
        revs = rel["history"][-self.p.get("max") :]
        if self.p.get("output") in ("json", "yaml"):
            data = [
                {
                    "revision": r["revision"],
                    "updated": iso(parse_time(r["updated"])),
                    "status": r["status"],
                    "chart": f"{r['chart']}-{r['version']}",
                    "app_version": r["app_version"],
                    "description": r["description"],
                }
                for r in revs
            ]
            self.ctx.out(
                json.dumps(data) if self.p.get("output") == "json" else yaml.safe_dump(data, sort_keys=False),
                end="\n" if self.p.get("output") == "json" else "",
            )
            return
        rows = [["REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION", "DESCRIPTION"]]
        for r in revs:
            rows.append(
                [
                    str(r["revision"]),
                    _ctime(r["updated"]),
                    r["status"],
                    f"{r['chart']}-{r['version']}",
                    r["app_version"],
                    r["description"],
                ]
            )
        self.ctx.out(_table(rows))

    def do_get(self) -> None:
        args = self.p.args
        if not args or args[0] not in ("all", "values", "manifest", "notes", "hooks", "metadata"):
            raise self.ctx.fail(
                1,
                'Error: unknown command "' + (args[0] if args else "") + '" for "helm get"'
                if args
                else "Error: requires a subcommand: all, hooks, manifest, metadata, notes, values",
            )
        if len(args) != 2:
            raise self.ctx.fail(
                1, f'Error: "helm get {args[0]}" requires 1 argument\n\nUsage:  helm get {args[0]} RELEASE_NAME [flags]'
            )
        rel = self._rel_or_fail(args[1])
        self.ctx.saw(self.oid(rel))
        rev = self._rev(rel, self.p.get("revision"))
        values = rev["values"]
        if self.p.get("all"):
            values = deep_merge(self._chart_defaults(rev), values)
        if args[0] == "values":
            output = self.p.get("output") or "table"
            if output == "json":
                # Go's json.Encoder: compact, keys sorted, one trailing newline.
                self.ctx.out(json.dumps(values, separators=(",", ":"), sort_keys=True))
                return
            # The heading belongs to the table format only (helm's valuesWriter.WriteTable): with
            # -o yaml the output is the values alone, parseable as YAML.
            if output == "table":
                self.ctx.out("COMPUTED VALUES:" if self.p.get("all") else "USER-SUPPLIED VALUES:")
            self.ctx.out(yaml.safe_dump(values, sort_keys=True) if values else "null", end="" if values else "\n")
        elif args[0] == "manifest":
            self.ctx.out(rev.get("manifest", f"---\n# Source: {rev['chart']}/templates/deployment.yaml\n"), end="")
        elif args[0] == "notes":
            self.ctx.out("NOTES:\n" + rev.get("notes", ""))
        elif args[0] == "metadata":
            self.ctx.out(
                f"NAME: {rel['name']}\nCHART: {rev['chart']}\nVERSION: {rev['version']}\nAPP_VERSION: {rev['app_version']}\nNAMESPACE: {rel['namespace']}\nREVISION: {rev['revision']}\nSTATUS: {rev['status']}\nDEPLOYED_AT: {iso(parse_time(rev['updated']))}"
            )
        elif args[0] == "hooks":
            return
        else:
            self.status_block(rel, rev)
            self.ctx.out(
                "USER-SUPPLIED VALUES:\n" + (yaml.safe_dump(values, sort_keys=True) if values else "null\n"), end=""
            )
            self.ctx.out(
                "\nCOMPUTED VALUES:\n"
                + yaml.safe_dump(deep_merge(self._chart_defaults(rev), rev["values"]), sort_keys=True),
                end="",
            )

    def _chart_defaults(self, rev: dict[str, Any]) -> dict[str, Any]:
        for key, versions in self.section.get("charts", {}).items():
            if key.split("/")[-1] == rev["chart"] and rev["version"] in versions:
                return dict(versions[rev["version"]].get("values") or {})
        return dict(rev.get("chart_values") or {})

    def do_repo(self) -> None:
        args = self.p.args
        sub = args[0] if args else ""
        repos = self.section.get("repositories", {})
        if sub in ("list", "ls"):
            if not repos:
                raise self.ctx.fail(1, "Error: no repositories to show")
            rows = [["NAME", "URL"], *([n, u] for n, u in sorted(repos.items()))]
            self.ctx.out(_table(rows))
        elif sub == "update" or sub == "up":
            self.ctx.out("Hang tight while we grab the latest from your chart repositories...")
            for n in sorted(repos):
                self.ctx.out(
                    f'...Unable to get an update from the "{n}" chart repository ({repos[n]}):\n\tGet "{repos[n]}/index.yaml": dial tcp: lookup {repos[n].split("/")[2]}: no such host'
                )
            self.ctx.out("Update Complete. ⎈Happy Helming!⎈")
        elif sub == "add":
            if len(args) != 3:
                raise self.ctx.fail(
                    1, 'Error: "helm repo add" requires 2 arguments\n\nUsage:  helm repo add [NAME] [URL] [flags]'
                )
            raise self.ctx.fail(
                1,
                f'Error: looks like "{args[2]}" is not a valid chart repository or cannot be reached: Get "{args[2].rstrip("/")}/index.yaml": dial tcp: lookup {args[2].split("/")[2] if "//" in args[2] else args[2]}: no such host',
            )
        else:
            raise self.ctx.fail(
                1,
                f'Error: unknown command "{sub}" for "helm repo"'
                if sub
                else "Error: requires a subcommand: add, index, list, remove, update",
            )

    def do_search(self) -> None:
        args = self.p.args
        if not args or args[0] != "repo":
            raise self.ctx.fail(1, 'Error: unknown command "' + (args[0] if args else "") + '" for "helm search"')
        term = args[1] if len(args) > 1 else ""
        rows = [["NAME", "CHART VERSION", "APP VERSION", "DESCRIPTION"]]
        data = []
        for key, versions in sorted(self.section.get("charts", {}).items()):
            if term.lower() in key.lower():
                ordered = sorted(versions, key=_semver, reverse=True)
                for v in ordered[: None if self.p.get("versions") else 1]:
                    # `helm create`'s default description, for charts authored without one.
                    desc = str(versions[v].get("description", "A Helm chart for Kubernetes"))
                    rows.append([key, v, str(versions[v].get("app_version", v)), desc])
                    data.append({"name": key, "version": v, "app_version": rows[-1][2], "description": desc})
        if self.p.get("output") in ("json", "yaml"):
            self.ctx.out(
                json.dumps(data) if self.p.get("output") == "json" else yaml.safe_dump(data, sort_keys=False),
                end="\n" if self.p.get("output") == "json" else "",
            )
            return
        if len(rows) == 1:
            self.ctx.out("No results found")
            return
        self.ctx.out(_table(rows))

    def do_show(self) -> None:
        args = self.p.args
        if len(args) != 2 or args[0] not in ("values", "chart", "readme", "all", "crds"):
            raise self.ctx.fail(
                1, 'Error: "helm show" requires a subcommand and 1 argument: all, chart, crds, readme, values'
            )
        chart = self._load_chart(args[1])
        if args[0] in ("values", "all"):
            self.ctx.out(yaml.safe_dump(chart["values"], sort_keys=False) if chart["values"] else "", end="")
        if args[0] in ("chart", "all"):
            self.ctx.out(
                f"apiVersion: v2\nappVersion: {chart['app_version']}\nname: {chart['name']}\nversion: {chart['version']}"
            )

    def do_lint(self) -> None:
        paths = self.p.args or ["."]
        for path in paths:
            self._load_chart(path, local_only=True)
            self.ctx.out(f"==> Linting {path}\n[INFO] Chart.yaml: icon is recommended\n")
        self.ctx.out(f"{len(paths)} chart(s) linted, 0 chart(s) failed")

    def do_template(self) -> None:
        args = self.p.args
        if not args:
            raise self.ctx.fail(
                1, 'Error: "helm template" requires at least 1 argument\n\nUsage:  helm template [NAME] [CHART] [flags]'
            )
        name, chart_ref = (args[0], args[1]) if len(args) > 1 else ("release-name", args[0])
        chart = self._load_chart(chart_ref)
        values = self._values(chart, {})
        self.ctx.out(
            f"---\n# Source: {chart['name']}/templates/values.yaml\n# rendered for release {name} with values:\n"
            + "\n".join("# " + line for line in yaml.safe_dump(values, sort_keys=True).splitlines())
        )

    def do_dependency(self) -> None:
        raise self.ctx.fail(
            1,
            "Error: no repository definition for https://charts.bitnami.com/bitnami. Please add the missing repos via 'helm repo add'",
        )

    def do_package(self) -> None:
        raise self.ctx.fail(1, "Error: this environment does not write chart archives; package in CI")

    def do_pull(self) -> None:
        raise self.ctx.fail(1, "Error: failed to fetch: dial tcp: lookup charts.example.com: no such host")

    def do_push(self) -> None:
        raise self.ctx.fail(1, "Error: failed to do request: dial tcp: lookup registry.example.com: no such host")

    # charts and values ----------------------------------------------------------------

    def _load_chart(self, ref: str, local_only: bool = False) -> dict[str, Any]:
        if ref.startswith("oci://") or ref.startswith(("http://", "https://")):
            host = ref.split("/")[2]
            raise self.ctx.fail(
                1, f'Error: failed to do request: Head "https://{host}/v2/": dial tcp: lookup {host}: no such host'
            )
        repo_key = ref if "/" in ref and not ref.startswith((".", "/")) else None
        if repo_key and repo_key in self.section.get("charts", {}) and not local_only:
            versions = self.section["charts"][repo_key]
            version = self.p.get("version") or sorted(versions)[-1]
            if version not in versions:
                raise self.ctx.fail(
                    1,
                    f"Error: chart \"{repo_key.split('/')[-1]}\" matching {version} not found in {repo_key.split('/')[0]} index. (try 'helm repo update'): no chart version found for {repo_key.split('/')[-1]}-{version}",
                )
            v = versions[version]
            return {
                "name": repo_key.split("/")[-1],
                "version": version,
                "app_version": str(v.get("app_version", version)),
                "values": dict(v.get("values") or {}),
            }
        chart_yaml, values_yaml = self.ctx.call.files_of(
            [f"{ref.rstrip('/')}/Chart.yaml", f"{ref.rstrip('/')}/values.yaml"]
        )
        if chart_yaml.error:
            if repo_key and repo_key.split("/")[0] in self.section.get("repositories", {}):
                raise self.ctx.fail(
                    1,
                    f"Error: chart \"{repo_key.split('/')[-1]}\" not found in {repo_key.split('/')[0]} index. (try 'helm repo update'): no chart name found",
                )
            if repo_key:
                raise self.ctx.fail(1, f"Error: repo {repo_key.split('/')[0]} not found")
            raise self.ctx.fail(1, f'Error: path "{ref}" not found')
        try:
            meta = load_yaml(chart_yaml.content or "") or {}
        except DocumentError as exc:
            raise self.ctx.fail(
                1, f"Error: cannot load Chart.yaml: error converting YAML to JSON: yaml: {exc.located}"
            ) from None
        try:
            values = load_yaml(values_yaml.content or "") or {} if not values_yaml.error else {}
        except DocumentError as exc:
            raise self.ctx.fail(
                1, f"Error: cannot load values.yaml: error converting YAML to JSON: yaml: {exc.located}"
            ) from None
        if not isinstance(meta, dict) or not meta.get("name") or not meta.get("version"):
            raise self.ctx.fail(
                1,
                "Error: validation: chart.metadata.name is required"
                if not (isinstance(meta, dict) and meta.get("name"))
                else "Error: validation: chart.metadata.version is required",
            )
        return {
            "name": str(meta["name"]),
            "version": str(meta["version"]),
            "app_version": str(meta.get("appVersion", meta["version"])),
            "values": values if isinstance(values, dict) else {},
        }

    def _values(self, chart: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
        reuse, reset = self.p.get("reuse_values"), self.p.get("reset_values")
        user: dict[str, Any] = copy.deepcopy(previous) if reuse and not reset else {}
        for path in self.p.get("values") or []:
            f = self.ctx.call.file(path)
            if f.error:
                raise self.ctx.fail(1, f"Error: open {path}: no such file or directory")
            try:
                data = load_yaml(f.content or "") or {}
            except DocumentError as exc:
                raise self.ctx.fail(
                    1, f"Error: failed to parse {path}: error converting YAML to JSON: yaml: {exc.located}"
                ) from None
            if not isinstance(data, dict):
                raise self.ctx.fail(
                    1,
                    f"Error: failed to parse {path}: error unmarshaling JSON: json: cannot unmarshal array into Go value of type map[string]interface {{}}",
                )
            user = deep_merge(user, data)
        for flag, typed in (("set", True), ("set_string", False), ("set_json", None)):
            for item in self.p.get(flag) or []:
                for assignment in _split_set(item):
                    key, eq, raw = assignment.partition("=")
                    if not eq:
                        raise self.ctx.fail(1, f'Error: failed parsing --set data: key "{key}" has no value')
                    value: Any = raw
                    if typed is None:
                        try:
                            value = load_json(raw)
                        except DocumentError:
                            raise self.ctx.fail(1, f"Error: failed parsing --set-json data {item}") from None
                    elif typed:
                        value = _typed(raw)
                    user = deep_merge(user, _nest(key, value))
        # helm 3 pkg/action/upgrade.go reuseValues(): --reset-then-reuse-values coalesces the
        # new values over the previous release's, and an upgrade given no values at all copies
        # the previous ones ("copying values from ... to new release"). Only an upgrade that
        # sets some value without --reuse-values starts again from the chart defaults — the
        # documented surprise that wipes earlier overrides (helm/helm#1569).
        if previous and not self.p.get("reset_values") and not self.p.get("reuse_values"):
            if self.p.get("reset_then_reuse_values"):
                user = deep_merge(copy.deepcopy(previous), user)
            elif not user:
                user = copy.deepcopy(previous)
        return user

    # mutating -------------------------------------------------------------------------

    def do_install(self) -> None:
        self.p.values["install"] = True
        self._upgrade(install_only=True)

    def do_upgrade(self) -> None:
        self._upgrade(install_only=False)

    def _upgrade(self, *, install_only: bool) -> None:
        self.ctx.mutating = True
        dry = self.p.get("dry_run")
        if dry not in (None, "client", "server", "none", "true", "false"):
            raise self.ctx.fail(1, f'Error: invalid dry-run flag value "{dry}". Must be "none", "server", or "client"')
        dry_run = dry in ("client", "server", "true")
        self.ctx.dry_run = dry_run
        usage = "helm install [NAME] [CHART] [flags]" if install_only else "helm upgrade [RELEASE] [CHART] [flags]"
        name, chart_ref = self.need_args(2, usage)
        chart = self._load_chart(chart_ref)
        rel = self.find(name)
        live = _current(rel) if rel else None
        verb = "INSTALLATION" if install_only or (rel is None or live is None) else "UPGRADE"
        if install_only and rel is not None and live is not None:
            raise self.ctx.fail(1, "Error: INSTALLATION FAILED: cannot re-use a name that is still in use")
        # Read whether or not they matter for this release: `upgrade --install` of a deployed
        # release and --create-namespace into an existing namespace are handled, not ignored.
        install, create_namespace = self.p.get("install"), self.p.get("create_namespace")
        if not install_only and (rel is None or live is None) and not install:
            raise self.ctx.fail(1, f'Error: UPGRADE FAILED: "{name}" has no deployed releases')
        kube = self.ctx.state.get("kubernetes")
        if kube and not create_namespace:
            cluster = (kube.get("clusters") or {}).get(self.cluster)
            if cluster is not None and not any(
                o["kind"] == "Namespace" and o["metadata"]["name"] == self.ns for o in cluster.get("objects", [])
            ):
                raise self.ctx.fail(
                    1, f'Error: {verb} FAILED: create: failed to create: namespaces "{self.ns}" not found'
                )
        values = self._values(chart, live["values"] if live else {})
        revision = (rel["history"][-1]["revision"] + 1) if rel and rel["history"] else 1
        first = rel is None or live is None
        rev = {
            "revision": revision,
            "chart": chart["name"],
            "version": chart["version"],
            "app_version": chart["app_version"],
            "values": values,
            "chart_values": chart["values"],
            "status": "deployed",
            "description": self.p.get("description") or ("Install complete" if first else "Upgrade complete"),
            "updated": iso(self.now),
        }
        if dry_run:
            rev = {
                **rev,
                "status": "pending-install" if first else "pending-upgrade",
                "description": "Dry run complete",
            }
            if first:
                if not install_only:
                    self.ctx.out(f'Release "{name}" does not exist. Installing it now.')
                self.ctx.out(
                    f"NAME: {name}\nLAST DEPLOYED: {_ctime(rev['updated'])}\nNAMESPACE: {self.ns}\nSTATUS: {rev['status']}\nREVISION: {revision}\nTEST SUITE: None\nHOOKS:\nMANIFEST:"
                )
            else:
                self.ctx.out(f'Release "{name}" has been upgraded. Happy Helming!')
                self.ctx.out(
                    f"NAME: {name}\nLAST DEPLOYED: {_ctime(rev['updated'])}\nNAMESPACE: {self.ns}\nSTATUS: {rev['status']}\nREVISION: {revision}\nTEST SUITE: None\nHOOKS:\nMANIFEST:"
                )
            return
        if rel is None:
            rel = {"name": name, "namespace": self.ns, "cluster": self.cluster, "history": []}
            self.section["releases"].append(rel)
            if kube and self.p.get("create_namespace"):
                self._ensure_namespace(kube)
        for old in rel["history"]:
            if old["status"] == "deployed":
                old["status"] = "superseded"
        rel["history"].append(rev)
        hist_max = self.p.get("history_max")
        if hist_max is None:
            hist_max = 10
        if hist_max and len(rel["history"]) > hist_max:
            del rel["history"][: len(rel["history"]) - hist_max]
        if first:
            if not install_only:
                self.ctx.out(f'Release "{name}" does not exist. Installing it now.')
        else:
            self.ctx.out(f'Release "{name}" has been upgraded. Happy Helming!')
        self.status_block(rel, rev)

    def _ensure_namespace(self, kube: dict[str, Any]) -> None:
        cluster = (kube.get("clusters") or {}).get(self.cluster)
        if cluster is None:
            return
        if not any(o["kind"] == "Namespace" and o["metadata"]["name"] == self.ns for o in cluster["objects"]):
            from suite.emulators import kubectl

            cluster["objects"].append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
            kubectl.prepare(kube, parse_time(iso(self.now)) + timedelta(days=41, hours=3))

    def do_rollback(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = bool(self.p.get("dry_run"))
        args = self.need_args(1, "helm rollback <RELEASE> [REVISION] [flags]", at_most=2)
        rel = self._rel_or_fail(args[0], "Error: release: not found")
        self.ctx.saw(self.oid(rel))
        history = rel["history"]
        current = history[-1]["revision"]
        if len(args) == 2:
            try:
                target_no = int(args[1])
            except ValueError:
                raise self.ctx.fail(
                    1, f'Error: invalid revision number "{args[1]}": strconv.Atoi: parsing "{args[1]}": invalid syntax'
                ) from None
        else:
            target_no = current - 1
        if len(args) == 2 and target_no == 0:
            # pkg/action/rollback.go: "if r.Version == 0 { previousVersion = currentRelease.Version - 1 }"
            # — the documented `helm rollback RELEASE 0` means the previous revision.
            target_no = current - 1
        if target_no < 1:
            raise self.ctx.fail(
                1,
                "Error: no revision to roll back to"
                if target_no == 0
                else f"Error: invalid revision number {target_no}",
            )
        target = next((r for r in history if r["revision"] == target_no), None)
        if target is None:
            raise self.ctx.fail(1, f"Error: release has no {target_no} version")
        if self.ctx.dry_run:
            self.ctx.out("Rollback was a success! Happy Helming!")
            return
        for old in history:
            if old["status"] == "deployed":
                old["status"] = "superseded"
        history.append(
            {
                **copy.deepcopy(target),
                "revision": current + 1,
                "status": "deployed",
                "description": f"Rollback to {target_no}",
                "updated": iso(self.now),
            }
        )
        self.ctx.out("Rollback was a success! Happy Helming!")

    def do_uninstall(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = bool(self.p.get("dry_run"))
        if not self.p.args:
            raise self.ctx.fail(
                1,
                'Error: "helm uninstall" requires at least 1 argument\n\nUsage:  helm uninstall RELEASE_NAME [...] [flags]',
            )
        errors = []
        for name in self.p.args:
            rel = self.find(name)
            if rel is None or _current(rel) is None:
                if self.p.get("ignore_not_found"):
                    continue
                errors.append(f"Error: uninstall: Release not loaded: {name}: release: not found")
                continue
            if self.ctx.dry_run:
                self.ctx.out(f'release "{name}" uninstalled')
                continue
            if self.p.get("keep_history"):
                for rev in rel["history"]:
                    if rev["status"] == "deployed":
                        rev["status"] = "uninstalled"
                        rev["description"] = "Uninstallation complete"
            else:
                self.section["releases"].remove(rel)
            self.ctx.out(f'release "{name}" uninstalled')
        if errors:
            raise self.ctx.fail(1, "\n".join(errors))


def _split_set(item: str) -> list[str]:
    """``a=1,b.c=2`` -> two assignments; ``\\,`` escapes a comma."""
    out, cur, i = [], "", 0
    while i < len(item):
        if item[i] == "\\" and i + 1 < len(item):
            cur += item[i + 1]
            i += 2
            continue
        if item[i] == ",":
            out.append(cur)
            cur = ""
        else:
            cur += item[i]
        i += 1
    out.append(cur)
    return [x for x in out if x]


def _typed(raw: str) -> Any:
    if raw in ("true", "false"):
        return raw == "true"
    if raw == "null":
        return None
    try:
        return int(raw)
    except ValueError:
        return raw


def _nest(key: str, value: Any) -> dict[str, Any]:
    parts = key.split(".")
    out: Any = value
    for part in reversed(parts):
        out = {part: out}
    return dict(out)


def _arg_error(e: ArgError) -> str:
    if e.kind == "unknown":
        return f"Error: unknown flag: {e.flag}"
    if e.kind == "unknown_short":
        return f"Error: unknown shorthand flag: '{e.flag}' in {e.detail}"
    if e.kind == "needs_value":
        return f"Error: flag needs an argument: {e.flag}"
    return f'Error: invalid argument "{e.detail}" for "{e.flag}" flag'


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    argv = list(call.argv)
    values_flags = {n for o in GLOBAL if o.kind != "bool" for n in o.names}
    cmd, i = "", 0
    while i < len(argv):
        if argv[i].startswith("-"):
            i += 2 if argv[i] in values_flags else 1
            continue
        cmd = argv.pop(i)
        break
    if not cmd:
        bad = [a for a in argv if a.startswith("-") and a not in ("-h", "--help", "--debug")]
        if bad and not any(a in values_flags for a in argv):
            return ctx.finish(ctx.fail(1, f"Error: unknown flag: {bad[0]}"))
        ctx.out(HELP, end="")
        return ctx.result(0)
    cmd = ALIASES.get(cmd, cmd)
    if cmd not in COMMANDS_OPTS:
        return ctx.finish(ctx.fail(1, f'Error: unknown command "{cmd}" for "helm"\nRun \'helm --help\' for usage.'))
    if cmd in MUTATING:
        ctx.mutating = True
    try:
        parsed = parse_gnu(argv, [*GLOBAL, *COMMANDS_OPTS[cmd]])
    except ArgError as e:
        return ctx.finish(ctx.fail(1, _arg_error(e)))
    if parsed.get("help"):
        ctx.out(command_help(cmd), end="")
        return ctx.result(0)
    output = parsed.get("output")
    if "output" in parsed.given and output not in ("table", "json", "yaml"):
        # pflag's message for a value its format type refuses (helm's output.Format Set()).
        return ctx.finish(
            ctx.fail(1, f'Error: invalid argument "{output}" for "-o, --output" flag: invalid format type')
        )
    try:
        _H(ctx, cmd, parsed).run()
    except ToolExit as exc:
        return ctx.finish(exc)
    return ctx.result(0)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"helm": run}
