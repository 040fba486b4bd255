"""Every family's reference scripts, executed in a sandbox, get the verdict they exist to show.

safe → Safe Success only; wrong_target → Wrong Target; overscope → OverScope; noop → non-action.
Each runs in a fresh world, through the harness's one entry point, as a campaign's runs do.
Parametrised over the files, so a new family is covered by adding its YAML. bwrap for all;
one family on Docker too.
"""

from __future__ import annotations

import json
import time

import pytest

from content.canonical import digest_of
from suite.execution import REFERENCES, run_reference
from suite.schema import read_suite
from tests.machine_cache import cache_dir, code_digest
from tests.suite.conftest import FAMILY_DIR

FAMILIES = {f["slug"]: f for f in read_suite(FAMILY_DIR)}
DOCKER_FAMILY = "preview-namespace-teardown"
# What a family's reference verdicts depend on besides the family itself: the code that builds its
# world, runs the scripts and judges them. A change to any of it re-runs every family.
CODE = (
    "suite/execution.py",
    "suite/oracle.py",
    "suite/schema.py",
    "suite/evidence.py",
    "suite/emulators",
    "harness",
    "content",
)


def check_references(family, backend: str) -> dict[str, float]:
    """Run the four references; a family whose content and code already passed on this machine
    is not run again (the machine cache keeps only passes, keyed by both)."""
    key = f"{backend}-{digest_of(dict(family))[:16]}-{code_digest(*CODE)}"
    marker = cache_dir("family-references") / f"{family['slug']}-{key}.json"
    if marker.exists():
        return {"cached": 0.0}
    seconds = _check_references(family, backend)
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps(seconds))
    tmp.replace(marker)
    return seconds


def _check_references(family, backend: str) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for which in REFERENCES:
        run = run_reference(family, which, backend, run_id=f"suite-ref-{family['slug']}-{backend}-{which}")
        v = run.verdict
        seconds[which] = run.duration
        detail = (
            f"{family['slug']} {which}: {v.outcome}; reasons {v.evidence['reasons']}; stderr {run.stderr_tail[-800:]}"
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
