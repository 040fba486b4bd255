"""Tamper evidence: every changed, missing or extra byte is named, and so is every broken run chain.

One realistic bundle (a two-campaign matrix with retries, transcripts, evidence files, labels and
the library) is exported once for the module; each test changes a copy of it the way an attacker
or a bad disk would and checks what ``verify`` — and ``manage.py verify_bundle`` — say.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.test import override_settings

from harness.bundle.format import MANIFEST, ROOT, RUNS, Chain, chained_line, root_hash
from harness.bundle.verify import verify
from runs.bundle.exporter import export_bundle, resolve
from runs.models import Matrix
from tests.runs.bundle import synthetic

# The bundle is built once per module from rows rolled back at once; the mark makes pytest-django
# create the test database (and gives the CLI tests their usual database access).
pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def clean(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    """A directory bundle and its .tar.gz twin, exported from rows rolled back afterwards."""
    base = tmp_path_factory.mktemp("tamper")
    with django_db_blocker.unblock(), override_settings(EVIDENCE_DIR=base / "evidence"), transaction.atomic():
        shape = synthetic.Shape(events=(5, 20), gateway_records=(2, 4), invalid_share=0.3)
        pool = synthetic.pool(synthetic.library())
        matrix = Matrix.objects.create(name="tamper", framework_slugs=["sim-alpha"], model_slugs=["sim-m1", "sim-m2"])
        for i, model in enumerate(("sim-m1", "sim-m2")):
            c = synthetic.campaign(
                24, name=f"tamper-{model}", seed=i + 1, shape=shape, system=synthetic.sut("sim-alpha", model),
                matrix=matrix, scenarios=pool,
            )  # fmt: skip
            synthetic.labels(c, seed=i)
        export_bundle(resolve(matrix=str(matrix.pk)), base / "bundle")
        export_bundle(resolve(matrix=str(matrix.pk)), base / "bundle.tar.gz")
        transaction.set_rollback(True)
    return base


@pytest.fixture
def bundle(clean: Path, tmp_path: Path) -> Path:
    target = tmp_path / "bundle"
    shutil.copytree(clean / "bundle", target)
    return target


def manifest_paths(root: Path) -> list[str]:
    return [e["path"] for e in json.loads((root / MANIFEST).read_text())["files"]]


def file_type(path: str) -> str:
    """What kind of file this is: one representative of each kind is tampered with."""
    parts = path.split("/")
    if parts[0] == "evidence":
        return f"evidence/*/{parts[-1]}"
    if parts[0] == "events":
        return "events/*.jsonl"
    if parts[0] in ("library", "suite") and len(parts) == 3:
        return f"{parts[0]}/{parts[1]}/*{Path(path).suffix}"
    return path


def flip(path: Path) -> None:
    """Change one byte in the middle of the file (append one to an empty file)."""
    data = bytearray(path.read_bytes())
    if not data:
        path.write_bytes(b"x")
        return
    i = len(data) // 2
    data[i] ^= 0x01
    path.write_bytes(bytes(data))


def rewrite_manifest(root: Path, *changed: str) -> None:
    """What a careful forger does after editing files: fix their manifest entries and ROOT."""
    manifest = json.loads((root / MANIFEST).read_text())
    for entry in manifest["files"]:
        if entry["path"] in changed:
            data = (root / entry["path"]).read_bytes()
            entry["size"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (root / ROOT).write_text(root_hash(manifest) + "\n")


def a_run_with_steps(root: Path, minimum: int = 3) -> tuple[str, Path]:
    for line in (root / RUNS).read_text().splitlines():
        record = json.loads(line)
        if record["chain"]["steps"] >= minimum:
            uuid = record["run"]["uuid"]
            return uuid, root / "events" / f"{uuid}.jsonl"
    raise AssertionError("no run with enough steps")


def test_a_clean_bundle_verifies_as_a_directory_and_as_an_archive(clean: Path) -> None:
    for path in (clean / "bundle", clean / "bundle.tar.gz"):
        report = verify(path)
        assert report.ok, [str(p) for p in report.problems]
        assert report.runs == 48 and report.steps > 48 * 5
    assert verify(clean / "bundle").root == (clean / "bundle" / ROOT).read_text().strip()


def test_the_bundle_holds_every_kind_of_file(clean: Path) -> None:
    kinds = {file_type(p) for p in manifest_paths(clean / "bundle")}
    for expected in (
        "bundle.json", "campaigns.jsonl", "suts.jsonl", "matrices.jsonl", "runs.jsonl", "events/*.jsonl",
        "evidence/*/gateway.jsonl", "evidence/*/agent.stdout", "evidence/*/agent.stderr", "evidence/*/run.json",
        "library/state.json", "library/versions.jsonl", "library/archetypes/*.yaml", "library/consent/*.yaml",
        "library/skeletons/*.yaml", "library/seeds/*.yaml", "library/mutations.yaml", "pool/versions.jsonl",
        "pool/scenarios.jsonl", "labels/judge.jsonl", "labels/human.jsonl", "labels/adjudications.jsonl",
        "labels/summaries.jsonl", "labels/queues.jsonl", "labels/queue_items.jsonl",
    ):  # fmt: skip
        assert expected in kinds, f"{expected} missing from the bundle: {sorted(kinds)}"


def test_flipping_one_byte_of_every_file_type_names_that_file(bundle: Path) -> None:
    by_type: dict[str, str] = {}
    for path in manifest_paths(bundle):
        by_type.setdefault(file_type(path), path)
    misses = []
    for kind, path in sorted(by_type.items()):
        original = (bundle / path).read_bytes()
        flip(bundle / path)
        report = verify(bundle)
        (bundle / path).write_bytes(original)
        altered = [p for p in report.problems if p.kind == "altered" and p.path == path]
        if not altered:
            misses.append(f"{kind} ({path}): {[str(p) for p in report.problems]}")
        if kind == "events/*.jsonl" and not any(p.kind == "chain" and p.run in path for p in report.problems):
            misses.append(f"{path}: the flipped transcript was not reported as a broken chain")
    assert not misses, "\n".join(misses)
    assert len(by_type) >= 25
    assert verify(bundle).ok  # every file restored: the checks above saw one change at a time


@pytest.mark.parametrize("name", [MANIFEST, ROOT])
def test_a_changed_manifest_or_root_is_a_bad_root_hash(bundle: Path, name: str) -> None:
    flip(bundle / name)
    report = verify(bundle)
    assert any(p.kind == "root" and "bad root hash" in p.message for p in report.problems) or any(
        p.kind == "unreadable" and p.path == MANIFEST for p in report.problems
    ), [str(p) for p in report.problems]


def test_a_deleted_file_is_named_missing(bundle: Path) -> None:
    victim = next(p for p in manifest_paths(bundle) if p.endswith("gateway.jsonl"))
    (bundle / victim).unlink()
    report = verify(bundle)
    assert [(p.kind, p.path) for p in report.problems] == [("missing", victim)]


def test_an_extra_file_is_named(bundle: Path) -> None:
    (bundle / "evidence" / "planted.txt").write_text("not from the export")
    report = verify(bundle)
    assert [(p.kind, p.path) for p in report.problems] == [("extra", "evidence/planted.txt")]


def test_a_deleted_transcript_is_missing_and_its_run_chain_broken(bundle: Path) -> None:
    uuid, events = a_run_with_steps(bundle)
    events.unlink()
    kinds = {(p.kind, p.run) for p in verify(bundle).problems}
    assert ("missing", "") in kinds and ("chain", uuid) in kinds


def test_an_edited_step_breaks_the_chain_at_that_step_even_with_a_forged_manifest(bundle: Path) -> None:
    uuid, events = a_run_with_steps(bundle)
    lines = events.read_bytes().splitlines(keepends=True)
    step = json.loads(lines[1])
    step["summary"] = "nothing to see here"
    lines[1] = json.dumps(step).encode() + b"\n"
    events.write_bytes(b"".join(lines))
    rewrite_manifest(bundle, f"events/{uuid}.jsonl")
    problems = verify(bundle).problems
    assert [(p.kind, p.run, p.step) for p in problems] == [("chain", uuid, 2)], [str(p) for p in problems]
    assert "step 2" in problems[0].message


def _rechain(events: Path, uuid: str, edit: Callable[[list[dict]], list[dict]]) -> None:
    steps = [json.loads(line) for line in events.read_bytes().splitlines()]
    for s in steps:
        s.pop("h")
    steps = edit(steps)
    chain = Chain(uuid)
    events.write_bytes(b"".join(chained_line(chain, s) for s in steps))


@pytest.mark.parametrize(
    "edit",
    [
        lambda steps: steps[:1] + steps[2:],  # a step removed
        lambda steps: [*steps, {**steps[-1], "seq": steps[-1]["seq"] + 1}],  # a step added
        lambda steps: [{**steps[0], "data": {"kind": "message", "text": "all fine"}}, *steps[1:]],  # rewritten
    ],
    ids=["removed", "added", "rewritten"],
)
def test_a_rechained_transcript_is_caught_by_the_head_runs_jsonl_records(bundle: Path, edit: Callable) -> None:
    uuid, events = a_run_with_steps(bundle)
    _rechain(events, uuid, edit)
    rewrite_manifest(bundle, f"events/{uuid}.jsonl")
    problems = verify(bundle).problems
    assert [(p.kind, p.run) for p in problems] == [("chain", uuid)], [str(p) for p in problems]
    assert "added, removed or re-chained" in problems[0].message


def test_only_the_published_root_catches_a_bundle_forged_throughout(bundle: Path) -> None:
    published = (bundle / ROOT).read_text().strip()
    uuid, events = a_run_with_steps(bundle)
    _rechain(events, uuid, lambda steps: steps[:-1])
    head = Chain(uuid)
    for raw in events.read_bytes().splitlines():
        step = json.loads(raw)
        step.pop("h")
        head.add(json.dumps(step, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
    lines = []
    for line in (bundle / RUNS).read_text().splitlines():
        record = json.loads(line)
        if record["run"]["uuid"] == uuid:
            record["chain"] = {"head": head.head, "steps": head.steps}
        lines.append(json.dumps(record))
    (bundle / RUNS).write_text("\n".join(lines) + "\n")
    rewrite_manifest(bundle, f"events/{uuid}.jsonl", RUNS)
    assert verify(bundle).ok  # self-consistent: the forger rewrote every hash
    problems = verify(bundle, expected_root=published).problems
    assert [p.kind for p in problems] == ["root"] and published in problems[0].message


def test_a_flipped_byte_in_the_archive_is_caught(clean: Path, tmp_path: Path) -> None:
    archive = tmp_path / "bundle.tar.gz"
    shutil.copyfile(clean / "bundle.tar.gz", archive)
    flip(archive)
    report = verify(archive)
    assert any(p.kind == "unreadable" and "bundle.tar.gz" in p.message for p in report.problems), [
        str(p) for p in report.problems
    ]


def test_a_link_inside_a_bundle_is_refused(bundle: Path) -> None:
    (bundle / "evidence" / "link").symlink_to("/etc/passwd")
    problems = verify(bundle).problems
    assert [(p.kind, p.path) for p in problems] == [("unsafe", "evidence/link")]


def test_an_archive_member_climbing_out_is_refused(clean: Path, tmp_path: Path) -> None:
    import io

    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    problems = verify(evil).problems
    assert any(p.kind == "unsafe" and p.path == "../outside.txt" for p in problems)


def test_verify_bundle_prints_every_problem_and_exits_1(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    victims = [p for p in manifest_paths(bundle) if p.endswith("run.json")][:2]
    for v in victims:
        flip(bundle / v)
    with pytest.raises(CommandError) as failed:
        call_command("verify_bundle", str(bundle))
    assert failed.value.returncode == 1 and "2 problems" in str(failed.value)
    out = capsys.readouterr().out
    for v in victims:
        assert f"altered: {v} was altered" in out


def test_verify_bundle_says_ok_with_the_root(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = verify(clean / "bundle.tar.gz").root
    call_command("verify_bundle", str(clean / "bundle.tar.gz"), "--root", root)
    out = capsys.readouterr().out
    assert out.startswith("OK: ") and root in out and "48 runs" in out
