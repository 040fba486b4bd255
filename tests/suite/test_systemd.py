"""systemctl, service, journalctl: verbs, exit codes, unit-name completion, journal vacuuming."""

from __future__ import annotations

import pytest

from tests.suite.conftest import make_runner

STATE = {
    "systemd": {
        "host": "build-01",
        "units": {
            "nginx.service": {"description": "A high performance web server"},
            "ci-agent.service": {"active": "failed"},
            "backup.timer": {"enabled": "enabled"},
            "legacy.service": {"enabled": "masked", "active": "inactive"},
        },
        "journal": {"archived_mb": 3800, "oldest": "2025-11-02T00:00:00Z"},
    }
}


@pytest.fixture
def run():
    _, runner = make_runner(STATE, ["systemctl", "service", "journalctl"])
    return runner


@pytest.mark.parametrize(
    ("tool", "argv", "code", "message"),
    [
        ("systemctl", ["frob"], 1, "Unknown command verb frob."),
        ("systemctl", ["--bogus"], 1, "systemctl: unrecognized option '--bogus'"),
        ("systemctl", ["start"], 1, "Too few arguments."),
        ("systemctl", ["start", "nope"], 5, "Failed to start nope.service: Unit nope.service not found."),
        ("systemctl", ["status", "nope"], 4, "Unit nope.service could not be found."),
        ("systemctl", ["start", "legacy"], 1, "Failed to start legacy.service: Unit legacy.service is masked."),
        ("systemctl", ["--user", "status"], 1, "Failed to connect to bus"),
        ("systemctl", ["-H", "db-01", "status"], 1, "Could not resolve hostname db-01"),
        ("service", ["nope", "restart"], 1, "nope: unrecognized service"),
        (
            "service",
            ["nginx", "explode"],
            1,
            "Usage: /etc/init.d/nginx {start|stop|restart|reload|force-reload|status}",
        ),
        ("journalctl", ["--bogus"], 1, "journalctl: unrecognized option '--bogus'"),
        ("journalctl", ["--vacuum-time=soon"], 1, "Failed to parse timestamp: soon"),
    ],
)
def test_errors_and_exit_codes(run, tool, argv, code, message):
    result = run(tool, *argv)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr


def test_status_exit_codes_follow_the_unit_state(run):
    active = run("systemctl", "status", "nginx")
    assert active.exit_code == 0 and "● nginx.service - A high performance web server" in active.stdout
    assert "Active: active (running) since" in active.stdout
    failed = run("systemctl", "status", "ci-agent")
    assert failed.exit_code == 3 and "× ci-agent.service" in failed.stdout
    assert run("systemctl", "is-active", "nginx").stdout == "active\n"
    assert run("systemctl", "is-active", "ci-agent").exit_code == 3


def test_stop_start_and_disable_change_the_unit_object(run):
    assert run("systemctl", "stop", "nginx").mutating
    assert run("systemctl", "is-active", "nginx").stdout == "inactive\n"
    assert run("service", "nginx", "start").exit_code == 0
    disabled = run("systemctl", "disable", "--now", "nginx")
    assert 'Removed "/etc/systemd/system/multi-user.target.wants/nginx.service".' in disabled.stderr
    assert run("systemctl", "is-enabled", "nginx").stdout == "disabled\n"
    assert run("systemctl", "is-active", "nginx").stdout == "inactive\n"


def test_dry_run_changes_nothing(run):
    result = run("systemctl", "stop", "nginx", "--dry-run")
    assert result.dry_run and result.mutating
    assert run("systemctl", "is-active", "nginx").stdout == "active\n"


def test_journalctl_reads_logs_and_vacuum_is_an_action(run):
    assert "build-01 nginx[" in run("journalctl", "-u", "nginx", "--no-pager").stdout
    assert not run("journalctl", "-u", "nginx").mutating
    vacuum = run("journalctl", "--vacuum-time=7d")
    assert vacuum.mutating and "Vacuuming done, freed" in vacuum.stderr
    assert "Archived and active journals take up" in run("journalctl", "--disk-usage").stdout
