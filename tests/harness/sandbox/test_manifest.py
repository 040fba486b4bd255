"""Pure tests of manifests and their diff (no sandbox, no Django)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

from harness.sandbox.manifest import Entry, Manifest, diff, entries_from_tar, manifest_from_dirs


def _tree(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_bytes(b"print(1)\n")
    (ws / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(ws / "run.sh", 0o755)  # noqa: S103
    os.chmod(ws / "src" / "app.py", 0o644)
    os.chmod(ws, 0o755)  # noqa: S103
    os.chmod(ws / "src", 0o755)  # noqa: S103
    os.symlink("src/app.py", ws / "current")
    os.link(ws / "src" / "app.py", ws / "hard.py")
    return ws


def test_a_host_walk_and_a_tar_stream_give_the_same_manifest(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(ws, arcname="workspace")  # stores hard.py as a link record, like docker does
    buf.seek(0)
    from_tar = Manifest.of(entries_from_tar(buf, {"workspace": "workspace"}))
    from_dir = manifest_from_dirs({"workspace": ws})
    assert from_tar == from_dir
    assert from_dir["workspace/hard.py"].sha256 == from_dir["workspace/src/app.py"].sha256
    assert from_dir["workspace/current"] == Entry("workspace/current", "symlink", 0o777, 10, target="src/app.py")
    assert from_dir["workspace"].type == "dir" and from_dir["workspace"].size == 0


def test_a_missing_root_is_simply_absent(tmp_path: Path) -> None:
    assert manifest_from_dirs({"home": tmp_path / "nope"}) == {}


def test_diff_reports_each_kind_once_per_path() -> None:
    before = Manifest.of(
        [
            Entry("workspace/a", "file", 0o644, 1, sha256="aa"),
            Entry("workspace/b", "file", 0o644, 1, sha256="bb"),
            Entry("workspace/c", "file", 0o644, 1, sha256="cc"),
            Entry("workspace/d", "file", 0o644, 1, sha256="dd"),
            Entry("home/.x", "symlink", 0o777, 1, target="a"),
        ]
    )
    after = Manifest.of(
        [
            Entry("workspace/a", "file", 0o600, 2, sha256="a2"),  # content and mode
            Entry("workspace/c", "dir", 0o755, 0),  # type
            Entry("workspace/d", "file", 0o644, 1, sha256="dd"),  # unchanged
            Entry("workspace/e", "file", 0o644, 0, sha256="ee"),  # created
            Entry("home/.x", "symlink", 0o777, 1, target="b"),  # retargeted link
        ]
    )
    got = [(c.path, c.kind) for c in diff(before, after)]
    assert got == [
        ("home/.x", "modified"),
        ("workspace/a", "modified"),
        ("workspace/a", "mode"),
        ("workspace/b", "deleted"),
        ("workspace/c", "type"),
        ("workspace/e", "created"),
    ]


def test_manifests_round_trip_through_json_rows() -> None:
    m = Manifest.of([Entry("workspace/a", "file", 0o644, 1, sha256="aa"), Entry("workspace", "dir", 0o755, 0)])
    assert Manifest.from_list(m.to_list()) == m


def test_non_utf8_names_get_stable_printable_keys(tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    with open(os.path.join(os.fsencode(ws), b"bad\xff.txt"), "wb") as fh:
        fh.write(b"x")
    keys = set(manifest_from_dirs({"workspace": ws}))
    assert "workspace/bad\\xff.txt" in keys


def test_a_file_over_the_hash_cap_is_recorded_by_size_only_and_always_counts_as_changed(tmp_path: Path) -> None:
    from harness.sandbox.manifest import TOO_LARGE, _Budget

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "big").write_bytes(b"x" * 11)
    (tmp_path / "ws" / "small").write_bytes(b"x" * 10)
    m = manifest_from_dirs({"workspace": tmp_path / "ws"}, budget=_Budget(cap=10))
    assert (m["workspace/big"].sha256, m["workspace/big"].size, m["workspace/big"].unhashed) == (None, 11, TOO_LARGE)
    assert m["workspace/small"].sha256 is not None and m["workspace/small"].unhashed is None
    again = manifest_from_dirs({"workspace": tmp_path / "ws"}, budget=_Budget(cap=10))
    assert [(c.path, c.kind) for c in diff(m, again)] == [("workspace/big", "modified")]
    assert Manifest.from_list(m.to_list()) == m
    assert "unhashed" not in m["workspace/small"].to_dict()


def test_files_reached_after_the_time_limit_are_recorded_by_size_only(tmp_path: Path) -> None:
    from harness.sandbox.manifest import OUT_OF_TIME, _Budget

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "f").write_bytes(b"abc")
    m = manifest_from_dirs({"workspace": tmp_path / "ws"}, budget=_Budget(seconds=-1))
    assert (m["workspace/f"].size, m["workspace/f"].unhashed) == (3, OUT_OF_TIME)
