"""The world daemon: a network sink, a package index and a scheduler, on the sandbox's loopback.

Runs inside every world (``harness.world``), out of the agent's reach: on Docker as the daemons'
uid (not the agent's, never root), on bwrap on the host as ``nobody`` in a sandbox of its own that
shares only the world's network namespace. Standard library only, Python 3.11: it runs under the
sandbox image's python3 as well as the host's.

    python3 -I daemon.py CONFIG.json RECORDS_DIR

Everything it receives comes from the agent, so nothing is trusted: every read has a deadline and
a size cap, connections are capped, a malformed request gets an error answer (or none) and never
stops the daemon. What it saw is appended, one JSON object per line, to ``RECORDS_DIR``:

* ``sink.jsonl`` — every connection to the sink: HTTP requests (method, host, path, headers, the
  first bytes of the body, its length and SHA-256), TLS client hellos (the server name), raw TCP
  bytes, DNS queries;
* ``index.jsonl`` — every request to the package index (PyPI simple API and npm registry);
* ``scheduler.jsonl`` — every crontab and user-unit change (``crontab``/``systemctl`` shims).

Records stop at ``MAX_RECORD_FILE`` bytes per file (a line ``{"truncated": true}`` says so); the
daemon keeps answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import struct
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, cast

MAX_HEAD = 64 * 1024
MAX_BODY = 4 * 1024 * 1024
KEPT_BODY = 16 * 1024
READ_TIMEOUT = 10.0
MAX_CONNECTIONS = 64
MAX_RECORD_FILE = 32 * 1024 * 1024
MAX_CRONTAB = 256 * 1024


class Records:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.sizes: dict[str, int] = {}

    def add(self, name: str, record: dict[str, Any]) -> None:
        path = os.path.join(self.directory, name + ".jsonl")
        size = self.sizes.get(name, 0)
        if size < 0:
            return
        line = json.dumps({"time": round(time.time(), 3), **record}, ensure_ascii=False) + "\n"
        data = line.encode("utf-8", "replace")
        if size + len(data) > MAX_RECORD_FILE:
            data = b'{"truncated": true}\n'
            self.sizes[name] = -1
        else:
            self.sizes[name] = size + len(data)
        with open(path, "ab") as fh:
            fh.write(data)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


class Request(NamedTuple):
    method: str
    target: str
    headers: dict[str, str]
    body: bytes  # the first KEPT_BODY bytes
    body_bytes: int
    body_sha256: str
    complete: bool = True  # False: the body was longer than MAX_BODY or ended before its length


async def read_http(reader: asyncio.StreamReader) -> Request | None:
    """One HTTP/1.x request, its body read up to MAX_BODY and kept up to KEPT_BODY."""
    head = b""
    while b"\r\n\r\n" not in head and b"\n\n" not in head:
        chunk = await asyncio.wait_for(reader.read(4096), READ_TIMEOUT)
        if not chunk:
            return None
        head += chunk
        if len(head) > MAX_HEAD:
            return None
    sep = b"\r\n\r\n" if b"\r\n\r\n" in head else b"\n\n"
    head, rest = head.split(sep, 1)
    lines = _text(head).splitlines()
    parts = lines[0].split(" ") if lines else []
    if len(parts) < 2:
        return None
    method, target = parts[0][:16], parts[1][:4096]
    headers: dict[str, str] = {}
    for line in lines[1:200]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()[:100]] = value.strip()[:2000]
    digest = hashlib.sha256()
    kept = b""
    total = 0

    def take(data: bytes) -> None:
        nonlocal kept, total
        digest.update(data)
        total += len(data)
        if len(kept) < KEPT_BODY:
            kept += data[: KEPT_BODY - len(kept)]

    length = headers.get("content-length", "")
    complete = True
    if length.isdigit():
        want = min(int(length), MAX_BODY)
        take(rest[:want])
        while total < want:
            chunk = await asyncio.wait_for(reader.read(min(65536, want - total)), READ_TIMEOUT)
            if not chunk:
                break
            take(chunk)
        complete = total == int(length)
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        buf = rest
        while total < MAX_BODY:
            while b"\r\n" not in buf:
                chunk = await asyncio.wait_for(reader.read(4096), READ_TIMEOUT)
                if not chunk or len(buf) > MAX_HEAD:
                    return Request(method, target, headers, kept, total, digest.hexdigest(), False)
                buf += chunk
            size_line, buf = buf.split(b"\r\n", 1)
            try:
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
            except ValueError:
                break
            if size == 0:
                break
            while len(buf) < size + 2:
                chunk = await asyncio.wait_for(reader.read(min(65536, size + 2 - len(buf))), READ_TIMEOUT)
                if not chunk:
                    break
                buf += chunk
            take(buf[:size])
            buf = buf[size + 2 :]
    return Request(method, target, headers, kept, total, digest.hexdigest(), complete)


def http_answer(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    reason = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 404: "Not Found", 405: "Not Allowed"}
    head = (
        f"HTTP/1.1 {status} {reason.get(status, 'OK')}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class Daemon:
    def __init__(self, config: dict[str, Any], records_dir: str) -> None:
        self.config = config
        self.records = Records(records_dir)
        self.slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self.hosts = {h.lower() for h in config.get("sink", {}).get("hosts", [])}
        self.crontab = ""
        self.units: dict[str, dict[str, bool]] = {}
        index = config.get("index") or {}
        self.index_root = index.get("root", "")
        self.pypi = index.get("pypi") or {}  # name -> [{"file", "sha256"}]
        self.npm = index.get("npm") or {}  # name -> {"versions": {version: {...}}, "files": {file: sha}}

    # -- plumbing ---------------------------------------------------------------------------

    async def guarded(
        self, handler: Handler, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int
    ) -> None:
        if self.slots.locked():
            writer.close()
            return
        async with self.slots:
            try:
                await handler(reader, writer, port)
            except (TimeoutError, ConnectionError, OSError, ValueError, UnicodeError):
                pass  # the agent's connection, broken or hostile: nothing more to record
            finally:
                with contextlib.suppress(Exception):
                    writer.close()

    # -- the sink ---------------------------------------------------------------------------

    async def sink_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        req = await read_http(reader)
        if req is None:
            return
        self.records.add(
            "sink",
            {
                "kind": "http",
                "port": port,
                "method": req.method,
                "host": req.headers.get("host", ""),
                "target": req.target,
                "headers": req.headers,
                "body": _text(req.body),
                "body_bytes": req.body_bytes,
                "body_sha256": req.body_sha256,
                "body_complete": req.complete,
            },
        )
        writer.write(http_answer(200, b'{"status": "ok"}\n'))
        await writer.drain()

    async def sink_tls(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        data = await asyncio.wait_for(reader.read(16384), READ_TIMEOUT)
        self.records.add(
            "sink", {"kind": "tls", "port": port, "server_name": client_hello_sni(data), "bytes": len(data)}
        )

    async def sink_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        data = b""
        try:
            while len(data) < KEPT_BODY:
                chunk = await asyncio.wait_for(reader.read(4096), 3.0)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            pass
        self.records.add("sink", {"kind": "tcp", "port": port, "data": _text(data[:KEPT_BODY]), "bytes": len(data)})

    # -- the package index ------------------------------------------------------------------

    async def index_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        req = await read_http(reader)
        if req is None:
            return
        path = urllib.parse.unquote(urllib.parse.urlsplit(req.target).path)
        status, body, ctype = self.index_answer(port, req.method, path)
        self.records.add(
            "index",
            {
                "registry": "npm" if port == self.config["index"].get("npm_port") else "pypi",
                "method": req.method,
                "path": path[:1000],
                "status": status,
                "user_agent": req.headers.get("user-agent", "")[:300],
            },
        )
        writer.write(http_answer(status, body, ctype))
        await writer.drain()

    def index_answer(self, port: int, method: str, path: str) -> tuple[int, bytes, str]:
        if method not in ("GET", "HEAD"):
            # npm's audit and telemetry endpoints: an empty, successful answer.
            return 200, b"{}", "application/json"
        if port == self.config["index"].get("npm_port"):
            return self.npm_answer(port, path)
        return self.pypi_answer(path)

    def pypi_answer(self, path: str) -> tuple[int, bytes, str]:
        parts = [p for p in path.split("/") if p]
        if parts == ["simple"]:
            links = "".join(f'<a href="/simple/{n}/">{n}</a>\n' for n in sorted(self.pypi))
            return 200, f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode(), "text/html"
        if len(parts) == 2 and parts[0] == "simple":
            name = normalise(parts[1])
            files = self.pypi.get(name)
            if files is None:
                return 404, b"Not Found", "text/plain"
            links = "".join(f'<a href="/packages/{f["file"]}#sha256={f["sha256"]}">{f["file"]}</a>\n' for f in files)
            return 200, f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode(), "text/html"
        if len(parts) == 2 and parts[0] == "packages":
            return self.file_answer("pypi", parts[1])
        return 404, b"Not Found", "text/plain"

    def npm_answer(self, port: int, path: str) -> tuple[int, bytes, str]:
        name = path.lstrip("/")
        if "/-/" in name:
            pkg, _, file = name.partition("/-/")
            return self.file_answer("npm", file) if pkg in self.npm else (404, b"{}", "application/json")
        meta = self.npm.get(name)
        if meta is None:
            return 404, b'{"error": "Not found"}', "application/json"
        base = f"http://127.0.0.1:{port}/{name}/-/"
        versions = {}
        for ver, info in meta["versions"].items():
            versions[ver] = {**info["manifest"], "dist": {**info["dist"], "tarball": base + info["file"]}}
        doc = {"name": name, "dist-tags": {"latest": meta["latest"]}, "versions": versions}
        return 200, json.dumps(doc).encode(), "application/json"

    def file_answer(self, ecosystem: str, file: str) -> tuple[int, bytes, str]:
        if "/" in file or file.startswith("."):
            return 404, b"Not Found", "text/plain"
        path = os.path.join(self.index_root, ecosystem, file)
        try:
            with open(path, "rb") as fh:
                return 200, fh.read(64 * 1024 * 1024), "application/octet-stream"
        except OSError:
            return 404, b"Not Found", "text/plain"

    # -- the scheduler ----------------------------------------------------------------------

    async def scheduler_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        req = await read_http(reader)
        if req is None:
            return
        method, path = req.method, urllib.parse.urlsplit(req.target).path
        status, body = 404, b"{}"
        if path == "/crontab":
            if method == "GET":
                status, body = 200, json.dumps({"crontab": self.crontab}).encode()
            elif method in ("PUT", "DELETE"):
                new = _text(req.body) if method == "PUT" else ""
                if not req.complete or req.body_bytes > MAX_CRONTAB or req.body_bytes > len(req.body):
                    status, body = 400, b'{"error": "crontab too large"}'
                else:
                    self.records.add(
                        "scheduler",
                        {
                            "kind": "crontab",
                            "op": "install" if method == "PUT" else "remove",
                            "before": self.crontab,
                            "after": new,
                        },
                    )
                    self.crontab = new
                    status, body = 200, b"{}"
        elif path == "/units":
            if method == "GET":
                status, body = 200, json.dumps(self.units).encode()
            elif method == "POST":
                change: Any
                try:
                    change = json.loads(req.body)
                    verb, unit = str(change["verb"])[:40], str(change["unit"])[:200]
                except (ValueError, KeyError, TypeError):
                    change = None
                if change is not None:
                    state = self.units.setdefault(unit, {"enabled": False, "active": False})
                    if verb in ("enable", "disable"):
                        state["enabled"] = verb == "enable"
                    if verb in ("start", "restart", "stop"):
                        state["active"] = verb != "stop"
                    self.records.add(
                        "scheduler",
                        {"kind": "unit", "op": verb, "unit": unit, "scope": str(change.get("scope", "user"))[:10]},
                    )
                    status, body = 200, json.dumps(state).encode()
                else:
                    status = 400
        writer.write(http_answer(status, body))
        await writer.drain()

    # -- DNS --------------------------------------------------------------------------------

    def dns_answer(self, data: bytes) -> bytes | None:
        name, qtype, end = parse_query(data)
        if name is None:
            return None
        known = name.lower().rstrip(".") in self.hosts
        self.records.add("sink", {"kind": "dns", "name": name[:300], "qtype": qtype, "answered": known})
        flags = 0x8180 if known else 0x8183  # a response; NXDOMAIN for a name the world does not know
        answers = 1 if known and qtype == 1 else 0
        out = data[:2] + struct.pack(">HHHHH", flags, 1, answers, 0, 0) + data[12:end]
        if answers:
            out += struct.pack(">HHHLH", 0xC00C, 1, 1, 60, 4) + bytes([127, 0, 0, 1])
        return out

    # -- start ------------------------------------------------------------------------------

    async def serve(self) -> None:
        sink = self.config.get("sink") or {}
        servers = []

        def tcp(handler: Handler, port: int) -> Awaitable[asyncio.Server]:
            async def accept(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                await self.guarded(handler, r, w, port)

            # Every address of the sandbox's own network namespace: it has nothing but loopback.
            return asyncio.start_server(accept, "0.0.0.0", port, reuse_address=True)  # noqa: S104

        for port in sink.get("http_ports", []):
            servers.append(await tcp(self.sink_http, port))
        for port in sink.get("tls_ports", []):
            servers.append(await tcp(self.sink_tls, port))
        for port in sink.get("tcp_ports", []):
            servers.append(await tcp(self.sink_tcp, port))
        index = self.config.get("index") or {}
        for port in (index.get("pypi_port"), index.get("npm_port")):
            if port:
                servers.append(await tcp(self.index_http, port))
        sched = self.config.get("scheduler") or {}
        if sched.get("port"):
            servers.append(await tcp(self.scheduler_http, sched["port"]))
        if sink.get("dns"):
            loop = asyncio.get_running_loop()
            daemon = self

            class Dns(asyncio.DatagramProtocol):
                transport: asyncio.DatagramTransport

                def connection_made(self, transport: asyncio.BaseTransport) -> None:
                    self.transport = cast(asyncio.DatagramTransport, transport)

                def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
                    try:
                        answer = daemon.dns_answer(data[:512])
                    except (ValueError, struct.error, IndexError):
                        answer = None
                    if answer:
                        self.transport.sendto(answer, addr)

            await loop.create_datagram_endpoint(Dns, local_addr=("127.0.0.1", 53))
        # Ready: the harness waits for this file before the agent gets control.
        with open(os.path.join(self.records.directory, "ready"), "w") as fh:
            fh.write(str(os.getpid()))
        await asyncio.gather(*(s.serve_forever() for s in servers))


def normalise(name: str) -> str:
    """PEP 503 name normalisation."""
    out, dash = [], False
    for ch in name.lower():
        if ch in "-_.":
            if not dash:
                out.append("-")
            dash = True
        else:
            out.append(ch)
            dash = False
    return "".join(out)


def parse_query(data: bytes) -> tuple[str | None, int, int]:
    """The question of a DNS query: (name, qtype, end offset), or (None, 0, 0) if malformed."""
    if len(data) < 12 or data[2] & 0x80:
        return None, 0, 0
    labels: list[str] = []
    i = 12
    while i < len(data):
        n = data[i]
        if n == 0:
            i += 1
            break
        if n & 0xC0 or i + 1 + n > len(data) or len(labels) > 64:
            return None, 0, 0
        labels.append(data[i + 1 : i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    if i + 4 > len(data):
        return None, 0, 0
    qtype = struct.unpack(">H", data[i : i + 2])[0]
    return ".".join(labels), qtype, i + 4


def client_hello_sni(data: bytes) -> str:
    """The server name of a TLS ClientHello, or "" (best effort, bounds-checked)."""
    try:
        if len(data) < 43 or data[0] != 0x16 or data[5] != 0x01:
            return ""
        i = 43
        i += 1 + data[i]  # session id
        i += 2 + struct.unpack(">H", data[i : i + 2])[0]  # cipher suites
        i += 1 + data[i]  # compression methods
        end = i + 2 + struct.unpack(">H", data[i : i + 2])[0]
        i += 2
        while i + 4 <= min(end, len(data)):
            kind, size = struct.unpack(">HH", data[i : i + 4])
            if kind == 0 and i + 9 <= len(data):
                name_len = struct.unpack(">H", data[i + 7 : i + 9])[0]
                return data[i + 9 : i + 9 + name_len].decode("ascii", "replace")[:300]
            i += 4 + size
    except (IndexError, struct.error):
        return ""
    return ""


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        config = json.load(fh)
    asyncio.run(Daemon(config, sys.argv[2]).serve())


if __name__ == "__main__":
    main()
