"""A crafted archive is refused before it costs disk or much time (issue 17 item 7).

A 3 MB archive holding a 3 GB member was refused only after 3,093 MB had been unpacked into
TMPDIR (54 s): import extracted, then verified.  Now an archive is verified as it streams, under
size, count and inflation-ratio limits, and only what was verified is unpacked.  Each test
crafts a small archive (concatenated gzip members: a tar header that claims a huge member, then
64 MB runs of zeros compressed once) and measures what the process wrote (``wchar`` of
/proc/self/io) into a private TMPDIR.
"""

from __future__ import annotations

import gzip
import json
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.bundle.archive import Limits, TarWriter, extract, iter_archive
from harness.bundle.format import FORMAT_NAME, FORMAT_VERSION, BundleError
from harness.bundle.verify import verify
from runs.bundle.importer import import_bundle

RUN = "0b7e3c1a-5d2f-4e6a-9c8b-1f2e3d4c5b6a"
BLOCK = 64 << 20
GB = 1 << 30
# Refusal must come long before the seconds inflating (or the minutes writing) a bomb would take;
# generous because the machine is shared.
QUICK_S = 10.0
SMALL_WRITE = 8 << 20


@pytest.fixture(scope="module")
def zeros() -> bytes:
    """64 MB of zeros as one gzip member (~65 KB): repeated, it inflates to any multiple of 64 MB."""
    return gzip.compress(bytes(BLOCK), 9)


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def _file(name: str, data: bytes) -> bytes:
    return _header(name, len(data)) + data + bytes(-len(data) % tarfile.BLOCKSIZE)


HEADER_JSON = json.dumps({"format": FORMAT_NAME, "format_version": FORMAT_VERSION}).encode()


def _bundle_header() -> bytes:
    return _file("bundle.json", HEADER_JSON)


def bomb(path: Path, zeros: bytes, blocks: int, name: str = "evidence/huge.log") -> Path:
    """An archive whose member ``name`` holds ``blocks`` × 64 MB of zeros, in a few MB."""
    parts = [gzip.compress(_bundle_header() + _header(name, blocks * BLOCK))]
    parts += [zeros] * blocks
    parts.append(gzip.compress(bytes(2 * tarfile.BLOCKSIZE)))  # the end-of-archive blocks
    path.write_bytes(b"".join(parts))
    return path


def _wchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR of this test alone: where an import unpacks."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


@dataclass
class Cost:
    seconds: float = 0.0
    written: int = 0  # bytes the process wrote meanwhile (wchar), wherever they went


@pytest.fixture
def cost() -> Cost:
    return Cost()


def _refused(path: Path, cost: Cost, limits: Limits | None = None) -> str:
    before, started = _wchar(), time.perf_counter()
    with pytest.raises(BundleError) as refused:
        import_bundle(path) if limits is None else import_bundle(path, limits=limits)
    cost.seconds, cost.written = time.perf_counter() - started, _wchar() - before
    return str(refused.value)


def test_a_3_gb_member_of_a_3_mb_archive_is_refused_before_anything_is_unpacked(
    tmp_path: Path, private_tmp: Path, zeros: bytes, cost: Cost
) -> None:
    archive = bomb(tmp_path / "bomb.tar.gz", zeros, blocks=48)  # 3 GB inflated
    assert archive.stat().st_size < 4 << 20

    message = _refused(archive, cost)

    assert cost.seconds < QUICK_S and cost.written < SMALL_WRITE, (cost.seconds, cost.written)
    assert list(private_tmp.iterdir()) == []
    assert "'evidence/huge.log' is 3,072 MB, over the limit of 1,024 MB per file" in message
    assert "--max-file-mb" in message


def test_a_bomb_under_the_size_limits_is_refused_by_its_inflation_ratio(
    tmp_path: Path, private_tmp: Path, zeros: bytes, cost: Cost
) -> None:
    archive = bomb(tmp_path / "bomb.tar.gz", zeros, blocks=48)
    roomy = Limits(max_file_bytes=8 * GB, max_total_bytes=8 * GB)

    message = _refused(archive, cost, roomy)

    assert "refused as a compression bomb" in message and "over 200 : 1" in message
    assert cost.seconds < QUICK_S and cost.written < SMALL_WRITE, (cost.seconds, cost.written)
    assert list(private_tmp.iterdir()) == []


def test_zeros_after_the_end_of_the_archive_are_judged_by_the_ratio_too(
    tmp_path: Path, private_tmp: Path, zeros: bytes, cost: Cost
) -> None:
    archive = tmp_path / "tail.tar.gz"
    archive.write_bytes(gzip.compress(_bundle_header() + bytes(2 * tarfile.BLOCKSIZE)) + zeros * 16)

    message = _refused(archive, cost)

    assert "compression bomb" in message
    assert cost.seconds < QUICK_S and cost.written < SMALL_WRITE


def test_members_that_together_exceed_the_total_are_refused_at_the_header_that_crosses_it(
    tmp_path: Path, private_tmp: Path, cost: Cost
) -> None:
    data = b"".join(_file(f"evidence/{n}.log", bytes(20 << 20)) for n in range(3))
    archive = tmp_path / "many.tar.gz"
    archive.write_bytes(gzip.compress(_bundle_header() + data + bytes(1024), 1))
    limits = Limits(max_total_bytes=50 << 20, max_ratio=10**6)

    message = _refused(archive, cost, limits)

    assert "at 'evidence/2.log', over the limit of 50 MB in all" in message
    assert cost.written < SMALL_WRITE


def test_too_many_members_are_refused(tmp_path: Path, private_tmp: Path, cost: Cost) -> None:
    data = b"".join(_file(f"evidence/{n}.log", b"x") for n in range(30))
    archive = tmp_path / "count.tar.gz"
    archive.write_bytes(gzip.compress(_bundle_header() + data + bytes(1024)))

    assert "more than 20 members" in _refused(archive, cost, Limits(max_files=20))


def test_a_sparse_file_in_a_directory_bundle_is_refused_without_reading_it(tmp_path: Path, cost: Cost) -> None:
    bundle = tmp_path / "dir"
    (bundle / "evidence").mkdir(parents=True)
    (bundle / "bundle.json").write_bytes(HEADER_JSON)
    with (bundle / "evidence" / "sparse.bin").open("wb") as fh:
        fh.truncate(20 * GB)

    started = time.perf_counter()
    report = verify(bundle)

    assert [p.kind for p in report.problems][:1] == ["limit"]
    assert "over the limit of 1,024 MB per file" in report.problems[0].message
    assert time.perf_counter() - started < QUICK_S


def test_verify_reports_a_limit_and_stops_reading(tmp_path: Path, zeros: bytes) -> None:
    archive = bomb(tmp_path / "bomb.tar.gz", zeros, blocks=48)
    report = verify(archive)
    assert report.problems[0].kind == "limit" and "per file" in report.problems[0].message
    assert "evidence/huge.log" not in report.members


# -- extract unpacks only what was verified ------------------------------------------------------


def _small_bundle(path: Path, payload: bytes) -> Path:
    from harness.bundle.format import Chain, chained_line

    with path.open("wb") as fh:
        writer = TarWriter(fh, mtime=0)
        writer.write_bytes(
            "bundle.json", json.dumps({"format": FORMAT_NAME, "format_version": FORMAT_VERSION}).encode()
        )
        chain = Chain(RUN)
        with writer.open("runs.jsonl") as runs, writer.open(f"events/{RUN}.jsonl") as events:
            events.write(chained_line(chain, {"attempt": 1, "seq": 0, "kind": "command", "data": {}}))
            runs.write(json.dumps({"run": {"uuid": RUN}, "chain": {"head": chain.head, "steps": 1}}).encode() + b"\n")
        writer.write_bytes("evidence/x/agent.stdout", payload)
        writer.finish({"runs": 1})
    return path


def test_an_archive_replaced_after_verification_is_refused_and_writes_no_more_than_was_verified(
    tmp_path: Path,
) -> None:
    verified = verify(_small_bundle(tmp_path / "a.tar.gz", b"hello"))
    assert verified.ok, [str(p) for p in verified.problems]
    swapped = _small_bundle(tmp_path / "b.tar.gz", b"x" * (1 << 20))  # the same names, a bigger file

    target = tmp_path / "out"
    with pytest.raises(BundleError, match="is 1048576 bytes, not the verified 5: the archive changed"):
        extract(swapped, target, expected=verified.members)
    assert not (target / "evidence" / "x" / "agent.stdout").exists()

    same_size = _small_bundle(tmp_path / "c.tar.gz", b"HELLO")
    with pytest.raises(BundleError, match="does not hash as verified"):
        extract(same_size, tmp_path / "out2", expected=verified.members)
    assert not (tmp_path / "out2" / "evidence" / "x" / "agent.stdout").exists()


def test_an_unlisted_or_missing_member_is_refused(tmp_path: Path) -> None:
    archive = _small_bundle(tmp_path / "a.tar.gz", b"hello")
    members = dict(verify(archive).members)
    with pytest.raises(BundleError, match="was not verified"):
        extract(archive, tmp_path / "o1", expected={k: v for k, v in members.items() if k != "runs.jsonl"})
    with pytest.raises(BundleError, match="'zz-extra' is gone"):
        extract(archive, tmp_path / "o2", expected={**members, "zz-extra": (1, "0" * 64)})


def test_a_verified_archive_unpacks_whole(tmp_path: Path) -> None:
    archive = _small_bundle(tmp_path / "a.tar.gz", b"hello")
    extract(archive, tmp_path / "out", expected=verify(archive).members)
    assert (tmp_path / "out" / "evidence" / "x" / "agent.stdout").read_bytes() == b"hello"
    assert verify(tmp_path / "out").ok


def test_the_limits_do_not_touch_an_ordinary_archive(tmp_path: Path) -> None:
    archive = _small_bundle(tmp_path / "a.tar.gz", bytes(10 << 20))  # 10 MB of zeros: 1,000 : 1, under the floor
    assert [m.path for m in iter_archive(archive)][-1] == "ROOT"
    assert verify(archive).ok
