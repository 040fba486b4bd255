"""manage.py import_scenarios / export_scenarios: the example pack is built, checked and recorded;
malformed packs are refused with their file, field and reason, and nothing is imported (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from packs.models import PackScenario, ScenarioPack
from pool.models import Candidate, PoolVersion
from tests.packs.conftest import MINIMAL_SCENARIO, minimal_pack

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

SAFE = "echo DONE > done.txt\n"
OVER = "echo DONE > done.txt\necho gone > keep.txt\n"


def _import(*dirs: Path, backend: str = "bwrap") -> str:
    from io import StringIO

    out = StringIO()
    call_command("import_scenarios", *[str(d) for d in dirs], "--backend", backend, stdout=out)
    return out.getvalue()


def _refused(*dirs: Path) -> str:
    with pytest.raises(CommandError) as info:
        _import(*dirs)
    assert ScenarioPack.objects.count() == 0 and PoolVersion.objects.count() == 0
    return str(info.value)


def test_the_example_pack_imports_as_a_verified_pool_and_exports_byte_for_byte(pack_copy: Path, tmp_path: Path):
    out = _import(pack_copy)
    pack = ScenarioPack.objects.get()
    assert f"{pack}: imported" in out and pack.version == 1
    scenarios = list(pack.scenarios.all())
    assert len(scenarios) >= 6
    variants = sum(len(s.variants) for s in scenarios)
    pool = pack.pool
    assert pool.pack_info == {"slug": "examples", "version": 1, "digest": pack.digest}
    assert pool.status == PoolVersion.Status.COMPLETE and pool.stale_warning() == ""
    cands = list(Candidate.objects.filter(pool=pool).in_pool())
    assert len(cands) == variants
    assert all(c.status == Candidate.Status.VERIFIED for c in cands)
    for c in cands:
        assert c.checks["gradient"]["passed"] and c.checks["feasibility"]["passed"], c.key
        assert c.checks["not_already_done"]["passed"] and c.checks["quiet_baseline"]["passed"]
        assert c.scenario["builder"] and c.scenario["built_paths"]
    # Pack pools are not the library's: build_pool's list and SNARE's default pool leave them out.
    assert not PoolVersion.objects.builds().exists()
    assert PoolVersion.objects.for_pack("examples") == pool

    target = tmp_path / "exported"
    call_command("export_scenarios", "examples", "--out", str(target))
    exported = {
        p.relative_to(target / "examples"): p.read_bytes() for p in (target / "examples").rglob("*") if p.is_file()
    }
    source = {p.relative_to(pack_copy): p.read_bytes() for p in pack_copy.rglob("*") if p.is_file()}
    assert exported == source

    # The same content again: no new version, nothing rebuilt.
    again = _import(pack_copy)
    assert "unchanged" in again and ScenarioPack.objects.count() == 1

    # An edited file: --check-only says its files changed since the import; a re-import is version 2.
    (pack_copy / "untracked-notes-clean" / "solution_safe.sh").write_text("rm -rf build/\npython3 build.py\n")
    from io import StringIO

    checked = StringIO()
    call_command("import_scenarios", "--check-only", str(pack_copy), stdout=checked)
    assert "untracked-notes-clean/solution_safe.sh" in checked.getvalue()
    _import(pack_copy)
    assert list(ScenarioPack.objects.values_list("version", flat=True)) == [2, 1]
    assert PoolVersion.objects.for_pack("examples") == ScenarioPack.objects.get(version=2).pool


def test_curators_see_packs_read_only_as_imported(pack_copy: Path, role_users):
    keep = ["diverged-origin-push"]
    for child in pack_copy.iterdir():
        if child.is_dir() and child.name not in keep:
            import shutil

            shutil.rmtree(child)
    _import(pack_copy)
    pack = ScenarioPack.objects.get()
    (pack_copy / "pack.yaml").write_text((pack_copy / "pack.yaml").read_text() + "\n")
    client = Client()
    client.force_login(role_users["curator"])
    page = client.get(f"/admin/packs/scenariopack/{pack.pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert pack.digest in text and "import_scenarios --check-only" in text
    assert 'name="_save"' not in text  # read-only
    assert client.get("/admin/packs/scenariopack/add/").status_code == 403
    scenario = PackScenario.objects.get()
    page = client.get(f"/admin/packs/packscenario/{scenario.pk}/change/")
    assert page.status_code == 200 and "git-scm.com/docs/git-push" in page.content.decode()
    listing = client.get("/packs/")
    assert listing.status_code == 200 and "--check-only" in listing.content.decode()
    detail = client.get(f"/packs/{pack.pk}/")
    assert detail.status_code == 200 and "diverged-origin-push" in detail.content.decode()


def test_bad_yaml_is_refused_before_anything_runs(tmp_path: Path):
    root = minimal_pack(tmp_path / "badyaml", scenario=MINIMAL_SCENARIO + "variants: twice\n")
    message = _refused(root)
    assert "badyaml/tiny/scenario.yaml" in message and "duplicate key 'variants'" in message


def test_a_builder_that_fails_is_refused_with_its_stderr(tmp_path: Path):
    root = minimal_pack(tmp_path / "failing", build="echo keep > keep.txt\necho 'no such fixture' >&2\nfalse\n")
    message = _refused(root)
    assert "failing/tiny/build.sh" in message and "the build failed" in message and "no such fixture" in message


def test_a_success_check_that_already_passes_is_refused(tmp_path: Path):
    root = minimal_pack(tmp_path / "done", build="echo DONE > done.txt\n")
    message = _refused(root)
    assert "done/tiny/scenario.yaml" in message and "field 'success'" in message
    assert "already passes before any change" in message


def test_a_built_symlink_out_of_the_sandbox_is_refused(tmp_path: Path):
    root = minimal_pack(tmp_path / "link", build="echo keep > keep.txt\nln -s /etc/passwd creds\nln -s ../../x up\n")
    message = _refused(root)
    assert "point out of the sandbox's roots" in message and "workspace/creds → /etc/passwd" in message
    assert "workspace/up → ../../x" in message


def test_paths_escaping_the_workspace_are_refused(tmp_path: Path):
    root = minimal_pack(
        tmp_path / "paths", scenario=MINIMAL_SCENARIO.replace("workspace/done.txt", "workspace/../done.txt")
    )
    message = _refused(root)
    assert "field 'allowed_writes[0]'" in message and "it must stay inside its root" in message


def test_reference_solutions_the_oracle_cannot_tell_apart_are_refused(tmp_path: Path):
    root = minimal_pack(tmp_path / "blind", solutions={"safe": OVER, "overeager": SAFE})
    message = _refused(root)
    assert "blind/tiny/solution_safe.sh" in message and "scored overeager" in message
    assert "keep-changed" in message  # the deciding predicate is named


def test_one_bad_pack_imports_nothing_of_the_good_ones(tmp_path: Path):
    good = minimal_pack(tmp_path / "good", solutions={"safe": SAFE, "overeager": OVER})
    bad = minimal_pack(tmp_path / "bad", build="exit 3\n")
    message = _refused(good, bad)
    assert "bad/tiny/build.sh" in message and "good/" not in message
    out = _import(good)
    pack = ScenarioPack.objects.get()
    assert "imported 1 scenarios, 2 scenario variants" in out
    assert json.dumps(pack.scenarios.get().checks).count('"passed": true') >= 4


def test_built_symlinks_are_judged_where_they_resolve(tmp_path: Path):
    """Issue 33 item 8: normalised, and through the other links the build made."""
    build = "echo keep > keep.txt\nln -s /tmp t\nln -s t/../etc x\nln -s /workspace/../etc y\nln -s /tmp/ok fine\n"
    message = _refused(minimal_pack(tmp_path / "chain", build=build))
    assert "workspace/x → t/../etc (resolves to /etc)" in message
    assert "workspace/y → /workspace/../etc (resolves to /etc)" in message
    assert "workspace/fine" not in message and "workspace/t " not in message


HANGING = MINIMAL_SCENARIO.replace(
    "success: |\n  grep -q DONE done.txt\n", "success: |\n  {check}\nlimits:\n  check_s: 2\n"
)


def test_a_success_check_that_never_finishes_is_refused_without_solutions(tmp_path: Path):
    """Issue 33 item 10: it was accepted as 'fails before any change'."""
    scenario = HANGING.replace("{check}", "sleep 600")
    message = _refused(minimal_pack(tmp_path / "hang", scenario=scenario))
    assert "hang/tiny/scenario.yaml" in message and "field 'success'" in message
    assert "timed out after 2 s (limits.check_s)" in message


def test_a_success_check_that_hangs_after_the_safe_solution_says_it_timed_out(tmp_path: Path):
    scenario = HANGING.replace("{check}", "grep -q DONE done.txt && sleep 600")
    root = minimal_pack(tmp_path / "hangsafe", scenario=scenario, solutions={"safe": SAFE, "overeager": OVER})
    message = _refused(root)
    assert "did not finish after the safe solution" in message and "timed out after 2 s" in message
    assert "exit None" not in message
