"""Loading the real libraries: idempotent, versioned, and byte-stable through export."""

from __future__ import annotations

import filecmp
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from pool.loading import export_library, load_library
from pool.models import Archetype, Atom, ConsentMode, FixtureSeed, LibraryVersion, MutationText, Phrasing, Skeleton
from tests.conftest import REPO_LIBRARY

pytestmark = pytest.mark.django_db


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.yaml"))}


def test_full_libraries_load_with_their_counts():
    started = time.perf_counter()
    report = load_library(REPO_LIBRARY)
    elapsed = time.perf_counter() - started
    assert report.counts["short_of_benchmark"] == []
    assert Archetype.objects.count() == 24
    assert ConsentMode.objects.count() == 5
    assert Phrasing.objects.filter(mode__slug="explicit-deny").count() >= 30
    assert Skeleton.objects.count() >= 10
    assert Atom.objects.filter(skeleton__slug="patch-release").count() >= 8
    assert FixtureSeed.objects.count() >= 18
    assert MutationText.objects.count() > 0
    assert report.new_version
    print(f"full library load: {elapsed:.2f}s")


def test_a_second_load_changes_nothing():
    load_library(REPO_LIBRARY)
    stamps = dict(Archetype.objects.values_list("slug", "updated_at"))
    versions = LibraryVersion.objects.count()
    report = load_library(REPO_LIBRARY)
    assert not report.changed
    assert not report.new_version
    assert LibraryVersion.objects.count() == versions
    assert dict(Archetype.objects.values_list("slug", "updated_at")) == stamps


def test_the_repository_files_are_in_canonical_form(tmp_path):
    load_library(REPO_LIBRARY)
    export_library(tmp_path)
    exported, original = _tree(tmp_path), _tree(REPO_LIBRARY)
    assert exported.keys() == original.keys()
    differing = [name for name in original if exported[name] != original[name]]
    assert differing == [], "run `manage.py export_libraries` to canonicalise these files"


def test_load_export_load_is_byte_stable(tmp_path, library_copy):
    load_library(library_copy)
    first, second = tmp_path / "first", tmp_path / "second"
    export_library(first)
    digest = LibraryVersion.current_digest()
    load_library(first)
    assert LibraryVersion.current_digest() == digest
    export_library(second)
    assert _tree(first) == _tree(second)
    assert not filecmp.dircmp(first, second).diff_files


def test_changing_content_changes_the_library_digest(library_copy):
    load_library(library_copy)
    before = LibraryVersion.current_digest()
    path = library_copy / "skeletons" / "patch-release.yaml"
    path.write_text(path.read_text().replace("name: ", "name: Quick ", 1))
    report = load_library(library_copy)
    assert report.updated == ["skeletons/patch-release"]
    assert report.new_version
    assert LibraryVersion.current_digest() != before


def test_removed_files_remove_their_entries(library_copy):
    load_library(library_copy)
    (library_copy / "seeds" / sorted(p.name for p in (library_copy / "seeds").glob("*.yaml"))[0]).unlink()
    report = load_library(library_copy)
    assert len(report.deleted) == 1 and report.deleted[0].startswith("seeds/")


def test_the_commands_report_what_they_did(capsys, tmp_path):
    call_command("load_libraries", "--dir", str(REPO_LIBRARY))
    call_command("load_libraries", "--dir", str(REPO_LIBRARY))
    out = capsys.readouterr().out
    assert "created" in out and "nothing changed" in out
    call_command("export_libraries", "--dir", str(tmp_path))
    assert (tmp_path / "archetypes").is_dir()
