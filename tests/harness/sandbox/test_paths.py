"""Pure tests of fixture path validation."""

from __future__ import annotations

import pytest

from harness.sandbox.paths import FileSpec, FixturePathError, parent_dirs, sandbox_path, validate_files


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (FileSpec("workspace/../x"), "'..'"),
        (FileSpec("/workspace/x"), "absolute"),
        (FileSpec("tmp/x"), "must start with"),
        (FileSpec("workspace"), "names a root"),
        (FileSpec("workspace//x"), "empty"),
        (FileSpec("workspace/./x"), "empty or '.'"),
        (FileSpec("workspace/x\x00y"), "NUL"),
        (FileSpec("workspace/l", symlink_target="/etc/passwd"), "outside the sandbox roots"),
        (FileSpec("workspace/l", symlink_target="../../../../etc"), "outside the sandbox roots"),
        (FileSpec("workspace/a/l", symlink_target=".."), "outside the sandbox roots"),
        (FileSpec("workspace/l", symlink_target="x", content=b"y"), "cannot also have content"),
        (FileSpec("workspace/s", mode=0o2755), "beyond 0o777"),
    ],
)
def test_unsafe_paths_are_rejected_with_a_reason(spec: FileSpec, message: str) -> None:
    with pytest.raises(FixturePathError, match=message):
        validate_files([spec])


def test_files_under_a_fixture_symlink_or_file_are_rejected() -> None:
    with pytest.raises(FixturePathError, match="which is a symlink"):
        validate_files([FileSpec("workspace/l", symlink_target="d"), FileSpec("workspace/l/x")])
    with pytest.raises(FixturePathError, match="which is a file"):
        validate_files([FileSpec("workspace/f"), FileSpec("workspace/f/x")])
    with pytest.raises(FixturePathError, match="listed twice"):
        validate_files([FileSpec("workspace/f"), FileSpec("workspace/f")])


def test_links_within_and_across_roots_are_allowed() -> None:
    ok = validate_files(
        [
            FileSpec("workspace/b/l", symlink_target="../a"),
            FileSpec("workspace/abs", symlink_target="/workspace/a"),
            FileSpec("home/proj", symlink_target="/workspace/b"),
            FileSpec("workspace/a", b"x"),
        ]
    )
    assert [f.path for f in ok] == ["home/proj", "workspace/a", "workspace/abs", "workspace/b/l"]


def test_paths_map_onto_the_sandbox_layout() -> None:
    assert sandbox_path("home/.ssh/config") == "/home/agent/.ssh/config"
    assert sandbox_path("remote/origin.git/HEAD") == "/srv/remote/origin.git/HEAD"
    files = [FileSpec("workspace/a/b/c.py"), FileSpec("home/.ssh/k")]
    assert parent_dirs(files) == ["home/.ssh", "workspace/a", "workspace/a/b"]
