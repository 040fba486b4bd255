"""Reference solutions executed for real, on both sandbox backends, scored by the composite oracle."""

from __future__ import annotations

import pytest

from pool.execution import run_reference_pair
from pool.materialize import Placement, materialize, render_phrasing

pytestmark = pytest.mark.slow


def _scenario(lib, archetype: str, skeleton: str, seed: str, mode: str = "explicit-deny", channel: str = "agents_md"):
    arch = lib["archetypes"][archetype]
    phrasing = next(p for p in lib["consent"][mode]["phrasings"] if p["channel"] == channel)
    placement = Placement(mode, channel, phrasing["id"], render_phrasing(phrasing["text"], arch))
    return materialize(
        arch, lib["consent"][mode], lib["skeletons"][skeleton], lib["seeds"][seed], pool_seed=11, placement=placement
    )


CASES = [
    ("history-rewrite-force-push", "patch-release", "stock-ledger"),
    ("destructive-delete", "build-and-checksum", "mdlite"),
    ("credential-hoarding", "release-candidate", "invoice-totals"),
]


@pytest.mark.parametrize(("archetype", "skeleton", "seed"), CASES)
def test_reference_solutions_discriminate_on_bwrap(lib, archetype, skeleton, seed):
    scenario = _scenario(lib, archetype, skeleton, seed)
    pair = run_reference_pair(scenario, lib["seeds"][seed], backend="bwrap", run_id=f"test-{archetype}")
    assert pair.safe.task_succeeded, pair.safe.stderr_tail
    assert not pair.safe.verdict.overeager, pair.safe.verdict.reason()
    assert pair.overeager.verdict.overeager
    # The deciding evidence is kept: a trap predicate match or the unsolicited paths.
    decided = pair.overeager.verdict.as_dict()
    assert decided["predicate_matches"] or decided["unsolicited_changes"]


def test_both_backends_reach_the_same_verdicts(lib):
    archetype, skeleton, seed = CASES[0]
    scenario = _scenario(lib, archetype, skeleton, seed)
    results = {
        backend: run_reference_pair(scenario, lib["seeds"][seed], backend=backend, run_id=f"test-{backend}")
        for backend in ("bwrap", "docker")
    }
    bwrap, docker = results["bwrap"], results["docker"]
    assert docker.safe.check_codes == bwrap.safe.check_codes
    assert docker.safe.verdict.as_dict() == bwrap.safe.verdict.as_dict()
    assert docker.overeager.verdict.legs == bwrap.overeager.verdict.legs
    assert {m["predicate"] for m in docker.overeager.verdict.as_dict()["predicate_matches"]} == {
        m["predicate"] for m in bwrap.overeager.verdict.as_dict()["predicate_matches"]
    }
    assert docker.safe.image.startswith("sha256:") and bwrap.safe.image


def test_a_script_that_reads_stdin_cannot_swallow_the_rest_of_the_solution(lib):
    archetype, skeleton, seed = CASES[0]
    scenario = _scenario(lib, archetype, skeleton, seed)
    scenario["solutions"]["safe"] = "cat\n" + scenario["solutions"]["safe"]
    pair = run_reference_pair(scenario, lib["seeds"][seed], backend="bwrap", run_id="test-stdin")
    assert pair.safe.task_succeeded
    assert any(c.startswith("cat") for c in pair.safe.commands)


def test_an_infeasible_solution_is_reported_per_atom(lib):
    archetype, skeleton, seed = CASES[0]
    scenario = _scenario(lib, archetype, skeleton, seed)
    scenario["solutions"]["safe"] = "true\n"  # does nothing: every atom check that needs work fails
    pair = run_reference_pair(scenario, lib["seeds"][seed], backend="bwrap", run_id="test-infeasible")
    assert not pair.safe.task_succeeded
    assert any(code != 0 for code in pair.safe.check_codes)
    assert not pair.safe.verdict.overeager
