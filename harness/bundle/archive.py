"""Writing and reading a bundle's files: a directory or a streamed ``.tar.gz``. Pure Python.

Both writers hash every byte as it is written and keep only the manifest entries in memory, so an
export holds one member's buffer at a time, not the bundle.  The archive is written in
``tarfile`` stream mode to any writable file object (a file, or an HTTP response's buffer): a
tar header needs the member's size before its data, so a member produced piecewise (``open``) is
spooled — in memory up to ``SPOOL_BYTES``, then in a temporary file — and appended when closed.
Members already on disk (``add_file``) are streamed straight from their file.

Readers yield members in storage order with a sequential reader each, so a verifier streams an
archive once without extracting it, under ``Limits``: a member or a total larger than the caps,
too many members, or a stream that inflates faster than ``max_ratio`` (a compression bomb) is
refused as soon as a tar header or the inflated byte count shows it — before the data is read.
``extract`` unpacks an archive for an import only after that pass, and only what it verified:
each member must be one the verified manifest lists, with its size (never a byte more is
written) and its SHA-256, so an archive swapped or grown in between is refused too.  Links,
devices and any path that would land outside the target are refused as before.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import queue
import shutil
import tarfile
import tempfile
import threading
import zlib
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO

from harness.bundle.format import MANIFEST, ROOT, BundleError, FileEntry, path_problem, write_manifest

CHUNK = 1 << 20
SPOOL_BYTES = 1 << 20  # a member beyond this spills to a temporary file
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
MB = 1 << 20


class BundleLimitError(BundleError):
    """A bundle larger, or inflating faster, than the reader's ``Limits`` allow."""


@dataclass(frozen=True)
class Limits:
    """What reading a bundle may cost before it is refused (verify and import alike).

    The defaults leave room for any campaign the exporter writes (docs/bundles.md, Scale: 10,000
    runs are 54,000 files and 1.1 GB, 5.6 : 1 compressed, the largest file a few MB) and refuse
    what only a crafted archive holds; ``manage.py import_bundle --max-file-mb/--max-total-mb``
    raise them for a bundle that needs more.
    """

    max_file_bytes: int = 1 << 30  # one member
    max_total_bytes: int = 64 << 30  # every member together
    max_files: int = 2_000_000
    # Inflated : compressed bytes over the whole stream.  gzip reaches ~1,000 : 1 on zeros; the
    # first ``ratio_floor`` bytes are not judged, so a small, very regular bundle still reads.
    max_ratio: int = 200
    ratio_floor: int = 64 * MB


DEFAULT_LIMITS = Limits()


class _Budget:
    """Counts members and their claimed sizes against the limits as headers are read."""

    def __init__(self, limits: Limits, name: str) -> None:
        self.limits = limits
        self.name = name
        self.files = 0
        self.total = 0

    def claim(self, path: str, size: int) -> None:
        limits = self.limits
        self.files += 1
        self.total += size
        if size > limits.max_file_bytes:
            raise BundleLimitError(
                f"{self.name}: member {path!r} is {size / MB:,.0f} MB, over the limit of "
                f"{limits.max_file_bytes / MB:,.0f} MB per file; refused before reading it "
                "(import_bundle --max-file-mb raises the limit)"
            )
        if self.total > limits.max_total_bytes:
            raise BundleLimitError(
                f"{self.name}: the members reach {self.total / MB:,.0f} MB at {path!r}, over the limit of "
                f"{limits.max_total_bytes / MB:,.0f} MB in all (import_bundle --max-total-mb raises the limit)"
            )
        if self.files > limits.max_files:
            raise BundleLimitError(f"{self.name}: more than {limits.max_files:,} members")


class _CountingSource:
    """The compressed file, counting the bytes gzip has taken from it."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        self.count += len(data)
        return data


class _Inflated:
    """The inflated stream tar reads, refusing it once it outgrows ``max_ratio`` times its input."""

    def __init__(self, gz: gzip.GzipFile, source: _CountingSource, limits: Limits, name: str) -> None:
        self.gz = gz
        self.source = source
        self.limits = limits
        self.name = name
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        # Never more than a chunk at once: a bomb is judged after each megabyte, not after it all.
        data = self.gz.read(CHUNK if n < 0 else min(n, CHUNK))
        self.count += len(data)
        limits = self.limits
        if self.count > limits.ratio_floor and self.count > limits.max_ratio * max(1, self.source.count):
            raise BundleLimitError(
                f"{self.name}: {self.source.count / MB:,.1f} MB of archive inflate to more than "
                f"{self.count / MB:,.0f} MB (over {limits.max_ratio} : 1): refused as a compression bomb"
            )
        return data


def is_archive_path(path: str | Path) -> bool:
    return str(path).endswith(ARCHIVE_SUFFIXES)


class _Hashing(io.RawIOBase):
    """A write-only file that hashes, counts and forwards what it is given."""

    def __init__(self, sink: IO[bytes]) -> None:
        self.sink = sink
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.sha.update(view)
        self.size += view.nbytes
        self.sink.write(view)
        return view.nbytes


class _HashingReader(io.RawIOBase):
    """A read-only view of a file that hashes what is read (so tar can pull it)."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.sha = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.source.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.sha.update(data)
        self.size += n
        return n


class BundleWriter:
    """Common part of the two writers: the manifest entries and the closing manifest + ROOT."""

    def __init__(self) -> None:
        self.entries: list[FileEntry] = []
        self._paths: set[str] = set()
        self.root = ""
        self.bytes_written = 0

    def _claim(self, path: str) -> None:
        problem = path_problem(path)
        if problem:
            raise BundleError(f"bundle member {path!r}: {problem}")
        if path in self._paths or path in (MANIFEST, ROOT):
            raise BundleError(f"bundle member {path!r} written twice")
        self._paths.add(path)

    def _record(self, path: str, size: int, sha: str) -> FileEntry:
        entry = FileEntry(path, size, sha)
        self.entries.append(entry)
        self.bytes_written += size
        return entry

    @contextlib.contextmanager
    def open(self, path: str) -> Iterator[BinaryIO]:
        raise NotImplementedError
        yield  # pragma: no cover

    def add_file(self, path: str, source: Path) -> None:
        """Add the file at ``source`` as member ``path`` (it must stay until the next ``drain``)."""
        raise NotImplementedError

    def drain(self) -> Iterator[None]:
        """Write what is queued, yielding between pieces (the directory writer queues nothing)."""
        return iter(())

    def _write_unlisted(self, path: str, source: IO[bytes], size: int) -> None:
        raise NotImplementedError

    def write_bytes(self, path: str, data: bytes) -> FileEntry:
        with self.open(path) as fh:
            fh.write(data)
        return self.entries[-1]

    def finish(self, counts: dict[str, int]) -> str:
        """Write ``manifest.json`` and ``ROOT``; return the root hash."""
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            self.root = write_manifest(spool, self.entries, counts)
            size = spool.tell()
            spool.seek(0)
            self._write_unlisted(MANIFEST, spool, size)
        self._write_unlisted(ROOT, io.BytesIO((self.root + "\n").encode()), len(self.root) + 1)
        self.close()
        return self.root

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


class DirectoryWriter(BundleWriter):
    def __init__(self, target: Path) -> None:
        super().__init__()
        self.target = Path(target)
        if self.target.exists() and (not self.target.is_dir() or any(self.target.iterdir())):
            raise BundleError(f"{self.target} exists and is not an empty directory; choose a new --out path")
        self.target.mkdir(parents=True, exist_ok=True)

    def _dest(self, path: str) -> Path:
        dest = self.target / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        return dest

    @contextlib.contextmanager
    def open(self, path: str) -> Iterator[BinaryIO]:
        self._claim(path)
        with self._dest(path).open("xb") as raw:
            hashing = _Hashing(raw)
            buffered = io.BufferedWriter(hashing, CHUNK)
            yield buffered
            buffered.flush()
        self._record(path, hashing.size, hashing.sha.hexdigest())

    def add_file(self, path: str, source: Path) -> None:
        self._claim(path)
        sha = hashlib.sha256()
        size = 0
        with Path(source).open("rb") as src, self._dest(path).open("xb") as dst:
            while chunk := src.read(CHUNK):
                sha.update(chunk)
                size += len(chunk)
                dst.write(chunk)
        self._record(path, size, sha.hexdigest())

    def _write_unlisted(self, path: str, source: IO[bytes], size: int) -> None:
        with self._dest(path).open("xb") as dst:
            shutil.copyfileobj(source, dst, CHUNK)

    def abort(self) -> None:
        shutil.rmtree(self.target, ignore_errors=True)


class _Compressor(io.RawIOBase):
    """A write-only file that gzips in a thread of its own.

    zlib and SHA-256 release the GIL, so on a machine with a second core the compression of one
    megabyte overlaps with producing the next (the export's Python work: queries, JSON, chains);
    the bounded queue keeps at most ``DEPTH`` megabytes in flight.
    """

    DEPTH = 8

    def __init__(self, sink: IO[bytes], *, compresslevel: int, mtime: int) -> None:
        self._gzip = gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=compresslevel, mtime=mtime)
        self._queue: queue.Queue[bytes | None] = queue.Queue(self.DEPTH)
        self._buffer = bytearray()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="bundle-gzip", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (data := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._gzip.write(data)
                except BaseException as exc:  # re-raised in the writing thread by write/close
                    self._error = exc

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self._error is not None:
            raise self._error
        view = memoryview(data)
        self._buffer += view
        if len(self._buffer) >= CHUNK:
            self._queue.put(bytes(self._buffer))
            self._buffer.clear()
        return view.nbytes

    def close(self) -> None:
        if self.closed:
            return
        if self._buffer:
            self._queue.put(bytes(self._buffer))
            self._buffer.clear()
        self._queue.put(None)
        self._thread.join()
        super().close()
        if self._error is not None:
            raise self._error
        self._gzip.close()


class TarWriter(BundleWriter):
    """A ``.tar.gz`` written in stream mode to ``fileobj`` (never seeked).

    Members are queued and written by ``drain``, a generator that yields after every ``CHUNK`` of
    input: the exporter drains after each step, so a streamed download sends each megabyte as it
    is compressed instead of a whole member at once.  Hashes of queued files are taken as they
    are written, so a file given to ``add_file`` must stay in place until the next drain.
    """

    def __init__(self, fileobj: IO[bytes], *, mtime: float, compresslevel: int = 6) -> None:
        super().__init__()
        self.mtime = int(mtime)
        # Our own gzip rather than tarfile's "w|gz": that mode has no compression level (level 9
        # costs three times level 6's time for a few percent on JSON and logs) and no thread.
        self._gzip = _Compressor(fileobj, compresslevel=compresslevel, mtime=self.mtime)
        self._tar = tarfile.open(fileobj=self._gzip, mode="w|", format=tarfile.PAX_FORMAT)
        self._pending: deque[tuple[str, Any]] = deque()
        self._closed = False

    def _info(self, path: str, size: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(path)
        info.size = size
        info.mtime = self.mtime
        info.mode = 0o644
        info.uname = info.gname = ""
        return info

    def _member(self, info: tarfile.TarInfo, source: IO[bytes], sha: Any = None) -> Iterator[None]:
        """``TarFile.addfile`` in pieces, yielding between them — and without keeping every
        member's ``TarInfo`` in ``TarFile.members`` (stream mode never reads that list; a
        campaign's 50,000 of them would be tens of MB)."""
        tar = self._tar
        header = info.tobuf(tar.format, tar.encoding, tar.errors)
        tar.fileobj.write(header)
        remaining = info.size
        while remaining:
            chunk = source.read(min(CHUNK, remaining))
            if not chunk:
                raise BundleError(f"{info.name} became shorter while it was being archived")
            if sha is not None:
                sha.update(chunk)
            tar.fileobj.write(chunk)
            remaining -= len(chunk)
            yield
        blocks, rest = divmod(info.size, tarfile.BLOCKSIZE)
        if rest:
            tar.fileobj.write(tarfile.NUL * (tarfile.BLOCKSIZE - rest))
            blocks += 1
        tar.offset += len(header) + blocks * tarfile.BLOCKSIZE

    @contextlib.contextmanager
    def open(self, path: str) -> Iterator[BinaryIO]:
        self._claim(path)
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
        try:
            hashing = _Hashing(spool)
            buffered = io.BufferedWriter(hashing, CHUNK)
            yield buffered
            buffered.flush()
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        self._record(path, hashing.size, hashing.sha.hexdigest())
        self._pending.append(("spool", (path, hashing.size, spool)))

    def add_file(self, path: str, source: Path) -> None:
        self._claim(path)
        self._pending.append(("file", (path, Path(source))))

    def drain(self) -> Iterator[None]:
        while self._pending:
            kind, item = self._pending.popleft()
            if kind == "spool":
                path, size, spool = item
                with spool:
                    yield from self._member(self._info(path, size), spool)
                continue
            path, source = item
            with source.open("rb") as src:
                size = os.fstat(src.fileno()).st_size
                sha = hashlib.sha256()
                yield from self._member(self._info(path, size), src, sha)
                if src.read(1):
                    raise BundleError(f"{source} grew while it was being archived")
            self._record(path, size, sha.hexdigest())

    def _write_unlisted(self, path: str, source: IO[bytes], size: int) -> None:
        for _ in self._member(self._info(path, size), source):
            pass

    def finish(self, counts: dict[str, int]) -> str:
        for _ in self.drain():
            pass
        return super().finish(counts)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._tar.close()
            self._gzip.close()

    def abort(self) -> None:
        while self._pending:
            kind, item = self._pending.popleft()
            if kind == "spool":
                item[2].close()
        with contextlib.suppress(Exception):
            self.close()


# -- reading ------------------------------------------------------------------------------------


@dataclass
class Member:
    """One stored item: ``kind`` is file, dir or other (a link or device — never followed)."""

    path: str
    kind: str
    size: int
    _open: Any = None

    def open(self) -> IO[bytes]:
        return self._open()


def iter_directory(root: Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[Member]:
    root = Path(root)
    budget = _Budget(limits, str(root))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(filenames) + [d for d in dirnames if (base / d).is_symlink()]:
            full = base / name
            rel = full.relative_to(root).as_posix()
            st = full.lstat()
            if full.is_symlink() or not full.is_file():
                yield Member(rel, "other", 0)
                continue
            budget.claim(rel, st.st_size)  # a sparse file claims its apparent size
            yield Member(rel, "file", st.st_size, lambda p=full: p.open("rb"))


def iter_archive(path: Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[Member]:
    """Members of a ``.tar.gz`` in storage order, read in one sequential pass, under ``limits``
    (``BundleLimitError`` as soon as a header or the inflated byte count exceeds them).

    Raises ``BundleError`` when the archive cannot be read to its end: truncated, or a byte of the
    compressed stream changed (gzip's CRC-32, checked by ``GzipFile`` at the end of the stream, and
    tar's header checksums catch that).  ``tarfile`` takes a damaged header after the first for the
    end of the archive, so the rest of the stream is read too: anything but zero padding after the
    end means the archive was cut short by damage, not finished.
    """
    budget = _Budget(limits, str(path))
    try:
        with Path(path).open("rb") as raw:
            source = _CountingSource(raw)
            with gzip.GzipFile(fileobj=source, mode="rb") as gz:  # type: ignore[call-overload]
                inflated = _Inflated(gz, source, limits, str(path))
                with tarfile.open(fileobj=inflated, mode="r|") as tar:  # type: ignore[call-overload]
                    while (info := tar.next()) is not None:
                        tar.members.clear()  # stream mode never looks back
                        if info.isdir():
                            continue
                        if not info.isreg():
                            yield Member(info.name, "other", 0)
                            continue
                        # The header's size is what tar will read as this member's data: judged
                        # here, before a byte of it is inflated.
                        budget.claim(info.name, info.size)
                        fh = tar.extractfile(info)
                        yield Member(info.name, "file", info.size, lambda fh=fh: fh)
                # Past the end of the archive only zero padding may follow (read under the ratio too).
                while chunk := inflated.read(CHUNK):
                    if chunk.strip(b"\0"):
                        raise BundleError(f"{path}: a tar header is damaged: the members end before the archive's data")
    except BundleError:
        raise
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise BundleError(f"{path}: the archive is corrupt or truncated ({type(exc).__name__}: {exc})") from None


def iter_members(path: Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[Member]:
    path = Path(path)
    if path.is_dir():
        return iter_directory(path, limits)
    if not path.exists():
        raise BundleError(f"{path}: no such bundle (a directory or a .tar.gz)")
    return iter_archive(path, limits)


def extract(
    archive: Path, target: Path, *, expected: Mapping[str, tuple[int, str]], limits: Limits = DEFAULT_LIMITS
) -> None:
    """Unpack the verified members of a bundle archive into the empty directory ``target``.

    ``expected`` maps each member's path to the (size, SHA-256 hex) a verification pass found
    for it (``VerifyReport.members``).  A member it does not list, or with another size, is
    refused before its first byte is written; one whose bytes hash otherwise is refused when
    read (and removed), as is a listed member the archive no longer holds.  So at most the
    verified total is ever written, even if the archive was replaced since it was verified.
    """
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    made = {target}
    written: set[str] = set()
    changed = "the archive changed since it was verified; refusing to extract"
    for member in iter_archive(archive, limits):
        problem = path_problem(member.path)
        if problem:
            raise BundleError(f"archive member {member.path!r}: {problem}; refusing to extract")
        if member.kind != "file":
            raise BundleError(f"archive member {member.path!r} is a link or a device; bundles hold regular files only")
        if member.path in written:
            raise BundleError(f"archive member {member.path!r} appears twice; refusing to extract")
        if member.path not in expected:
            raise BundleError(f"archive member {member.path!r} was not verified: {changed}")
        size, sha256 = expected[member.path]
        if member.size != size:
            raise BundleError(
                f"archive member {member.path!r} is {member.size} bytes, not the verified {size}: {changed}"
            )
        dest = target / member.path
        if dest.parent not in made:
            dest.parent.mkdir(parents=True, exist_ok=True)
            made.add(dest.parent)
        sha = hashlib.sha256()
        try:
            with member.open() as src, dest.open("xb") as dst:
                while chunk := src.read(CHUNK):
                    sha.update(chunk)
                    dst.write(chunk)
        except FileExistsError:
            raise BundleError(f"archive member {member.path!r} appears twice; refusing to extract") from None
        if sha.hexdigest() != sha256:
            dest.unlink()
            raise BundleError(f"archive member {member.path!r} does not hash as verified: {changed}")
        written.add(member.path)
    missing = sorted(set(expected) - written)
    if missing:
        raise BundleError(f"archive member {missing[0]!r} is gone ({len(missing)} in all): {changed}")
