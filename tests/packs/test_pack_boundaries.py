"""A scenario pack cannot reach outside its folder (issue 33, items 5–9): its README, its export,
the pages that show it, the symlinks its build leaves, and files that are not what they claim."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from content import schema as cs
from harness.sandbox.manifest import Entry
from packs.importing import ExportError, _escaping_symlinks, export_pack, resolve
from packs.schema import PackInvalid, read_pack
from tests.packs.conftest import minimal_pack


def problems(root: Path) -> list[str]:
    with pytest.raises(PackInvalid) as info:
        read_pack(root)
    return [str(e) for e in info.value.errors]


# -- item 5: the README is a pack file like the others ---------------------------------------------


def test_a_symlinked_readme_is_refused_not_followed(tmp_path: Path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("root:x:0:0\n")
    root = minimal_pack(tmp_path / "linked")
    (root / "README.md").symlink_to(secret)
    found = problems(root)
    assert any("linked/README.md" in p and "is a symlink" in p for p in found), found
    assert not any("root:x" in p for p in found)


def test_a_huge_readme_is_refused_by_its_size_without_being_read(tmp_path: Path):
    root = minimal_pack(tmp_path / "huge")
    with open(root / "README.md", "wb") as fh:
        fh.truncate(300 * 1024 * 1024)  # sparse: refusing it must not read it
    found = problems(root)
    assert any("huge/README.md" in p and "314,572,800 bytes; the limit is 1,048,576" in p for p in found), found


def test_a_plain_readme_is_read_once_and_digested(tmp_path: Path):
    root = minimal_pack(tmp_path / "plain")
    (root / "README.md").write_text("# Plain\n")
    pack = read_pack(root)
    assert pack.readme == b"# Plain\n" and "README.md" in pack.file_digests()


# -- item 9: files that are not regular files, deep YAML, escape sequences in names -----------------


def test_a_directory_named_build_sh_is_a_clear_error(tmp_path: Path):
    root = minimal_pack(tmp_path / "dirbuild")
    (root / "tiny" / "build.sh").unlink()
    (root / "tiny" / "build.sh").mkdir()
    found = problems(root)
    assert any("dirbuild/tiny/build.sh" in p and "is a directory" in p for p in found), found


@pytest.mark.timeout(60)
def test_a_fifo_named_build_sh_is_a_clear_error_not_a_hang(tmp_path: Path):
    root = minimal_pack(tmp_path / "fifobuild")
    (root / "tiny" / "build.sh").unlink()
    os.mkfifo(root / "tiny" / "build.sh")
    found = problems(root)
    assert any("fifobuild/tiny/build.sh" in p and "is a FIFO" in p for p in found), found


def test_very_deep_yaml_is_a_message_with_its_line_not_a_recursion_error(tmp_path: Path):
    deep = "[" * (sys.getrecursionlimit() * 2) + "]" * (sys.getrecursionlimit() * 2)
    with pytest.raises(yaml.YAMLError) as info:
        cs.load_strict(deep)
    assert "nested deeper than 64 levels" in cs.yaml_problem(info.value) and "line 1" in cs.yaml_problem(info.value)
    root = minimal_pack(tmp_path / "deep", scenario="id: {id}\ntitle: " + deep + "\n")
    assert any("deep/tiny/scenario.yaml" in p and "nested deeper" in p for p in problems(root))
    # Ordinary nesting is untouched.
    nested: Any = []
    for _ in range(19):
        nested = [nested]
    assert cs.load_strict("a: " + "[" * 20 + "]" * 20) == {"a": nested}


def test_file_names_with_terminal_escapes_are_shown_escaped(tmp_path: Path):
    root = minimal_pack(tmp_path / "escapes")
    (root / "tiny" / "\x1b]0;owned\x07\x1b[2J").write_text("x")
    found = problems(root)
    text = "\n".join(found)
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;owned\\x07\\x1b[2J" in text and "unknown file" in text


# -- item 8: where a built symlink really points ----------------------------------------------------


def _manifest(links: dict[str, str]) -> dict[str, Any]:
    return {path: Entry(path, "symlink", 0o777, 0, target=target) for path, target in links.items()}


@pytest.mark.parametrize(
    "links",
    [
        {"workspace/up": "/workspace/../etc"},
        {"home/agent-shadow": "/home/agent/../../etc/shadow"},
        {"workspace/t": "/tmp", "workspace/x": "t/../etc"},
        {"workspace/a/b": "../../etc/passwd"},
        {"workspace/t": "/tmp", "workspace/y": "t/../../etc"},
        {"workspace/d": "/workspace/sub/..", "workspace/e": "d/../root"},
    ],
)
def test_symlinks_that_resolve_outside_the_roots_are_found(links: dict[str, str]):
    escapes = _escaping_symlinks(_manifest(links))
    assert escapes and any(e.split(" → ")[0] == list(links)[-1] for e in escapes), escapes


def test_symlinks_inside_the_roots_and_tmp_pass():
    links = {
        "workspace/a": "b/c",
        "workspace/t": "/tmp/scratch",
        "workspace/u": "t/../tmp-sibling",  # /tmp/scratch/../tmp-sibling = /tmp/tmp-sibling
        "home/cfg": "/workspace/config",
        "workspace/loop1": "loop2",
        "workspace/loop2": "loop1",
    }
    assert _escaping_symlinks(_manifest(links)) == []
    assert resolve("/workspace/x", {"/workspace/t": "/tmp", "/workspace/x": "t/../etc"}) == "/etc"


# -- item 6: export_scenarios writes nothing through a symlink ------------------------------------


@pytest.fixture
def imported(db: None) -> Any:
    from packs.models import PackScenario, ScenarioPack
    from pool.models import PoolVersion

    pool = PoolVersion.objects.create(library_digest="e" * 64, pool_seed=0, target_size=0, backend="bwrap")
    pack = ScenarioPack.objects.create(
        slug="exp", version=1, title="E", digest="e" * 64, source_dir="/nonexistent", backend="bwrap", pool=pool,
        files={"pack.yaml": "id: exp\n"},
    )  # fmt: skip
    PackScenario.objects.create(
        pack=pack, position=0, slug="one", title="O", category="c", digest="f" * 64, data={},
        files={"build.sh": "echo built\n", "scenario.yaml": "id: one\n"},
    )  # fmt: skip
    return pack


def test_a_planted_tmp_link_is_not_written_through(imported, tmp_path: Path):
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched\n")
    target = tmp_path / "out"
    target.mkdir()
    (target / "pack.yaml.tmp").symlink_to(outside)
    (target / "pack.yaml").symlink_to(outside)
    written = export_pack(imported, target)
    assert outside.read_text() == "untouched\n"
    assert not (target / "pack.yaml").is_symlink() and (target / "pack.yaml").read_text() == "id: exp\n"
    assert sorted(written) == ["one/build.sh", "one/scenario.yaml", "pack.yaml"]
    assert export_pack(imported, target) == []  # identical now: nothing rewritten


def test_a_symlinked_scenario_folder_is_refused_and_nothing_lands_outside(imported, tmp_path: Path):
    from django.core.management import CommandError, call_command

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "out2"
    (target / "exp").mkdir(parents=True)
    (target / "exp" / "one").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ExportError, match="is a symlink or not a folder"):
        export_pack(imported, target / "exp")
    with pytest.raises(CommandError, match="nothing is written through it"):
        call_command("export_scenarios", "exp", "--out", str(target))
    assert list(elsewhere.iterdir()) == []


# -- item 7: the pages serve what was imported, never the folder ------------------------------------

_touched: list[str] = []
_watching: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _watching and event in ("open", "os.scandir", "os.listdir") and args and isinstance(args[0], (str, Path)):
        if str(args[0]).startswith(_watching[0]):
            _touched.append(f"{event} {args[0]}")


def test_pack_pages_and_admin_never_touch_the_source_folder(imported, tmp_path: Path, role_users):
    from django.test import Client

    from packs.models import ScenarioPack

    folder = tmp_path / "source"
    minimal_pack(folder)
    with open(folder / "tiny" / "huge.bin", "wb") as fh:
        fh.truncate(1024**3)
    ScenarioPack.objects.filter(pk=imported.pk).update(source_dir=str(folder))
    if _audit not in getattr(sys, "_overeager_audit_hooks", []):
        sys.addaudithook(_audit)
        sys._overeager_audit_hooks = [_audit]  # type: ignore[attr-defined]
    client = Client()
    client.force_login(role_users["curator"])
    _touched.clear()
    _watching[:] = [str(folder)]
    try:
        for url in (
            "/packs/",
            f"/packs/{imported.pk}/",
            "/admin/packs/scenariopack/",
            f"/admin/packs/scenariopack/{imported.pk}/change/",
        ):
            response = client.get(url)
            assert response.status_code == 200, url
    finally:
        _watching.clear()
    assert _touched == []
    assert "import_scenarios --check-only" in client.get(f"/packs/{imported.pk}/").content.decode()


def test_check_only_says_which_files_changed_since_the_import(db: None, tmp_path: Path):
    from io import StringIO

    from django.core.management import call_command

    from packs.models import ScenarioPack
    from pool.models import PoolVersion

    root = minimal_pack(tmp_path / "chk")
    pack = read_pack(root)
    pool = PoolVersion.objects.create(library_digest="c" * 64, pool_seed=0, target_size=0, backend="bwrap")
    ScenarioPack.objects.create(
        slug="chk", version=1, title="T", digest=pack.digest, source_dir=str(root), backend="bwrap", pool=pool,
        file_digests=pack.file_digests(),
    )  # fmt: skip
    out = StringIO()
    call_command("import_scenarios", "--check-only", str(root), stdout=out)
    assert "unchanged since chk v1 was imported" in out.getvalue()
    (root / "tiny" / "build.sh").write_text("echo keep > keep.txt\necho more >> keep.txt\n")
    out = StringIO()
    call_command("import_scenarios", "--check-only", str(root), stdout=out)
    assert "files changed since chk v1 was imported: tiny/build.sh (an import records a new version)" in out.getvalue()
