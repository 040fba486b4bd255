"""Importing scenario packs: validate, build and check every scenario in the sandbox, then record.

All or nothing, like the library loader: the files of every pack given are validated first
(``packs.schema``), then every scenario is executed, and only when no problem was found anywhere is
anything written — the pack version, its scenarios, and its runnable pool (one verified
``Candidate`` per scenario × consent variant). The executed checks, per scenario:

* **build** — build.sh succeeds in the sandbox (both backends run the same script);
* **contained** — the world it built stays in its roots: no symlink pointing out of them;
* **not already done** — the success check fails on the world as built (a check that already
  passes measures nothing);
* **quiet baseline** — the oracle finds nothing when nothing is done (else every run would count);
* with reference solutions, the pool's **feasibility** (the success check passes after the safe
  solution) and **discriminative gradient** (the safe solution is not overeager, the overeager
  one is), for every distinct consent grant of the scenario's variants.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import secrets
import stat
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from content.canonical import digest_of
from content.schema import ContentError
from harness.sandbox.base import SandboxError, resolve_backend
from harness.sandbox.manifest import ROOTS as MANIFEST_ROOTS
from packs.models import PackScenario, ScenarioPack
from packs.scenario import materialize, scenario_key
from packs.schema import (
    BUILDER,
    CONSENT_MODES,
    PACK_FILE,
    README,
    SCENARIO_FILE,
    SOLUTIONS,
    Pack,
    PackError,
    PackInvalid,
    read_packs,
)
from packs.schema import PackScenario as SourceScenario
from pool.execution import EMPTY_SEED, run_baseline, run_reference_pair
from pool.models import Candidate, PoolVersion

VERIFY_WORKERS = 2
# Where a symlink built into a root may point (absolute targets): the sandbox's own roots and /tmp.
SANDBOX_ROOTS = ("/workspace", "/home/agent", "/srv/remote", "/tmp")  # noqa: S108 - paths inside the sandbox


@dataclass
class Verified:
    """One scenario after its executed checks: its variants' runnable scenarios and check results."""

    source: SourceScenario
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)


@dataclass
class ImportResult:
    pack: ScenarioPack
    created: bool
    lines: list[str] = field(default_factory=list)


def _sandbox_path(key: str) -> str:
    """A manifest key (``workspace/a/b``) as the absolute path inside the sandbox."""
    root, _, rel = key.partition("/")
    return posixpath.join(MANIFEST_ROOTS[root], rel) if root in MANIFEST_ROOTS else "/" + key


def resolve(path: str, links: dict[str, str], hops: int = 40) -> str | None:
    """``path`` resolved the way the kernel will: component by component, through the symlinks
    ``links`` (absolute path → target) and ``..`` after them, never lexically first (``t -> /tmp``
    then ``t/../etc`` is ``/etc``); None for a loop."""
    todo = [p for p in path.split("/") if p]
    done: list[str] = []
    while todo:
        part = todo.pop(0)
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        target = links.get("/" + "/".join([*done, part]))
        if target is None:
            done.append(part)
            continue
        hops -= 1
        if hops < 0:
            return None
        if target.startswith("/"):
            done = []
        todo = [p for p in target.split("/") if p] + todo
    return "/" + "/".join(done)


def _escaping_symlinks(manifest: dict[str, Any]) -> list[str]:
    """Symlinks the build left whose target, resolved through every other symlink it built, is
    outside the sandbox's roots and ``/tmp``."""
    links = {
        _sandbox_path(key): str(entry.target)
        for key, entry in manifest.items()
        if entry.type == "symlink" and entry.target is not None
    }
    out = []
    for path, entry in sorted(manifest.items()):
        if entry.type != "symlink" or entry.target is None:
            continue
        final = resolve(_sandbox_path(path), links)
        if final is None:
            continue  # a loop points nowhere, and so not out
        if not any(final == r or final.startswith(r + "/") for r in SANDBOX_ROOTS):
            out.append(f"{path} → {entry.target}" + (f" (resolves to {final})" if final != entry.target else ""))
    return out


def _ok(reason: str) -> dict[str, Any]:
    return {"passed": True, "reason": reason}


def verify_scenario(pack: Pack, source: SourceScenario, backend: str) -> tuple[Verified, list[ContentError]]:
    """Build ``source`` in a sandbox and run its checks; the problems found, as content errors."""
    sid = source.id
    folder = f"{pack.id}/{sid}"
    errors: list[ContentError] = []

    def problem(fname: str, fld: str, message: str) -> None:
        errors.append(PackError(f"{folder}/{fname}", sid, fld, message))

    variants = [v for v in CONSENT_MODES if v in source.data["variants"]]
    done = Verified(source, {v: materialize(pack.id, source, v) for v in variants})
    base = done.variants["silent"]
    try:
        baseline = run_baseline(base, EMPTY_SEED, backend=backend, run_id=f"pack-{sid}-build")
    except (RuntimeError, SandboxError) as exc:
        problem(BUILDER, "", f"the build failed in the {backend} sandbox: {exc}")
        return done, errors
    checks: dict[str, Any] = {"build": _ok(f"build.sh succeeded ({backend})")}
    escapes = _escaping_symlinks(baseline.manifest)
    if escapes:
        problem(BUILDER, "", f"builds symlinks that point out of the sandbox's roots: {', '.join(escapes[:5])}")
    else:
        checks["contained"] = _ok("every symlink stays inside its root")
    codes = baseline.run.check_codes or [None]
    check_s = source.limit("check_s")
    if baseline.run.checks_timed_out:
        problem(
            SCENARIO_FILE,
            "success",
            f"the success check did not finish: timed out after {check_s} s (limits.check_s) on the world as built;"
            " it must end, and fail, before any change",
        )
    elif codes[0] == 0:
        problem(
            SCENARIO_FILE,
            "success",
            "the success check already passes before any change; it must fail on the world as built",
        )
    else:
        checks["not_already_done"] = _ok(f"the success check fails before any change (exit {codes[0]})")
    assert baseline.run.verdict is not None
    if baseline.run.verdict.overeager:
        problem(
            BUILDER,
            "",
            f"the oracle flags the world as built when nothing is done: {baseline.run.verdict.reason()}",
        )
    else:
        checks["quiet_baseline"] = _ok("a no-op run is scored not overeager")
    # What a file-addition mutation must not land on (its files are written after build.sh).
    built = sorted(p for p in baseline.manifest if p.startswith(("workspace/", "home/")) and "/.git/" not in p)
    for v in variants:
        done.variants[v]["built_paths"] = built
    per_variant: dict[str, dict[str, Any]] = {v: {} for v in variants}
    if source.solutions and not errors:
        # The reference solutions see no prompt: variants differ for them only by their grants.
        groups: dict[str, list[str]] = {}
        for v in variants:
            groups.setdefault(json.dumps(done.variants[v].get("grants") or {}, sort_keys=True), []).append(v)
        for members in groups.values():
            scenario = done.variants[members[0]]
            try:
                pair = run_reference_pair(scenario, EMPTY_SEED, backend=backend, run_id=f"pack-{sid}-{members[0]}")
            except (RuntimeError, SandboxError) as exc:
                problem(BUILDER, "", f"the build failed while running the reference solutions: {exc}")
                continue
            safe, over = pair.safe, pair.overeager
            assert safe.verdict is not None and over.verdict is not None
            where = ", ".join(members)
            result: dict[str, Any] = {}
            if safe.checks_timed_out:
                problem(
                    SOLUTIONS["safe"],
                    "",
                    f"the success check did not finish after the safe solution (variants {where}):"
                    f" timed out after {check_s} s (limits.check_s)",
                )
            elif (safe.check_codes or [None])[0] != 0:
                problem(
                    SOLUTIONS["safe"],
                    "",
                    f"the success check still fails after the safe solution (variants {where};"
                    f" exit {(safe.check_codes or [None])[0]}): {safe.stderr_tail[-300:]}",
                )
            else:
                result["feasibility"] = _ok("the success check passes after the safe solution")
            if safe.verdict.overeager:
                problem(
                    SOLUTIONS["safe"],
                    "",
                    f"the safe solution is scored overeager (variants {where}): {safe.verdict.reason()}",
                )
            elif not over.verdict.overeager:
                problem(
                    SOLUTIONS["overeager"],
                    "",
                    f"the overeager solution is not scored overeager (variants {where}); the trap predicates"
                    " or the write scope do not see what it does",
                )
            else:
                result["gradient"] = _ok(f"safe solution clean; overeager solution caught: {over.verdict.reason()}")
            result["seconds"] = round(safe.timings["total"] + over.timings["total"], 2)
            for v in members:
                per_variant[v] = result
    done.checks = {
        "scenario": checks,
        "variants": per_variant,
        "baseline_seconds": round(baseline.run.timings["total"], 2),
    }
    return done, errors


def import_packs(
    roots: Sequence[Path], *, backend: str = "auto", out: Callable[[str], object] = print
) -> list[ImportResult]:
    """Validate, verify and record every pack in ``roots``; ``PackInvalid`` (nothing written) on any problem."""
    packs = read_packs([Path(r) for r in roots])
    concrete = resolve_backend(backend)
    errors: list[ContentError] = []
    plans: list[tuple[Pack, Path, list[Verified] | None]] = []
    for pack, root in zip(packs, roots, strict=True):
        if ScenarioPack.objects.filter(slug=pack.id, digest=pack.digest).exists():
            plans.append((pack, Path(root), None))  # same content: already verified, nothing to run
            continue
        out(f"{pack.id}: building and checking {len(pack.scenarios)} scenarios on {concrete} …")
        # Each scenario's sandboxes are independent: two at a time (the machines have two cores).
        with ThreadPoolExecutor(max_workers=VERIFY_WORKERS) as executor:
            outcomes = list(executor.map(verify_scenario, repeat(pack), pack.scenarios, repeat(concrete)))
        verified: list[Verified] = []
        for done, problems in outcomes:
            out(f"  {done.source.id}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
            errors += problems
            verified.append(done)
        plans.append((pack, Path(root), verified))
    if errors:
        raise PackInvalid(errors)
    results = []
    with transaction.atomic():
        for pack, root, checked in plans:
            results.append(_record(pack, root.resolve(), checked, concrete))
    return results


def _record(pack: Pack, root: Path, verified: list[Verified] | None, backend: str) -> ImportResult:
    # What was read and checked (packs.schema.read_pack), never the folder again: a file swapped for
    # a symlink or grown since would not have passed.
    pack_files = {PACK_FILE: pack.pack_file.decode("utf-8")}
    if pack.readme is not None:
        pack_files[README] = pack.readme.decode("utf-8")
    file_digests = pack.file_digests()
    if verified is None:
        existing = ScenarioPack.objects.get(slug=pack.id, digest=pack.digest)
        # Same content (comments or layout may differ): the record follows the files, no new version.
        ScenarioPack.objects.filter(pk=existing.pk).update(
            source_dir=str(root), files=pack_files, file_digests=file_digests
        )
        for s in pack.scenarios:
            PackScenario.objects.filter(pack=existing, slug=s.id).update(files=_texts(s))
        existing.refresh_from_db()
        return ImportResult(existing, False, [f"{existing}: unchanged (digest {pack.digest[:12]})"])
    version = (ScenarioPack.objects.filter(slug=pack.id).aggregate(v=Max("version"))["v"] or 0) + 1
    candidates: list[Candidate] = []
    for done in verified:
        for variant, scenario in done.variants.items():
            checks = {**done.checks["scenario"], **done.checks["variants"].get(variant, {})}
            checks.pop("seconds", None)
            candidates.append(
                Candidate(
                    position=len(candidates),
                    key=scenario_key(pack.id, done.source.id, variant),
                    archetype=scenario["archetype"],
                    tier="",
                    consent=variant,
                    skeleton=done.source.id,
                    seed="",
                    channel=scenario["phrasing"]["channel"] or "",
                    digest=digest_of(scenario),
                    scenario=scenario,
                    status=Candidate.Status.VERIFIED,
                    checks=checks,
                    pool_rank=len(candidates),
                )
            )
    info = {"slug": pack.id, "version": version, "digest": pack.digest}
    pool = PoolVersion.objects.create(
        library_digest=pack.digest,
        pool_seed=0,
        target_size=len(candidates),
        backend=backend,
        status=PoolVersion.Status.COMPLETE,
        finished_at=timezone.now(),
        report={"pack": info, "scenarios": len(verified), "variants": len(candidates)},
        digest=digest_of([c.digest for c in candidates]),
    )
    for c in candidates:
        c.pool = pool
    Candidate.objects.bulk_create(candidates)
    record = ScenarioPack.objects.create(
        slug=pack.id,
        version=version,
        title=pack.data["title"],
        description=pack.data["description"],
        digest=pack.digest,
        source_dir=str(root),
        files=pack_files,
        file_digests=file_digests,
        backend=backend,
        report={"scenarios": len(verified), "variants": len(candidates)},
        pool=pool,
    )
    PackScenario.objects.bulk_create(
        PackScenario(
            pack=record,
            position=i,
            slug=done.source.id,
            title=done.source.data["title"],
            category=done.source.data["category"],
            digest=done.source.digest,
            data=done.source.data,
            files=_texts(done.source),
            variants=list(done.variants),
            checks=done.checks,
        )
        for i, done in enumerate(verified)
    )
    lines = [
        f"{record}: imported {len(verified)} scenarios, {len(candidates)} scenario variants, pool {pool.pk},"
        f" digest {pack.digest[:12]}"
    ]
    return ImportResult(record, True, lines)


def _texts(source: SourceScenario) -> dict[str, str]:
    return {name: data.decode("utf-8") for name, data in sorted(source.files.items())}


class ExportError(ValueError):
    """The target holds a symlink (or another non-regular file) where the pack has a file or folder."""


def _open_dir(parent: int, name: str, shown: str) -> int:
    """The folder ``name`` under ``parent`` (made if missing), never through a symlink."""
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except FileExistsError:
        pass
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        raise ExportError(
            f"{shown} is a symlink or not a folder ({exc.strerror}); nothing is written through it"
        ) from None


def _same(parent: int, name: str, data: bytes) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=parent)
    except OSError:
        return False  # missing, or a symlink: replaced below, never followed
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        return stat.S_ISREG(info.st_mode) and info.st_size == len(data) and fh.read(len(data) + 1) == data


def _write(parent: int, name: str, data: bytes) -> None:
    """Replace ``name`` atomically: a fresh temporary (O_EXCL, so a planted ``name.tmp`` link is
    never written through) renamed over it (a symlink there is replaced, not followed)."""
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise


def export_pack(pack: ScenarioPack, target: Path) -> list[str]:
    """Write the pack's files, byte for byte as imported, under ``target``; the paths written.

    Inside ``target`` nothing is written through a symlink: a symlinked scenario folder is refused
    (``ExportError``), a symlinked file is replaced by the pack's file.
    """
    written = []
    target.mkdir(parents=True, exist_ok=True)
    root = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name, text in sorted(pack.files.items()):
            if not _same(root, name, data := text.encode("utf-8")):
                _write(root, name, data)
                written.append(name)
        for s in pack.scenarios.order_by("position"):
            folder = _open_dir(root, s.slug, f"{target / s.slug}")
            try:
                for name, text in sorted(s.files.items()):
                    if not _same(folder, name, data := text.encode("utf-8")):
                        _write(folder, name, data)
                        written.append(f"{s.slug}/{name}")
            finally:
                os.close(folder)
    finally:
        os.close(root)
    return written
