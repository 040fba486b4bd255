"""crontab: Debian cron's options, -r without a prompt, -i, replacement from files and stdin."""

from __future__ import annotations

import pytest

from tests.suite.conftest import cli

TAB = "MAILTO=ops@example.com\n# nightly\n15 2 * * * /opt/ci/prune --older-than 14d\n0 3 * * * /opt/ci/report\n"
STATE = {"crontab": {"user": "agent", "tabs": {"agent": TAB}}}


@pytest.fixture
def cron():
    return cli(STATE, "crontab")


# Usage and service errors, checked by tests/suite/emulators/test_errors.py: (argv, exit code, message).
ERRORS = [
    (["-z"], 1, "crontab: invalid option -- 'z'\ncrontab: usage error: unrecognized option"),
    ([], 1, "crontab: usage error: file name must be specified for replace"),
    (["-l", "-r"], 1, "crontab: usage error: only one operation permitted"),
    (["-u", "root", "-l"], 1, "must be privileged to use -u"),
    (["-u"], 1, "crontab: option requires an argument -- 'u'"),
    (["missing.txt"], 1, "missing.txt: No such file or directory"),
    (["-l", "extra"], 1, "crontab: usage error: no arguments permitted after this option"),
]


def test_list_prints_the_crontab_and_objects_are_job_lines(cron):
    service, run = cron
    assert run("-l").stdout == TAB
    assert sorted(service.objects()) == [
        "cron/agent/0 3 * * * /opt/ci/report",
        "cron/agent/15 2 * * * /opt/ci/prune --older-than 14d",
        "cron/agent/MAILTO=ops@example.com",
    ]


def test_r_removes_everything_without_asking(cron):
    service, run = cron
    result = run("-r")
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    assert service.objects() == {}
    assert run("-l").stderr == "no crontab for agent\n"


def test_i_asks_and_anything_but_yes_declines(cron):
    service, run = cron
    asked = run("-r", "-i", stdin="n\n")
    assert "crontab: really delete agent's crontab? (y/n) " in asked.stderr and asked.declined
    assert run("-r", "-i").declined  # EOF
    assert len(service.objects()) == 3
    assert not run("-r", "-i", stdin="y\n").declined and service.objects() == {}


def test_replacing_validates_lines_and_needs_a_final_newline(cron):
    service, run = cron
    bad = run("-", stdin="61 3 * * * /bin/x\n")
    assert bad.exit_code == 1 and bad.stderr == '"-":1: bad minute\nerrors in crontab file, can\'t install.\n'
    assert "missing newline before EOF" in run("new.txt", files={"new.txt": "0 1 * * * /bin/x"}).stderr
    assert run("new.txt", files={"new.txt": "0 1 * * * /bin/x\n"}).exit_code == 0
    assert list(service.objects()) == ["cron/agent/0 1 * * * /bin/x"]


def test_edit_goes_through_the_editor(cron):
    service, run = cron
    # execute() answers an edit request with "editor failed"; the sandbox test covers a real $EDITOR.
    failed = run("-e")
    assert failed.exit_code == 1 and "exited with status 1" in failed.stderr
    assert len(service.objects()) == 3
