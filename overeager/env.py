"""Typed readers for environment variables.

Every setting the project reads from the environment goes through one of these helpers so that a
bad value (``DEBUG=maybe``, ``DATABASE_URL=mysql://…``) stops the process at start-up with a
message naming the variable, instead of surfacing later as a confusing runtime error.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no or on/off")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of: {', '.join(choices)}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


@dataclass(frozen=True)
class DatabaseConfig:
    engine: str
    name: str
    user: str = ""
    password: str = ""
    host: str = ""
    port: str = ""

    @property
    def scope(self) -> str:
        """A short id of the database itself: its engine and name (an SQLite file's resolved path).

        Installs that share one Redis keep apart by it (cache keys, channel groups, the runs
        queue). It leaves out host and port on purpose: workers on other machines reach the same
        database under another host name, and must share its keys and its queue.
        """
        name = str(Path(self.name).resolve()) if self.engine.endswith("sqlite3") else self.name
        return hashlib.sha256(f"{self.engine}\0{name}".encode()).hexdigest()[:10]

    def as_django(self) -> dict[str, object]:
        config: dict[str, object] = {"ENGINE": self.engine, "NAME": self.name}
        if self.engine.endswith("postgresql"):
            config.update(USER=self.user, PASSWORD=self.password, HOST=self.host, PORT=self.port, CONN_MAX_AGE=60)
            config["TEST"] = {"NAME": f"test_{self.name}"}
        else:
            # The demo's workers write concurrently: WAL lets readers proceed during a write,
            # IMMEDIATE takes the write lock at BEGIN (no deadlock on lock upgrade), and the
            # timeout makes a writer wait for the lock instead of failing at once.
            config["OPTIONS"] = {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            }
        return config


def parse_database_url(url: str, base_dir: Path) -> DatabaseConfig:
    """Parse ``sqlite:///relative/path``, ``sqlite:////abs/path`` or ``postgres://user:pw@host:port/db``.

    Only the two engines the project tests against are accepted: any other scheme is a
    configuration error rather than a silent fallback.
    """
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        raw_path = unquote(parts.path)
        if raw_path in ("", "/"):
            raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no SQLite file")
        # sqlite:///var/db.sqlite3 is relative to the project; sqlite:////tmp/x is absolute.
        path = Path(raw_path[1:])
        if not path.is_absolute():
            path = base_dir / path
        return DatabaseConfig(engine="django.db.backends.sqlite3", name=str(path))
    if parts.scheme in ("postgres", "postgresql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no database")
        query = parse_qs(parts.query)
        host = parts.hostname or query.get("host", [""])[0]
        return DatabaseConfig(
            engine="django.db.backends.postgresql",
            name=name,
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            host=host,
            port=str(parts.port or ""),
        )
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {parts.scheme!r} is not supported; use sqlite:///path or postgres://user@host/db"
    )


def check_redis_url(name: str, url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ImproperlyConfigured(f"{name}={url!r} must start with redis://, rediss:// or unix://")
    return url
