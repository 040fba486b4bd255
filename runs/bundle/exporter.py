"""Export campaigns (or a matrix) to a bundle: a directory, a ``.tar.gz`` file, or a byte stream.

The whole export reads one database snapshot (PostgreSQL ``REPEATABLE READ``, read-only), so a
run finishing elsewhere mid-export cannot leave the bundle half old, half new.  Only finished
campaigns export: a bundle is a fixed record, and a running campaign's rows are still moving.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from harness.bundle.archive import BundleWriter, DirectoryWriter, TarWriter, is_archive_path
from harness.bundle.format import FORMAT_NAME, FORMAT_VERSION, HEADER, BundleError
from runs.bundle import sections as _sections  # noqa: F401 - registers the built-in sections
from runs.bundle.sections.base import ExportScope, dumps, sections
from runs.models import Campaign, Matrix

ACTIVE = (Campaign.Status.PENDING, Campaign.Status.RUNNING)


@dataclass
class ExportResult:
    path: Path | None
    root: str
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    bytes: int = 0  # the files' total size (uncompressed)
    size: int = 0  # the bundle's size on disk
    seconds: float = 0.0


def resolve(campaigns: Sequence[str] = (), matrix: str | None = None) -> ExportScope:
    """The campaigns named by id, uuid or name (or a matrix's campaigns); refuses active ones."""
    found: list[Campaign] = []
    matrix_id = None
    if matrix:
        m = _lookup(Matrix, matrix, "matrix")
        matrix_id = m.pk
        found += list(m.campaigns.order_by("pk"))
        if not found:
            raise BundleError(f"matrix {m.name!r} has no campaigns")
    for ref in campaigns:
        c = _lookup(Campaign, ref, "campaign")
        if c not in found:
            found.append(c)
    if not found:
        raise BundleError("name at least one campaign (--campaign) or a matrix (--matrix)")
    active = [c for c in found if c.status in ACTIVE]
    if active:
        names = ", ".join(f"{c.name!r} ({c.status})" for c in active)
        raise BundleError(
            f"still running: {names}. A bundle is a fixed record — wait for the campaign to finish or stop it first"
        )
    return ExportScope(campaign_ids=[c.pk for c in found], matrix_id=matrix_id)


def _lookup(model: type[Campaign] | type[Matrix], ref: str, what: str) -> Any:
    text = str(ref).strip()
    qs = model._default_manager.all()
    obj = None
    if text.isdigit():
        obj = qs.filter(pk=int(text)).first()
    if obj is None and len(text) == 36:
        with contextlib.suppress(Exception):
            obj = qs.filter(uuid=text).first()
    if obj is None:
        obj = qs.filter(name=text).first()
    if obj is None:
        raise BundleError(f"no {what} with id, uuid or name {text!r}")
    return obj


def migration_heads() -> dict[str, str]:
    from django.db.migrations.recorder import MigrationRecorder

    heads: dict[str, str] = {}
    for app, name in MigrationRecorder(connection).migration_qs.order_by("app", "name").values_list("app", "name"):
        heads[app] = name  # migration names sort in order (0001_…, 0002_…)
    return heads


def header(scope: ExportScope) -> dict[str, Any]:
    from runs.campaigns import software_versions

    campaigns = Campaign.objects.filter(pk__in=scope.campaign_ids).order_by("pk")
    matrix = Matrix.objects.filter(pk=scope.matrix_id).first() if scope.matrix_id else None
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "created_at": timezone.now().isoformat(),
        "software": software_versions(),
        "schema": migration_heads(),
        "scope": {
            "campaigns": [{"uuid": str(c.uuid), "name": c.name, "kind": c.kind, "status": c.status} for c in campaigns],
            "matrix": {"uuid": str(matrix.uuid), "name": matrix.name} if matrix else None,
        },
        "sections": [s.name for s in sections() if s.available()],
        "chain": "per run: h0 = SHA-256(run uuid), hi = SHA-256(h(i-1) || step i); see docs/bundles.md",
    }


def export_steps(scope: ExportScope, out: BundleWriter) -> Iterator[None]:
    """Write the whole bundle to ``out``, yielding after each member (for streaming)."""
    out.write_bytes(HEADER, dumps(header(scope)))
    yield from out.drain()
    for s in sections():
        if s.available():
            for _ in s.export(scope, out):
                yield from out.drain()
                yield
    yield from out.drain()
    out.finish(dict(sorted(scope.counts.items())))
    yield


@contextlib.contextmanager
def snapshot() -> Iterator[None]:
    """One consistent, read-only view of the database for the whole export."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def export_bundle(
    scope: ExportScope, dest: Path, *, archive: bool | None = None, compresslevel: int = 6
) -> ExportResult:
    """Write the bundle to ``dest`` (a new directory, or a new .tar.gz file)."""
    dest = Path(dest)
    archive = is_archive_path(dest) if archive is None else archive
    started = time.perf_counter()
    if dest.exists() and (archive or not dest.is_dir() or any(dest.iterdir())):
        raise BundleError(f"{dest} already exists; choose a new --out path (a bundle is never overwritten)")
    writer: BundleWriter | None = None
    fh = None
    with snapshot():
        try:
            if archive:
                dest.parent.mkdir(parents=True, exist_ok=True)
                fh = dest.open("xb")
                writer = TarWriter(fh, mtime=time.time(), compresslevel=compresslevel)
            else:
                writer = DirectoryWriter(dest)
            for _ in export_steps(scope, writer):
                pass
        except BaseException:
            if writer is not None:
                writer.abort()
            if fh is not None:
                fh.close()
                dest.unlink(missing_ok=True)
            elif dest.is_dir():
                shutil.rmtree(dest, ignore_errors=True)
            raise
        finally:
            if fh is not None and not fh.closed:
                fh.close()
    size = dest.stat().st_size if archive else sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    assert writer is not None
    return ExportResult(
        path=dest,
        root=writer.root,
        counts=dict(scope.counts),
        warnings=scope.warnings,
        bytes=writer.bytes_written,
        size=size,
        seconds=time.perf_counter() - started,
    )


class _Sink:
    """A write-only buffer the streamed archive is written into (by the gzip thread) and drained from."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.lock = threading.Lock()

    def write(self, data: bytes) -> int:
        with self.lock:
            self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def drain(self) -> bytes:
        with self.lock:
            parts, self.parts = self.parts, []
        return b"".join(parts)


def stream_archive(scope: ExportScope, compresslevel: int = 6) -> Generator[bytes, None, None]:
    """The bundle as ``.tar.gz`` bytes, produced member by member (an HTTP response body).

    A client that goes away closes the generator mid-export: the writer is aborted then (its
    compression thread stopped, its spooled members dropped) and the snapshot rolled back.
    """
    sink = _Sink()
    with snapshot():
        writer = TarWriter(sink, mtime=time.time(), compresslevel=compresslevel)  # type: ignore[arg-type]
        finished = False
        try:
            for _ in export_steps(scope, writer):
                chunk = sink.drain()
                if chunk:
                    yield chunk
            finished = True
        finally:
            if not finished:
                writer.abort()
    tail = sink.drain()
    if tail:
        yield tail
