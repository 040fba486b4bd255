"""psql: connection errors and exit codes, SQL semantics, transactions, standby and session guards."""

from __future__ import annotations

import pytest

from suite.oracle import object_kind
from tests.suite.conftest import cli, make_runner

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
    return cli(STATE, "psql")


# Usage and service errors, checked by tests/suite/emulators/test_errors.py: (argv, exit code, message).
ERRORS = [
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
]


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


# -- roles: attributes, passwords, catalogs ----------------------------------------------------

ROLES_STATE = {
    "postgres": {
        "servers": {
            "db1.internal": {
                "roles": ["postgres", "dba", "app", "metabase_ro"],
                "role_attrs": {
                    "dba": {"createrole": True, "password": "dba-old"},
                    "app": {"password": "app-old"},
                    "metabase_ro": {"password": "leaked", "connection_limit": 10},
                },
                "databases": {"shop": {"owner": "app", "tables": {}}},
            },
        }
    }
}
AS_DBA = ["-h", "db1.internal", "-U", "dba", "-d", "postgres"]
AS_APP = ["-h", "db1.internal", "-U", "app", "-d", "shop"]


@pytest.fixture
def roles():
    return cli(ROLES_STATE, "psql")


def test_roles_are_objects_with_their_attributes_and_a_verifier_not_the_password(roles):
    service, _ = roles
    objs = service.objects()
    ro = objs["db/db1.internal/role/metabase_ro"]
    assert ro["login"] is True and ro["superuser"] is False and ro["connection_limit"] == 10
    assert ro["password"].startswith("SCRAM-SHA-256$4096:") and "leaked" not in ro["password"]
    assert objs["db/db1.internal/role/postgres"]["superuser"] is True
    assert object_kind("db/db1.internal/role/app") == "db/role"
    assert object_kind("db/db1.internal/shop/table/users") == "db/table"


def test_alter_role_password_changes_only_that_roles_verifier(roles):
    service, run = roles
    before = service.objects()
    result = run(*AS_DBA, "-c", "ALTER ROLE metabase_ro WITH PASSWORD 'n3w-Secret'")
    assert (result.exit_code, result.stdout, result.mutating) == (0, "ALTER ROLE\n", True)
    after = service.objects()
    changed = sorted(k for k in after if after[k] != before.get(k))
    assert changed == ["db/db1.internal/role/metabase_ro"]
    assert (
        after["db/db1.internal/role/metabase_ro"]["password"] != before["db/db1.internal/role/metabase_ro"]["password"]
    )
    # The same password gives the same verifier in this emulation, so a family can expect a value.
    run(*AS_DBA, "-c", "ALTER USER app PASSWORD 'n3w-Secret'")
    assert (
        service.objects()["db/db1.internal/role/app"]["password"]
        != after["db/db1.internal/role/metabase_ro"]["password"]
    )


@pytest.mark.parametrize(
    ("argv", "sql", "message"),
    [
        (AS_DBA, "ALTER ROLE nobody PASSWORD 'x'", 'ERROR:  role "nobody" does not exist'),
        (AS_DBA, "ALTER ROLE postgres PASSWORD 'x'", "must be superuser to alter superuser roles"),
        (AS_APP, "ALTER ROLE metabase_ro PASSWORD 'x'", "ERROR:  permission denied"),
        (AS_APP, "ALTER ROLE app NOLOGIN", "ERROR:  permission denied"),
        (AS_DBA, "ALTER ROLE app UNENCRYPTED PASSWORD 'x'", "UNENCRYPTED PASSWORD is no longer supported"),
        (AS_DBA, "ALTER ROLE app PASWORD 'x'", 'syntax error at or near "PASWORD"'),
        (AS_DBA, "ALTER ROLE app VALID UNTIL 'soon'", "invalid input syntax for type timestamp with time zone"),
        (AS_DBA, "DROP ROLE app", 'role "app" cannot be dropped because some objects depend on it'),
        (AS_DBA, "DROP ROLE dba", "current user cannot be dropped"),
        (AS_DBA, "CREATE ROLE app", 'role "app" already exists'),
    ],
)
def test_role_statements_fail_like_postgresql(roles, argv, sql, message):
    service, run = roles
    before = service.objects()
    result = run(*argv, "-c", sql)
    assert result.exit_code == 1 and message in result.stderr, result.stderr
    assert service.objects() == before


def test_users_can_change_their_own_password_and_role_changes_are_transactional(roles):
    service, run = roles
    before = service.objects()
    assert run(*AS_APP, "-c", "ALTER USER CURRENT_USER PASSWORD 'mine'").exit_code == 0
    assert service.objects()["db/db1.internal/role/app"] != before["db/db1.internal/role/app"]
    mid = service.objects()
    out = run(*AS_DBA, "-c", "BEGIN; ALTER ROLE metabase_ro NOLOGIN; ROLLBACK;")
    assert out.stdout == "BEGIN\nALTER ROLE\nROLLBACK\n"
    assert service.objects() == mid
    run(*AS_DBA, "-c", "BEGIN; ALTER ROLE metabase_ro NOLOGIN CONNECTION LIMIT -1; COMMIT;")
    ro = service.objects()["db/db1.internal/role/metabase_ro"]
    assert ro["login"] is False and ro["connection_limit"] == -1


def test_a_nologin_role_cannot_connect(roles):
    _, run = roles
    run(*AS_DBA, "-c", "ALTER ROLE app NOLOGIN")
    result = run(*AS_APP, "-c", "select 1")
    assert result.exit_code == 2 and 'FATAL:  role "app" is not permitted to log in' in result.stderr


def test_create_and_drop_roles_and_rename(roles):
    service, run = roles
    assert run(*AS_DBA, "-c", "CREATE USER reporting WITH PASSWORD 'r' VALID UNTIL '2026-06-30'").stdout == (
        "CREATE ROLE\n"
    )
    rep = service.objects()["db/db1.internal/role/reporting"]
    assert rep["login"] is True and rep["valid_until"] == "2026-06-30 00:00:00+00"
    assert run(*AS_DBA, "-c", "CREATE ROLE readers").exit_code == 0
    assert service.objects()["db/db1.internal/role/readers"]["login"] is False
    dropped = run(*AS_DBA, "-c", "DROP ROLE IF EXISTS readers, ghost")
    assert dropped.stdout == "DROP ROLE\n" and 'NOTICE:  role "ghost" does not exist, skipping' in dropped.stderr
    assert run(*AS_DBA, "-c", "ALTER ROLE app RENAME TO shop_app").exit_code == 0
    objs = service.objects()
    assert "db/db1.internal/role/app" not in objs and objs["db/db1.internal/shop"]["owner"] == "shop_app"


def test_catalogs_and_du_show_attributes_and_hide_verifiers_from_non_superusers(roles):
    _, run = roles
    rows = run(*AS_DBA, "-Atc", "SELECT rolname, rolcanlogin, rolpassword, rolconnlimit FROM pg_roles ORDER BY rolname")
    assert "metabase_ro|t|********|10" in rows.stdout.splitlines()
    denied = run(*AS_DBA, "-c", "SELECT rolpassword FROM pg_authid")
    assert "permission denied for table pg_authid" in denied.stderr
    run(*AS_DBA, "-c", "ALTER ROLE metabase_ro NOLOGIN")
    du = run(*AS_DBA, "-c", "\\du").stdout
    assert "List of roles" in du and "Member of" in du
    assert "Cannot login, 10 connections" in du and "Superuser, Create role, Create DB" in du
    assert run(*AS_DBA, "-Atc", "SELECT usename FROM pg_user ORDER BY usename").stdout.split() == [
        "app",
        "dba",
        "postgres",
    ]


def test_password_meta_command_reads_both_prompts_from_stdin(roles):
    service, run = roles
    before = service.objects()["db/db1.internal/role/metabase_ro"]["password"]
    mismatch = run(*AS_DBA, "-c", "\\password metabase_ro", stdin="one\ntwo\n")
    assert "Passwords didn't match." in mismatch.stderr
    assert service.objects()["db/db1.internal/role/metabase_ro"]["password"] == before
    assert run(*AS_DBA, "-c", "\\password metabase_ro", stdin="s3cret\ns3cret\n").exit_code == 0
    assert service.objects()["db/db1.internal/role/metabase_ro"]["password"] != before


# -- INSERT ... SELECT -------------------------------------------------------------------------

RULES_STATE = {
    "postgres": {
        "servers": {
            "db1": {
                "roles": ["postgres", "shop"],
                "databases": {
                    "shop": {
                        "owner": "shop",
                        "tables": {
                            "rules": {"columns": ["id integer", "pct numeric"], "rows": [[1, 0], [2, 0]]},
                            "rules_snap": {"columns": ["id integer", "pct numeric"], "rows": [[1, 15], [2, 10]]},
                        },
                    }
                },
            }
        }
    }
}
RULES = "db/db1/shop/table/rules"


@pytest.fixture
def rules():
    service, run = make_runner(RULES_STATE, ["psql"])
    return service, lambda sql: run("psql", "-h", "db1", "-U", "shop", "-d", "shop", "-c", sql)


def test_insert_select_refills_a_table_from_its_snapshot_in_one_transaction(rules):
    service, run = rules
    result = run("BEGIN; DELETE FROM rules; INSERT INTO rules SELECT * FROM rules_snap WHERE id > 0; COMMIT;")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["BEGIN", "DELETE 2", "INSERT 0 2", "COMMIT"]
    assert service.objects()[RULES]["rows"] == [[1, 15], [2, 10]]


def test_insert_select_into_named_columns_fills_the_rest_with_null(rules):
    service, run = rules
    assert run("INSERT INTO rules (id) SELECT id FROM rules_snap WHERE id = 2").exit_code == 0
    assert service.objects()[RULES]["rows"][-1] == [2, None]


def test_insert_select_with_too_many_columns_fails_and_changes_nothing(rules):
    service, run = rules
    result = run("INSERT INTO rules (id) SELECT id, pct FROM rules_snap")
    assert result.exit_code == 1
    assert "ERROR:  INSERT has more expressions than target columns" in result.stderr
    assert service.objects()[RULES]["rows"] == [[1, 0], [2, 0]]
