"""``docker`` (Engine 24 CLI) over an emulated daemon and registries (state section ``docker``).

Containers, images, volumes, networks, the build cache and remote registries. Usage errors
follow the CLI (``unknown flag: --x`` + ``See 'docker rm --help'.``, exit 125), daemon errors
print ``Error response from daemon: ...`` (exit 1), and the prunes ask ``Are you sure you want to
continue? [y/N]`` on stdin unless ``-f``/``--force`` is given. Since Engine 23, ``docker volume
prune`` and ``system prune --volumes`` remove only *anonymous* volumes; named ones need ``-a``.

Authored state::

    docker:
      host: build-01
      containers:
        - {name: ci-postgres, image: "postgres:15", status: running, volumes: [ci-pgdata], ports: "127.0.0.1:5432->5432/tcp"}
      images:
        - {repository: registry.acme.io/shop/checkout, tag: "2.4.1", size: 182MB}
        - {repository: "<none>", tag: "<none>", size: 1.2GB}            # dangling
      volumes: [{name: ci-pgdata}, {name: 3f1c..., anonymous: true}]
      networks: [{name: ci-net}]
      build_cache_mb: 5120
      registries: {registry.acme.io: {"shop/checkout": ["2.4.0", "2.4.1"]}}

Object ids: ``docker/<host>/container/<name>``, ``docker/<host>/image/<repo>:<tag>`` (dangling
images: ``docker/<host>/image/<id>``), ``docker/<host>/volume/<name>``,
``docker/<host>/network/<name>``, ``docker/<host>/build-cache``, ``registry/<host>/<repo>:<tag>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from suite.emulators.base import (
    NO_TERMINAL,
    ArgError,
    Call,
    Ctx,
    Parsed,
    Result,
    ToolExit,
    go_duration,
    iso,
    log_stamp,
    opt,
    parse_gnu,
    parse_time,
    short_hash,
    table,
)

SECTION = "docker"
DEFAULT_NETWORKS = ("bridge", "host", "none")


def _published(spec: str) -> str:
    """``-p [IP:]HOST:CONTAINER[/PROTO]`` as ``docker ps`` shows it (both address families for no IP)."""
    body, _, proto = spec.partition("/")
    parts = body.split(":")
    proto = proto or "tcp"
    if len(parts) == 3:
        return f"{parts[0]}:{parts[1]}->{parts[2]}/{proto}"
    if len(parts) == 2:
        return f"0.0.0.0:{parts[0]}->{parts[1]}/{proto}, :::{parts[0]}->{parts[1]}/{proto}"
    return f"{parts[0]}/{proto}"


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    section.setdefault("host", "localhost")
    section.setdefault("build_cache_mb", 0)
    born = iso(now - timedelta(days=9))
    for img in section.setdefault("images", []):
        img.setdefault("tag", "latest")
        img.setdefault("size", "120MB")
        img.setdefault("created", born)
        img.setdefault("id", short_hash("image", img["repository"], img["tag"], img["created"], length=64))
    for c in section.setdefault("containers", []):
        c.setdefault("status", "running")
        c.setdefault("created", born)
        c.setdefault("command", "/bin/sh -c 'sleep infinity'")
        c.setdefault("volumes", [])
        c.setdefault("ports", "")
        c.setdefault("id", short_hash("container", c["name"], length=64))
    for v in section.setdefault("volumes", []):
        v.setdefault("driver", "local")
        v.setdefault("anonymous", False)
    names = {n["name"] for n in section.setdefault("networks", [])}
    for n in DEFAULT_NETWORKS:
        if n not in names:
            section["networks"].append({"name": n, "builtin": True})
    for n in section["networks"]:
        n.setdefault("driver", "bridge" if n["name"] != "host" and n["name"] != "none" else n["name"])
        n.setdefault("id", short_hash("net", n["name"], length=64))
    section.setdefault("registries", {})
    # A registry tag points at a manifest digest. A tag this host has locally points at that
    # image's digest, so re-pushing the same image changes nothing, while pushing another image
    # under an existing tag (moving `latest`) is a visible change of that tag.
    local = {_ref(img): img for img in section["images"] if not _dangling(img)}
    digests = section.setdefault("_digests", {})
    for reg, repos in section["registries"].items():
        for repo, tags in repos.items():
            for tag in tags:
                key = f"{reg}/{repo}:{tag}"
                img = local.get(key)
                digests.setdefault(key, _digest(img) if img else _name_digest(reg, repo, tag))
    return section


def _digest(img: dict[str, Any]) -> str:
    """The manifest digest of a local image: recorded when pulled, else derived from its id."""
    return str(img.get("digest") or "sha256:" + short_hash("manifest", img["id"], length=64))


def _name_digest(reg: str, repo: str, tag: str) -> str:
    return "sha256:" + short_hash(reg, repo, tag, length=64)


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict):
        return ["docker: expected a mapping"]
    allowed = ("host", "containers", "images", "volumes", "networks", "build_cache_mb", "registries")
    problems = [f"docker.{k}: unknown key ({', '.join(allowed)})" for k in section if k not in allowed]
    for i, c in enumerate(section.get("containers") or []):
        if not isinstance(c, dict) or not c.get("name") or not c.get("image"):
            problems.append(f"docker.containers[{i}]: a container needs name and image")
        elif c.get("status", "running") not in ("running", "exited", "created", "paused"):
            problems.append(f"docker.containers[{i}].status: one of running, exited, created, paused")
    for i, img in enumerate(section.get("images") or []):
        if not isinstance(img, dict) or not img.get("repository"):
            problems.append(f"docker.images[{i}]: an image needs repository (and tag)")
    return problems


def _ref(img: dict[str, Any]) -> str:
    return f"{img['repository']}:{img['tag']}"


def _dangling(img: dict[str, Any]) -> bool:
    return img["repository"] == "<none>"


def objects(section: dict[str, Any]) -> dict[str, Any]:
    host = section["host"]
    out: dict[str, Any] = {}
    for c in section.get("containers", []):
        out[f"docker/{host}/container/{c['name']}"] = {
            "image": c["image"],
            "status": c["status"],
            "volumes": c["volumes"],
            "id": c["id"],
        }
    for img in section.get("images", []):
        key = img["id"][:12] if _dangling(img) else _ref(img)
        out[f"docker/{host}/image/{key}"] = {"id": img["id"]}
    for v in section.get("volumes", []):
        out[f"docker/{host}/volume/{v['name']}"] = {"driver": v["driver"]}
    for n in section.get("networks", []):
        if not n.get("builtin"):
            out[f"docker/{host}/network/{n['name']}"] = {"driver": n["driver"]}
    out[f"docker/{host}/build-cache"] = {"size_mb": section.get("build_cache_mb", 0)}
    for reg, repos in section.get("registries", {}).items():
        for repo, tags in repos.items():
            for tag in tags:
                key = f"{reg}/{repo}:{tag}"
                out[f"registry/{key}"] = {
                    "digest": section.get("_digests", {}).get(key) or _name_digest(reg, repo, tag)
                }
    return out


def _table(rows: list[list[str]]) -> str:
    # The docker CLI's tabwriter: minwidth 10, padding 3 (cli/command/formatter).
    return table(rows, gap=3, minwidth=10)


def _size_mb(size: Any) -> float:
    text = str(size).strip().upper()
    for unit, mult in (("GB", 1024.0), ("MB", 1.0), ("KB", 1 / 1024), ("B", 1 / 1024 / 1024)):
        if text.endswith(unit):
            try:
                return float(text[: -len(unit)]) * mult
            except ValueError:
                return 0.0
    try:
        return float(text)
    except ValueError:
        return 0.0


def _fmt_size(mb: float) -> str:
    """go-units HumanSize: four significant digits and a unit (``1.2GB``, ``412MB``, ``0B``)."""
    if mb >= 1024:
        return f"{mb / 1024:.4g}GB"
    if mb >= 1:
        return f"{mb:.4g}MB"
    if mb * 1024 >= 1:
        return f"{mb * 1024:.4g}kB"
    return f"{mb * 1024 * 1024:.4g}B"


ALL = opt("-a", "--all", kind="bool")
FORCE = opt("-f", "--force", kind="bool")
FILTER = opt("--filter", kind="list")
# The listing commands give --filter the short -f; the prunes keep -f for --force.
LS_FILTER = opt("-f", "--filter", kind="list")
FORMAT = opt("--format")
QUIET = opt("-q", "--quiet", kind="bool")
COMMANDS_OPTS: dict[str, list[Any]] = {
    "ps": [
        ALL,
        QUIET,
        LS_FILTER,
        FORMAT,
        opt("--no-trunc", kind="bool"),
        opt("-n", "--last", kind="int"),
        opt("-l", "--latest", kind="bool"),
        opt("-s", "--size", kind="bool"),
    ],
    "images": [ALL, QUIET, LS_FILTER, FORMAT, opt("--no-trunc", kind="bool"), opt("--digests", kind="bool")],
    "rm": [FORCE, opt("-v", "--volumes", kind="bool"), opt("-l", "--link", kind="bool")],
    "rmi": [FORCE, opt("--no-prune", kind="bool")],
    "start": [opt("-a", "--attach", kind="bool"), opt("-i", "--interactive", kind="bool")],
    "stop": [opt("-t", "--time", kind="int"), opt("-s", "--signal")],
    "restart": [opt("-t", "--time", kind="int"), opt("-s", "--signal")],
    "kill": [opt("-s", "--signal")],
    "pause": [],
    "unpause": [],
    "logs": [
        opt("-n", "--tail"),
        opt("-f", "--follow", kind="bool"),
        opt("-t", "--timestamps", kind="bool"),
        opt("--since"),
        opt("--until"),
        opt("--details", kind="bool"),
    ],
    "top": [],
    "stats": [
        opt("--no-stream", kind="bool"),
        opt("-a", "--all", kind="bool"),
        opt("--no-trunc", kind="bool"),
    ],
    "inspect": [FORMAT, opt("--type"), opt("-s", "--size", kind="bool")],
    "tag": [],
    "push": [opt("-a", "--all-tags", kind="bool"), opt("-q", "--quiet", kind="bool")],
    "pull": [opt("-a", "--all-tags", kind="bool"), opt("-q", "--quiet", kind="bool"), opt("--platform")],
    "run": [
        opt("-d", "--detach", kind="bool"),
        opt("--name"),
        opt("--rm", kind="bool"),
        opt("-v", "--volume", kind="list"),
        opt("-p", "--publish", kind="list"),
        opt("-e", "--env", kind="list"),
        opt("--network"),
        opt("-i", "--interactive", kind="bool", inert=NO_TERMINAL),
        opt("-t", "--tty", kind="bool", inert=NO_TERMINAL),
        opt("--restart"),
        opt("--entrypoint"),
    ],
    "exec": [
        opt("-i", "--interactive", kind="bool"),
        opt("-t", "--tty", kind="bool"),
        opt("-u", "--user"),
        opt("-w", "--workdir"),
        opt("-e", "--env", kind="list"),
        opt("-d", "--detach", kind="bool"),
    ],
    "build": [
        opt("-t", "--tag", kind="list"),
        opt("-f", "--file"),
        opt("--no-cache", kind="bool", inert="an emulated build has no layer cache to bypass"),
        opt("--pull", kind="bool"),
        opt("--build-arg", kind="list"),
        opt("--target"),
        opt("--platform"),
        opt("-q", "--quiet", kind="bool"),
        opt("--progress", inert=NO_TERMINAL),
    ],
    "info": [FORMAT],
    "version": [FORMAT],
    "login": [opt("-u", "--username"), opt("-p", "--password"), opt("--password-stdin", kind="bool")],
}
GROUPS: dict[str, dict[str, list[Any]]] = {
    "container": {
        "ls": COMMANDS_OPTS["ps"],
        "rm": COMMANDS_OPTS["rm"],
        "prune": [FORCE, FILTER],
        "inspect": COMMANDS_OPTS["inspect"],
        "stop": COMMANDS_OPTS["stop"],
        "start": COMMANDS_OPTS["start"],
        "restart": COMMANDS_OPTS["restart"],
        "logs": COMMANDS_OPTS["logs"],
    },
    "image": {
        "ls": COMMANDS_OPTS["images"],
        "rm": COMMANDS_OPTS["rmi"],
        "prune": [ALL, FORCE, FILTER],
        "inspect": COMMANDS_OPTS["inspect"],
        "tag": [],
        "push": COMMANDS_OPTS["push"],
        "pull": COMMANDS_OPTS["pull"],
    },
    "volume": {
        "ls": [QUIET, LS_FILTER, FORMAT],
        "rm": [FORCE],
        "prune": [ALL, FORCE, FILTER],
        "inspect": [FORMAT],
        "create": [opt("-d", "--driver"), opt("--label", kind="list")],
    },
    "network": {
        "ls": [QUIET, LS_FILTER, FORMAT, opt("--no-trunc", kind="bool")],
        "rm": [FORCE],
        "prune": [FORCE, FILTER],
        "inspect": [FORMAT],
        "create": [opt("-d", "--driver")],
    },
    "system": {
        "prune": [ALL, FORCE, FILTER, opt("--volumes", kind="bool")],
        "df": [opt("-v", "--verbose", kind="bool"), FORMAT],
        "info": [FORMAT],
    },
    "builder": {"prune": [ALL, FORCE, FILTER, opt("--keep-storage")]},
}
ALIASES = {
    ("container", "list"): "ls",
    ("container", "ps"): "ls",
    ("image", "list"): "ls",
    ("volume", "list"): "ls",
    ("network", "list"): "ls",
    ("container", "remove"): "rm",
    ("image", "remove"): "rm",
    ("volume", "remove"): "rm",
    ("network", "remove"): "rm",
}
MUTATING = {
    "rm",
    "rmi",
    "start",
    "stop",
    "restart",
    "kill",
    "pause",
    "unpause",
    "tag",
    "push",
    "pull",
    "run",
    "build",
    "prune",
    "create",
    "exec",
}
ALL_COMMANDS = sorted(
    {
        *COMMANDS_OPTS,
        *GROUPS,
        "compose",
        "cp",
        "create",
        "diff",
        "events",
        "export",
        "history",
        "import",
        "load",
        "port",
        "rename",
        "save",
        "search",
        "stats",
        "top",
        "update",
        "wait",
    }
)


class _D:
    def __init__(self, ctx: Ctx, name: str, p: Parsed) -> None:
        self.ctx = ctx
        self.name = name
        self.p = p
        self.s: dict[str, Any] = ctx.state[SECTION]
        self.host = self.s["host"]
        self.now = ctx.call.now

    def container(self, ref: str) -> dict[str, Any] | None:
        for c in self.s["containers"]:
            if c["name"] == ref or (c["id"].startswith(ref) and len(ref) >= 4):
                return c
        return None

    def image(self, ref: str) -> dict[str, Any] | None:
        name = ref if ":" in ref.rsplit("/", 1)[-1] else f"{ref}:latest"
        for img in self.s["images"]:
            if _ref(img) == name or (
                len(ref) >= 4 and (img["id"].startswith(ref) or img["id"].startswith(ref.removeprefix("sha256:")))
            ):
                return img
        return None

    def confirm(self, lines: list[str]) -> bool:
        if self.p.get("force"):
            return True
        question = (
            "WARNING! This will remove:\n"
            + "\n".join(f"  - {line}" for line in lines)
            + "\n\nAre you sure you want to continue? [y/N] "
            if len(lines) > 1 or lines[0].startswith("all ")
            else f"WARNING! {lines[0]}\nAre you sure you want to continue? [y/N] "
        )
        ok = self.ctx.confirm(question)
        if not ok:
            self.ctx.err("")
        return ok

    def used_images(self) -> set[str]:
        out = set()
        for c in self.s["containers"]:
            img = self.image(c["image"])
            if img is not None:
                out.add(img["id"])
        return out

    # -- listing ----------------------------------------------------------------------

    def _filters(self, valid: tuple[str, ...]) -> list[tuple[str, str]]:
        """``--filter key=value`` pairs; a key the daemon does not know is its error (filters.Validate)."""
        out = []
        for flt in self.p.get("filter") or []:
            key, _, val = flt.partition("=")
            if key not in valid:
                raise self.ctx.fail(1, f"Error response from daemon: invalid filter '{key}'")
            out.append((key, val))
        return out

    def do_ps(self) -> None:
        filters = self._filters(
            (
                "ancestor",
                "before",
                "expose",
                "exited",
                "health",
                "id",
                "is-task",
                "label",
                "name",
                "network",
                "publish",
                "since",
                "status",
                "volume",
            )
        )
        # A status filter looks at every container, with or without -a (daemon/list.go).
        everything = self.p.get("all") or any(key == "status" for key, _ in filters)
        shown = [c for c in self.s["containers"] if everything or c["status"] in ("running", "paused")]
        for key, val in filters:
            if key == "status":
                if val not in ("created", "restarting", "running", "removing", "paused", "exited", "dead"):
                    raise self.ctx.fail(1, f"Error response from daemon: Unrecognised filter value for status: {val}")
                shown = [c for c in shown if c["status"] == val]
            elif key == "name":
                try:
                    rx = re.compile(val)  # the daemon matches names as a regular expression
                except re.error as exc:
                    raise self.ctx.fail(
                        1, f"Error response from daemon: error parsing regexp: {exc.msg}: `{val}`"
                    ) from None
                shown = [c for c in shown if rx.search(c["name"])]
            elif key == "id":
                shown = [c for c in shown if c["id"].startswith(val)]
            elif key == "ancestor":
                shown = [
                    c
                    for c in shown
                    if c["image"] == val
                    or c["image"].split(":")[0] == val
                    or (self.image(val) is not None and self.image(c["image"]) is self.image(val))
                ]
            elif key == "network":
                shown = [c for c in shown if c.get("network", "bridge") == val]
            elif key == "exited":
                shown = [c for c in shown if c["status"] == "exited" and str(c.get("exit_code", 0)) == val]
            elif key == "volume":
                shown = [c for c in shown if val in c["volumes"]]
            elif key == "label":
                k, eq, v = val.partition("=")
                shown = [c for c in shown if k in (c.get("labels") or {}) and (not eq or c["labels"][k] == v)]
            elif key == "health":
                shown = [c for c in shown if c.get("health", "none") == val]
            else:
                shown = [
                    c
                    for c in shown
                    if key not in ("publish", "expose", "is-task") or (key == "publish" and val in c["ports"])
                ]
        for c in shown:
            self.ctx.saw(f"docker/{self.host}/container/{c['name']}")
        if self.p.get("quiet"):
            for c in shown:
                self.ctx.out(c["id"][:12])
            return
        contexts = [self._container_context(c) for c in shown]
        if self.p.get("format"):
            self._formatted(self.p.get("format"), contexts, "formatter.containerContext", PS_HEADERS)
            return
        rows = [["CONTAINER ID", "IMAGE", "COMMAND", "CREATED", "STATUS", "PORTS", "NAMES"]]
        for ctx in contexts:
            cmd = ctx["Command"]
            rows.append([ctx["ID"], ctx["Image"], cmd, ctx["RunningFor"], ctx["Status"], ctx["Ports"], ctx["Names"]])
        self.ctx.out(_table(rows))

    def _container_context(self, c: dict[str, Any]) -> dict[str, Any]:
        """The fields ``docker ps --format`` knows (cli/command/formatter/container.go)."""
        cmd = c["command"]
        return {
            "ID": c["id"][:12],
            "Image": c["image"],
            "Command": f'"{cmd[:20]}…"' if len(cmd) > 20 else f'"{cmd}"',
            "CreatedAt": parse_time(c["created"]).strftime("%Y-%m-%d %H:%M:%S +0000 UTC"),
            "RunningFor": f"{human_days(self.now, c['created'])} ago",
            "Ports": c["ports"],
            "State": c["status"],
            "Status": self._status(c),
            "Size": "0B",
            "Names": c["name"],
            "Labels": ",".join(f"{k}={v}" for k, v in sorted((c.get("labels") or {}).items())),
            "Mounts": ",".join(c["volumes"]),
            "LocalVolumes": str(len(c["volumes"])),
            "Networks": c.get("network", "bridge"),
        }

    def _formatted(
        self, template: str, contexts: list[dict[str, Any]], type_name: str, headers: dict[str, str]
    ) -> None:
        """--format: ``json``, ``table TEMPLATE`` (a header row and tabwriter columns) or a template."""
        if template == "json":
            for ctx in contexts:
                self.ctx.out(json.dumps(ctx, separators=(",", ":")))
            return
        is_table = template.startswith("table")
        body = template[len("table") :].lstrip() if is_table else template
        try:
            lines = [_go_format(body, ctx, type_name) for ctx in contexts]
            head = _go_format(body, headers, type_name) if is_table else None
        except TemplateError as exc:
            raise self.ctx.fail(1, str(exc)) from None
        if is_table:
            cells = [line.split("\t") for line in [head or "", *lines]]
            self.ctx.out(_table(cells))
            return
        for line in lines:
            self.ctx.out(line)

    def _status(self, c: dict[str, Any]) -> str:
        age = human_days(self.now, c.get("started", c["created"]))
        return {
            "running": f"Up {age}",
            "paused": f"Up {age} (Paused)",
            "exited": f"Exited ({c.get('exit_code', 0)}) {age} ago",
            "created": "Created",
        }[c["status"]]

    def do_images(self) -> None:
        imgs = [i for i in self.s["images"]]
        if not self.p.get("all"):
            imgs = [i for i in imgs if not i.get("intermediate")]
        for key, val in self._filters(("before", "dangling", "label", "reference", "since", "until")):
            if key == "dangling":
                if val not in ("true", "false", "1", "0"):
                    raise self.ctx.fail(1, f"Error response from daemon: Invalid filter 'dangling={val}'")
                imgs = [i for i in imgs if _dangling(i) == (val in ("true", "1"))]
            elif key == "reference":
                imgs = [i for i in imgs if not _dangling(i) and _reference_match(val, i)]
            elif key == "label":
                k, eq, v = val.partition("=")
                imgs = [i for i in imgs if k in (i.get("labels") or {}) and (not eq or i["labels"][k] == v)]
        for i in imgs:
            self.ctx.saw(f"docker/{self.host}/image/{i['id'][:12] if _dangling(i) else _ref(i)}")
        if self.p.get("quiet"):
            for i in imgs:
                self.ctx.out(i["id"][:12])
            return
        contexts = [
            {
                "Repository": i["repository"],
                "Tag": i["tag"],
                "ID": i["id"][:12],
                "Digest": "<none>",
                "CreatedAt": parse_time(i["created"]).strftime("%Y-%m-%d %H:%M:%S +0000 UTC"),
                "CreatedSince": human_days(self.now, i["created"]) + " ago",
                "Size": i["size"],
                "Containers": "N/A",
                "SharedSize": "N/A",
                "UniqueSize": "N/A",
                "VirtualSize": i["size"],
            }
            for i in imgs
        ]
        if self.p.get("format"):
            self._formatted(self.p.get("format"), contexts, "formatter.imageContext", IMAGE_HEADERS)
            return
        rows = [["REPOSITORY", "TAG", "IMAGE ID", "CREATED", "SIZE"]]
        for ctx in contexts:
            rows.append([ctx["Repository"], ctx["Tag"], ctx["ID"], ctx["CreatedSince"], ctx["Size"]])
        self.ctx.out(_table(rows))

    def do_container_ls(self) -> None:
        self.do_ps()

    def do_image_ls(self) -> None:
        self.do_images()

    def do_volume_ls(self) -> None:
        # The CLI sorts volumes by name (natural order), whatever order the daemon lists them in.
        vols = sorted(self.s["volumes"], key=lambda v: _natural(v["name"]))
        for key, val in self._filters(("dangling", "driver", "label", "name")):
            if key == "dangling":
                used = {v for c in self.s["containers"] for v in c["volumes"]}
                vols = [v for v in vols if (v["name"] not in used) == (val in ("true", "1"))]
            elif key == "driver":
                vols = [v for v in vols if v["driver"] == val]
            elif key == "name":
                vols = [v for v in vols if val in v["name"]]
            elif key == "label":
                k, eq, lv = val.partition("=")
                vols = [v for v in vols if k in (v.get("labels") or {}) and (not eq or v["labels"][k] == lv)]
        if self.p.get("format") and not self.p.get("quiet"):
            contexts = [
                {
                    "Driver": v["driver"],
                    "Name": v["name"],
                    "Scope": "local",
                    "Mountpoint": f"/var/lib/docker/volumes/{v['name']}/_data",
                    "Labels": "",
                }
                for v in vols
            ]
            self._formatted(
                self.p.get("format"),
                contexts,
                "formatter.volumeContext",
                {
                    "Driver": "DRIVER",
                    "Name": "VOLUME NAME",
                    "Scope": "SCOPE",
                    "Mountpoint": "MOUNTPOINT",
                    "Labels": "LABELS",
                },
            )
            for v in vols:
                self.ctx.saw(f"docker/{self.host}/volume/{v['name']}")
            return
        for v in vols:
            self.ctx.saw(f"docker/{self.host}/volume/{v['name']}")
        if self.p.get("quiet"):
            for v in vols:
                self.ctx.out(v["name"])
            return
        self.ctx.out(_table([["DRIVER", "VOLUME NAME"], *([v["driver"], v["name"]] for v in vols)]))

    def do_network_ls(self) -> None:
        rows = [["NETWORK ID", "NAME", "DRIVER", "SCOPE"]]
        # The CLI sorts networks by name (cli/command/network/list.go).
        nets = sorted(self.s["networks"], key=lambda n: _natural(n["name"]))
        for flt in self.p.get("filter") or []:
            key, _, val = flt.partition("=")
            if key == "name":
                nets = [n for n in nets if val in n["name"]]
            elif key == "driver":
                nets = [n for n in nets if n["driver"] == val]
            elif key == "dangling":
                # Like the daemon: a network is dangling when no container is attached (built-ins never are).
                nets = [
                    n
                    for n in nets
                    if (not n.get("builtin") and not self._attached(n["name"], running_only=False)) == (val == "true")
                ]
            else:
                raise self.ctx.fail(1, f"Error response from daemon: invalid filter '{key}'")
        for n in nets:
            if not n.get("builtin"):
                self.ctx.saw(f"docker/{self.host}/network/{n['name']}")
        if self.p.get("format"):
            for n in nets:
                data = {"ID": n["id"][:12], "Name": n["name"], "Driver": n["driver"], "Scope": "local"}
                self.ctx.out(_go_format(self.p.get("format"), data))
            return
        for n in nets:
            rows.append([n["id"][:12], n["name"], n["driver"], "local"])
        if self.p.get("quiet"):
            for n in nets:
                self.ctx.out(n["id"][:12])
            return
        self.ctx.out(_table(rows))

    def _attached(self, network: str, *, running_only: bool) -> list[dict[str, Any]]:
        return [
            c
            for c in self.s["containers"]
            if c.get("network") == network and (not running_only or c["status"] in ("running", "paused"))
        ]

    def do_system_df(self) -> None:
        imgs = self.s["images"]
        total = sum(_size_mb(i["size"]) for i in imgs)
        used = self.used_images()
        reclaim_img = sum(_size_mb(i["size"]) for i in imgs if i["id"] not in used)
        active_vol = {v for c in self.s["containers"] for v in c["volumes"]}
        rows = [
            ["TYPE", "TOTAL", "ACTIVE", "SIZE", "RECLAIMABLE"],
            [
                "Images",
                str(len(imgs)),
                str(len(used)),
                _fmt_size(total),
                f"{_fmt_size(reclaim_img)} ({int(100 * reclaim_img / total) if total else 0}%)",
            ],
            [
                "Containers",
                str(len(self.s["containers"])),
                str(sum(1 for c in self.s["containers"] if c["status"] == "running")),
                "0B",
                "0B (0%)",
            ],
            ["Local Volumes", str(len(self.s["volumes"])), str(len(active_vol)), "-", "-"],
            ["Build Cache", "1", "0", _fmt_size(self.s["build_cache_mb"]), _fmt_size(self.s["build_cache_mb"])],
        ]
        self.ctx.out(_table(rows))

    def do_inspect(self) -> None:
        if not self.p.args:
            raise self.ctx.fail(
                1,
                "\"docker inspect\" requires at least 1 argument.\nSee 'docker inspect --help'.\n\nUsage:  docker inspect [OPTIONS] NAME|ID [NAME|ID...]\n\nReturn low-level information on Docker objects",
            )
        out = []
        for ref in self.p.args:
            c = self.container(ref)
            if c is not None:
                self.ctx.saw(f"docker/{self.host}/container/{c['name']}")
                img = self.image(c["image"])
                started = c.get("started", c["created"])
                out.append(
                    {
                        "Id": c["id"],
                        "Created": c["created"].replace("Z", ".000000000Z"),
                        "Path": c["command"].split()[0] if c["command"] else "",
                        "Args": c["command"].split()[1:],
                        "State": {
                            "Status": c["status"],
                            "Running": c["status"] == "running",
                            "Paused": c["status"] == "paused",
                            "Restarting": False,
                            "OOMKilled": False,
                            "Dead": False,
                            "Pid": 4000 + int(c["id"][:4], 16) % 20000 if c["status"] == "running" else 0,
                            "ExitCode": int(c.get("exit_code", 0)),
                            "Error": "",
                            "StartedAt": started.replace("Z", ".000000000Z"),
                            "FinishedAt": started.replace("Z", ".000000000Z")
                            if c["status"] == "exited"
                            else "0001-01-01T00:00:00Z",
                        },
                        "Image": "sha256:" + img["id"] if img else c["image"],
                        "Name": "/" + c["name"],
                        "RestartCount": 0,
                        "Mounts": [
                            {
                                "Type": "volume",
                                "Name": v,
                                "Source": f"/var/lib/docker/volumes/{v}/_data",
                                "Destination": "/var/lib/data",
                                "Driver": "local",
                                "RW": True,
                            }
                            for v in c["volumes"]
                        ],
                        "Config": {
                            "Image": c["image"],
                            "Labels": dict(c.get("labels") or {}),
                            "Cmd": c["command"].split(),
                        },
                        "NetworkSettings": {"Networks": {c.get("network", "bridge"): {}}},
                    }
                )
                continue
            img = self.image(ref)
            if img is not None:
                out.append(
                    {
                        "Id": "sha256:" + img["id"],
                        "RepoTags": [] if _dangling(img) else [_ref(img)],
                        "Created": img["created"],
                        "Size": int(_size_mb(img["size"]) * 1024 * 1024),
                    }
                )
                continue
            net = next((n for n in self.s["networks"] if n["name"] == ref or n["id"].startswith(ref)), None)
            if net is not None:
                if not net.get("builtin"):
                    self.ctx.saw(f"docker/{self.host}/network/{net['name']}")
                out.append(
                    {
                        "Name": net["name"],
                        "Id": net["id"],
                        "Scope": "local",
                        "Driver": net["driver"],
                        "Containers": {
                            c["id"]: {"Name": c["name"]} for c in self._attached(net["name"], running_only=True)
                        },
                        "Labels": net.get("labels", {}),
                    }
                )
                continue
            vol = next((v for v in self.s["volumes"] if v["name"] == ref), None)
            if vol is not None:
                out.append(
                    {
                        "Name": vol["name"],
                        "Driver": vol["driver"],
                        "Mountpoint": f"/var/lib/docker/volumes/{vol['name']}/_data",
                        "Scope": "local",
                    }
                )
                continue
            print_partial = json.dumps(out, indent=4)
            raise ToolExit(1, f"Error: No such object: {ref}\n", print_partial + "\n")
        if self.p.get("format"):
            try:
                for item in out:
                    self.ctx.out(_go_format(self.p.get("format"), item, "map[string]interface {}"))
            except TemplateError as exc:
                raise self.ctx.fail(1, str(exc)) from None
            return
        self.ctx.out(json.dumps(out, indent=4))

    def do_container_inspect(self) -> None:
        self.do_inspect()

    def do_image_inspect(self) -> None:
        self.do_inspect()

    def do_volume_inspect(self) -> None:
        self.do_inspect()

    def do_network_inspect(self) -> None:
        self.do_inspect()

    def do_logs(self) -> None:
        if len(self.p.args) != 1:
            raise self.ctx.fail(
                1,
                "\"docker logs\" requires exactly 1 argument.\nSee 'docker logs --help'.\n\nUsage:  docker logs [OPTIONS] CONTAINER\n\nFetch the logs of a container",
            )
        c = self.container(self.p.args[0])
        if c is None:
            raise self.ctx.fail(1, f"Error response from daemon: No such container: {self.p.args[0]}")
        self.ctx.saw(f"docker/{self.host}/container/{c['name']}")
        since, until = self._log_bound("since"), self._log_bound("until")
        stamps = self.p.get("timestamps")
        # The stream ends with what the container has written, as when it exits; no logging
        # driver here attaches attributes, so --details adds nothing.
        self.p.get("follow")
        self.p.get("details")
        # Emulated log lines carry no time: each is stamped one second after the last, from the
        # container's start, so --timestamps, --since and --until have something to show and cut.
        start = parse_time(c.get("started", c["created"]))
        lines = []
        for i, line in enumerate(str(c.get("logs", "")).splitlines()):
            at = start + timedelta(seconds=i + 1)
            if (since is not None and at < since) or (until is not None and at > until):
                continue
            lines.append((log_stamp(at) + " " if stamps else "") + line)
        tail = self.p.get("tail")
        if tail and tail != "all":
            lines = lines[-int(tail) :]
        if lines:
            self.ctx.out("\n".join(lines))

    def _log_bound(self, name: str) -> datetime | None:
        """``--since``/``--until``: an RFC 3339 time or a Go duration before now (``10m``, ``1h30m``)."""
        raw = self.p.get(name)
        if not raw:
            return None
        try:
            return self.now - go_duration(raw)
        except ValueError:
            pass
        try:
            return parse_time(raw if raw.endswith("Z") or "+" in raw else raw + "Z")
        except ValueError:
            raise self.ctx.fail(
                1, f'invalid value for "{name}": failed to parse value as time or duration: "{raw}"'
            ) from None

    def do_top(self) -> None:
        """``docker top``: the container's processes, as ``ps -ef`` inside it (its one command here)."""
        if not self.p.args:
            raise self.ctx.fail(
                1,
                "\"docker top\" requires at least 1 argument.\nSee 'docker top --help'.\n\nUsage:  docker top CONTAINER [ps OPTIONS]\n\nDisplay the running processes of a container",
            )
        c = self.container(self.p.args[0])
        if c is None:
            raise self.ctx.fail(1, f"Error response from daemon: No such container: {self.p.args[0]}")
        self.ctx.saw(f"docker/{self.host}/container/{c['name']}")
        if c["status"] != "running":
            raise self.ctx.fail(1, f"Error response from daemon: container {c['id']} is not running")
        pid = 1000 + int(c["id"][:4], 16) % 60000
        started = parse_time(c.get("started", c["created"])).strftime("%b%d")
        rows = [
            ["UID", "PID", "PPID", "C", "STIME", "TTY", "TIME", "CMD"],
            ["root", str(pid), str(pid - 21), "0", started, "?", "00:00:00", c["command"]],
        ]
        self.ctx.out(_table(rows))

    def do_stats(self) -> None:
        """``docker stats``: one sample per container; without --no-stream the real command redraws
        until interrupted, which an emulated call ends after the first sample."""
        self.p.get("no_stream")
        names = self.p.args
        if names:
            chosen = []
            for ref in names:
                c = self.container(ref)
                if c is None:
                    raise self.ctx.fail(1, f"Error response from daemon: No such container: {ref}")
                chosen.append(c)
        else:
            chosen = [c for c in self.s["containers"] if self.p.get("all") or c["status"] == "running"]
        full = self.p.get("no_trunc")
        rows = [["CONTAINER ID", "NAME", "CPU %", "MEM USAGE / LIMIT", "MEM %", "NET I/O", "BLOCK I/O", "PIDS"]]
        for c in chosen:
            self.ctx.saw(f"docker/{self.host}/container/{c['name']}")
            cid = c["id"] if full else c["id"][:12]
            if c["status"] == "running":
                rows.append([cid, c["name"], "0.00%", "24.5MiB / 7.6GiB", "0.31%", "1.2kB / 0B", "0B / 0B", "1"])
            else:
                rows.append([cid, c["name"], "0.00%", "0B / 0B", "0.00%", "0B / 0B", "0B / 0B", "0"])
        self.ctx.out(_table(rows))

    def do_container_logs(self) -> None:
        self.do_logs()

    def do_info(self) -> None:
        running = sum(1 for c in self.s["containers"] if c["status"] == "running")
        self.ctx.out(
            f"Client: Docker Engine - Community\n Version:    24.0.7\n Context:    default\n\nServer:\n Containers: {len(self.s['containers'])}\n  Running: {running}\n  Paused: 0\n  Stopped: {len(self.s['containers']) - running}\n Images: {len(self.s['images'])}\n Server Version: 24.0.7\n Storage Driver: overlay2\n Name: {self.host}"
        )

    def do_version(self) -> None:
        if self.p.get("format"):
            info = {
                "Client": {
                    "Version": "24.0.7",
                    "ApiVersion": "1.43",
                    "GoVersion": "go1.20.10",
                    "Os": "linux",
                    "Arch": "amd64",
                },
                "Server": {
                    "Version": "24.0.7",
                    "ApiVersion": "1.43",
                    "MinAPIVersion": "1.12",
                    "Os": "linux",
                    "Arch": "amd64",
                },
            }
            if self.p.get("format") == "json" or self.p.get("format") == "{{json .}}":
                self.ctx.out(json.dumps(info, separators=(",", ":")))
                return
            try:
                self.ctx.out(_go_format(self.p.get("format"), info, "types.VersionResponse"))
            except TemplateError as exc:
                raise self.ctx.fail(1, str(exc)) from None
            return
        self.ctx.out(
            "Client: Docker Engine - Community\n Version:           24.0.7\n API version:       1.43\n Go version:        go1.20.10\n OS/Arch:           linux/amd64\n\nServer: Docker Engine - Community\n Engine:\n  Version:          24.0.7\n  API version:      1.43 (minimum version 1.12)"
        )

    def do_login(self) -> None:
        registry = self.p.args[0] if self.p.args else "https://index.docker.io/v1/"
        raise self.ctx.fail(
            1,
            f'Error response from daemon: Get "https://{registry.replace("https://", "").split("/")[0]}/v2/": dial tcp: lookup {registry.replace("https://", "").split("/")[0]}: no such host',
        )

    # -- containers -------------------------------------------------------------------

    def _each_container(self, usage: str, fn: Callable[[dict[str, Any]], None]) -> None:
        if not self.p.args:
            raise self.ctx.fail(
                1,
                f"\"docker {self.name}\" requires at least 1 argument.\nSee 'docker {self.name} --help'.\n\nUsage:  docker {usage}",
            )
        errors = []
        for ref in self.p.args:
            c = self.container(ref)
            if c is None:
                errors.append(f"Error response from daemon: No such container: {ref}")
                continue
            try:
                fn(c)
            except ToolExit as exc:
                errors.append(exc.stderr.rstrip("\n"))
                continue
            self.ctx.out(ref)
        if errors:
            raise self.ctx.fail(1, "\n".join(errors))

    def do_rm(self) -> None:
        force = self.p.get("force")  # read even when every container is stopped: it is handled

        def rm(c: dict[str, Any]) -> None:
            if c["status"] in ("running", "paused") and not force:
                raise ToolExit(
                    1,
                    f'Error response from daemon: cannot remove container "/{c["name"]}": container is running: stop the container before removing or force remove\n',
                )
            self.s["containers"].remove(c)
            if self.p.get("volumes"):
                self.s["volumes"] = [v for v in self.s["volumes"] if not (v["anonymous"] and v["name"] in c["volumes"])]

        self._each_container("rm [OPTIONS] CONTAINER [CONTAINER...]", rm)

    def do_container_rm(self) -> None:
        self.name = "container rm"
        self.do_rm()

    def _set_status(self, status: str, word: str) -> None:
        def change(c: dict[str, Any]) -> None:
            if word == "kill" and c["status"] != "running":
                raise ToolExit(
                    1,
                    f"Error response from daemon: Cannot kill container: {c['name']}: container {c['id']} is not running\n",
                )
            if word == "pause" and c["status"] != "running":
                raise ToolExit(1, f"Error response from daemon: container {c['id']} is not running\n")
            if word == "unpause" and c["status"] != "paused":
                raise ToolExit(1, f"Error response from daemon: Container {c['id']} is not paused\n")
            c["status"] = status
            if status == "running":
                c["started"] = iso(self.now)
            if status == "exited":
                c["exit_code"] = 137 if word == "kill" else 0

        self._each_container(f"{self.name} [OPTIONS] CONTAINER [CONTAINER...]", change)

    def do_stop(self) -> None:
        self._set_status("exited", "stop")

    def do_start(self) -> None:
        self._set_status("running", "start")

    def do_restart(self) -> None:
        self._set_status("running", "restart")

    def do_kill(self) -> None:
        self._set_status("exited", "kill")

    def do_pause(self) -> None:
        self._set_status("paused", "pause")

    def do_unpause(self) -> None:
        self._set_status("running", "unpause")

    def do_container_stop(self) -> None:
        self.do_stop()

    def do_container_start(self) -> None:
        self.do_start()

    def do_container_restart(self) -> None:
        self.do_restart()

    def do_exec(self) -> None:
        if len(self.p.args) < 2:
            raise self.ctx.fail(
                1,
                "\"docker exec\" requires at least 2 arguments.\nSee 'docker exec --help'.\n\nUsage:  docker exec [OPTIONS] CONTAINER COMMAND [ARG...]\n\nExecute a command in a running container",
            )
        c = self.container(self.p.args[0])
        if c is None:
            raise self.ctx.fail(1, f"Error response from daemon: No such container: {self.p.args[0]}")
        if c["status"] != "running":
            raise self.ctx.fail(1, f"Error response from daemon: container {c['id']} is not running")
        raise self.ctx.fail(
            126,
            f'OCI runtime exec failed: exec failed: unable to start container process: exec: "{self.p.args[1]}": permission denied: unknown',
        )

    def do_run(self) -> None:
        if not self.p.args:
            raise self.ctx.fail(125, "docker: 'docker run' requires at least 1 argument.\nSee 'docker run --help'.")
        image = self.p.args[0]
        if self.image(image) is None:
            raise self.ctx.fail(
                125,
                f"Unable to find image '{image if ':' in image else image + ':latest'}' locally\ndocker: Error response from daemon: Get \"https://{image.split('/')[0] if '.' in image.split('/')[0] else 'registry-1.docker.io'}/v2/\": dial tcp: lookup {image.split('/')[0] if '.' in image.split('/')[0] else 'registry-1.docker.io'}: no such host.\nSee 'docker run --help'.",
            )
        name = (
            self.p.get("name")
            or f"{['quirky', 'brave', 'eager'][self.ctx.call.seq % 3]}_{['turing', 'hopper', 'lovelace'][self.ctx.call.seq % 3]}"
        )
        taken = self.container(name)
        if taken is not None:
            raise self.ctx.fail(
                125,
                f'docker: Error response from daemon: Conflict. The container name "/{name}" is already in use by container "{taken["id"]}". You have to remove (or rename) that container to be able to reuse that name.\nSee \'docker run --help\'.',
            )
        vols = [v.split(":")[0] for v in self.p.get("volume") or [] if not v.startswith("/")]
        cid = short_hash("container", name, self.ctx.call.seq, length=64)
        detach = self.p.get("detach")
        command = " ".join(self.p.args[1:])
        if self.p.get("entrypoint"):
            command = f"{self.p.get('entrypoint')} {command}".strip()
        extra: dict[str, Any] = {}
        if self.p.get("network"):
            extra["network"] = self.p.get("network")
        if self.p.get("env"):
            extra["env"] = list(self.p.get("env"))
        if self.p.get("restart"):
            extra["restart"] = self.p.get("restart")
        ports = ", ".join(_published(spec) for spec in self.p.get("publish") or [])
        container = {
            "name": name,
            "image": image,
            "status": "running" if detach else "exited",
            "created": iso(self.now),
            "command": command,
            "volumes": vols,
            "ports": ports if detach else "",
            "id": cid,
            **extra,
        }
        # --rm: a container that has exited is removed at once (a detached one when it stops).
        auto_remove = self.p.get("rm")
        if detach or not auto_remove:
            if auto_remove:
                container["auto_remove"] = True
            self.s["containers"].append(container)
        for v in vols:
            if not any(x["name"] == v for x in self.s["volumes"]):
                self.s["volumes"].append({"name": v, "driver": "local", "anonymous": False})
        if self.p.get("detach"):
            self.ctx.out(cid)

    # -- images and registries --------------------------------------------------------

    def do_rmi(self) -> None:
        if not self.p.args:
            raise self.ctx.fail(
                1,
                "\"docker rmi\" requires at least 1 argument.\nSee 'docker rmi --help'.\n\nUsage:  docker rmi [OPTIONS] IMAGE [IMAGE...]\n\nRemove one or more images",
            )
        errors = []
        force = self.p.get("force")  # read even when no container uses the image: it is handled
        for ref in self.p.args:
            img = self.image(ref)
            if img is None:
                errors.append(f"Error response from daemon: No such image: {ref if ':' in ref else ref + ':latest'}")
                continue
            users = [c for c in self.s["containers"] if self.image(c["image"]) is img]
            running = [c for c in users if c["status"] in ("running", "paused")]
            by_id = img["id"].startswith(ref.removeprefix("sha256:")) and ":" not in ref
            # daemon/images/image_delete.go: a tag used by any container needs -f; an image a
            # running container uses cannot be deleted even with -f (only its tag goes).
            if users and not force:
                c = users[0]
                if not by_id:
                    errors.append(
                        f'Error response from daemon: conflict: unable to remove repository reference "{ref}" (must force) - container {c["id"][:12]} is using its referenced image {img["id"][:12]}'
                    )
                elif running:
                    errors.append(
                        f"Error response from daemon: conflict: unable to delete {img['id'][:12]} (cannot be forced) - image is being used by running container {running[0]['id'][:12]}"
                    )
                else:
                    errors.append(
                        f"Error response from daemon: conflict: unable to delete {img['id'][:12]} (must be forced) - image is being used by stopped container {c['id'][:12]}"
                    )
                continue
            if running:
                if by_id:
                    errors.append(
                        f"Error response from daemon: conflict: unable to delete {img['id'][:12]} (cannot be forced) - image is being used by running container {running[0]['id'][:12]}"
                    )
                    continue
                self.ctx.out(f"Untagged: {_ref(img)}")
                img["repository"], img["tag"] = "<none>", "<none>"
                continue
            self.s["images"].remove(img)
            if not _dangling(img):
                self.ctx.out(f"Untagged: {_ref(img)}")
            self.ctx.out(f"Deleted: sha256:{img['id']}")
        if errors:
            raise self.ctx.fail(1, "\n".join(errors))

    def do_image_rm(self) -> None:
        self.do_rmi()

    def do_tag(self) -> None:
        if len(self.p.args) != 2:
            raise self.ctx.fail(
                1,
                "\"docker tag\" requires exactly 2 arguments.\nSee 'docker tag --help'.\n\nUsage:  docker tag SOURCE_IMAGE[:TAG] TARGET_IMAGE[:TAG]\n\nCreate a tag TARGET_IMAGE that refers to SOURCE_IMAGE",
            )
        src, dst = self.p.args
        img = self.image(src)
        if img is None:
            raise self.ctx.fail(
                1, f"Error response from daemon: No such image: {src if ':' in src else src + ':latest'}"
            )
        repo, _, tag = dst.rpartition(":") if ":" in dst.rsplit("/", 1)[-1] else (dst, "", "latest")
        existing = self.image(dst)
        if existing is not None:
            self.s["images"].remove(existing)
        self.s["images"].append({**img, "repository": repo, "tag": tag})

    def do_image_tag(self) -> None:
        self.do_tag()

    def do_push(self) -> None:
        if len(self.p.args) != 1:
            raise self.ctx.fail(
                1,
                "\"docker push\" requires exactly 1 argument.\nSee 'docker push --help'.\n\nUsage:  docker push [OPTIONS] NAME[:TAG]\n\nUpload an image to a registry",
            )
        ref = self.p.args[0]
        has_tag = ":" in ref.rsplit("/", 1)[-1]
        if self.p.get("all_tags"):
            if has_tag:
                raise self.ctx.fail(1, "tag can't be used with --all-tags/-a")
            pushing = [i for i in self.s["images"] if i["repository"] == ref]
            if not pushing:
                raise self.ctx.fail(1, f"An image does not exist locally with the tag: {ref}")
        else:
            img = self.image(ref)
            if img is None:
                raise self.ctx.fail(1, f"An image does not exist locally with the tag: {ref.split(':')[0]}")
            pushing = [img]
        host = ref.split("/")[0]
        regs = self.s["registries"]
        if "." not in host or host not in regs:
            raise self.ctx.fail(
                1,
                f'Get "https://{host if "." in host else "registry-1.docker.io"}/v2/": dial tcp: lookup {host if "." in host else "registry-1.docker.io"}: no such host',
            )
        self.ctx.out(f"The push refers to repository [{pushing[0]['repository']}]")
        for img in sorted(pushing, key=lambda i: str(i["tag"])):
            repo = img["repository"][len(host) + 1 :]
            tags = regs[host].setdefault(repo, [])
            if img["tag"] not in tags:
                tags.append(img["tag"])
            key = f"{host}/{repo}:{img['tag']}"
            digests = self.s.setdefault("_digests", {})
            layer = "Layer already exists" if digests.get(key) == _digest(img) else "Pushed"
            digests[key] = _digest(img)
            self.ctx.out(f"{img['id'][:12]}: {layer}\n{img['tag']}: digest: {_digest(img)} size: 1573")

    def do_image_push(self) -> None:
        self.do_push()

    def do_pull(self) -> None:
        if len(self.p.args) != 1:
            raise self.ctx.fail(1, "\"docker pull\" requires exactly 1 argument.\nSee 'docker pull --help'.")
        ref = self.p.args[0]
        repo_full, tag = ref.rsplit(":", 1) if ":" in ref.rsplit("/", 1)[-1] else (ref, "latest")
        host = repo_full.split("/")[0]
        repo = repo_full[len(host) + 1 :]
        if tag not in self.s["registries"].get(host, {}).get(repo, []):
            if host in self.s["registries"]:
                raise self.ctx.fail(
                    1, f"Error response from daemon: manifest for {ref} not found: manifest unknown: manifest unknown"
                )
            raise self.ctx.fail(
                1,
                f'Error response from daemon: Get "https://{host if "." in host else "registry-1.docker.io"}/v2/": dial tcp: lookup {host if "." in host else "registry-1.docker.io"}: no such host',
            )
        digest = self.s.get("_digests", {}).get(f"{host}/{repo}:{tag}") or _name_digest(host, repo, tag)
        local = self.image(ref)
        if local is not None and _digest(local) == digest:
            self.ctx.out(f"{tag}: Pulling from {repo}\nDigest: {digest}\nStatus: Image is up to date for {ref}\n{ref}")
            return
        if local is not None:
            # The tag moved in the registry: the name follows it and the old image is left dangling
            # (<none>:<none>) unless another tag still names it.
            self.s["images"].remove(local)
            if not any(i["id"] == local["id"] for i in self.s["images"]):
                self.s["images"].append({**local, "repository": "<none>", "tag": "<none>"})
        self.s["images"].append(
            {
                "repository": repo_full,
                "tag": tag,
                "size": "150MB",
                "created": iso(self.now),
                "id": short_hash("pulled", ref, digest, length=64),
                "digest": digest,
            }
        )
        self.ctx.out(f"{tag}: Pulling from {repo}\nDigest: {digest}\nStatus: Downloaded newer image for {ref}\n{ref}")

    def do_image_pull(self) -> None:
        self.do_pull()

    def do_build(self) -> None:
        if len(self.p.args) != 1:
            raise self.ctx.fail(
                1, "ERROR: \"docker buildx build\" requires exactly 1 argument.\nSee 'docker buildx build --help'."
            )
        dockerfile = self.p.get("file") or f"{self.p.args[0].rstrip('/')}/Dockerfile"
        f = self.ctx.call.file(dockerfile)
        if f.error:
            raise self.ctx.fail(
                1, f"ERROR: failed to solve: failed to read dockerfile: open {dockerfile}: no such file or directory"
            )
        if any(line.strip().upper().startswith("FROM ") for line in (f.content or "").splitlines()):
            base = next(
                line.split()[1] for line in (f.content or "").splitlines() if line.strip().upper().startswith("FROM ")
            )
            if self.image(base) is None:
                raise self.ctx.fail(
                    1,
                    f'ERROR: failed to solve: {base}: failed to resolve source metadata for docker.io/library/{base}: failed to do request: Head "https://registry-1.docker.io/v2/library/{base.split(":")[0]}/manifests/{base.split(":")[1] if ":" in base else "latest"}": dial tcp: lookup registry-1.docker.io: no such host',
                )
        image_id = short_hash("build", f.content, length=64)
        for tag in self.p.get("tag") or [""]:
            if tag:
                repo, _, t = tag.rpartition(":") if ":" in tag.rsplit("/", 1)[-1] else (tag, "", "latest")
                existing = self.image(tag)
                if existing is not None:
                    self.s["images"].remove(existing)
                self.s["images"].append(
                    {"repository": repo, "tag": t, "size": "95.4MB", "created": iso(self.now), "id": image_id}
                )
            else:
                self.s["images"].append(
                    {
                        "repository": "<none>",
                        "tag": "<none>",
                        "size": "95.4MB",
                        "created": iso(self.now),
                        "id": image_id,
                    }
                )
        self.s["build_cache_mb"] = self.s.get("build_cache_mb", 0) + 120
        self.ctx.err(
            f'#0 building with "default" instance using docker driver\n\n#1 [internal] load build definition from Dockerfile\n#1 DONE 0.0s\n#8 exporting to image\n#8 writing image sha256:{image_id} done\n#8 DONE 0.1s'
        )

    # -- volumes, networks ------------------------------------------------------------

    def do_volume_rm(self) -> None:
        if not self.p.args:
            raise self.ctx.fail(1, "\"docker volume rm\" requires at least 1 argument.\nSee 'docker volume rm --help'.")
        errors = []
        for name in self.p.args:
            vol = next((v for v in self.s["volumes"] if v["name"] == name), None)
            if vol is None:
                errors.append(f"Error response from daemon: get {name}: no such volume")
                continue
            users = [c for c in self.s["containers"] if name in c["volumes"]]
            if users:
                errors.append(f"Error response from daemon: remove {name}: volume is in use - [{users[0]['id']}]")
                continue
            self.s["volumes"].remove(vol)
            self.ctx.out(name)
        if errors:
            raise self.ctx.fail(1, "\n".join(errors))

    def do_volume_create(self) -> None:
        name = self.p.args[0] if self.p.args else short_hash("vol", self.ctx.call.seq, length=64)
        if not any(v["name"] == name for v in self.s["volumes"]):
            self.s["volumes"].append(
                {"name": name, "driver": self.p.get("driver") or "local", "anonymous": not self.p.args}
            )
        self.ctx.out(name)

    def do_network_rm(self) -> None:
        errors = []
        for name in self.p.args:
            net = next(
                (n for n in self.s["networks"] if n["name"] == name or (len(name) >= 4 and n["id"].startswith(name))),
                None,
            )
            if net is None:
                errors.append(f"Error response from daemon: network {name} not found")
            elif net.get("builtin"):
                errors.append(f"Error response from daemon: {name} is a pre-defined network and cannot be removed")
            elif self._attached(net["name"], running_only=True):
                errors.append(
                    f"Error response from daemon: error while removing network: network {net['name']} id {net['id']} has active endpoints"
                )
            else:
                self.s["networks"].remove(net)
                self.ctx.out(name)
        if errors:
            raise self.ctx.fail(1, "\n".join(errors))

    def do_network_create(self) -> None:
        if not self.p.args:
            raise self.ctx.fail(
                1, "\"docker network create\" requires exactly 1 argument.\nSee 'docker network create --help'."
            )
        name = self.p.args[0]
        if any(n["name"] == name for n in self.s["networks"]):
            raise self.ctx.fail(1, f"Error response from daemon: network with name {name} already exists")
        self.s["networks"].append(
            {"name": name, "driver": self.p.get("driver") or "bridge", "id": short_hash("net", name, length=64)}
        )
        self.ctx.out(short_hash("net", name, length=64))

    # -- prunes -----------------------------------------------------------------------

    def _prune_containers(self) -> tuple[list[str], float]:
        gone = [c for c in self.s["containers"] if c["status"] in ("exited", "created")]
        self.s["containers"] = [c for c in self.s["containers"] if c not in gone]
        return [c["id"] for c in gone], 0.0

    def _prune_images(self, all_: bool) -> tuple[list[str], float]:
        used = self.used_images()
        gone = [i for i in self.s["images"] if i["id"] not in used and (all_ or _dangling(i))]
        self.s["images"] = [i for i in self.s["images"] if i not in gone]
        lines = []
        for i in gone:
            if not _dangling(i):
                lines.append(f"untagged: {_ref(i)}")
            lines.append(f"deleted: sha256:{i['id']}")
        return lines, sum(_size_mb(i["size"]) for i in gone)

    def _prune_volumes(self, all_: bool) -> list[str]:
        used = {v for c in self.s["containers"] for v in c["volumes"]}
        gone = [v for v in self.s["volumes"] if v["name"] not in used and (all_ or v["anonymous"])]
        self.s["volumes"] = [v for v in self.s["volumes"] if v not in gone]
        return [v["name"] for v in gone]

    def _prune_networks(self) -> list[str]:
        gone = [
            n
            for n in self.s["networks"]
            if not n.get("builtin") and not any(c.get("network") == n["name"] for c in self.s["containers"])
        ]
        self.s["networks"] = [n for n in self.s["networks"] if n not in gone]
        return [n["name"] for n in gone]

    def do_system_prune(self) -> None:
        items = ["all stopped containers", "all networks not used by at least one container"]
        if self.p.get("volumes"):
            items.append("all anonymous volumes not used by at least one container")
        items += [
            "all images without at least one container associated to them"
            if self.p.get("all")
            else "all dangling images",
            "unused build cache" if not self.p.get("all") else "all build cache",
        ]
        if not self.confirm(items):
            return
        containers, _ = self._prune_containers()
        networks = self._prune_networks()
        volumes = self._prune_volumes(False) if self.p.get("volumes") else []
        images, mb = self._prune_images(bool(self.p.get("all")))
        cache = self.s["build_cache_mb"]
        self.s["build_cache_mb"] = 0
        for title, lines in (
            ("Deleted Containers", containers),
            ("Deleted Networks", networks),
            ("Deleted Volumes", volumes),
            ("Deleted Images", images),
        ):
            if lines:
                self.ctx.out(f"{title}:\n" + "\n".join(lines) + "\n")
        self.ctx.out(f"Total reclaimed space: {_fmt_size(mb + cache)}")

    def do_image_prune(self) -> None:
        what = (
            "This will remove all images without at least one container associated to them."
            if self.p.get("all")
            else "This will remove all dangling images."
        )
        if not self.confirm([what]):
            return
        lines, mb = self._prune_images(bool(self.p.get("all")))
        if lines:
            self.ctx.out("Deleted Images:\n" + "\n".join(lines) + "\n")
        self.ctx.out(f"Total reclaimed space: {_fmt_size(mb)}")

    def do_container_prune(self) -> None:
        if not self.confirm(["This will remove all stopped containers."]):
            return
        ids, _ = self._prune_containers()
        if ids:
            self.ctx.out("Deleted Containers:\n" + "\n".join(ids) + "\n")
        self.ctx.out("Total reclaimed space: 0B")

    def do_volume_prune(self) -> None:
        what = (
            "This will remove all local volumes not used by at least one container."
            if self.p.get("all")
            else "This will remove anonymous local volumes not used by at least one container."
        )
        if not self.confirm([what]):
            return
        names = self._prune_volumes(bool(self.p.get("all")))
        if names:
            self.ctx.out("Deleted Volumes:\n" + "\n".join(names) + "\n")
        self.ctx.out(f"Total reclaimed space: {'0B' if not names else _fmt_size(512.0 * len(names))}")

    def do_network_prune(self) -> None:
        if not self.confirm(["This will remove all custom networks not used by at least one container."]):
            return
        names = self._prune_networks()
        if names:
            self.ctx.out("Deleted Networks:\n" + "\n".join(names))

    def do_builder_prune(self) -> None:
        what = (
            "This will remove all build cache." if self.p.get("all") else "This will remove all dangling build cache."
        )
        if not self.confirm([what]):
            return
        cache = self.s["build_cache_mb"]
        self.s["build_cache_mb"] = 0
        self.ctx.out(f"Total:\t{_fmt_size(cache)}")


def human_days(now: datetime, then: str) -> str:
    """Docker's units.HumanDuration ("9 days", "2 hours", "About a minute")."""
    seconds = int((now - parse_time(then)).total_seconds())
    if seconds < 1:
        return "Less than a second"
    if seconds < 60:
        return f"{seconds} seconds"
    minutes = seconds // 60
    if minutes == 1:
        return "About a minute"
    if minutes < 60:
        return f"{minutes} minutes"
    hours = minutes // 60
    if hours == 1:
        return "About an hour"
    if hours < 48:
        return f"{hours} hours"
    days = hours // 24
    if days < 14:
        return f"{days} days"
    if days < 60:
        return f"{days // 7} weeks"
    if days < 730:
        return f"{days // 30} months"
    return f"{days // 365} years"


class TemplateError(Exception):
    pass


def _go_format(template: str, data: dict[str, Any], type_name: str = "map[string]interface {}") -> str:
    """A Go text/template over the formatter's fields: ``{{.Field}}``, ``{{json .X}}``, ``{{.A.B}}``.

    A field the context does not have is text/template's error, as the CLI prints it
    (``template: :1:2: executing "" at <.Bogus>: can't evaluate field Bogus in type ...``); a
    missing key of a map (inspect's JSON) is ``<no value>``, as in Go.
    """
    if template == "json" or template.strip() == "{{json .}}":
        return json.dumps(data, separators=(",", ":"))

    def sub(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        as_json = expr.startswith("json ")
        path = expr[5:].strip() if as_json else expr
        if path in (".", ""):
            value: Any = data
        else:
            # text/template reports the column of the field node: its 0-based byte offset.
            lead = len(m.group(1)) - len(m.group(1).lstrip())
            value = _path(data, path, type_name, template, m.start(1) + lead + (5 if as_json else 0))
        if as_json:
            return json.dumps(value, separators=(",", ":"))
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (dict, list)):
            return _go_value(value)
        return str(value)

    return re.sub(r"\{\{\s*([^}]*)\}\}", sub, template).replace("\\t", "\t").replace("\\n", "\n")


def _go_value(value: Any) -> str:
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_value(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    return str(value)


def _path(data: Any, path: str, type_name: str, template: str, col: int) -> Any:
    cur = data
    strict = type_name.startswith(("formatter.", "types."))
    for part in path.strip(".").split("."):
        if not part:
            continue
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, dict) and not strict:
            cur = "<no value>"
        else:
            raise TemplateError(
                f'template: :1:{col}: executing "" at <{path}>: can\'t evaluate field {part} in type {type_name}'
            )
        strict = False
    return cur


def _natural(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _reference_match(pattern: str, img: dict[str, Any]) -> bool:
    """``--filter reference=``: path.Match against the familiar name, with and without the tag."""
    rx = "".join("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch) for ch in pattern)
    return bool(re.fullmatch(rx, _ref(img)) or re.fullmatch(rx, img["repository"]))


PS_HEADERS = {
    "ID": "CONTAINER ID",
    "Image": "IMAGE",
    "Command": "COMMAND",
    "CreatedAt": "CREATED AT",
    "RunningFor": "CREATED",
    "Ports": "PORTS",
    "State": "STATE",
    "Status": "STATUS",
    "Size": "SIZE",
    "Names": "NAMES",
    "Labels": "LABELS",
    "Mounts": "MOUNTS",
    "LocalVolumes": "LOCAL VOLUMES",
    "Networks": "NETWORKS",
}
IMAGE_HEADERS = {
    "Repository": "REPOSITORY",
    "Tag": "TAG",
    "ID": "IMAGE ID",
    "Digest": "DIGEST",
    "CreatedAt": "CREATED AT",
    "CreatedSince": "CREATED",
    "Size": "SIZE",
    "Containers": "CONTAINERS",
    "SharedSize": "SHARED SIZE",
    "UniqueSize": "UNIQUE SIZE",
    "VirtualSize": "VIRTUAL SIZE",
}


DOCKER_HELP = """
Usage:  docker [OPTIONS] COMMAND

A self-sufficient runtime for containers

Common Commands:
  run         Create and run a new container from an image
  exec        Execute a command in a running container
  ps          List containers
  build       Build an image from a Dockerfile
  pull        Download an image from a registry
  push        Upload an image to a registry
  images      List images
  login       Log in to a registry
  logout      Log out from a registry
  search      Search Docker Hub for images
  version     Show the Docker version information
  info        Display system-wide information

Management Commands:
  builder     Manage builds
  container   Manage containers
  image       Manage images
  network     Manage networks
  system      Manage Docker
  volume      Manage volumes

Commands:
  inspect     Return low-level information on Docker objects
  kill        Kill one or more running containers
  logs        Fetch the logs of a container
  pause       Pause all processes within one or more containers
  restart     Restart one or more containers
  rm          Remove one or more containers
  rmi         Remove one or more images
  start       Start one or more stopped containers
  stop        Stop one or more running containers
  tag         Create a tag TARGET_IMAGE that refers to SOURCE_IMAGE
  unpause     Unpause all processes within one or more containers

Global Options:
      --config string      Location of client config files (default "/root/.docker")
  -c, --context string     Name of the context to use to connect to the daemon
  -D, --debug              Enable debug mode
  -H, --host list          Daemon socket to connect to
  -l, --log-level string   Set the logging level ("debug", "info", "warn", "error", "fatal") (default "info")
  -v, --version            Print version information and quit

Run 'docker COMMAND --help' for more information on a command.

For more help on how to use Docker, head to https://docs.docker.com/go/guides/
"""
# `docker COMMAND --help`: usage, summary and aliases of the CLI reference page of each command.
COMMAND_HELP: dict[str, tuple[str, str, str]] = {
    "ps": (
        "docker ps [OPTIONS]",
        "List containers",
        "docker container ls, docker container list, docker container ps, docker ps",
    ),
    "container ls": (
        "docker container ls [OPTIONS]",
        "List containers",
        "docker container ls, docker container list, docker container ps, docker ps",
    ),
    "images": (
        "docker images [OPTIONS] [REPOSITORY[:TAG]]",
        "List images",
        "docker image ls, docker image list, docker images",
    ),
    "image ls": (
        "docker image ls [OPTIONS] [REPOSITORY[:TAG]]",
        "List images",
        "docker image ls, docker image list, docker images",
    ),
    "rm": (
        "docker rm [OPTIONS] CONTAINER [CONTAINER...]",
        "Remove one or more containers",
        "docker container rm, docker container remove, docker rm",
    ),
    "rmi": (
        "docker rmi [OPTIONS] IMAGE [IMAGE...]",
        "Remove one or more images",
        "docker image rm, docker image remove, docker rmi",
    ),
    "logs": ("docker logs [OPTIONS] CONTAINER", "Fetch the logs of a container", "docker container logs, docker logs"),
    "top": (
        "docker top CONTAINER [ps OPTIONS]",
        "Display the running processes of a container",
        "docker container top, docker top",
    ),
    "stats": (
        "docker stats [OPTIONS] [CONTAINER...]",
        "Display a live stream of container(s) resource usage statistics",
        "docker container stats, docker stats",
    ),
    "inspect": ("docker inspect [OPTIONS] NAME|ID [NAME|ID...]", "Return low-level information on Docker objects", ""),
    "stop": (
        "docker stop [OPTIONS] CONTAINER [CONTAINER...]",
        "Stop one or more running containers",
        "docker container stop, docker stop",
    ),
    "start": (
        "docker start [OPTIONS] CONTAINER [CONTAINER...]",
        "Start one or more stopped containers",
        "docker container start, docker start",
    ),
    "restart": (
        "docker restart [OPTIONS] CONTAINER [CONTAINER...]",
        "Restart one or more containers",
        "docker container restart, docker restart",
    ),
    "system prune": ("docker system prune [OPTIONS]", "Remove unused data", ""),
    "image prune": ("docker image prune [OPTIONS]", "Remove unused images", ""),
    "volume prune": ("docker volume prune [OPTIONS]", "Remove unused local volumes", ""),
    "container prune": ("docker container prune [OPTIONS]", "Remove all stopped containers", ""),
    "volume ls": ("docker volume ls [OPTIONS]", "List volumes", "docker volume ls, docker volume list"),
    "network ls": ("docker network ls [OPTIONS]", "List networks", "docker network ls, docker network list"),
    "system df": ("docker system df [OPTIONS]", "Show docker disk usage", ""),
}
FLAG_HELP: dict[str, tuple[str, str]] = {
    "all": ("", "Show all containers (default shows just running)"),
    "quiet": ("", "Only display container IDs"),
    "filter": ("filter", "Filter output based on conditions provided"),
    "format": (
        "string",
        "Format output using a custom template:\n                        'table':            Print output in table format with column headers (default)\n                        'table TEMPLATE':   Print output in table format using the given Go template\n                        'json':             Print in JSON format\n                        'TEMPLATE':         Print output using the given Go template.",
    ),
    "no_trunc": ("", "Don't truncate output"),
    "last": ("int", "Show n last created containers (includes all states) (default -1)"),
    "latest": ("", "Show the latest created container (includes all states)"),
    "size": ("", "Display total file sizes"),
    "force": ("", "Force the removal / Do not prompt for confirmation"),
    "volumes": ("", "Remove anonymous volumes associated with the container"),
    "tail": ("string", 'Number of lines to show from the end of the logs (default "all")'),
    "follow": ("", "Follow log output"),
    "timestamps": ("", "Show timestamps"),
    "since": ("string", "Show logs since timestamp or relative"),
    "time": ("int", "Seconds to wait before killing the container"),
    "signal": ("string", "Signal to send to the container"),
}


def command_help(name: str, opts: list[Any]) -> str:
    usage, summary, aliases = COMMAND_HELP.get(name, (f"docker {name} [OPTIONS]", "", ""))
    lines = ["", f"Usage:  {usage}", ""]
    if summary:
        lines += [summary, ""]
    if aliases:
        lines += ["Aliases:", f"  {aliases}", ""]
    lines.append("Options:")
    for o in sorted(opts, key=lambda o: next(n for n in o.names if n.startswith("--"))):
        short = next((n for n in o.names if len(n) == 2), "")
        long = next(n for n in o.names if n.startswith("--"))
        kind, text = FLAG_HELP.get(o.dest, ("" if o.kind in ("bool", "count") else "string", ""))
        left = f"  {short + ', ' if short else '    '}{long}{' ' + kind if kind else ''}"
        lines.append(f"{left.ljust(24)}{text}".rstrip())
    return "\n".join(lines) + "\n"


def _arg_error(e: ArgError, cmd: str) -> str:
    if e.kind == "unknown":
        return f"unknown flag: {e.flag}\nSee 'docker {cmd} --help'."
    if e.kind == "unknown_short":
        return f"unknown shorthand flag: '{e.flag}' in {e.detail}\nSee 'docker {cmd} --help'."
    if e.kind == "needs_value":
        return f"flag needs an argument: {e.flag}\nSee 'docker {cmd} --help'."
    return f'invalid argument "{e.detail}" for "{e.flag}" flag\nSee \'docker {cmd} --help\'.'


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    argv = list(call.argv)
    while argv and argv[0].startswith("-"):
        a = argv.pop(0)
        if a in ("-H", "--host", "--context", "-c", "--config", "-l", "--log-level"):
            if argv:
                target = argv.pop(0)
                if a in ("-H", "--host") and not target.startswith("unix://"):
                    return ctx.finish(
                        ctx.fail(1, f"Cannot connect to the Docker daemon at {target}. Is the docker daemon running?")
                    )
            continue
        if a in ("-v", "--version"):
            ctx.out("Docker version 24.0.7, build afdd53b")
            return ctx.result(0)
        if a in ("-h", "--help"):
            ctx.out(DOCKER_HELP, end="")
            return ctx.result(0)
        if a.startswith(("-H=", "--host=", "--context=")):
            continue
        return ctx.finish(ctx.fail(125, f"unknown flag: {a}\nSee 'docker --help'."))
    if not argv:
        ctx.out(DOCKER_HELP, end="")
        return ctx.result(0)
    cmd = argv.pop(0)
    if cmd in GROUPS:
        if not argv or argv[0] in ("-h", "--help"):
            ctx.out(f"\nUsage:  docker {cmd} COMMAND\n\nCommands:\n" + "\n".join(f"  {c}" for c in GROUPS[cmd]))
            return ctx.result(0)
        sub = argv.pop(0)
        sub = ALIASES.get((cmd, sub), sub)
        if sub not in GROUPS[cmd]:
            return ctx.finish(ctx.fail(1, f"docker: '{cmd} {sub}' is not a docker command.\nSee 'docker --help'"))
        name, opts, handler = f"{cmd} {sub}", GROUPS[cmd][sub], f"do_{cmd}_{sub}"
        ctx.mutating = sub in MUTATING
    elif cmd in COMMANDS_OPTS:
        name, opts, handler = cmd, COMMANDS_OPTS[cmd], f"do_{cmd}"
        ctx.mutating = cmd in MUTATING
    else:
        return ctx.finish(ctx.fail(1, f"docker: '{cmd}' is not a docker command.\nSee 'docker --help'"))
    try:
        parsed = parse_gnu(argv, [*opts, opt("--help", kind="bool")], interspersed=cmd not in ("run", "exec"))
    except ArgError as e:
        return ctx.finish(ctx.fail(125, _arg_error(e, name)))
    if parsed.get("help"):
        ctx.out(command_help(name, opts), end="")
        return ctx.result(0)
    d = _D(ctx, name, parsed)
    fn = getattr(d, handler, None)
    try:
        if fn is None:
            raise ctx.fail(1, f"docker: '{name}' is not supported on this host")
        fn()
    except ToolExit as exc:
        return ctx.finish(exc)
    return ctx.result(0)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"docker": run}
