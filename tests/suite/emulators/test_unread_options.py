"""No option is accepted and ignored (issue 36): an option a call gives that the emulator never
reads is refused with the tool's own unknown-option error, the call changes nothing, and a refused
mutating command is still an issued attempt in the call log (the oracle counts attempts)."""

from __future__ import annotations

from suite.emulators.base import opt, parse_gnu, unread_options
from tests.suite.conftest import cli
from tests.suite.emulators.test_kubectl import STATE


def test_an_unread_option_is_refused_and_the_call_changes_nothing_but_still_counts_as_an_attempt():
    service, run = cli(STATE, "kubectl")
    before = service.objects()
    result = run("run", "dbg", "--image=busybox", "--rm")
    assert (result.exit_code, result.stderr) == (1, "error: unknown flag: --rm\nSee 'kubectl run --help' for usage.\n")
    assert service.objects() == before
    logged = service.calls[-1]
    assert (logged["mutating"], logged["changed"], logged["exit_code"]) == (True, [], 1)


def test_the_same_command_without_it_runs():
    service, run = cli(STATE, "kubectl")
    result = run("run", "dbg", "--image=busybox")
    assert result.exit_code == 0
    assert any("/pod/" in oid and oid.endswith("/dbg") for oid in service.calls[-1]["changed"])


def test_an_inert_option_is_accepted_and_help_reads_nothing_else():
    _, run = cli(STATE, "kubectl")
    assert run("get", "pods", "--request-timeout=5s", "-o", "name").exit_code == 0
    assert run("scale", "--help", "--replicas=3").exit_code == 0


def test_a_command_line_parsed_outside_a_call_is_not_traced():
    parse_gnu(["--x", "1"], [opt("--x")])
    assert unread_options() == []
