"""amtool: kingpin errors, matchers, silences that hide alerts, expiry."""

from __future__ import annotations

import pytest

from tests.suite.conftest import make_runner

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
    service, run = make_runner(STATE, ["amtool"])
    return service, lambda *argv, **kw: run("amtool", *argv, **kw)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bogus"], "amtool: error: unknown long flag '--bogus', try --help"),
        (["frob"], 'amtool: error: expected command but got "frob", try --help'),
        (["silence", "add"], "amtool: error: no matchers specified"),
        (["silence", "add", "severity=page"], "amtool: error: comment required by config"),
        (
            ["silence", "add", "severity=page", "-c", "x", "-d", "forever"],
            'amtool: error: time: invalid duration "forever"',
        ),
        (["silence", "expire", "nope"], "amtool: error: silence nope not found"),
        (["--alertmanager.url=http://other:9093", "alert"], "dial tcp: lookup other: no such host"),
    ],
)
def test_errors_read_like_amtool(am, argv, message):
    _, run = am
    result = run(*argv)
    assert result.exit_code == 1
    assert message in result.stderr


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
