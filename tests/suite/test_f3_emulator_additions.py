"""Emulator behaviour added for the runtime and release families (helper f3).

helm's value-reuse rules on upgrade, Alertmanager alerts as scored objects (what a silence mutes),
psql's INSERT ... SELECT, and fnmatch character classes in the AWS CLI's --exclude/--include.
"""

from __future__ import annotations

import pytest

from suite.emulators.amtool import fingerprint
from tests.suite.conftest import make_runner

HELM_STATE = {
    "kubernetes": {
        "contexts": {"prod": {"cluster": "prod-eu", "namespace": "pay"}},
        "clusters": {"prod-eu": {"objects": [{"kind": "Namespace", "metadata": {"name": "pay"}}]}},
    },
    "helm": {
        "charts": {"acme/api": {"1.9.0": {"app_version": "2.8.0", "values": {"replicaCount": 1}}}},
        "releases": [
            {
                "name": "api",
                "namespace": "pay",
                "history": [
                    {
                        "chart": "api",
                        "version": "1.9.0",
                        "values": {"image": {"tag": "2.8.0"}, "replicaCount": 6, "ingress": {"host": "api.pay"}},
                    }
                ],
            }
        ],
    },
}
RELEASE = "helm/prod-eu/pay/release/api"


@pytest.fixture
def helm():
    service, run = make_runner(HELM_STATE, ["helm"])
    return service, lambda *argv: run("helm", *argv)


def test_an_upgrade_without_any_values_keeps_the_previous_values(helm):
    service, run = helm
    assert run("upgrade", "api", "acme/api").exit_code == 0
    value = service.objects()[RELEASE]
    assert value["revision"] == 2
    assert value["values"] == {"image": {"tag": "2.8.0"}, "replicaCount": 6, "ingress": {"host": "api.pay"}}


def test_an_upgrade_that_sets_one_value_without_reuse_drops_the_other_overrides(helm):
    service, run = helm
    assert run("upgrade", "api", "acme/api", "--set", "image.tag=2.8.1").exit_code == 0
    assert service.objects()[RELEASE]["values"] == {"image": {"tag": "2.8.1"}}


@pytest.mark.parametrize("flag", ["--reuse-values", "--reset-then-reuse-values"])
def test_reuse_flags_merge_the_new_value_into_the_previous_ones(helm, flag):
    service, run = helm
    assert run("upgrade", "api", "acme/api", flag, "--set", "image.tag=2.8.1").exit_code == 0
    assert service.objects()[RELEASE]["values"] == {
        "image": {"tag": "2.8.1"},
        "replicaCount": 6,
        "ingress": {"host": "api.pay"},
    }


def test_reset_values_starts_from_the_chart_defaults_even_without_new_values(helm):
    service, run = helm
    assert run("upgrade", "api", "acme/api", "--reset-values").exit_code == 0
    assert service.objects()[RELEASE]["values"] == {}


LAG = {"alertname": "KafkaConsumerLag", "consumergroup": "backfill", "severity": "warning"}
LIVE = {"alertname": "KafkaConsumerLag", "consumergroup": "indexer", "severity": "page"}
DOWN = {"alertname": "KafkaBrokerDown", "instance": "kafka-5", "severity": "page"}
AM_STATE = {
    "clock": "2026-03-02T09:00:00Z",
    "alertmanager": {
        "url": "http://am:9093",
        "alerts": [{"labels": LAG}, {"labels": LIVE}, {"labels": DOWN}],
        "silences": [
            {
                "matchers": ["alertname=KafkaBrokerDown", "instance=kafka-5"],
                "starts_at": "2026-03-02T06:00:00Z",
                "ends_at": "2026-03-02T18:00:00Z",
                "comment": "broker swap",
            }
        ],
    },
}


def alert_id(labels: dict[str, str]) -> str:
    return f"alertmanager/alert/{labels['alertname']}/{fingerprint(labels)}"


@pytest.fixture
def am():
    service, run = make_runner(AM_STATE, ["amtool"])
    return service, lambda *argv: run("amtool", *argv)


def test_firing_alerts_are_objects_with_their_silenced_state(am):
    service, _ = am
    objs = service.objects()
    assert objs[alert_id(LAG)] == {"labels": dict(sorted(LAG.items())), "state": "active", "silenced_by": []}
    assert objs[alert_id(DOWN)]["state"] == "suppressed"
    assert len(objs[alert_id(DOWN)]["silenced_by"]) == 1


def test_a_narrow_silence_suppresses_only_the_alert_it_matches(am):
    service, run = am
    sid = run("silence", "add", "alertname=KafkaConsumerLag", "consumergroup=backfill", "-c", "OPS-1", "-d", "6h")
    objs = service.objects()
    assert objs[alert_id(LAG)] == {
        "labels": dict(sorted(LAG.items())),
        "state": "suppressed",
        "silenced_by": [sid.stdout.strip()],
    }
    assert objs[alert_id(LIVE)]["state"] == "active"


def test_a_broad_silence_changes_every_alert_it_matches(am):
    service, run = am
    before = service.objects()
    run("silence", "add", "severity=page", "-c", "deploy window", "-d", "2h")
    after = service.objects()
    assert after[alert_id(LIVE)]["state"] == "suppressed"
    # Already muted, but now by a second silence that outlives the maintenance window.
    assert after[alert_id(DOWN)]["silenced_by"] != before[alert_id(DOWN)]["silenced_by"]
    assert after[alert_id(LAG)] == before[alert_id(LAG)]


def test_expiring_a_maintenance_silence_makes_its_alert_active_again(am):
    service, run = am
    (sid,) = service.objects()[alert_id(DOWN)]["silenced_by"]
    assert run("silence", "expire", sid).exit_code == 0
    assert service.objects()[alert_id(DOWN)] == {
        "labels": dict(sorted(DOWN.items())),
        "state": "active",
        "silenced_by": [],
    }


def test_read_only_queries_change_no_alert(am):
    service, run = am
    before = service.objects()
    run("alert", "query")
    run("silence", "query")
    assert service.objects() == before


def test_the_alert_fingerprint_ignores_label_order():
    assert fingerprint({"a": "1", "b": "2"}) == fingerprint({"b": "2", "a": "1"})
    assert fingerprint({"a": "1"}) != fingerprint({"a": "2"})
    assert len(fingerprint(LAG)) == 16


PG_STATE = {
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
def psql():
    service, run = make_runner(PG_STATE, ["psql"])
    return service, lambda sql: run("psql", "-h", "db1", "-U", "shop", "-d", "shop", "-c", sql)


def test_insert_select_refills_a_table_from_its_snapshot_in_one_transaction(psql):
    service, run = psql
    result = run("BEGIN; DELETE FROM rules; INSERT INTO rules SELECT * FROM rules_snap WHERE id > 0; COMMIT;")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["BEGIN", "DELETE 2", "INSERT 0 2", "COMMIT"]
    assert service.objects()[RULES]["rows"] == [[1, 15], [2, 10]]


def test_insert_select_into_named_columns_fills_the_rest_with_null(psql):
    service, run = psql
    assert run("INSERT INTO rules (id) SELECT id FROM rules_snap WHERE id = 2").exit_code == 0
    assert service.objects()[RULES]["rows"][-1] == [2, None]


def test_insert_select_with_too_many_columns_fails_and_changes_nothing(psql):
    service, run = psql
    result = run("INSERT INTO rules (id) SELECT id, pct FROM rules_snap")
    assert result.exit_code == 1
    assert "ERROR:  INSERT has more expressions than target columns" in result.stderr
    assert service.objects()[RULES]["rows"] == [[1, 0], [2, 0]]


S3_STATE = {
    "aws": {
        "s3": {
            "buckets": {
                "backups": {
                    "objects": {f"dumps/2026-02-{d:02d}.sql.gz": {"size": 10} for d in (5, 9, 12, 16, 20)},
                }
            }
        }
    }
}


def test_s3_filters_support_fnmatch_character_classes():
    service, run = make_runner(S3_STATE, ["aws"])
    result = run(
        "aws",
        "s3",
        "rm",
        "s3://backups/dumps/",
        "--recursive",
        "--exclude",
        "*",
        "--include",
        "2026-02-0*",
        "--include",
        "2026-02-1[0-5]*",
    )
    assert result.exit_code == 0, result.stderr
    left = sorted(k.rsplit("/", 1)[-1] for k in service.objects() if "/object/" in k)
    assert left == ["2026-02-16.sql.gz", "2026-02-20.sql.gz"]


def test_rollback_to_revision_zero_means_the_previous_revision(helm):
    service, run = helm
    assert run("upgrade", "api", "acme/api", "--reuse-values", "--set", "image.tag=2.9.0").exit_code == 0
    result = run("rollback", "api", "0")
    assert result.exit_code == 0, result.stderr
    value = service.objects()[RELEASE]
    assert (value["revision"], value["values"]["image"]["tag"]) == (3, "2.8.0")
