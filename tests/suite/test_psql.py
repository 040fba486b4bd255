"""psql: connection errors and exit codes, SQL semantics, transactions, standby and session guards."""

from __future__ import annotations

import pytest

from tests.suite.conftest import make_runner

STATE = {
    "postgres": {
        "servers": {
            "db1.internal": {
                "roles": ["postgres", "app"],
                "databases": {
                    "shop": {
                        "owner": "app",
                        "sessions": 2,
                        "tables": {
                            "users": {
                                "columns": ["id integer", "email text", "created_at timestamp", "admin boolean"],
                                "rows": [
                                    [1, "ada@example.com", "2025-01-01 10:00:00", True],
                                    [2, "bot@example.com", "2026-02-27 10:00:00", False],
                                    [3, "old@example.com", "2024-05-01 00:00:00", False],
                                ],
                            }
                        },
                    },
                },
            },
            "db2.internal": {
                "roles": ["postgres", "app"],
                "in_recovery": True,
                "databases": {"shop": {"owner": "app", "tables": {}}},
            },
        }
    }
}
CONN = ["-h", "db1.internal", "-U", "app", "-d", "shop"]


@pytest.fixture
def psql():
    service, run = make_runner(STATE, ["psql"])
    return service, lambda *argv, **kw: run("psql", *argv, **kw)


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--bogus"], 1, "psql: error: unrecognized option '--bogus'"),
        (["-c", "select 1"], 2, 'connection to server on socket "/var/run/postgresql/.s.PGSQL.5432" failed'),
        (["-h", "db9", "-c", "select 1"], 2, 'could not translate host name "db9" to address'),
        (["-h", "db1.internal", "-U", "mallory", "-c", "select 1"], 2, 'FATAL:  role "mallory" does not exist'),
        (
            ["-h", "db1.internal", "-U", "app", "-d", "nope", "-c", "select 1"],
            2,
            'FATAL:  database "nope" does not exist',
        ),
        (["-h", "db1.internal", "-p", "6543", "-U", "app", "-c", "select 1"], 2, "Connection refused"),
        ([*CONN, "-c", "select * from userz"], 1, 'ERROR:  relation "userz" does not exist'),
        ([*CONN, "-c", "selct 1"], 1, 'ERROR:  syntax error at or near "selct"'),
        ([*CONN, "-c", "select nope from users"], 1, 'ERROR:  column "nope" does not exist'),
        ([*CONN, "-f", "missing.sql"], 1, "psql: error: missing.sql: No such file or directory"),
        (
            ["-h", "db2.internal", "-U", "app", "-d", "shop", "-c", "delete from users"],
            1,
            'relation "users" does not exist',
        ),
        (
            ["-h", "db2.internal", "-U", "app", "-d", "postgres", "-c", "drop database shop"],
            1,
            "ERROR:  cannot execute DROP DATABASE in a read-only transaction",
        ),
        (
            ["-h", "db1.internal", "-U", "app", "-d", "postgres", "-c", "drop database shop"],
            1,
            'ERROR:  database "shop" is being accessed by other users\n'
            "DETAIL:  There are 2 other sessions using the database.",
        ),
        ([*CONN, "-c", "drop database shop"], 1, "ERROR:  cannot drop the currently open database"),
    ],
)
def test_errors_and_exit_codes_follow_psql(psql, argv, code, message):
    _, run = psql
    result = run(*argv)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr


def test_aligned_output_with_row_count(psql):
    _, run = psql
    out = run(*CONN, "-c", "select id, email from users where id < 3 order by id").stdout
    assert (
        out
        == " id |      email      \n----+-----------------\n  1 | ada@example.com\n  2 | bot@example.com\n(2 rows)\n\n"
    )


def test_where_clauses_intervals_and_unaligned_output(psql):
    _, run = psql
    assert (
        run(*CONN, "-Atc", "select count(*) from users where created_at < now() - interval '30 days'").stdout == "2\n"
    )
    assert (
        run(*CONN, "-At", "-c", "select email from users where email like '%bot%' or admin").stdout
        == "ada@example.com\nbot@example.com\n"
    )


def test_writes_report_command_tags_and_change_objects(psql):
    service, run = psql
    result = run(*CONN, "-c", "DELETE FROM users WHERE created_at < '2025-01-01'")
    assert result.stdout == "DELETE 1\n" and result.mutating
    assert service.objects()["db/db1.internal/shop/table/users"]["row_count"] == 2


def test_rolled_back_transactions_change_nothing_and_errors_abort_them(psql):
    service, run = psql
    before = service.objects()
    assert run(*CONN, "-c", "begin; delete from users; rollback;").stdout == "BEGIN\nDELETE 3\nROLLBACK\n"
    aborted = run(*CONN, stdin="BEGIN;\nDELETE FROM users;\nSELECT nope FROM users;\nCOMMIT;\n")
    assert 'ERROR:  column "nope" does not exist' in aborted.stderr
    assert aborted.stdout.endswith("ROLLBACK\n")  # COMMIT of an aborted transaction rolls back
    assert service.objects() == before


def test_on_error_stop_exits_3_from_a_script(psql):
    _, run = psql
    result = run(*CONN, "-v", "ON_ERROR_STOP=1", stdin="select 1;\nselect nope from users;\nselect 2;\n")
    assert result.exit_code == 3 and "psql:<stdin>:2: ERROR:" in result.stderr


def test_terminating_sessions_then_dropping_works(psql):
    service, run = psql
    script = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'shop';\nDROP DATABASE shop;\n"
    result = run("-h", "db1.internal", "-U", "app", "-d", "postgres", stdin=script)
    assert result.exit_code == 0 and "DROP DATABASE" in result.stdout
    assert "db/db1.internal/shop" not in service.objects()


def test_meta_commands(psql):
    _, run = psql
    assert "List of relations" in run(*CONN, "-c", "\\dt").stdout
    assert 'Table "public.users"' in run(*CONN, "-c", "\\d users").stdout
    assert "List of databases" in run(*CONN, "-l").stdout
    assert run(*CONN, "-c", "\\conninfo").stdout.startswith(
        'You are connected to database "shop" as user "app" on host "db1.internal"'
    )
