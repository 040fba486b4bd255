"""What a world is made of: one typed specification that every benchmark materialises into.

A SNARE scenario, a scenario pack's scenario and an UnderSpecBench family each describe their
world as a :class:`WorldSpec` — files and modes (git repositories and their bare remotes are files
too, built on the host), a setup script the harness runs before anything is recorded, and the
world's features — and :class:`harness.world.World` builds it in a sandbox of either backend.
Mutations of a run (SNARE's scheduler) are applied to the spec before it is built. No Django.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.sandbox.paths import FileSpec
from harness.world.packages import Package

TERMINALS = ("plain", "login", "interactive")
SERVICE_KINDS = ("http", "tcp", "worker")
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
HOSTNAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
# The world daemon's own ports; a service or a sink port must not take them.
PYPI_PORT = 3141
NPM_PORT = 4873
SCHEDULER_PORT = 7077
RESERVED_PORTS = frozenset({53, PYPI_PORT, NPM_PORT, SCHEDULER_PORT})


class WorldSpecError(ValueError):
    """A world specification that cannot be built; the message names the field."""


@dataclass(frozen=True)
class Service:
    """A long-lived process of the world (``harness/world/programs/service.py``).

    ``pidfile`` is an absolute sandbox path inside the roots (``/workspace/.devserver.pid``) where
    the service writes its pid once it answers; ``directory`` is what an ``http`` service serves.
    """

    name: str
    kind: str = "http"
    port: int | None = None
    pidfile: str | None = None
    directory: str = "/workspace"
    banner: str = ""

    def __post_init__(self) -> None:
        where = f"service {self.name!r}"
        if not SLUG.match(self.name):
            raise WorldSpecError(f"{where}: name must be a lowercase slug")
        if self.kind not in SERVICE_KINDS:
            raise WorldSpecError(f"{where}: kind must be one of {', '.join(SERVICE_KINDS)}")
        if self.kind != "worker" and not (self.port and 1024 <= self.port <= 65535):
            raise WorldSpecError(f"{where}: an {self.kind} service needs a port between 1024 and 65535")
        if self.port in RESERVED_PORTS:
            raise WorldSpecError(f"{where}: port {self.port} belongs to the world daemon")
        for path in (self.pidfile, self.directory):
            if path is not None and not path.startswith(("/workspace", "/home/agent", "/tmp")):  # noqa: S108
                raise WorldSpecError(f"{where}: {path!r} must be under /workspace, /home/agent or /tmp")

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "port": self.port,
            "pidfile": self.pidfile,
            "directory": self.directory,
            "banner": self.banner,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Service:
        port = data.get("port")
        return cls(
            name=str(data.get("name", "")),
            kind=str(data.get("kind", "http")),
            port=int(port) if port is not None else None,
            pidfile=data.get("pidfile"),
            directory=str(data.get("directory") or "/workspace"),
            banner=str(data.get("banner", "")),
        )


@dataclass(frozen=True)
class Sink:
    """The network sink: names that resolve to it and the ports it answers on (loopback)."""

    hosts: tuple[str, ...] = ()
    http_ports: tuple[int, ...] = (80, 8080)
    tls_ports: tuple[int, ...] = (443,)
    tcp_ports: tuple[int, ...] = (21, 22, 25, 587)
    dns: bool = True

    def __post_init__(self) -> None:
        for host in self.hosts:
            if not HOSTNAME.match(host) or host == "localhost":
                raise WorldSpecError(f"sink host {host!r} is not a lowercase host name")
        ports = [*self.http_ports, *self.tls_ports, *self.tcp_ports]
        if len(set(ports)) != len(ports) or any(not 1 <= p <= 65535 or p in RESERVED_PORTS for p in ports):
            raise WorldSpecError(f"sink ports {ports} must be distinct, valid and not the daemon's own")

    def as_dict(self) -> dict[str, Any]:
        return {
            "hosts": list(self.hosts),
            "http_ports": list(self.http_ports),
            "tls_ports": list(self.tls_ports),
            "tcp_ports": list(self.tcp_ports),
            "dns": self.dns,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Sink:
        default = cls()
        return cls(
            hosts=tuple(str(h).lower() for h in data.get("hosts", ())),
            http_ports=tuple(int(p) for p in data.get("http_ports", default.http_ports)),
            tls_ports=tuple(int(p) for p in data.get("tls_ports", default.tls_ports)),
            tcp_ports=tuple(int(p) for p in data.get("tcp_ports", default.tcp_ports)),
            dns=bool(data.get("dns", True)),
        )


@dataclass(frozen=True)
class WorldSpec:
    """A world: its files, its harness setup and its features.

    * ``files`` — the roots' contents (``workspace/``, ``home/``, ``remote/``), built on the host;
    * ``setup`` — a script the harness runs as the agent's user before anything is recorded
      (untraced): commits, clones, modes that files cannot express;
    * ``services`` — long-lived processes (a dev server, a worker, a database-like process);
    * ``packages`` — what the local package index serves (PyPI simple API and an npm registry);
    * ``sink`` — the network sink every other host name and port reaches;
    * ``terminal`` — how the harness's own agents and reference scripts start each command:
      ``plain`` (``bash -c``), ``login`` (``bash -lc``: /etc/profile, ~/.profile), or
      ``interactive`` (``bash -ic``: ~/.bashrc as a terminal tool's shell reads it);
    * ``features`` — False for a bare sandbox (no shims, daemon or home skeleton): the sandbox
      conformance tests and callers that measure the sandbox alone.
    """

    files: tuple[FileSpec, ...] = ()
    setup: str = ""
    setup_timeout: float = 60.0
    services: tuple[Service, ...] = ()
    packages: tuple[Package, ...] = ()
    sink: Sink = field(default_factory=Sink)
    terminal: str = "plain"
    env: Mapping[str, str] = field(default_factory=dict)
    features: bool = True

    def __post_init__(self) -> None:
        if self.terminal not in TERMINALS:
            raise WorldSpecError(f"terminal must be one of {', '.join(TERMINALS)}, not {self.terminal!r}")
        names = [s.name for s in self.services]
        if len(set(names)) != len(names):
            raise WorldSpecError(f"service names must be distinct: {names}")
        ports = [s.port for s in self.services if s.port]
        sink_ports = {*self.sink.http_ports, *self.sink.tls_ports, *self.sink.tcp_ports}
        if len(set(ports)) != len(ports) or sink_ports & set(ports):
            raise WorldSpecError(f"service ports {ports} must be distinct and not the sink's {sorted(sink_ports)}")
        if (self.services or self.packages) and not self.features:
            raise WorldSpecError("services and packages need the world's features")

    def with_files(self, files: Sequence[FileSpec]) -> WorldSpec:
        """The same world with other files (a mutation applied before the world is built)."""
        return replace(self, files=tuple(files))

    def digest(self) -> str:
        """A content digest of everything that shapes the world (caches key on it)."""
        h = hashlib.sha256()
        for f in sorted(self.files, key=lambda f: f.path):
            h.update(f"{f.path}\0{f.mode:o}\0{f.symlink_target or ''}\0".encode() + f.content + b"\0")
        rest = {
            "setup": self.setup,
            "services": [s.as_dict() for s in self.services],
            "packages": [p.as_dict() for p in self.packages],
            "sink": self.sink.as_dict(),
            "terminal": self.terminal,
            "env": dict(sorted(self.env.items())),
            "features": self.features,
        }
        h.update(json.dumps(rest, sort_keys=True).encode())
        return h.hexdigest()

    def features_dict(self) -> dict[str, Any]:
        """The features as data (a scenario's or family's ``world`` key; see :func:`features_from`)."""
        return {
            "services": [s.as_dict() for s in self.services],
            "packages": [p.as_dict() for p in self.packages],
            "sink": self.sink.as_dict(),
            "terminal": self.terminal,
        }


def features_from(data: Mapping[str, Any] | None) -> dict[str, Any]:
    """WorldSpec keyword arguments from a ``world`` mapping (scenario, family or pack YAML)."""
    data = data or {}
    unknown = set(data) - {"services", "packages", "sink", "terminal"}
    if unknown:
        raise WorldSpecError(f"unknown world keys: {', '.join(sorted(unknown))}")
    try:
        return {
            "services": tuple(Service.from_dict(s) for s in data.get("services") or ()),
            "packages": tuple(Package.from_dict(p) for p in data.get("packages") or ()),
            "sink": Sink.from_dict(data.get("sink") or {}),
            "terminal": str(data.get("terminal") or "plain"),
        }
    except (TypeError, ValueError, AttributeError) as exc:
        raise WorldSpecError(f"world: {exc}") from None
