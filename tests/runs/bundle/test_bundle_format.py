"""The bundle format's pure parts: version rule, chain, manifest and root hash, writers, readers, verify.

No database: a bundle is written by hand here with the same writers the export uses, so these
tests pin the format as docs/bundles.md describes it (a third party could re-implement it).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from content.canonical import digest_of
from harness.bundle.archive import DirectoryWriter, TarWriter, extract, iter_archive
from harness.bundle.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    BundleError,
    Chain,
    FileEntry,
    chain_of,
    chain_start,
    chained_line,
    compatibility_problem,
    manifest_document,
    path_problem,
    root_hash,
    run_of_events_path,
    step_bytes,
    write_manifest,
)
from harness.bundle.verify import verify

RUN = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
ATTEMPT = "11111111-2222-3333-4444-555555555555"


# -- versions -----------------------------------------------------------------------------------


def test_the_same_or_an_older_minor_version_is_compatible():
    assert compatibility_problem(FORMAT_VERSION) == ""
    assert compatibility_problem("1.0", ours="1.3") == ""


@pytest.mark.parametrize(
    ("found", "words"),
    [
        ("1.4", ["1.4", "1.3", "newer Overeager", "upgrade"]),
        ("2.0", ["2.0", "1.x", "newer Overeager"]),
        ("0.9", ["0.9", "1.x", "cannot be imported"]),
        ("one", ["'one'", "MAJOR.MINOR"]),
        (None, ["None", "MAJOR.MINOR"]),
    ],
)
def test_a_newer_minor_another_major_or_garbage_is_refused_naming_both_versions(found, words):
    problem = compatibility_problem(found, ours="1.3")
    for word in words:
        assert word in problem


# -- the chain ----------------------------------------------------------------------------------


def _step(seq: int, text: str = "hello") -> dict:
    return {
        "attempt": ATTEMPT,
        "seq": seq,
        "kind": "message",
        "summary": text,
        "data": {"kind": "message", "text": text},
    }


def test_the_chain_is_sha256_of_the_previous_digest_and_the_steps_sorted_compact_json():
    h0 = hashlib.sha256(RUN.encode()).hexdigest()
    assert chain_start(RUN) == h0
    encoded = b'{"attempt":"' + ATTEMPT.encode() + b'","data":{"kind":"message","text":"hello"},"kind":"message",'
    encoded += b'"seq":0,"summary":"hello"}'
    assert step_bytes(_step(0)) == encoded
    h1 = hashlib.sha256(bytes.fromhex(h0) + encoded).hexdigest()
    assert chain_of(RUN, [_step(0)]) == (h1, 1)


def test_the_chain_sees_what_canonical_json_folds():
    # Library digests ignore line-end style and Unicode normalisation on purpose; a trace must not.
    crlf, lf = _step(0, "a\r\nb"), _step(0, "a\nb")
    assert digest_of(crlf) == digest_of(lf)
    assert chain_of(RUN, [crlf]) != chain_of(RUN, [lf])
    assert chain_of(RUN, [_step(0, "Cafe\u0301")]) != chain_of(RUN, [_step(0, "Caf\u00e9")])


def test_the_chain_depends_on_order_and_on_the_run():
    a, b = _step(0, "a"), _step(1, "b")
    assert chain_of(RUN, [a, b]) != chain_of(RUN, [b, a])
    assert chain_of(RUN, [a]) != chain_of(ATTEMPT, [a])


def test_an_events_line_is_the_step_plus_its_chain_value():
    chain = Chain(RUN)
    line = chained_line(chain, _step(0))
    parsed = json.loads(line)
    assert parsed.pop("h") == chain.head and parsed == _step(0) and line.endswith(b"\n")
    with pytest.raises(BundleError):
        chained_line(chain, {"h": "x"})


# -- manifest, root, paths ----------------------------------------------------------------------


def test_the_root_is_the_digest_of_the_canonical_manifest():
    entries = [FileEntry("b.txt", 1, "2" * 64), FileEntry("a.txt", 3, "1" * 64)]
    manifest = manifest_document(entries, {"runs": 0})
    assert [f["path"] for f in manifest["files"]] == ["a.txt", "b.txt"]
    assert manifest["format"] == FORMAT_NAME and manifest["format_version"] == FORMAT_VERSION
    assert (
        root_hash(manifest)
        == digest_of(manifest)
        == hashlib.sha256(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    )


def test_the_streamed_manifest_is_that_document_and_hashes_to_its_root():
    entries = [FileEntry(f"evidence/{i:03d}/run.json", i, f"{i:064x}") for i in range(200, 0, -1)]
    entries.append(FileEntry("caf\u00e9.txt", 1, "f" * 64))
    out = io.BytesIO()
    root = write_manifest(out, entries, {"runs": 2, "attempts": 3})
    parsed = json.loads(out.getvalue())
    assert parsed == manifest_document(entries, {"runs": 2, "attempts": 3})
    assert root == root_hash(parsed)
    assert out.getvalue().count(b"\n") == len(entries) + 2  # one entry per line


@pytest.mark.parametrize("bad", ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\\b", "a\x00"])
def test_unsafe_paths_are_named(bad):
    assert path_problem(bad)


def test_events_paths_name_their_run():
    assert run_of_events_path(f"events/{RUN}.jsonl") == RUN
    assert run_of_events_path("events/not-a-uuid.jsonl") == ""
    assert run_of_events_path(f"evidence/{RUN}.jsonl") == ""


# -- writing and verifying a bundle by hand -----------------------------------------------------


def _write(writer) -> str:
    writer.write_bytes("bundle.json", json.dumps({"format": FORMAT_NAME, "format_version": FORMAT_VERSION}).encode())
    chain = Chain(RUN)
    with writer.open("runs.jsonl") as runs, writer.open(f"events/{RUN}.jsonl") as events:
        for seq in range(3):
            events.write(chained_line(chain, _step(seq)))
        runs.write(json.dumps({"run": {"uuid": RUN}, "chain": {"head": chain.head, "steps": 3}}).encode() + b"\n")
    writer.write_bytes("evidence/x/agent.stdout", b"")
    return writer.finish({"runs": 1})


def test_a_directory_and_an_archive_of_the_same_content_have_the_same_root(tmp_path: Path):
    root_dir = _write(DirectoryWriter(tmp_path / "dir"))
    with (tmp_path / "b.tar.gz").open("wb") as fh:
        root_tar = _write(TarWriter(fh, mtime=0))
    assert root_dir == root_tar == (tmp_path / "dir" / "ROOT").read_text().strip()
    for path in (tmp_path / "dir", tmp_path / "b.tar.gz"):
        report = verify(path)
        assert report.ok, [str(p) for p in report.problems]
        assert (report.runs, report.steps, report.files) == (1, 3, 6)  # 4 listed, manifest, ROOT
    names = [m.path for m in iter_archive(tmp_path / "b.tar.gz")]
    assert names[0] == "bundle.json" and names[-2:] == ["manifest.json", "ROOT"]


def test_a_writer_refuses_unsafe_or_repeated_paths_and_a_used_directory(tmp_path: Path):
    writer = DirectoryWriter(tmp_path / "w")
    writer.write_bytes("a.txt", b"1")
    for bad in ("a.txt", "../escape", "manifest.json"):
        with pytest.raises(BundleError):
            writer.write_bytes(bad, b"x")
    with pytest.raises(BundleError, match="not an empty directory"):
        DirectoryWriter(tmp_path / "w")


def test_extract_refuses_links_and_climbing_paths(tmp_path: Path):
    for name, kind in (("../up.txt", tarfile.REGTYPE), ("link", tarfile.SYMTYPE)):
        archive = tmp_path / f"{kind!r}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
            data = b"" if kind == tarfile.SYMTYPE else b"abc"
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        with pytest.raises(BundleError, match=r"refusing|regular files only"):
            extract(archive, tmp_path / f"out-{kind!r}", expected={})
    assert not (tmp_path / "up.txt").exists()


def test_a_truncated_archive_is_unreadable(tmp_path: Path):
    with (tmp_path / "b.tar.gz").open("wb") as fh:
        _write(TarWriter(fh, mtime=0))
    data = (tmp_path / "b.tar.gz").read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(data[: len(data) // 2])
    problems = verify(tmp_path / "cut.tar.gz").problems
    assert any(p.kind == "unreadable" and "corrupt or truncated" in p.message for p in problems)
