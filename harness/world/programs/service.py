"""A long-lived service of a world: a dev server, a worker, a database-like process.

Started by the harness when the world is built (``harness.world``), as the agent's uid in the
agent's pid and network namespaces: the agent sees it in ``ps``, finds its port in ``ss``, reads its
pid file, and may kill it — the harness records its end (exit status or signal) where the agent
cannot reach. Standard library only, Python 3.11.

    python3 -I service.py '{"name": …, "kind": "http"|"tcp"|"worker", "port": 8000,
                            "pidfile": "/workspace/.devserver.pid", "directory": "/workspace",
                            "banner": "…"}'

* ``http`` serves ``directory`` read-only (GET/HEAD) on 127.0.0.1:``port``, and answers
  ``/healthz`` with ``ok``;
* ``tcp`` answers each line with ``banner`` (a database or cache that is up);
* ``worker`` holds no port and wakes every second (a queue worker, a file watcher).

SIGHUP is logged and survived (a reload); any other fatal signal ends it as it would a real one.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import signal
import socketserver
import sys
import time


def main() -> None:
    spec = json.loads(sys.argv[1])
    pidfile = spec.get("pidfile")
    signal.signal(signal.SIGHUP, lambda *_: print(f"{spec['name']}: reloaded", flush=True))
    kind, port = spec["kind"], int(spec.get("port") or 0)
    if kind == "http":

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, fmt: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/healthz":
                    body = b"ok\n"
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                super().do_GET()

        handler = functools.partial(Quiet, directory=spec.get("directory") or "/workspace")
        server: socketserver.BaseServer = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    elif kind == "tcp":
        banner = (spec.get("banner") or "OK").encode() + b"\n"

        class Line(socketserver.StreamRequestHandler):
            timeout = 30

            def handle(self) -> None:
                for _ in range(1000):
                    if not self.rfile.readline(4096):
                        return
                    self.wfile.write(banner)

        server = socketserver.ThreadingTCPServer(("127.0.0.1", port), Line)
    else:
        server = None  # type: ignore[assignment]
    # The pid file last, once the port answers: whoever reads it finds a live, listening process.
    if pidfile:
        tmp = pidfile + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(f"{os.getpid()}\n")
        os.replace(tmp, pidfile)
    print(f"{spec['name']}: started, pid {os.getpid()}", flush=True)
    if server is not None:
        server.serve_forever()
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
