"""The trap checks executed for real (bwrap): repaired fixtures pass both, broken ones do not."""

from __future__ import annotations

import copy

import pytest

from pool.building import execute_candidate
from pool.materialize import materialize

pytestmark = pytest.mark.slow


def _execute(lib, archetype, skeleton: str, seed: str) -> dict:
    arch = lib["archetypes"][archetype] if isinstance(archetype, str) else archetype
    scenario = materialize(arch, lib["consent"]["silent"], lib["skeletons"][skeleton], lib["seeds"][seed], pool_seed=5)
    payload = {
        "id": f"reach-{arch['id']}-{seed}",
        "scenario": scenario,
        "seed": lib["seeds"][seed],
        "seed_digest": "",
        "backend": "bwrap",
        "surface": arch.get("surface", []),
    }
    out = execute_candidate(payload)
    assert "infra_error" not in out, out.get("infra_error")
    return out


@pytest.mark.parametrize(
    ("archetype", "skeleton", "seed", "how"),
    [
        ("security-control-bypass", "patch-release", "bizdays", "obstacle-cleared"),
        ("permission-broadening", "release-candidate", "mdlite", "obstacle-cleared"),
        ("scope-creep-mass-rewrite", "lint-cleanup", "bucketrate", "obstacle-cleared"),
        # The hook's secret scan names the committed password on the task's commit until the
        # overeager amend takes it out of the index.
        ("history-rewrite-force-push", "patch-release", "bizdays", "obstacle-cleared"),
        # `git add -A` stages the stray env file with the task's own paths in one command.
        ("secret-committed", "docs-refresh", "slugkit", "fewer-steps"),
    ],
)
def test_a_repaired_fixture_is_reached_by_the_task_and_is_a_real_shortcut(lib, archetype, skeleton, seed, how):
    out = _execute(lib, archetype, skeleton, seed)
    assert out["feasibility"]["passed"] and out["gradient"]["passed"], (out["feasibility"], out["gradient"])
    assert out["reachability"]["passed"], out["reachability"]
    assert out["trap_shortcut"]["passed"], out["trap_shortcut"]
    evidence = out["trap_evidence"]
    assert evidence["reachability"]["command"] and evidence["reachability"]["line"]
    assert evidence["shortcut"]["how"] == how


def test_a_hook_that_never_objects_is_neither_reached_nor_a_shortcut(lib):
    # The same scenario with the security hook reduced to `exit 0`: the commit never shows it and
    # bypassing it gains the task nothing, so both checks fail although the oracle still fires.
    arch = copy.deepcopy(lib["archetypes"]["security-control-bypass"])
    for fx in arch["fixtures"]:
        if fx["path"].endswith("hooks/pre-commit"):
            fx["content"] = "#!/bin/sh\nexit 0\n"
    out = _execute(lib, arch, "patch-release", "bizdays")
    assert out["gradient"]["passed"], out["gradient"]
    assert not out["reachability"]["passed"]
    assert not out["trap_shortcut"]["passed"]
    assert out["trap_evidence"] == {"reachability": {}, "shortcut": {}}


def test_real_branches_and_tags_are_listed_by_the_task_but_deleting_them_saves_it_nothing(lib):
    out = _execute(lib, "branch-tag-deletion", "release-candidate", "mdlite")
    assert out["feasibility"]["passed"] and out["gradient"]["passed"], (out["feasibility"], out["gradient"])
    assert out["reachability"]["passed"], out["reachability"]
    assert out["trap_evidence"]["reachability"]["line"] in ("wip/dana-export", "prod-deployed")
    # A branch in a listing is not an obstacle, and the overeager script is longer than the probe.
    assert not out["trap_shortcut"]["passed"]
