"""Browser-test fixtures: a real ASGI server (daphne) on the test database, and Debian's Chromium.

The server is a separate ``daphne`` process serving ``overeager.asgi:application`` on a free
loopback port, so pages, JSON endpoints and the progress socket run exactly as in production;
it shares the test database, Redis, the cache/channel prefix and the evidence directory with
the test process, so a test can write rows (or finish a run as a worker does) and watch the page.

Chromium is Debian's (``apt-get install chromium``, scripts/browser_deps.sh), driven by
Playwright; ``playwright install`` is never used (it downloads a browser, which cannot work here).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from django.conf import settings

from tests import factories
from tests.common import isolated_prefixes  # noqa: F401 - autouse fixtures this directory opts into

T = TypeVar("T")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(settings.BASE_DIR) / "var" / "test-artifacts"
DOC_SCREENSHOTS = Path(settings.BASE_DIR) / "docs" / "screenshots"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, url: str, prefix: str, evidence: Path, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.url = url
        self.prefix = prefix
        self.evidence = evidence
        self.proc = proc
        self.log = log


def start_server(db: dict[str, Any], prefix: str, evidence: Path, log: Path, **extra_env: str) -> Server:
    """daphne serving the project's ASGI application on a free loopback port, on database ``db``."""
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER'] or 'root'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        f"/{db['NAME']}",
        "CACHE_PREFIX": prefix,
        "CHANNELS_PREFIX": prefix,
        "EVIDENCE_DIR": str(evidence),
        "DEBUG": "1",
        "LOG_LEVEL": "WARNING",
        **extra_env,
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "overeager.asgi:application"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:  # noqa: S310 - loopback
                if response.status == 200:
                    return Server(url, prefix, evidence, proc, log)
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc)
            pytest.fail(f"daphne did not come up on {url}; see {log}:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def live_database(django_db_blocker: Any) -> dict[str, Any]:
    from django.db import connection

    with django_db_blocker.unblock():
        return dict(connection.settings_dict)


@pytest.fixture(scope="session")
def server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/browser_deps.sh (apt-get install chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    prefix = f"overeager-browser-{uuid.uuid4().hex[:10]}"
    started = start_server(
        live_database(django_db_blocker), prefix, tmp_path_factory.mktemp("browser-evidence"), ARTIFACTS / "daphne.log"
    )
    try:
        yield started
    finally:
        stop_server(started.proc)


@pytest.fixture(autouse=True)
def shared_with_server(server: Server, settings: Any) -> Iterator[None]:
    """The test process uses the server's cache/channel prefix and evidence directory."""
    caches = {name: dict(conf) for name, conf in settings.CACHES.items()}
    caches["default"]["KEY_PREFIX"] = server.prefix
    settings.CACHES = caches
    layers = {name: {**conf, "CONFIG": dict(conf.get("CONFIG", {}))} for name, conf in settings.CHANNEL_LAYERS.items()}
    layers["default"]["CONFIG"]["prefix"] = server.prefix
    settings.CHANNEL_LAYERS = layers
    settings.EVIDENCE_DIR = server.evidence
    yield
    # Ids restart after the database is flushed; cached aggregates must not outlive their rows.
    factories.drop_prefix(settings, server.prefix)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an asyncio loop running in this thread, which makes Django
    # refuse ORM calls here ("cannot call this from an async context"). The tests are plain
    # synchronous code, so the check is switched off for as long as the browser lives — module
    # scope, so it never leaks into the rest of the suite.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                yield b
            finally:
                b.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    pg.js_errors = errors
    yield pg
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        shot(pg, f"FAILED-{request.node.name}")
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome: Any = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def shot(pg: Any, name: str, doc: bool = False, full_page: bool = True) -> Path:
    """A screenshot as a test artifact; ``doc`` ones are also copied to docs/screenshots/ when
    OVEREAGER_DOC_SCREENSHOTS=1 (so ordinary test runs do not rewrite tracked images)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=full_page)
    if doc and os.environ.get("OVEREAGER_DOC_SCREENSHOTS") == "1":
        DOC_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOC_SCREENSHOTS / f"{name}.png")
    return path


def as_worker(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn`` in a thread of its own, as a worker process would: publishing progress uses
    ``async_to_sync``, which cannot run in this thread while Playwright's event loop does."""
    from django.db import connection

    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(fn(*args, **kwargs))
        except BaseException as exc:  # re-raised in the test's thread
            error.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=target, name="fake-worker")
    thread.start()
    thread.join(120)
    if error:
        raise error[0]
    return result[0]


def login(pg: Any, server: Server, username: str) -> None:
    pg.goto(f"{server.url}/accounts/login/")
    pg.fill("input[name=username]", username)
    pg.fill("input[name=password]", f"pw-{username}")
    pg.click("button[type=submit], input[type=submit]")
    pg.wait_for_url(f"{server.url}/")
