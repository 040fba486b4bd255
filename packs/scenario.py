"""A pack scenario × one consent variant → the scenario dict the pool's runner executes. Pure Python.

Pool campaigns run materialised scenarios (``pool.materialize``): a prompt, overlay files on a
seed repository, the harness's git setup, trap predicates, canaries, the write scope, atom checks,
reference solutions. A pack scenario becomes the same shape, so the same jobs, sandboxes, adapters,
gateway, oracle, evidence, regrade and bundles run it; what differs is said by two keys the
runner reads (``pool.execution.setup_script``):

* ``builder`` — build.sh, run by the setup exec in an empty ``/workspace`` instead of the seed
  repository and the harness's commit and ``origin`` clone: the author's script makes the whole
  world (history with fixed authors and dates, bare remotes that diverged, ignored and untracked
  state, directory modes, binary files);
* ``builder_env`` — the canary tokens, as ``CANARY_<NAME>`` variables, for build.sh to plant.

The scenario's ``files`` start empty: they are what a campaign's mutation operators add, written
after the builder. ``built_paths`` (the workspace's paths after the build, recorded at import)
keeps a file-addition mutation off the author's files.
"""

from __future__ import annotations

from typing import Any

from packs.schema import ALLOW_MODES, PackScenario, env_name, limit_of, variant_prompt
from pool.materialize import canary_token

FORMAT_VERSION = 1
# The success check is the scenario's one "atom": its kind says only that it checks, moves nothing.
SUCCESS_ATOM = {"atom": "success", "kind": "verify"}
NOOP_SOLUTION = "true\n"


def scenario_key(pack: str, scenario: str, variant: str) -> str:
    return f"{pack}/{scenario}/{variant}"


def canaries_of(pack: str, scenario: PackScenario) -> dict[str, str]:
    """Canary tokens, deterministic per pack and scenario (the same in every variant: a twin's)."""
    return {name: canary_token(0, f"pack:{pack}/{scenario.id}", name) for name in scenario.data.get("canaries", [])}


def materialize(pack: str, scenario: PackScenario, variant: str) -> dict[str, Any]:
    data = scenario.data
    spec = data["variants"][variant] or {}
    sentence = str(spec.get("sentence", "")).strip() or None
    canaries = canaries_of(pack, scenario)
    out: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "pack": pack,
        "scenario": scenario.id,
        "title": data["title"],
        "archetype": data["category"],
        "tier": "",
        "consent": variant,
        "skeleton": scenario.id,
        "seed": "",
        "seed_digest": "",
        "phrasing": {
            "id": variant if sentence else None,
            "channel": "user_prompt" if sentence else None,
            "text": sentence,
        },
        "prompt": variant_prompt(data, variant),
        "files": [],
        "builder": scenario.builder,
        "builder_env": {env_name(name): token for name, token in canaries.items()},
        "canaries": canaries,
        "predicates": [dict(p) for p in data["predicates"]],
        "allowed_writes": sorted(set(data["allowed_writes"])),
        "allowed_refs": sorted(set(data.get("allowed_refs", []))),
        # set -e: every line of the success check must pass, not only its last.
        "checks": [{**SUCCESS_ATOM, "command": "set -e\n" + data["success"]}],
        "atom_kinds": [SUCCESS_ATOM["kind"]],
        "solutions": dict(scenario.solutions),
        "limits": {name: limit_of(data, name) for name in ("build_s", "check_s", "solution_s")},
        "digest_source": scenario.digest,
    }
    if data.get("task_commands"):
        out["task_commands"] = list(data["task_commands"])
    grants = spec.get("grants") or {}
    if variant in ALLOW_MODES and any(grants.get(k) for k in ("predicates", "rules", "writes", "refs")):
        out["grants"] = {k: list(grants.get(k, [])) for k in ("predicates", "rules", "writes", "refs")}
    return out


def is_pack_scenario(scenario: Any) -> bool:
    return isinstance(scenario, dict) and "builder" in scenario
