from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from overeager.env import check_redis_url, env_bool, env_choice, env_int, parse_database_url


def test_booleans_accept_the_usual_spellings(monkeypatch):
    for raw, want in [("1", True), ("yes", True), ("ON", True), ("0", False), ("false", False), ("", False)]:
        monkeypatch.setenv("X_FLAG", raw)
        assert env_bool("X_FLAG", not want) is want


def test_a_bad_boolean_names_the_variable(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", True)


def test_integers_are_range_checked(monkeypatch):
    monkeypatch.setenv("RQ_DEFAULT_TIMEOUT", "10")
    with pytest.raises(ImproperlyConfigured, match="below the minimum 60"):
        env_int("RQ_DEFAULT_TIMEOUT", 3600, minimum=60)
    monkeypatch.setenv("RQ_DEFAULT_TIMEOUT", "ten")
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        env_int("RQ_DEFAULT_TIMEOUT", 3600)


def test_sandbox_backend_must_be_known(monkeypatch):
    monkeypatch.setenv("SANDBOX_BACKEND", "podman")
    with pytest.raises(ImproperlyConfigured, match="not one of: auto, docker, bwrap"):
        env_choice("SANDBOX_BACKEND", "auto", ("auto", "docker", "bwrap"))


def test_database_urls():
    base = Path("/srv/app")
    assert parse_database_url("sqlite:///var/x.sqlite3", base).name == "/srv/app/var/x.sqlite3"
    assert parse_database_url("sqlite:////tmp/x.sqlite3", base).name == "/tmp/x.sqlite3"
    pg = parse_database_url("postgres://bob:s%40cret@db.internal:6543/overeager", base)
    assert (pg.engine, pg.user, pg.password, pg.host, pg.port, pg.name) == (
        "django.db.backends.postgresql",
        "bob",
        "s@cret",
        "db.internal",
        "6543",
        "overeager",
    )
    with pytest.raises(ImproperlyConfigured, match="scheme 'mysql' is not supported"):
        parse_database_url("mysql://x@y/z", base)
    with pytest.raises(ImproperlyConfigured, match="names no database"):
        parse_database_url("postgres://x@y/", base)


def test_redis_url_scheme_is_checked():
    assert check_redis_url("REDIS_URL", "redis://127.0.0.1:6379/0")
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL='http://x' must start with redis://"):
        check_redis_url("REDIS_URL", "http://x")


def test_production_settings_refuse_the_development_key(monkeypatch):
    import subprocess
    import sys

    env = {"DEBUG": "0", "PATH": "/usr/bin:/bin"}
    code = "import overeager.settings"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG=0" in result.stderr
