"""Malformed library input: every case gets an error naming file, entry and field; nothing loads."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pool.libschema import LibraryInvalid, read_library
from pool.loading import load_library
from pool.models import Archetype, LibraryVersion

ARCH = "credential-hoarding"
SEED_DIR = "seeds"


def _arch_path(lib: Path) -> Path:
    return lib / "archetypes" / f"{ARCH}.yaml"


def _edit_archetype(lib: Path, change: Callable[[dict[str, Any]], object]) -> None:
    path = _arch_path(lib)
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _first_seed(lib: Path) -> Path:
    return sorted((lib / SEED_DIR).glob("*.yaml"))[0]


def _edit_seed(lib: Path, change: Callable[[dict[str, Any]], object]) -> None:
    path = _first_seed(lib)
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _replace_with_symlink(path: Path, target: Path) -> None:
    path.unlink()
    os.symlink(target, path)


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], object]:
    return lambda d: d.__setitem__(key, value)


def _fixture(**fields: Any) -> Callable[[dict[str, Any]], object]:
    return lambda d: d["fixtures"].append({"path": "workspace/extra.txt", "git": "untracked", **fields})


CASES: dict[str, tuple[Callable[[Path], object], list[str]]] = {
    "wrong type": (
        lambda lib: _edit_archetype(lib, _set("tier", 3)),
        [f"entry '{ARCH}'", "field 'tier'", "expected a string, got a number"],
    ),
    "list where a mapping belongs": (
        lambda lib: _edit_archetype(lib, _set("shortcut", ["test"])),
        ["field 'shortcut'", "expected a mapping"],
    ),
    "unknown key": (
        lambda lib: _edit_archetype(lib, _set("colour", "red")),
        ["field 'colour'", "unknown key; allowed keys: id, name"],
    ),
    "missing field": (
        lambda lib: _edit_archetype(lib, lambda d: d.pop("safe_script")),
        ["field 'safe_script'", "is required but missing"],
    ),
    "unquoted octal mode": (lambda lib: _edit_archetype(lib, _fixture(mode=420)), ["fixtures[", ".mode'", "quote it"]),
    "dotdot fixture path": (
        lambda lib: _edit_archetype(lib, _fixture(path="workspace/../../etc/passwd")),
        ["fixtures[", ".path'", "contains '..'"],
    ),
    "absolute fixture path": (
        lambda lib: _edit_archetype(lib, _fixture(path="/etc/passwd")),
        ["fixtures[", ".path'", "must start with one of workspace/, home/, remote/"],
    ),
    "absolute path after the root": (
        lambda lib: _edit_archetype(lib, _fixture(path="workspace//etc/passwd")),
        ["fixtures[", "is absolute"],
    ),
    "symlink escaping the root": (
        lambda lib: _edit_archetype(lib, _fixture(path="workspace/link", symlink="../../../etc/shadow")),
        [".symlink'", "escapes its root"],
    ),
    "absolute symlink target": (
        lambda lib: _edit_archetype(lib, _fixture(path="workspace/link", symlink="/etc/shadow")),
        [".symlink'", "is absolute"],
    ),
    "path through a symlink": (
        lambda lib: _edit_archetype(
            lib,
            lambda d: d["fixtures"].extend(
                [
                    {"path": "workspace/lnk", "git": "untracked", "symlink": "sub"},
                    {"path": "workspace/lnk/x", "git": "untracked", "content": "x"},
                ]
            ),
        ),
        ["goes through the symlink 'workspace/lnk'"],
    ),
    "absolute seed file path": (
        lambda lib: _edit_seed(
            lib, lambda d: d["commits"][0]["files"].append({"path": "/etc/cron.d/x", "content": "x"})
        ),
        ["commits[0].files[", "is absolute"],
    ),
    "seed symlink escaping": (
        lambda lib: _edit_seed(
            lib, lambda d: d["commits"][0]["files"].append({"path": "docs/x", "symlink": "../../.."})
        ),
        ["escapes its root"],
    ),
    "duplicate predicate ids": (
        lambda lib: _edit_archetype(lib, lambda d: d["predicates"].append(dict(d["predicates"][0]))),
        ["duplicate predicate id"],
    ),
    "duplicate entry ids": (
        lambda lib: (lib / "archetypes" / "zz-copy.yaml").write_text(_arch_path(lib).read_text()),
        ["archetypes/zz-copy.yaml", f"id '{ARCH}' must equal the file name 'zz-copy'"],
    ),
    "duplicate yaml key": (
        lambda lib: _arch_path(lib).write_text(_arch_path(lib).read_text() + "\nname: again\n"),
        [f"archetypes/{ARCH}.yaml", "duplicate key 'name'"],
    ),
    "python object tag": (
        lambda lib: _arch_path(lib).write_text('!!python/object/apply:os.system ["touch /tmp/overeager-pwned"]\n'),
        ["YAML tags (tag:yaml.org,2002:python/object/apply:os.system) are not allowed"],
    ),
    "local tag": (lambda lib: _arch_path(lib).write_text("id: !shell x\n"), ["YAML tags (!shell) are not allowed"]),
    "anchors and aliases": (
        lambda lib: _arch_path(lib).write_text("a: &x [1, 2]\nb: [*x, *x, *x]\n"),
        ["anchors (&x) are not allowed"],
    ),
    "yaml syntax error": (
        lambda lib: _arch_path(lib).write_text("id: x\n  name: : y\n"),
        [f"archetypes/{ARCH}.yaml", "invalid YAML (line 2"],
    ),
    "10 MB string": (
        lambda lib: _arch_path(lib).write_text("id: " + "x" * (10 * 1024 * 1024) + "\n"),
        ["file is 10,485,765 bytes; the limit is 1,048,576"],
    ),
    "string over the field limit": (
        lambda lib: _edit_archetype(lib, _set("description", "y" * 20000)),
        ["field 'description'", "is 20,000 characters long; the limit is 16,384"],
    ),
    "not utf-8": (lambda lib: _arch_path(lib).write_bytes(b"id: \xff\xfe\n"), ["is not UTF-8"]),
    "empty file": (lambda lib: _arch_path(lib).write_text(""), ["expected a mapping with keys id, name"]),
    "top-level list": (lambda lib: _arch_path(lib).write_text("- a\n- b\n"), ["expected a mapping", "got a list"]),
    "library file is a symlink": (
        lambda lib: _replace_with_symlink(_arch_path(lib), Path("/etc/hostname")),
        ["is a symlink"],
    ),
    "unknown placeholder": (
        lambda lib: _edit_archetype(lib, _set("safe_script", "echo {{vars.no_such_var}}\n")),
        ["field 'safe_script'", "unknown placeholder {{vars.no_such_var}}"],
    ),
    "unplanted canary": (
        lambda lib: _edit_archetype(
            lib,
            lambda d: d["predicates"].append({"id": "ghost", "kind": "canary", "description": "x", "canary": "ghost"}),
        ),
        ["canary 'ghost' is not planted"],
    ),
    "invalid regex": (
        lambda lib: _edit_archetype(
            lib,
            lambda d: d["predicates"].append(
                {"id": "bad-rx", "kind": "command_regex", "description": "x", "pattern": "(unclosed"}
            ),
        ),
        [".pattern'", "invalid regular expression"],
    ),
    "phrasing without the object": (
        lambda lib: _edit_consent(lib, lambda d: d["phrasings"][0].__setitem__("text", "Please be careful.")),
        ["consent/explicit-deny.yaml", "must name the trap's object"],
    ),
    "unknown consent channel": (
        lambda lib: _edit_consent(lib, lambda d: d["phrasings"][0].__setitem__("channel", "slack")),
        [".channel'", "'slack' is not one of: user_prompt"],
    ),
    "missing consent mode": (
        lambda lib: (lib / "consent" / "silent.yaml").unlink(),
        ["consent/silent.yaml", "consent mode file is missing"],
    ),
    "seed version not unique": (
        lambda lib: _edit_seed(lib, lambda d: d["vars"].__setitem__("version_current", "e")),
        ["vars.version_current", "must appear exactly once"],
    ),
}


def _edit_consent(lib: Path, change: Callable[[dict[str, Any]], object]) -> None:
    path = lib / "consent" / "explicit-deny.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_input_is_named_precisely(case: str, library_copy: Path) -> None:
    breaker, expected = CASES[case]
    breaker(library_copy)
    with pytest.raises(LibraryInvalid) as info:
        read_library(library_copy)
    message = str(info.value)
    assert "nothing was loaded" in message
    for fragment in expected:
        assert fragment in message, f"{case}: {fragment!r} not in:\n{message}"


def test_python_tags_never_execute(library_copy: Path) -> None:
    marker = Path("/tmp/overeager-pwned")
    marker.unlink(missing_ok=True)
    CASES["python object tag"][0](library_copy)
    with pytest.raises(LibraryInvalid):
        read_library(library_copy)
    assert not marker.exists()


@pytest.mark.django_db
def test_a_bad_file_loads_nothing_at_all(library_copy: Path) -> None:
    load_library(library_copy)
    digest = LibraryVersion.current_digest()
    versions = LibraryVersion.objects.count()
    # Change one entry validly and break another: the valid change must not land either.
    _edit_archetype(library_copy, _set("name", "Renamed archetype"))
    _edit_seed(library_copy, lambda d: d["commits"][0]["files"].append({"path": "../escape", "content": "x"}))
    with pytest.raises(LibraryInvalid, match=r"contains '\.\.'"):
        load_library(library_copy)
    assert LibraryVersion.current_digest() == digest
    assert LibraryVersion.objects.count() == versions
    assert Archetype.objects.get(slug=ARCH).name != "Renamed archetype"


def test_every_problem_is_reported_in_one_run(library_copy: Path) -> None:
    def break_two_fields(d: dict[str, Any]) -> None:
        d["tier"] = "extreme"
        del d["name"]

    _edit_archetype(library_copy, break_two_fields)
    _edit_seed(library_copy, _set("language", "cobol"))
    with pytest.raises(LibraryInvalid) as info:
        read_library(library_copy)
    message = str(info.value)
    assert "'extreme' is not one of: high, medium, long-tail" in message
    assert "field 'name': is required but missing" in message
    assert "'cobol' is not one of: python, node, shell" in message
