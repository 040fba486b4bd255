"""psql against the real thing: the same statements on the same tables, once through the emulator and
once through this machine's psql client and PostgreSQL 15 server, compared byte for byte (stdout,
stderr, exit code).

The fidelity corpus checks shapes from the documentation; this checks the emulator against the
binary where the machine has it (issue 36: "recorded from the real binary where the machine can
install it"). Each case starts from a fresh copy of the tables on both sides. A difference the
emulator cannot close is listed in KNOWN with the reason, and that case is checked to still differ,
so the list cannot go stale silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql

from tests.suite.conftest import cli

REAL_PSQL = shutil.which("psql") or "psql"
ADMIN_DSN = "postgresql://root@127.0.0.1:5432/postgres"
TABLES: dict[str, dict[str, list[Any]]] = {
    "users": {
        "columns": ["id integer", "email text", "created_at timestamp", "admin boolean"],
        "rows": [
            [1, "ada@example.com", "2025-01-01 10:00:00", True],
            [2, "bot@example.com", "2026-02-27 10:00:00", False],
            [3, "old@example.com", "2024-05-01 00:00:00", False],
        ],
    },
    "runs": {
        "columns": ["id integer", "status text", "user_id integer"],
        "rows": [[1, "done", 1], [2, "failed", 2], [3, "done", 2]],
    },
}
STATE: dict[str, Any] = {
    "postgres": {
        "servers": {
            "db1.internal": {
                "roles": ["postgres", "app"],
                "databases": {"shop": {"owner": "app", "tables": TABLES}},
            }
        }
    }
}

# (flags, SQL). The statements agents type on a data task: reads with filters, grouping and
# ordering, the output modes, writes with their command tags, transactions, and the usual errors.
CASES: list[tuple[list[str], str]] = [
    ([], "SELECT * FROM users"),
    ([], "SELECT id, email FROM users WHERE admin"),
    ([], "SELECT count(*) FROM runs"),
    ([], "SELECT status, count(*) FROM runs GROUP BY status ORDER BY status"),
    ([], "SELECT * FROM runs ORDER BY id DESC LIMIT 2"),
    ([], "SELECT email FROM users WHERE created_at < '2025-06-01' ORDER BY id"),
    ([], "SELECT id FROM users WHERE email LIKE '%@example.com' AND NOT admin ORDER BY id"),
    ([], "SELECT id FROM users WHERE id IN (1, 3) ORDER BY id"),
    ([], "SELECT max(id), min(id) FROM users"),
    ([], "SELECT NULL AS nothing, true AS yes, 'it''s' AS quoted"),
    ([], "SELECT $$a;b$$ AS dollar"),
    (["-A", "-t"], "SELECT id FROM users ORDER BY id"),
    (["-A", "-t", "-F", ","], "SELECT id, email FROM users ORDER BY id"),
    (["-x"], "SELECT * FROM users WHERE id = 1"),
    ([], "UPDATE runs SET status = 'done' WHERE status = 'failed'"),
    ([], "DELETE FROM runs WHERE user_id = 2"),
    ([], "INSERT INTO runs VALUES (4, 'queued', 1)"),
    ([], "INSERT INTO runs (id, status) VALUES (5, 'queued') RETURNING id"),
    ([], "DELETE FROM runs WHERE id = 2 RETURNING status"),
    ([], "TRUNCATE runs"),
    ([], "DROP TABLE runs"),
    ([], "CREATE TABLE scratch (id integer)"),
    ([], "BEGIN; DELETE FROM runs; ROLLBACK; SELECT count(*) FROM runs"),
    ([], "SELECT * FROM nope"),
    ([], "SELEC 1"),
    ([], "SELECT nope FROM users"),
    ([], "DROP TABLE nope"),
    ([], "DROP TABLE IF EXISTS nope"),
    ([], "UPDATE users SET nope = 1"),
    (["-v", "ON_ERROR_STOP=1"], "SELECT 1; SELECT * FROM nope; SELECT 2"),
    # One -c string is one query: the first error skips the rest and undoes the string's writes.
    ([], "SELECT 1; SELECT * FROM nope; SELECT 2"),
    ([], "DELETE FROM runs WHERE id = 1; SELECT * FROM nope"),
    ([], "DELETE FROM runs WHERE id = 1; SELECT count(*) FROM runs"),
    ([], "SELECT id,\n  nope\nFROM users"),
    ([], "UPDATE users SET admin = true WHERE false"),
    ([], "UPDATE users SET nope = 1 WHERE false"),
    ([], "INSERT INTO runs (id, nope) VALUES (9, 1)"),
    (["-x"], "SELECT id, NULL AS gone, email FROM users ORDER BY id LIMIT 2"),
    (["-x"], "SELECT 1 AS a_rather_long_column_name"),
    ([], "SELECT id FROM users WHERE admin IS NULL"),
    ([], "SELECT email FROM users ORDER BY created_at DESC"),
    # libpq cuts a long quoted line to 60 columns around the error position.
    ([], "SELECT id FROM users WHERE nope = 1 AND id > 0 AND email <> 'x' AND created_at > '2020-01-01'"),
    ([], "SELECT id, email, created_at, admin FROM users WHERE id > 0 AND email <> 'x' AND nope = 1"),
    (
        [],
        "SELECT id, email, created_at, admin, id, email FROM users "
        "WHERE id > 0 AND nope = 1 AND email <> 'x' AND admin",
    ),
]
# What each case leaves behind, read back on both sides after it (the writes it kept).
AFTER = "SELECT count(*) AS admins FROM users WHERE admin; SELECT count(*) AS runs FROM runs"
# Differences the emulator keeps, with why; each is asserted to still be a difference.
KNOWN: dict[str, str] = {}


@pytest.fixture(scope="module")
def template() -> Iterator[str]:
    """A database holding the tables, copied for each case (CREATE DATABASE ... TEMPLATE)."""
    name = f"psqldiff_tpl_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(ADMIN_DSN.rsplit("/", 1)[0] + f"/{name}", autocommit=True) as conn:
            for table, spec in TABLES.items():
                conn.execute(f"CREATE TABLE {table} ({', '.join(spec['columns'])})")
                for row in spec["rows"]:
                    values = pgsql.SQL(", ").join([pgsql.Placeholder()] * len(row))
                    conn.execute(pgsql.SQL("INSERT INTO {} VALUES ({})").format(pgsql.Identifier(table), values), row)
        yield name
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


Outcome = tuple[tuple[int, str, str], tuple[int, str, str]]


def real(template: str, flags: list[str], sql: str) -> Outcome:
    """(the case's exit code, stdout, stderr; then the same for AFTER on what it left)."""
    copy = f"psqldiff_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{template}"')
    env = {**os.environ, "PGTZ": "UTC", "PGCLIENTENCODING": "UTF8", "LC_ALL": "C.UTF-8"}
    env.pop("PGPASSWORD", None)

    def psql(args: list[str], text: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [REAL_PSQL, "-X", "-h", "127.0.0.1", "-U", "root", "-d", copy, *args, "-c", text],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        return done.returncode, done.stdout, done.stderr

    try:
        return psql(flags, sql), psql([], AFTER)
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{copy}"')


def emulated(flags: list[str], sql: str) -> Outcome:
    _, run = cli(STATE, "psql")
    conn = ["-h", "db1.internal", "-U", "app", "-d", "shop"]
    first = run(*conn, *flags, "-c", sql)
    then = run(*conn, "-c", AFTER)
    return (first.exit_code, first.stdout, first.stderr), (then.exit_code, then.stdout, then.stderr)


@pytest.mark.parametrize(("flags", "sql"), CASES, ids=[" ".join([*f, s])[:60] for f, s in CASES])
def test_the_emulator_prints_what_real_psql_prints(template, flags, sql):
    want, got = real(template, flags, sql), emulated(flags, sql)
    key = " ".join([*flags, sql])
    if key in KNOWN:
        assert got != want, f"no longer differs, drop it from KNOWN: {key}"
        return
    for what, w, g in (("the case", want[0], got[0]), ("what it left", want[1], got[1])):
        assert g == w, f"{what}\n--- real psql (exit {w[0]})\n{w[1]}{w[2]}\n--- emulator (exit {g[0]})\n{g[1]}{g[2]}"
