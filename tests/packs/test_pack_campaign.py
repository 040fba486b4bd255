"""Campaigns over a scenario pack, on both sandbox backends: the built-in shell agent driven by the
scripted model through the gateway runs every scenario × variant (uniform), the pack page lists
the results per variant with links to the runs, the campaign is regraded and bundled; an adaptive
campaign runs over the pack's category × consent cells (issue 24)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from packs.models import ScenarioPack
from pool.execution import EMPTY_SEED, mutate, read_oracle_input
from runs.campaigns import campaign_params, start_campaign
from runs.jobs import execute_run
from runs.models import AgentFramework, Campaign, CampaignKind, ModelEndpoint, Run, SystemUnderTest
from runs.regrade import regrade_campaign
from tests.packs.conftest import EXAMPLES, subset
from tests.runs.campaigns.conftest import queue_name  # noqa: F401 - the run queue of this test alone

pytestmark = pytest.mark.slow

# The diverged remote, the directory modes and the binary file.
SCENARIOS = ["diverged-origin-push", "readonly-release-dir", "binary-golden-file"]
SCRIPT = [
    {"tool_call": {"name": "bash", "arguments": {"command": "git status --short; git log --oneline -3; ls -la"}}},
    {"text": "I looked at the repository and changed nothing."},
]


def _sut() -> SystemUnderTest:
    fw = AgentFramework.objects.create(slug="shell", label="Built-in shell agent", adapter="shell")
    model = ModelEndpoint.objects.create(
        slug="scripted-pack",
        label="Scripted",
        upstream="scripted",
        model="scripted",
        api_kinds=["openai-chat"],
        script=SCRIPT,
    )
    sut = SystemUnderTest.objects.for_pair(fw, model)
    SystemUnderTest.objects.filter(pk=sut.pk).update(max_steps=5, wall_limit_s=300, command_timeout_s=60)
    sut.refresh_from_db()
    return sut


def _drive(campaign: Campaign, limit: int = 200) -> None:
    """Execute the campaign's queued runs in this process (the job function a worker runs) until done."""
    for _ in range(limit):
        queued = list(Run.objects.filter(campaign=campaign, status=Run.Status.QUEUED).values_list("pk", flat=True))
        if not queued:
            break
        for pk in queued:
            status = execute_run(pk)
            assert "stored" in status, status
    campaign.refresh_from_db()


@pytest.fixture
def imported(transactional_db: None, tmp_path: Path, request: Any, queue_name: str) -> ScenarioPack:  # noqa: F811
    # The runs are executed here (_drive), but start_campaign also enqueues their jobs: on a queue
    # of this test's own, so no rq worker of another test can take them.
    backend = request.param
    root = subset(EXAMPLES, tmp_path / "pack-sub", SCENARIOS, "pack-sub")
    call_command("import_scenarios", str(root), "--backend", backend, stdout=StringIO())
    pack = ScenarioPack.objects.get()
    assert pack.backend == backend
    return pack


@pytest.mark.parametrize("imported", ["bwrap", "docker"], indirect=True)
def test_a_uniform_campaign_over_a_pack_runs_every_variant_and_regrades(
    imported: ScenarioPack, tmp_path: Path, role_users
):
    pack = imported
    backend = pack.backend
    sut = _sut()
    out = StringIO()
    call_command(
        "run_campaign", "--sut", "shell:scripted-pack", "--kind", "pack", "--pack", pack.slug, "--repeats", "1",
        "--k", "4", "--backend", backend, "--no-wait", stdout=out,
    )  # fmt: skip
    campaign = Campaign.objects.get(sut=sut)
    variants = sum(len(s.variants) for s in pack.scenarios.all())
    assert campaign.kind == CampaignKind.PACK and campaign.pool_id == pack.pool_id
    assert campaign.params["n"] == variants and campaign.backend == backend
    _drive(campaign)
    assert campaign.status == Campaign.Status.COMPLETE, campaign.error
    runs = list(Run.objects.filter(campaign=campaign).select_related("scenario", "counted_attempt"))
    assert len(runs) == variants and all(r.status == Run.Status.SCORED for r in runs)
    # Every scenario × variant exactly once, with the variant's exact prompt.
    assert sorted((r.scenario.skeleton, r.consent) for r in runs) == sorted(
        (s.slug, v) for s in pack.scenarios.all() for v in s.variants
    )
    for r in runs:
        attempt = r.counted_attempt
        assert attempt is not None and attempt.backend == backend
        assert r.validity == "valid" and r.acted is True
        # Looking around changes nothing and is no overreach; the task is not done either.
        assert r.overeager is False, attempt.verdict
        assert r.task_success is False
        sentence = pack.scenarios.get(slug=r.scenario.skeleton).data["variants"][r.consent].get("sentence")
        if sentence:
            assert attempt.prompt.rstrip().endswith(sentence)
        assert any("git status --short" in c for c in attempt.evidence["commands"])
    # The world is the build's, not a seed's: the diverged origin is in the run's git evidence.
    diverged = next(r for r in runs if r.scenario.skeleton == "diverged-origin-push")
    loaded = read_oracle_input(Path(diverged.counted_attempt.evidence_dir))
    assert loaded is not None
    repos = (loaded[0].git_before or {})["repos"]
    assert repos["origin"]["refs"]["refs/heads/main"] != repos["workspace"]["refs"]["refs/heads/main"]

    client = Client()
    client.force_login(role_users["viewer"])
    page = client.get(f"/packs/{pack.pk}/").content.decode()
    assert campaign.name in page
    for r in runs:
        assert f'href="/runs/{r.pk}/"' in page
    assert page.count("0 / 1") == variants
    detail = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert f'href="/packs/{pack.pk}/"' in detail
    data = client.get(f"/campaigns/{campaign.pk}/data.json").json()
    assert sorted(data["heatmap"]["y"]) == sorted({s.category for s in pack.scenarios.all()})
    assert client.get(f"/runs/{runs[0].pk}/").status_code == 200

    report = regrade_campaign(campaign.pk)
    assert report.checked == variants and not report.flips and report.partial == 0
    campaign.refresh_from_db()
    assert campaign.regrades and campaign.regrades[-1]["checked"] == variants

    bundle = tmp_path / "bundle"
    call_command("export_bundle", "--campaign", campaign.name, "--out", str(bundle), stdout=StringIO())
    verified = StringIO()
    call_command("verify_bundle", str(bundle), stdout=verified)
    assert f"{variants} runs" in verified.getvalue()


@pytest.mark.parametrize("imported", ["bwrap"], indirect=True)
def test_an_adaptive_campaign_runs_over_the_packs_category_by_consent_cells(imported: ScenarioPack):
    from pool.loading import load_library
    from tests.conftest import REPO_LIBRARY

    load_library(REPO_LIBRARY)  # the curated mutation texts SNARE's operators draw from
    pack = imported
    sut = _sut()
    campaign = start_campaign(
        name="pack-adaptive",
        sut=sut,
        pool=pack.pool,
        params=campaign_params(n=6, k=3, j=1, q_floor=1, q_ceil=2, seed=3),
        backend="bwrap",
        kind=CampaignKind.PACK_ADAPTIVE,
    )
    _drive(campaign)
    assert campaign.status == Campaign.Status.COMPLETE, campaign.error
    runs = list(Run.objects.filter(campaign=campaign, status=Run.Status.SCORED))
    assert len(runs) == 6
    cells = {(s.category, v) for s in pack.scenarios.all() for v in s.variants}
    assert {(r.archetype, r.consent) for r in runs} <= cells
    assert all(r.tier in ("uniform", "coverage", "yield") for r in runs)
    # SNARE's mutation operators apply; a file addition never lands on a file build.sh made.
    for r in runs:
        assert r.counted_attempt is not None and r.validity == "valid"
        scenario, applied = mutate(r.scenario.scenario, EMPTY_SEED, r.mutations, campaign.mutation_texts)
        assert [a["operator"] for a in applied] == [a["operator"] for a in r.counted_attempt.applied_mutations]
        built = set(scenario["built_paths"])
        assert not {f["path"] for f in scenario["files"]} & built


def test_a_pack_campaign_needs_a_pack(transactional_db: None):
    from django.core.management import CommandError

    _sut()
    with pytest.raises(CommandError, match="needs --pack SLUG"):
        call_command("run_campaign", "--sut", "shell:scripted-pack", "--kind", "pack", "--no-wait", stdout=StringIO())
    with pytest.raises(CommandError, match="no imported scenario pack 'nope'"):
        call_command(
            "run_campaign",
            "--sut",
            "shell:scripted-pack",
            "--kind",
            "pack",
            "--pack",
            "nope",
            "--no-wait",
            stdout=StringIO(),
        )
