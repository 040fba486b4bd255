"""Import a bundle: check its format, verify every byte, plan, then write everything in one transaction.

Order of refusals, each before anything is written: an incompatible format version (the message
names both versions), any verification problem (all of them listed), a section this install
cannot import, then each section's conflicts (``plan``).  An archive is verified as it streams,
under ``Limits`` (per-file and total size, member count, inflation ratio), before a byte of it
is unpacked; then only what was verified is unpacked (issue 17: a 3 MB archive holding a 3 GB
member used to fill TMPDIR before verification refused it).  The writes happen in one transaction:
a failure anywhere rolls every row back and removes the evidence files copied so far.  Records
are matched by natural key, so importing a bundle a second time finds everything present and
changes nothing (and says so).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from harness.bundle.archive import DEFAULT_LIMITS, Limits, extract
from harness.bundle.format import FORMAT_NAME, HEADER, BundleError, compatibility_problem
from harness.bundle.verify import VerifyReport, verify
from runs.bundle import sections as _sections  # noqa: F401 - registers the built-in sections
from runs.bundle.sections.base import ImportState, read_json, sections


@dataclass
class ImportReport:
    changed: bool
    root: str = ""
    created: Counter[str] = field(default_factory=Counter)
    present: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    campaigns: dict[str, int] = field(default_factory=dict)  # uuid → id of each campaign created
    seconds: float = 0.0
    verify_seconds: float = 0.0


def check_header(root: Path, name: str = "") -> dict[str, Any]:
    return _check_header_data(read_json(root / HEADER), name or str(root))


def _check_header_data(header: Any, name: str) -> dict[str, Any]:
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise BundleError(f"{name} is not an Overeager bundle: {HEADER} is missing or names another format")
    problem = compatibility_problem(header.get("format_version"))
    if problem:
        raise BundleError(f"cannot import {name}: {problem}")
    return header


def import_bundle(path: Path, limits: Limits = DEFAULT_LIMITS) -> ImportReport:
    """Import the bundle at ``path`` (a directory or a .tar.gz)."""
    path = Path(path)
    if path.is_dir():
        return import_directory(path, limits=limits)
    if not path.exists():
        raise BundleError(f"{path}: no such bundle (a directory or a .tar.gz)")
    started = time.perf_counter()
    # One streamed pass over the archive, writing nothing: every member hashed against the
    # manifest, under the limits, before anything is unpacked.
    verified = verify(path, limits=limits)
    if any(p.kind == "format" for p in verified.problems):
        _check_header_data(verified.header or None, str(path))  # names both versions
    _refuse_unless_ok(verified)
    needed = sum(size for size, _ in verified.members.values())
    # Unpacked under the system's temporary directory (TMPDIR): the import moves the evidence
    # files out of it when it is on the evidence folder's filesystem, and copies them otherwise.
    scratch = Path(tempfile.mkdtemp(prefix="overeager-import-"))
    try:
        free = shutil.disk_usage(scratch).free
        if needed > free:
            raise BundleError(
                f"unpacking {path} needs {needed / 1e6:,.0f} MB in {scratch.parent}, which has "
                f"{free / 1e6:,.0f} MB free; set TMPDIR to a larger filesystem"
            )
        extract(path, scratch, expected=verified.members, limits=limits)
        return import_directory(scratch, move_evidence=True, name=str(path), verified=verified, started=started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _refuse_unless_ok(verified: VerifyReport) -> None:
    if not verified.ok:
        listed = "\n".join(f"  {p}" for p in verified.problems[:200])
        more = f"\n  … and {len(verified.problems) - 200} more" if len(verified.problems) > 200 else ""
        raise BundleError(
            f"the bundle failed verification ({len(verified.problems)} problems); nothing was imported:\n{listed}{more}"
        )


def import_directory(
    root: Path,
    *,
    move_evidence: bool = False,
    name: str = "",
    limits: Limits = DEFAULT_LIMITS,
    verified: VerifyReport | None = None,
    started: float | None = None,
) -> ImportReport:
    """Import an unpacked bundle; ``move_evidence`` lets it take the evidence files (a scratch copy).

    ``verified`` is the report of the archive ``root`` was unpacked from, when ``extract`` checked
    every unpacked byte against it: the directory is then not read a second time.
    """
    started = time.perf_counter() if started is None else started
    header = check_header(root, name)
    if verified is None:
        verified = verify(root, limits=limits)
        _refuse_unless_ok(verified)
    verify_seconds = verified.seconds
    known = {s.name: s for s in sections()}
    wanted = [str(n) for n in header.get("sections") or []]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise BundleError(f"the bundle has sections this install does not know: {unknown}; upgrade to import it")
    unavailable = [n for n in wanted if not known[n].available()]
    if unavailable:
        raise BundleError(f"the bundle has sections whose app is not installed here: {unavailable}")
    active = [s for s in sections() if s.name in wanted]
    state = ImportState(root=root, header=header)
    state.decisions["move_evidence"] = move_evidence
    for s in active:
        state.plans[s.name] = s.plan(state)
    report = ImportReport(changed=False, root=verified.root, warnings=state.warnings, verify_seconds=verify_seconds)
    if not any(state.plans.values()):
        report.present = Counter({"campaigns": len(state.skipped_campaigns)})
        report.seconds = time.perf_counter() - started
        return report
    try:
        with transaction.atomic():
            for s in active:
                s.load(state)
            _invalidate_on_commit(state)
    except BaseException:
        for path in state.new_paths:
            shutil.rmtree(path, ignore_errors=True)
        raise
    report.changed = True
    report.created = state.created
    report.present = state.present
    report.campaigns = dict(state.campaigns)
    report.seconds = time.perf_counter() - started
    return report


def _invalidate_on_commit(state: ImportState) -> None:
    from runs.models import Campaign

    rows = list(Campaign.objects.filter(pk__in=list(state.campaigns.values())).values_list("pk", "matrix_id"))

    def bump_all() -> None:
        from runs.stats import bump

        # Cache keys carry database ids; an id this install used before must not serve old aggregates.
        for pk, matrix_id in rows:
            bump(pk, matrix_id)

    transaction.on_commit(bump_all)
