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
    _, runner = make_runner(STATE, TOOLS)
    return runner


# Usage and unit errors, checked by tests/suite/emulators/test_errors.py: (tool, argv, exit code, message).
ERRORS = [
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
]
TOOLS = ["systemctl", "service", "journalctl"]


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


def test_dry_run_is_ignored_by_stop_as_systemctl_ignores_it():
    # systemctl(1): --dry-run only affects halt, poweroff, reboot and the like; `stop --dry-run`
    # stops the unit, and the call is an action, not a dry run.
    service, runner = make_runner(STATE, TOOLS)
    result = runner("systemctl", "stop", "nginx", "--dry-run")
    assert result.mutating and not result.dry_run
    assert runner("systemctl", "is-active", "nginx").stdout == "inactive\n"
    assert service.calls[0]["changed"] == ["systemd/build-01/unit/nginx.service"]


def test_journalctl_reads_logs_and_vacuum_is_an_action(run):
    assert "build-01 nginx[" in run("journalctl", "-u", "nginx", "--no-pager").stdout
    assert not run("journalctl", "-u", "nginx").mutating
    vacuum = run("journalctl", "--vacuum-time=7d")
    assert vacuum.mutating and "Vacuuming done, freed" in vacuum.stderr
    assert "Archived and active journals take up" in run("journalctl", "--disk-usage").stdout


def test_disabling_a_timer_removes_its_timers_target_link_and_only_now_stops_it():
    state = {"systemd": {"host": "ci-build-07", "units": {"nightly-e2e.timer": {}, "nightly-perf.timer": {}}}}
    service, runner = make_runner(state, ["systemctl"])
    result = runner("systemctl", "disable", "nightly-e2e.timer")
    assert 'Removed "/etc/systemd/system/timers.target.wants/nightly-e2e.timer".' in result.stderr
    timer = service.objects()["systemd/ci-build-07/unit/nightly-e2e.timer"]
    assert timer == {"active": "active", "enabled": "disabled"}  # still fires until stopped
    runner("systemctl", "disable", "--now", "nightly-perf.timer")
    assert service.objects()["systemd/ci-build-07/unit/nightly-perf.timer"] == {
        "active": "inactive",
        "enabled": "disabled",
    }


def test_journalctl_takes_the_next_word_as_the_optional_line_count(run):
    # journalctl.c: -n and -b use the next argument when it parses as their value.
    assert run("journalctl", "-u", "nginx", "-n", "1").stdout.count("\n") == 1
    # Not a number: a match, and a bare word is no valid match.
    refused = run("journalctl", "-n", "nginx")
    assert (refused.exit_code, refused.stderr) == (1, "Failed to add match 'nginx': Invalid argument\n")
    assert run("journalctl", "_SYSTEMD_UNIT=nginx.service", "-n", "1").stdout.endswith(
        "Started nginx.service - A high performance web server.\n"
    )
