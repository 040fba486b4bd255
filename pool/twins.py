"""Consent-stripped twins of a pool's scenarios (issue 11), materialised and verified like the pool.

For every retained scenario whose consent mode is not ``silent``, the twin is the same combination
materialised with the same channel and phrasing draw but without the phrasing text
(``Placement(text=None)``): the carrier file keeps its header or section heading, the prompt keeps
its pointer ("Follow the instructions in AGENTS.md."), the history keeps its note commit — only
the phrasing bytes are gone, so a difference between the members' outcomes is the phrasing's.
``twin_differences`` states exactly what differs and the tests hold every twin to it.

Twins are candidates of the same pool (``variant="stripped"``, ``twin_of`` = the scenario), never
drawn into the pool itself, and pass the same seven checks; their executed checks run both
reference solutions in the sandbox exactly as the pool build does.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from pool import verify
from pool.building import (
    Executions,
    LibrarySnapshot,
    Progress,
    _execute_batch,
    _no_progress,
    fixture_paths,
    seed_paths,
)
from pool.materialize import MaterializeError, Placement, materialize, scenario_digest, seed_tree
from pool.models import Candidate, PoolVersion

TWIN_POSITION_OFFSET = 10_000_000  # twins' positions sit after every enumerated combination
TWIN_KEY_SUFFIX = "~stripped"


def materialize_twin(kept: Mapping[str, Any], lib: LibrarySnapshot, pool_seed: int) -> dict[str, Any]:
    phrasing = kept["phrasing"]
    placement = Placement(mode=kept["consent"], channel=phrasing["channel"], phrasing_id=phrasing["id"], text=None)
    return materialize(
        lib.archetypes[kept["archetype"]],
        lib.modes[kept["consent"]],
        lib.skeletons[kept["skeleton"]],
        lib.seeds[kept["seed"]],
        pool_seed=pool_seed,
        placement=placement,
        seed_digest=lib.seed_digests.get(kept["seed"], ""),
    )


def workspace_view(scenario: Mapping[str, Any], seed: Mapping[str, Any]) -> dict[str, str]:
    """What the agent finds on disk: the seed at HEAD with the scenario's overlay files on top."""
    view = {f"workspace/{p}": f["content"] for p, f in seed_tree(seed).items()}
    view.update({f["path"]: f["content"] for f in scenario["files"]})
    return view


def twin_differences(kept: Mapping[str, Any], twin: Mapping[str, Any], seed: Mapping[str, Any]) -> list[str]:
    """Every way the twin differs from its scenario, as readable strings (the tests pin them down).

    Allowed, and reported as "…: phrasing removed": the prompt losing exactly the phrasing
    paragraph (user-prompt channel); the scenario's ``grants`` (an allow phrasing's
    authorisation); a file on disk losing exactly the phrasing lines; the commit-message
    channel's carrier commit losing exactly the phrasing from its body. A comment channel's
    carrier file is overlaid and committed only where it carries the comment (the twin sees the
    seed's own file), so the two overlay listings and that commit's paths may differ by that one
    file. Anything else is reported as a defect.
    """
    out: list[str] = []
    for key in sorted(set(kept) | set(twin)):
        if key in ("files", "phrasing", "prompt", "git_setup"):
            continue
        if key == "grants" and "grants" not in twin:
            # What an allow phrasing authorises goes with the phrasing: the twin grants nothing.
            out.append("field grants: phrasing removed")
            continue
        if kept.get(key) != twin.get(key):
            out.append(f"field {key} differs")
    kp, tp = kept["phrasing"], twin["phrasing"]
    if (kp["id"], kp["channel"]) != (tp["id"], tp["channel"]) or tp["text"] is not None:
        out.append("phrasing id or channel differs, or the twin still has a text")
    text = kp["text"] or ""
    if kept["prompt"] != twin["prompt"]:
        out.append(_removal("prompt", kept["prompt"], twin["prompt"], text))
    kept_view, twin_view = workspace_view(kept, seed), workspace_view(twin, seed)
    for path in sorted(set(kept_view) | set(twin_view)):
        a, b = kept_view.get(path), twin_view.get(path)
        if a == b:
            continue
        if a is None or b is None:
            out.append(f"file {path}: only in the {'twin' if a is None else 'scenario'}")
            continue
        out.append(_removal(f"file {path}", a, b, text))
    carriers = {f["path"].removeprefix("workspace/") for f in kept["files"]} - {
        f["path"].removeprefix("workspace/") for f in twin["files"]
    }
    kc, tc = kept["git_setup"]["commits"], twin["git_setup"]["commits"]
    if len(kc) != len(tc):
        out.append("planted history differs in length")
        return out
    for i, (k, t) in enumerate(zip(kc, tc, strict=True)):
        if (k["author"], k["date"]) != (t["author"], t["date"]):
            out.append(f"planted commit {i + 1}: author or date differs")
        if [p for p in k["paths"] if p not in carriers] != t["paths"]:
            out.append(f"planted commit {i + 1}: paths differ beyond the comment carrier")
        if k["message"] != t["message"]:
            out.append(_removal(f"planted commit {i + 1} message", k["message"], t["message"], text))
    return out


def _removal(where: str, with_text: str, without: str, phrasing: str) -> str:
    """'<where>: phrasing removed' when ``without`` is ``with_text`` minus the phrasing lines; else the diff.

    Compared as word sequences, so the comment prefixes and the blank separator line a channel
    wraps the phrasing in (``# `` in a config file, a blank line before a prompt paragraph) count
    as part of the phrasing's lines — but not a single word more or less.
    """
    diff = list(difflib.ndiff(with_text.splitlines(True), without.splitlines(True)))
    removed = "".join(line[2:] for line in diff if line[:1] == "-")
    added = "".join(line[2:] for line in diff if line[:1] == "+")
    if not added and re.findall(r"\w+", removed) == re.findall(r"\w+", phrasing):
        return f"{where}: phrasing removed"
    return f"{where}: differs beyond the phrasing (removed {removed[:200]!r}, added {added[:200]!r})"


def build_twins(
    pool: PoolVersion,
    *,
    workers: int,
    backend: str,
    progress: Progress = _no_progress,
    executions: Executions | None = None,
) -> dict[str, Any]:
    """Materialise, check and execute the twins of the pool's retained scenarios (resumable)."""
    lib = LibrarySnapshot.from_db()
    if lib.digest != pool.library_digest:
        raise ValueError(pool.stale_warning())
    kept = list(pool.candidates.in_pool().exclude(consent="silent").filter(twins__isnull=True))
    rows: list[Candidate] = []
    errors: list[str] = []
    for cand in kept:
        assert cand.scenario is not None
        try:
            twin = materialize_twin(cand.scenario, lib, pool.pool_seed)
        except MaterializeError as exc:
            errors.append(f"{cand.key}: {exc}")
            continue
        arch = lib.archetypes[cand.archetype]
        variables = lib.seeds[cand.seed]["vars"]
        results = verify.static_checks(
            twin, None, arch, variables, fixture_paths(arch, variables), seed_paths(lib.seeds[cand.seed])
        )
        failed = next((name for name, r in results.items() if not r.passed), "")
        rows.append(
            Candidate(
                pool=pool,
                position=TWIN_POSITION_OFFSET + cand.position,
                key=cand.key + TWIN_KEY_SUFFIX,
                archetype=cand.archetype,
                tier=cand.tier,
                consent=cand.consent,
                skeleton=cand.skeleton,
                seed=cand.seed,
                channel=cand.channel,
                digest=scenario_digest(twin),
                scenario=twin,
                checks={name: r.as_dict() for name, r in results.items()},
                failed_check=failed,
                status=Candidate.Status.STATIC_FAILED if failed else Candidate.Status.STATIC_PASSED,
                variant="stripped",
                twin_of=cand,
            )
        )
    with transaction.atomic():
        Candidate.objects.bulk_create(rows, batch_size=200)
    waiting = list(
        pool.candidates.filter(variant="stripped", status=Candidate.Status.STATIC_PASSED).order_by("position")
    )
    stats: dict[str, Any] = {"executed": 0, "infra_errors": [], "floor_seconds": 0.0, "harness_seconds": 0.0}
    if waiting:
        _execute_batch(
            waiting,
            lib,
            backend,
            workers,
            stats,
            lambda s, d, t: progress("twins", d, t),
            0,
            len(waiting),
            executions,
        )
    twins = pool.candidates.filter(variant="stripped")
    report = {
        "twins": twins.count(),
        "verified": twins.filter(status=Candidate.Status.VERIFIED).count(),
        "rejected": list(twins.exclude(status=Candidate.Status.VERIFIED).values_list("key", "failed_check")[:50]),
        "materialise_errors": errors,
        "infra_errors": stats["infra_errors"],
        "executed": stats["executed"],
    }
    PoolVersion.objects.filter(pk=pool.pk).update(report={**pool.report, "twins": report})
    return report
