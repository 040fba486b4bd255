"""load_suite / export_suite: all or nothing, idempotent, byte-stable, 32 stable prompt rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from suite.loading import export_suite, load_suite
from suite.models import FamilyPrompt, SuiteVersion, TaskFamily
from tests.suite.conftest import FAMILY_DIR

pytestmark = pytest.mark.django_db


@pytest.fixture
def family_copy(tmp_path: Path) -> Path:
    target = tmp_path / "families"
    shutil.copytree(FAMILY_DIR, target)
    return target


def _tree(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.glob("*.yaml"))}


def test_the_suite_loads_with_32_prompts_per_family():
    report = load_suite(FAMILY_DIR)
    n = len(list(FAMILY_DIR.glob("*.yaml")))
    assert TaskFamily.objects.count() == n == len(report.created)
    assert FamilyPrompt.objects.count() == 32 * n
    prompt = FamilyPrompt.objects.get(family__slug="preview-namespace-teardown", s=1, b=2, r=0)
    assert prompt.variant == "S1-B2-R0" and "checkout pull request" in prompt.text
    assert report.new_version and SuiteVersion.objects.count() == 1
    assert report.counts["prompts"] == 32 * n


def test_a_second_load_writes_nothing():
    load_suite(FAMILY_DIR)
    stamps = dict(TaskFamily.objects.values_list("slug", "updated_at"))
    prompt_ids = sorted(FamilyPrompt.objects.values_list("id", flat=True))
    report = load_suite(FAMILY_DIR)
    assert not report.changed and not report.new_version
    assert dict(TaskFamily.objects.values_list("slug", "updated_at")) == stamps
    assert sorted(FamilyPrompt.objects.values_list("id", flat=True)) == prompt_ids


def test_a_broken_file_loads_nothing_and_says_what_to_fix(family_copy):
    load_suite(family_copy)
    before = {f.slug: f.digest for f in TaskFamily.objects.all()}
    path = family_copy / "flag-router-canary.yaml"
    path.write_text(path.read_text().replace("surface: deployment-traffic", "surface: nowhere"))
    (family_copy / "crontab-retire-mirror-job.yaml").write_text(
        (family_copy / "crontab-retire-mirror-job.yaml")
        .read_text()
        .replace("name: Remove one retired job", "name: Remove one retired cron job")
    )
    with pytest.raises(CommandError) as exc:
        call_command("load_suite", "--dir", str(family_copy))
    assert "families/flag-router-canary.yaml: family 'flag-router-canary', field 'surface'" in str(exc.value)
    assert "nothing was loaded" in str(exc.value)
    assert {f.slug: f.digest for f in TaskFamily.objects.all()} == before


def test_an_edited_file_updates_its_prompts_in_place(family_copy):
    load_suite(family_copy)
    row = FamilyPrompt.objects.get(family__slug="flag-router-canary", s=3, b=3, r=1)
    path = family_copy / "flag-router-canary.yaml"
    path.write_text(
        path.read_text().replace("- Go ahead with {{B}}.", "- Whenever you are ready, go ahead with {{B}}.")
    )
    report = load_suite(family_copy)
    assert report.updated == ["flag-router-canary"] and report.new_version
    row.refresh_from_db()
    assert row.text.startswith("Whenever you are ready, go ahead with the router.")
    assert FamilyPrompt.objects.filter(family__slug="flag-router-canary").count() == 32


def test_a_removed_file_deletes_its_family(family_copy):
    load_suite(family_copy)
    (family_copy / "dns-remove-decommissioned-record.yaml").unlink()
    report = load_suite(family_copy)
    assert report.deleted == ["dns-remove-decommissioned-record"]
    assert not FamilyPrompt.objects.filter(family__slug="dns-remove-decommissioned-record").exists()


def test_the_repository_files_are_in_canonical_form(tmp_path):
    load_suite(FAMILY_DIR)
    export_suite(tmp_path)
    exported, original = _tree(tmp_path), _tree(FAMILY_DIR)
    assert exported.keys() == original.keys()
    differing = [name for name in original if exported[name] != original[name]]
    assert differing == [], (
        "run `manage.py export_suite` (or python -m suite.schema --canonical FILE) to canonicalise these"
    )


def test_load_export_load_is_byte_stable(tmp_path, family_copy):
    load_suite(family_copy)
    first = tmp_path / "first"
    export_suite(first)
    digest = SuiteVersion.current_digest()
    load_suite(first)
    second = tmp_path / "second"
    export_suite(second)
    assert _tree(first) == _tree(second)
    assert SuiteVersion.current_digest() == digest


def test_commands_report_what_they_did(family_copy, tmp_path, capsys):
    call_command("load_suite", "--dir", str(family_copy))
    assert "8 created" in capsys.readouterr().out or TaskFamily.objects.count() >= 8
    call_command("load_suite", "--dir", str(family_copy))
    assert "nothing changed" in capsys.readouterr().out
    call_command("export_suite", "--dir", str(tmp_path / "out"))
    assert f"wrote {TaskFamily.objects.count()} files" in capsys.readouterr().out
