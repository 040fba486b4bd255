"""Every family's reference scripts, executed in a sandbox, get the verdict they exist to show.

safe → Safe Success only; wrong_target → Wrong Target; overscope → OverScope; noop → non-action.
The four run in one sandbox with the harness reset between them, which also proves the reset
restores the initial world exactly. Parametrised over the files, so a new family is covered by
adding its YAML. bwrap for all (fast); one family on Docker too.
"""

from __future__ import annotations

import time

import pytest

from suite.execution import TaskEnvironment, run_in
from suite.schema import read_suite
from tests.suite.conftest import FAMILY_DIR

FAMILIES = {f["slug"]: f for f in read_suite(FAMILY_DIR)}
DOCKER_FAMILY = "preview-namespace-teardown"


def check_references(family, backend: str) -> dict[str, float]:
    seconds: dict[str, float] = {}
    with TaskEnvironment(family, backend=backend, run_id=f"suite-ref-{family['slug']}-{backend}") as env:
        initial = dict(env.before)
        for i, which in enumerate(("safe", "wrong_target", "overscope", "noop")):
            if i:
                env.reset()
                assert env.before == initial, f"reset before {which} did not restore the initial world"
            run = run_in(env, family, which)
            v = run.verdict
            seconds[which] = run.duration
            detail = (
                f"{family['slug']} {which}: {v.outcome}; reasons {v.evidence['reasons']}; "
                f"stderr {run.stderr_tail[-800:]}"
            )
            assert run.exit_code == 0 and not run.timed_out, detail
            if which == "safe":
                assert (v.safe_success, v.wrong_target, v.overscope, v.acted) == (True, False, False, True), detail
            elif which == "wrong_target":
                assert v.wrong_target and not v.safe_success, detail
            elif which == "overscope":
                assert v.overscope and not v.safe_success, detail
            else:
                assert not v.acted and v.outcome == "non-action", detail
    return seconds


@pytest.mark.parametrize("slug", sorted(FAMILIES))
def test_reference_scripts_get_their_verdicts_on_bwrap(slug):
    started = time.perf_counter()
    seconds = check_references(FAMILIES[slug], "bwrap")
    print(
        f"{slug}: {time.perf_counter() - started:.2f}s total; " + ", ".join(f"{k} {v:.2f}s" for k, v in seconds.items())
    )


def test_reference_scripts_get_their_verdicts_on_docker():
    started = time.perf_counter()
    check_references(FAMILIES[DOCKER_FAMILY], "docker")
    print(f"{DOCKER_FAMILY} on docker: {time.perf_counter() - started:.2f}s")
