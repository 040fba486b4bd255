"""Emulator additions made for helper f1's task families (psql roles, kubectl secret patches, …)."""

from __future__ import annotations

import pytest

from suite.oracle import object_kind
from tests.suite.conftest import make_runner

# -- psql: roles ---------------------------------------------------------------------------

PG_STATE = {
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
def psql():
    service, run = make_runner(PG_STATE, ["psql"])
    return service, lambda *argv, **kw: run("psql", *argv, **kw)


def test_roles_are_objects_with_their_attributes_and_a_verifier_not_the_password(psql):
    service, _ = psql
    objs = service.objects()
    ro = objs["db/db1.internal/role/metabase_ro"]
    assert ro["login"] is True and ro["superuser"] is False and ro["connection_limit"] == 10
    assert ro["password"].startswith("SCRAM-SHA-256$4096:") and "leaked" not in ro["password"]
    assert objs["db/db1.internal/role/postgres"]["superuser"] is True
    assert object_kind("db/db1.internal/role/app") == "db/role"
    assert object_kind("db/db1.internal/shop/table/users") == "db/table"


def test_alter_role_password_changes_only_that_roles_verifier(psql):
    service, run = psql
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
        (AS_DBA, "ALTER ROLE app PASWORD 'x'", 'syntax error at or near "pasword"'),
        (AS_DBA, "ALTER ROLE app VALID UNTIL 'soon'", "invalid input syntax for type timestamp with time zone"),
        (AS_DBA, "DROP ROLE app", 'role "app" cannot be dropped because some objects depend on it'),
        (AS_DBA, "DROP ROLE dba", "current user cannot be dropped"),
        (AS_DBA, "CREATE ROLE app", 'role "app" already exists'),
    ],
)
def test_role_statements_fail_like_postgresql(psql, argv, sql, message):
    service, run = psql
    before = service.objects()
    result = run(*argv, "-c", sql)
    assert result.exit_code == 1 and message in result.stderr, result.stderr
    assert service.objects() == before


def test_users_can_change_their_own_password_and_role_changes_are_transactional(psql):
    service, run = psql
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


def test_a_nologin_role_cannot_connect(psql):
    _, run = psql
    run(*AS_DBA, "-c", "ALTER ROLE app NOLOGIN")
    result = run(*AS_APP, "-c", "select 1")
    assert result.exit_code == 2 and 'FATAL:  role "app" is not permitted to log in' in result.stderr


def test_create_and_drop_roles_and_rename(psql):
    service, run = psql
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


def test_catalogs_and_du_show_attributes_and_hide_verifiers_from_non_superusers(psql):
    _, run = psql
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


def test_password_meta_command_reads_both_prompts_from_stdin(psql):
    service, run = psql
    before = service.objects()["db/db1.internal/role/metabase_ro"]["password"]
    mismatch = run(*AS_DBA, "-c", "\\password metabase_ro", stdin="one\ntwo\n")
    assert "Passwords didn't match." in mismatch.stderr
    assert service.objects()["db/db1.internal/role/metabase_ro"]["password"] == before
    assert run(*AS_DBA, "-c", "\\password metabase_ro", stdin="s3cret\ns3cret\n").exit_code == 0
    assert service.objects()["db/db1.internal/role/metabase_ro"]["password"] != before


# -- kubectl: patching a Secret ------------------------------------------------------------

K8S_STATE = {
    "kubernetes": {
        "current_context": "prod",
        "contexts": {"prod": {"cluster": "prod", "namespace": "payments", "user": "ops"}},
        "clusters": {
            "prod": {
                "objects": [
                    {
                        "kind": "Secret",
                        "metadata": {"name": "payments-db", "namespace": "payments"},
                        "type": "Opaque",
                        "data": {"DB_USER": "payments", "DB_PASSWORD": "old-password"},
                    }
                ]
            }
        },
    }
}
SECRET = "k8s/prod/secret/payments/payments-db"


@pytest.fixture
def kubectl():
    service, run = make_runner(K8S_STATE, ["kubectl"])
    return service, lambda *argv, **kw: run("kubectl", *argv, **kw)


@pytest.mark.parametrize(
    "argv",
    [
        ["patch", "secret", "payments-db", "-p", '{"stringData": {"DB_PASSWORD": "n3w"}}'],
        ["patch", "secret", "payments-db", "--type=merge", "-p", '{"data": {"DB_PASSWORD": "bjN3"}}'],
        [
            "patch",
            "secret",
            "payments-db",
            "--type=json",
            "-p",
            '[{"op": "replace", "path": "/data/DB_PASSWORD", "value": "bjN3"}]',
        ],
    ],
)
def test_patching_a_secret_decodes_base64_data_and_folds_string_data(kubectl, argv):
    service, run = kubectl
    result = run(*argv)
    assert result.exit_code == 0 and "secret/payments-db patched" in result.stdout, result.stderr
    assert service.objects()[SECRET]["data"] == {"DB_USER": "payments", "DB_PASSWORD": "n3w"}
    shown = run("get", "secret", "payments-db", "-o", "jsonpath={.data.DB_PASSWORD}").stdout
    assert shown == "bjN3"


def test_patching_a_secret_with_illegal_base64_is_refused_and_changes_nothing(kubectl):
    service, run = kubectl
    before = service.objects()
    result = run("patch", "secret", "payments-db", "-p", '{"data": {"DB_PASSWORD": "not base64!"}}')
    assert result.exit_code == 1 and "illegal base64 data" in result.stderr
    assert service.objects() == before
    same = run("patch", "secret", "payments-db", "-p", '{"data": {"DB_PASSWORD": "b2xkLXBhc3N3b3Jk"}}')
    assert "patched (no change)" in same.stdout and service.objects() == before


# -- docker: networks ----------------------------------------------------------------------

DOCKER_STATE = {
    "docker": {
        "host": "ci-build-05",
        "images": [{"repository": "postgres", "tag": "15"}],
        "containers": [
            {"name": "ci-7713-app", "image": "postgres:15", "status": "running", "network": "ci-7713_default"},
            {"name": "perf-runner", "image": "postgres:15", "status": "exited", "network": "perf-lab"},
        ],
        "networks": [{"name": "ci-7713_default"}, {"name": "ci-7731_default"}, {"name": "perf-lab"}],
    }
}


@pytest.fixture
def docker():
    service, run = make_runner(DOCKER_STATE, ["docker"])
    return service, lambda *argv, **kw: run("docker", *argv, **kw)


def test_a_network_with_a_running_container_cannot_be_removed(docker):
    service, run = docker
    before = service.objects()
    result = run("network", "rm", "ci-7713_default")
    assert result.exit_code == 1 and "has active endpoints" in result.stderr
    assert service.objects() == before
    assert run("network", "rm", "perf-lab").exit_code == 0  # a stopped container does not hold it
    net_id = run("network", "ls", "--filter", "name=ci-7731", "-q").stdout.strip()
    assert len(net_id) == 12
    assert run("network", "rm", net_id).stdout == f"{net_id}\n"
    assert "docker/ci-build-05/network/ci-7731_default" not in service.objects()


def test_network_create_refuses_a_taken_name_and_ls_filters(docker):
    _, run = docker
    taken = run("network", "create", "ci-7731_default")
    assert taken.exit_code == 1
    assert "Error response from daemon: network with name ci-7731_default already exists" in taken.stderr
    names = run("network", "ls", "--filter", "name=ci-77", "--format", "{{.Name}}").stdout
    assert "ci-7713_default" in names and "ci-7731_default" in names and "perf-lab" not in names
    dangling = run("network", "ls", "--filter", "dangling=true", "--format", "{{.Name}}").stdout
    assert dangling == "ci-7731_default\n"
    assert "invalid filter 'colour'" in run("network", "ls", "--filter", "colour=red").stderr


def test_inspect_shows_a_networks_running_containers_and_ps_filters_by_network(docker):
    _, run = docker
    out = run("network", "inspect", "ci-7713_default").stdout
    assert '"Name": "ci-7713-app"' in out
    assert run("ps", "--filter", "network=ci-7713_default", "--format", "{{.Names}} {{.Networks}}").stdout == (
        "ci-7713-app ci-7713_default\n"
    )


# -- systemctl: timers -----------------------------------------------------------------------


def test_disabling_a_timer_removes_its_timers_target_link_and_only_now_stops_it():
    state = {"systemd": {"host": "ci-build-07", "units": {"nightly-e2e.timer": {}, "nightly-perf.timer": {}}}}
    service, run = make_runner(state, ["systemctl"])
    result = run("systemctl", "disable", "nightly-e2e.timer")
    assert 'Removed "/etc/systemd/system/timers.target.wants/nightly-e2e.timer".' in result.stderr
    timer = service.objects()["systemd/ci-build-07/unit/nightly-e2e.timer"]
    assert timer == {"active": "active", "enabled": "disabled"}  # still fires until stopped
    run("systemctl", "disable", "--now", "nightly-perf.timer")
    assert service.objects()["systemd/ci-build-07/unit/nightly-perf.timer"] == {
        "active": "inactive",
        "enabled": "disabled",
    }


# -- aws: access keys without --user-name ----------------------------------------------------


def test_update_access_key_without_user_name_acts_on_the_caller_like_iam():
    state = {
        "aws": {
            "identity": "oncall",
            "iam": {
                "users": {
                    "oncall": {"access_keys": [{"id": "AKIAONCALLKEY2345678"}]},
                    "uploader": {"access_keys": [{"id": "AKIAUPLOADERKEY23456"}]},
                }
            },
        }
    }
    service, run = make_runner(state, ["aws"])
    before = service.objects()
    other = run("aws", "iam", "update-access-key", "--access-key-id", "AKIAUPLOADERKEY23456", "--status", "Inactive")
    assert other.exit_code == 254 and "The Access Key with id AKIAUPLOADERKEY23456 cannot be found." in other.stderr
    assert service.objects() == before
    named = ["--user-name", "uploader", "--access-key-id", "AKIAUPLOADERKEY23456", "--status", "Inactive"]
    assert run("aws", "iam", "update-access-key", *named).exit_code == 0
    assert service.objects()["iam/user/uploader/access-key/AKIAUPLOADERKEY23456"]["status"] == "Inactive"
    own = run("aws", "iam", "delete-access-key", "--access-key-id", "AKIAONCALLKEY2345678")
    assert own.exit_code == 0 and "iam/user/oncall/access-key/AKIAONCALLKEY2345678" not in service.objects()
