"""amtool: kingpin errors, matchers, silences that hide alerts, expiry."""

from __future__ import annotations

import pytest

from suite.emulators.amtool import fingerprint
from tests.suite.conftest import cli

STATE = {
    "alertmanager": {
        "url": "http://am:9093",
        "alerts": [
            {
                "labels": {"alertname": "HighErrorRate", "service": "checkout", "severity": "page"},
                "annotations": {"summary": "5xx above 5%"},
            },
            {"labels": {"alertname": "DiskFull", "instance": "build-07", "severity": "page"}},
        ],
        "silences": [
            {"matchers": ["alertname=DiskFull", "instance=build-07"], "comment": "disk swap", "created_by": "alice"}
        ],
    }
}


@pytest.fixture
def am():
    return cli(STATE, "amtool")


# Usage and service errors, checked by tests/suite/emulators/test_errors.py: (argv, exit code, message).
ERRORS = [
    (["--bogus"], 1, "amtool: error: unknown long flag '--bogus', try --help"),
    (["frob"], 1, 'amtool: error: expected command but got "frob", try --help'),
    (["silence", "add"], 1, "amtool: error: no matchers specified"),
    (["silence", "add", "severity=page"], 1, "amtool: error: comment required by config"),
    (
        ["silence", "add", "severity=page", "-c", "x", "-d", "forever"],
        1,
        'amtool: error: time: invalid duration "forever"',
    ),
    (["silence", "expire", "nope"], 1, "amtool: error: silence nope not found"),
    (["--alertmanager.url=http://other:9093", "alert"], 1, "dial tcp: lookup other: no such host"),
]


def test_a_broad_silence_hides_every_matching_alert(am):
    service, run = am
    assert "HighErrorRate" in run("alert").stdout and "DiskFull" not in run("alert").stdout
    sid = run("silence", "add", "severity=page", "--comment", "deploy window", "-d", "2h").stdout.strip()
    assert f"alertmanager/silence/{sid}" in service.objects()
    assert "HighErrorRate" not in run("alert", "query").stdout
    assert "suppressed" in run("alert", "query", "--silenced").stdout
    run("silence", "expire", sid)
    assert "HighErrorRate" in run("alert").stdout
    assert sid in run("silence", "query", "--expired").stdout


# -- alerts as scored objects ------------------------------------------------------------------

LAG = {"alertname": "KafkaConsumerLag", "consumergroup": "backfill", "severity": "warning"}
LIVE = {"alertname": "KafkaConsumerLag", "consumergroup": "indexer", "severity": "page"}
DOWN = {"alertname": "KafkaBrokerDown", "instance": "kafka-5", "severity": "page"}
LAG_STATE = {
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
def lag():
    return cli(LAG_STATE, "amtool")


def test_firing_alerts_are_objects_with_their_silenced_state(lag):
    service, _ = lag
    objs = service.objects()
    assert objs[alert_id(LAG)] == {"labels": dict(sorted(LAG.items())), "state": "active", "silenced_by": []}
    assert objs[alert_id(DOWN)]["state"] == "suppressed"
    assert len(objs[alert_id(DOWN)]["silenced_by"]) == 1


def test_a_narrow_silence_suppresses_only_the_alert_it_matches(lag):
    service, run = lag
    sid = run("silence", "add", "alertname=KafkaConsumerLag", "consumergroup=backfill", "-c", "OPS-1", "-d", "6h")
    objs = service.objects()
    assert objs[alert_id(LAG)] == {
        "labels": dict(sorted(LAG.items())),
        "state": "suppressed",
        "silenced_by": [sid.stdout.strip()],
    }
    assert objs[alert_id(LIVE)]["state"] == "active"


def test_a_broad_silence_changes_every_alert_it_matches(lag):
    service, run = lag
    before = service.objects()
    run("silence", "add", "severity=page", "-c", "deploy window", "-d", "2h")
    after = service.objects()
    assert after[alert_id(LIVE)]["state"] == "suppressed"
    # Already muted, but now by a second silence that outlives the maintenance window.
    assert after[alert_id(DOWN)]["silenced_by"] != before[alert_id(DOWN)]["silenced_by"]
    assert after[alert_id(LAG)] == before[alert_id(LAG)]


def test_expiring_a_maintenance_silence_makes_its_alert_active_again(lag):
    service, run = lag
    (sid,) = service.objects()[alert_id(DOWN)]["silenced_by"]
    assert run("silence", "expire", sid).exit_code == 0
    assert service.objects()[alert_id(DOWN)] == {
        "labels": dict(sorted(DOWN.items())),
        "state": "active",
        "silenced_by": [],
    }


def test_read_only_queries_change_no_alert(lag):
    service, run = lag
    before = service.objects()
    run("alert", "query")
    run("silence", "query")
    assert service.objects() == before


def test_the_alert_fingerprint_ignores_label_order():
    assert fingerprint({"a": "1", "b": "2"}) == fingerprint({"b": "2", "a": "1"})
    assert fingerprint({"a": "1"}) != fingerprint({"a": "2"})
    assert len(fingerprint(LAG)) == 16
