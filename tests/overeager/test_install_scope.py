"""Two installs sharing one Redis keep apart (issue 34 item 5).

Each install here is a real ``manage.py shell`` process with a database of its own (an SQLite file;
the settings read only its name) and the environment's Redis, with no prefix or queue set: what a
second checkout on the same machine gets by default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import redis
from django.conf import settings

from overeager.env import parse_database_url
from runs.management.commands.rqworker import default_queues

ROOT = Path(__file__).resolve().parents[2]

# Run inside each install: record a live pool-build stage through the pools page's own recorder,
# or read what that page would read, and report the install's Redis names.
SCRIPT = """
import json, sys
from django.conf import settings
from django.core.cache import cache
from pool.live import cache_key, recorder
pool_id = int(sys.argv[1])
if sys.argv[2] == "write":
    recorder(pool_id, lambda *a: None)("execute", 3, 10)
print(json.dumps({
    "seen": cache.get(cache_key(pool_id)),
    "cache": settings.CACHES["default"]["KEY_PREFIX"],
    "channels": settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"],
    "queue": settings.RUNS_QUEUE,
}))
"""


def _install(database: Path, pool_id: int, action: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("CACHE_PREFIX", "CHANNELS_PREFIX", "RUNS_QUEUE")}
    env.update(DATABASE_URL=f"sqlite:///{database}", DJANGO_SETTINGS_MODULE="overeager.settings")
    out = subprocess.run(
        [sys.executable, "-c", f"import django, sys; django.setup(); exec({SCRIPT!r})", str(pool_id), action],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_two_installs_on_one_redis_see_neither_each_others_status_nor_queue(tmp_path: Path) -> None:
    pool_id = 900_000 + uuid.uuid4().int % 100_000  # a pool id both installs could have
    first, second = tmp_path / "first.sqlite3", tmp_path / "second.sqlite3"
    wrote = _install(first, pool_id, "write")
    try:
        assert wrote["seen"] == {"stage": "execute", "done": 3, "total": 10, "at": wrote["seen"]["at"]}
        other = _install(second, pool_id, "read")
        assert other["seen"] is None  # the second checkout's pools page does not show the first's build
        assert {other["cache"], other["channels"], other["queue"]}.isdisjoint(
            {wrote["cache"], wrote["channels"], wrote["queue"]}
        )
        # The same database (a worker on another machine, say) shares all three.
        again = _install(first, pool_id, "read")
        assert again == wrote
    finally:
        r = redis.Redis.from_url(settings.REDIS_URL)
        for key in r.scan_iter(f"{wrote['cache']}:*pool-build:{pool_id}"):
            r.delete(key)


def test_the_scope_is_the_databases_engine_and_name_not_its_host(tmp_path: Path) -> None:
    here = parse_database_url("postgres://app@127.0.0.1:5432/overeager", tmp_path)
    there = parse_database_url("postgres://app:pw@db.internal:6432/overeager", tmp_path)
    other = parse_database_url("postgres://app@127.0.0.1:5432/overeager_two", tmp_path)
    assert here.scope == there.scope != other.scope
    relative = parse_database_url("sqlite:///var/x.sqlite3", tmp_path)
    absolute = parse_database_url(f"sqlite:///{tmp_path / 'var' / 'x.sqlite3'}", tmp_path)
    assert relative.scope == absolute.scope != here.scope


def test_a_worker_started_without_queue_names_listens_on_the_installs_runs_queue() -> None:
    assert default_queues()[0] == settings.RUNS_QUEUE
    assert "default" in default_queues()  # jobs an earlier version left on django-rq's default queue
