"""Import: a round trip reproduces every figure, twice changes nothing, and what is refused writes nothing.

Each test exports a realistic synthetic campaign (retries, dropped slots, transcripts, evidence,
labels) once for the module from rows it then rolls back, so each test imports into an empty
install with a fresh EVIDENCE_DIR.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.test import Client, override_settings
from django.urls import reverse

from harness.bundle.format import HEADER, MANIFEST, BundleError
from labels.bundle import LabelsSection
from labels.models import HumanLabel, JudgeLabel, VerdictAdjudication, VerdictLabel, VerdictQueueItem
from pool.models import Archetype, Candidate, PoolVersion
from runs.bundle.exporter import export_bundle, resolve
from runs.bundle.importer import import_bundle
from runs.models import AgentFramework, Campaign, ModelEndpoint, Run, RunAttempt, RunEvent
from tests.runs.bundle import synthetic
from tests.runs.bundle.conftest import empty_install
from tests.runs.bundle.figures import campaign_figures

pytestmark = pytest.mark.django_db


def _counts() -> dict[str, int]:
    return {
        "campaigns": Campaign.objects.count(),
        "runs": Run.objects.count(),
        "attempts": RunAttempt.objects.count(),
        "events": RunEvent.objects.count(),
        # Only the scenarios the runs ran travel with the bundle.
        "scenarios": Candidate.objects.filter(runs__isnull=False).distinct().count(),
        "pools": PoolVersion.objects.count(),
        "archetypes": Archetype.objects.count(),
        "judge labels": JudgeLabel.objects.count(),
        "human labels": HumanLabel.objects.count(),
        "verdict items": VerdictQueueItem.objects.count(),
        "verdict labels": VerdictLabel.objects.count(),
        "verdict rulings": VerdictAdjudication.objects.count(),
    }


def _evidence_files(root: Path) -> dict[str, bytes]:
    return (
        {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        if root.exists()
        else {}
    )


@pytest.fixture(scope="module")
def source(django_db_setup, django_db_blocker, tmp_path_factory) -> dict[str, Any]:
    """The campaign's bundle (a directory and an archive) and its figures, from rows rolled back at once.

    So every test starts from an empty install: no campaign, run, pool, SUT or library row.
    """
    base = tmp_path_factory.mktemp("rules")
    caches = {"default": {**settings.CACHES["default"], "KEY_PREFIX": f"bundle-rules-{uuid.uuid4().hex[:10]}"}}
    shape = synthetic.Shape(events=(5, 30), gateway_records=(2, 5), invalid_share=0.2)
    with (
        django_db_blocker.unblock(),
        override_settings(EVIDENCE_DIR=base / "evidence", CACHES=caches),
        transaction.atomic(),
    ):
        c = synthetic.campaign(40, name="rules", shape=shape)
        synthetic.labels(c)
        info = {
            "uuid": str(c.uuid),
            "pk": c.pk,
            "figures": campaign_figures(c),
            "runs": _run_facts(c),
            "counts": _counts(),
            "dir": base / "bundle",
            "archive": base / "bundle.tar.gz",
        }
        export_bundle(resolve([str(c.pk)]), info["dir"])
        export_bundle(resolve([c.name]), info["archive"])
        transaction.set_rollback(True)
    return info


@pytest.fixture(autouse=True)
def private_evidence(settings: Any, tmp_path: Path) -> None:
    """Each import writes its evidence files into a folder of its own test, not the checkout's
    var/evidence, where an earlier test's files would fail the rollback test's "no file left"."""
    settings.EVIDENCE_DIR = tmp_path / "evidence-imported"


@pytest.fixture
def exported(source: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """A private copy of the bundle directory (tests may damage it) next to the shared archive."""
    copy = tmp_path / "bundle"
    shutil.copytree(source["dir"], copy)
    return {**source, "dir": copy}


def _run_facts(c: Campaign) -> dict[str, tuple[Any, ...]]:
    # tier and propensity: the uniform-mix rate and any propensity-weighted estimate are
    # reproduced from them (issue 23).
    return {
        str(u): (status, overeager, count, tier, propensity)
        for u, status, overeager, count, tier, propensity in Run.objects.filter(campaign=c).values_list(
            "uuid", "status", "overeager", "counted_attempt__event_count", "tier", "propensity"
        )
    }


def test_an_imported_campaign_reproduces_every_figure_and_record(exported, settings, tmp_path):
    report = import_bundle(exported["archive"])
    assert report.changed and report.created["runs"] == 40
    imported = Campaign.objects.get(uuid=exported["uuid"])
    assert imported.pk != exported["pk"]  # new ids: the figures do not depend on them
    assert campaign_figures(imported) == exported["figures"]
    assert exported["figures"]["overall"]["uniform"]["reserve_runs"] > 0
    # Costs travel exactly (decimals as strings): per cell, in total, and the agents' own claims.
    costs = exported["figures"]["costs"]
    assert costs["total"]["spent"] > 0 and costs["claims_disagreeing"] > 0 and costs["cells"]
    assert _counts() == exported["counts"]
    assert _run_facts(imported) == exported["runs"]
    # The evidence is where the run page reads it: a model request served from the imported files.
    attempt = RunAttempt.objects.filter(run__campaign=imported, validity="valid").order_by("pk").first()
    assert Path(attempt.evidence_dir).is_relative_to(settings.EVIDENCE_DIR)
    client = Client()
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("auditor", password="x"))
    response = client.get(reverse("run-gateway-record", args=[attempt.run_id, 1]))
    assert response.status_code == 200 and response.json()["record"]["seq"] == 1


def test_importing_the_same_bundle_twice_changes_nothing(exported, settings, tmp_path, capsys):
    import_bundle(exported["dir"])
    before, files = _counts(), _evidence_files(Path(settings.EVIDENCE_DIR))
    again = import_bundle(exported["archive"])
    assert not again.changed and again.present["campaigns"] == 1
    assert _counts() == before and _evidence_files(Path(settings.EVIDENCE_DIR)) == files
    call_command("import_bundle", str(exported["dir"]))
    assert "nothing changed" in capsys.readouterr().out
    assert _counts() == before


def test_re_exporting_an_imported_campaign_gives_the_same_files(exported, settings, tmp_path):
    import_bundle(exported["dir"])
    again = tmp_path / "again"
    export_bundle(resolve([exported["uuid"]]), again)

    def files(root: Path) -> dict[str, str]:
        listed = json.loads((root / MANIFEST).read_text())["files"]
        return {e["path"]: e["sha256"] for e in listed if e["path"] != HEADER}

    assert files(again) == files(exported["dir"])


def test_an_incompatible_format_version_is_refused_naming_both_versions(exported, settings, tmp_path):
    header = exported["dir"] / HEADER
    data = json.loads(header.read_text())
    data["format_version"] = "2.0"
    header.write_text(json.dumps(data))
    with pytest.raises(BundleError) as refused:
        import_bundle(exported["dir"])
    message = str(refused.value)
    assert "format 2.0" in message and "1.0" in message and "newer Overeager" in message
    assert Campaign.objects.count() == 0
    with pytest.raises(CommandError, match=r"format 2\.0"):
        call_command("import_bundle", str(exported["dir"]))


def test_a_bundle_that_fails_verification_is_not_imported(exported, settings, tmp_path):
    victim = next((exported["dir"] / "evidence").rglob("run.json"))
    victim.write_bytes(victim.read_bytes().replace(b'"attempt"', b'"attempT"', 1))
    with pytest.raises(BundleError) as refused:
        import_bundle(exported["dir"])
    assert "failed verification" in str(refused.value)
    assert victim.relative_to(exported["dir"]).as_posix() in str(refused.value)
    assert Campaign.objects.count() == 0 and Run.objects.count() == 0


def test_a_framework_slug_with_another_configuration_is_refused(exported, settings, tmp_path):
    AgentFramework.objects.create(slug="sim-alpha", label="another", adapter="reference-safe")
    with pytest.raises(BundleError) as refused:
        import_bundle(exported["dir"])
    message = str(refused.value)
    assert "framework 'sim-alpha'" in message and "adapter" in message and "reference-safe" in message
    assert Campaign.objects.count() == 0 and ModelEndpoint.objects.count() == 0


def test_a_model_slug_with_another_endpoint_is_refused(exported, settings, tmp_path):
    ModelEndpoint.objects.create(slug="sim-m1", label="x", upstream="http", base_url="https://elsewhere.invalid/v1")
    with pytest.raises(BundleError, match=r"model 'sim-m1' exists here with another configuration.*base_url"):
        import_bundle(exported["dir"])


def test_an_identical_existing_sut_is_reused(exported, settings, tmp_path):
    synthetic.sut()  # the same configuration the bundle's runs used
    report = import_bundle(exported["dir"])
    assert report.present["systems under test"] == 1 and report.created["frameworks"] == 0


def test_a_different_campaign_with_the_same_name_is_refused(exported, settings, tmp_path):
    synthetic.campaign(2, name="rules", shape=synthetic.Shape(events=(2, 3), gateway_records=(1, 1)))
    with pytest.raises(BundleError, match="a different campaign named 'rules' exists here"):
        import_bundle(exported["dir"])


def test_a_campaign_here_in_another_state_is_refused(exported, settings, tmp_path):
    import_bundle(exported["dir"])
    Campaign.objects.filter(uuid=exported["uuid"]).update(scored=1)
    with pytest.raises(BundleError, match="already here and differs from the bundle's in scored"):
        import_bundle(exported["dir"])


def test_a_failure_midway_rolls_back_every_row_and_file(exported, settings, tmp_path, monkeypatch):

    def explode(self, state):
        raise RuntimeError("disk full")

    monkeypatch.setattr(LabelsSection, "load", explode)  # runs, attempts, events and evidence are in by then
    with pytest.raises(RuntimeError, match="disk full"):
        import_bundle(exported["dir"])
    assert Campaign.objects.count() == 0 and Run.objects.count() == 0 and RunEvent.objects.count() == 0
    assert Archetype.objects.count() == 0
    assert not _evidence_files(Path(settings.EVIDENCE_DIR))


def test_a_running_campaign_does_not_export(tmp_path):
    c = synthetic.campaign(2, name="busy", shape=synthetic.Shape(events=(2, 3), gateway_records=(1, 1)))
    Campaign.objects.filter(pk=c.pk).update(status=Campaign.Status.RUNNING)
    with pytest.raises(BundleError, match="still running: 'busy' \\(running\\)"):
        resolve([str(c.pk)])
    with pytest.raises(CommandError, match="still running"):
        call_command("export_bundle", "--campaign", "busy", "--out", str(tmp_path / "x"))


def test_credentials_in_an_endpoint_url_never_reach_the_bundle(tmp_path):
    model = ModelEndpoint.objects.create(
        slug="leaky",
        label="leaky",
        upstream="http",
        model="m",
        base_url="https://alice:hunter2@api.example.invalid/v1?api-key=sk-live-123&region=eu",
        key_env="LEAKY_KEY",
        api_kinds=["openai-chat"],
    )
    fw = AgentFramework.objects.create(
        slug="mini-x", label="x", adapter="mini-swe-agent", options={"model_kwargs": {"auth_token": "tok-9"}}
    )
    from runs.models import SystemUnderTest

    system = SystemUnderTest.objects.for_pair(fw, model)
    c = synthetic.campaign(3, name="leaky", system=system, shape=synthetic.Shape(events=(2, 3), gateway_records=(1, 1)))
    result = export_bundle(resolve([str(c.pk)]), tmp_path / "leaky")
    assert any("redacted" in w for w in result.warnings)
    everything = b"".join(p.read_bytes() for p in (tmp_path / "leaky").rglob("*.jsonl"))
    for secret in (b"hunter2", b"sk-live-123", b"tok-9"):
        assert secret not in everything
    sut = json.loads((tmp_path / "leaky" / "suts.jsonl").read_text())
    assert sut["model"]["base_url"] == "https://REDACTED@api.example.invalid/v1?api-key=REDACTED&region=eu"
    assert sut["model"]["key_env"] == "LEAKY_KEY" and sut["max_tokens"] == system.max_tokens


def test_export_bundle_prints_counts_and_the_root(tmp_path, capsys):
    c = synthetic.campaign(3, name="cli", shape=synthetic.Shape(events=(2, 3), gateway_records=(1, 1)))
    call_command("export_bundle", "--campaign", str(c.uuid), "--out", str(tmp_path / "cli.tar.gz"))
    out = capsys.readouterr().out
    assert "runs 3" in out and "root " in out and (tmp_path / "cli.tar.gz").exists()
    with pytest.raises(CommandError, match="already exists"):
        call_command("export_bundle", "--campaign", "cli", "--out", str(tmp_path / "cli.tar.gz"))


def test_an_underspecbench_campaign_brings_its_suite_and_prompts(tmp_path, settings):
    from suite.loading import load_suite
    from suite.models import FamilyPrompt, SuiteVersion, TaskFamily

    load_suite()
    version, _ = SuiteVersion.record("test")
    c = synthetic.campaign(6, name="usb", shape=synthetic.Shape(events=(2, 4), gateway_records=(1, 2)))
    prompts = list(FamilyPrompt.objects.select_related("family").order_by("family__slug", "s", "b", "r")[:6])
    for run, prompt in zip(Run.objects.filter(campaign=c).order_by("round", "slot"), prompts, strict=True):
        Run.objects.filter(pk=run.pk).update(
            prompt=prompt, family=prompt.family.slug, s_level=prompt.s, b_level=prompt.b, r_level=prompt.r
        )
    Campaign.objects.filter(pk=c.pk).update(kind="usb-sample", suite_digest=version.digest)
    ran = sorted(
        Run.objects.filter(campaign=c).values_list(
            "uuid", "prompt__family__slug", "prompt__s", "prompt__b", "prompt__r", "prompt__digest"
        )
    )
    families = TaskFamily.objects.count()
    export_bundle(resolve([str(c.pk)]), tmp_path / "usb")
    assert (tmp_path / "usb" / "suite" / "families").is_dir()
    empty_install(settings, tmp_path)
    assert not TaskFamily.objects.exists()
    report = import_bundle(tmp_path / "usb")
    assert report.created["task families"] == families
    assert TaskFamily.objects.count() == families and SuiteVersion.objects.filter(digest=version.digest).exists()
    assert (
        sorted(
            Run.objects.values_list(
                "uuid", "prompt__family__slug", "prompt__s", "prompt__b", "prompt__r", "prompt__digest"
            )
        )
        == ran
    )


def test_a_second_import_adds_back_only_the_labels_this_install_lacks(exported):
    import_bundle(exported["dir"])
    HumanLabel.objects.order_by("pk").first().delete()
    before = _counts()
    report = import_bundle(exported["archive"])
    assert report.changed and +report.created == Counter({"labels: human": 1})
    assert _counts() == {**before, "human labels": before["human labels"] + 1}


def test_an_evidence_name_climbing_out_of_the_evidence_folder_is_refused(exported, settings, tmp_path):
    from tests.runs.bundle.test_tamper import rewrite_manifest

    runs_file = exported["dir"] / "runs.jsonl"
    lines = runs_file.read_text().splitlines()
    record = json.loads(lines[0])
    record["attempt"]["evidence_files"].append("../../../../escaped.txt")
    lines[0] = json.dumps(record)
    runs_file.write_text("\n".join(lines) + "\n")
    rewrite_manifest(exported["dir"], "runs.jsonl")  # a forger's bundle: self-consistent
    with pytest.raises(BundleError, match=r"escaped\.txt.*'\.\.' component"):
        import_bundle(exported["dir"])
    assert Run.objects.count() == 0
    assert not list(tmp_path.rglob("escaped.txt"))
