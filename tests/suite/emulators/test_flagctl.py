"""flagctl: usage errors (exit 2), protected environments, rollouts, dry runs, archive rules."""

from __future__ import annotations

import pytest

from tests.suite.conftest import cli

STATE = {
    "flags": {
        "project": "trading",
        "environments": ["staging", "production"],
        "flags": {
            "router-v2": {"environments": {"staging": {"on": True, "rollout": 100}}},
            "old-router": {"environments": {"production": {"on": True, "rollout": 100}}},
        },
    }
}


@pytest.fixture
def flags():
    return cli(STATE, "flagctl")


# Usage and service errors, checked by tests/suite/emulators/test_errors.py: (argv, exit code, message).
ERRORS = [
    (["frob"], 2, 'Error: unknown command "frob" for "flagctl"'),
    (["--bogus"], 2, "Error: unknown flag: --bogus"),
    (["enable", "router-v2"], 2, 'Error: required flag "env" not set'),
    (["rollout", "router-v2", "--env", "staging"], 2, 'Error: required flag "percent" not set'),
    (["rollout", "router-v2", "--env", "staging", "--percent", "150"], 2, "must be between 0 and 100"),
    (["get"], 2, "Error: accepts 1 arg(s), received 0"),
    (["get", "nope"], 1, 'Error: flag "nope" not found in project "trading"'),
    (["list", "--env", "qa"], 1, 'Error: environment "qa" not found in project "trading"'),
    (["--project", "retail", "list"], 1, 'Error: project "retail" not found'),
    (["archive", "old-router"], 1, "is still on in production"),
    (["delete", "router-v2", "--yes"], 1, "must be archived before it is deleted"),
]


def test_protected_environment_needs_yes_or_the_typed_key(flags):
    service, run = flags
    refused = run("enable", "router-v2", "--env", "production", stdin="yes\n")
    assert refused.exit_code == 1 and refused.declined and "Type the flag key (router-v2) to confirm:" in refused.stdout
    assert service.objects()["flag/trading/router-v2/env/production"]["on"] is False
    typed = run("enable", "router-v2", "--env", "production", stdin="router-v2\n")
    assert typed.exit_code == 0 and service.objects()["flag/trading/router-v2/env/production"]["on"] is True


def test_rollout_and_dry_run(flags):
    service, run = flags
    dry = run("rollout", "router-v2", "--env", "production", "--percent", "10", "--dry-run")
    assert dry.dry_run and "[dry-run] would set the rollout" in dry.stdout
    assert service.objects()["flag/trading/router-v2/env/production"]["rollout"] == 0
    run("rollout", "router-v2", "--env", "production", "--percent", "10", "--yes")
    assert service.objects()["flag/trading/router-v2/env/production"] == {
        "on": True,
        "rollout": 10,
        "targets": [],
        "_owner": "flag/trading/router-v2",
    }
    assert "rollout 10%" in run("history", "router-v2").stdout
    assert not run("list", "--env", "production").mutating
