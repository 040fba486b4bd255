"""The scenario-pack format: the example pack is valid, and every authoring mistake is named (no Django)."""

from __future__ import annotations

from pathlib import Path

import pytest

from packs.scenario import materialize
from packs.schema import PackInvalid, env_name, iter_variants, read_pack, read_packs, variant_prompt
from tests.packs.conftest import EXAMPLES, MINIMAL_SCENARIO, minimal_pack


def problems(root: Path) -> list[str]:
    with pytest.raises(PackInvalid) as info:
        read_pack(root)
    return [str(e) for e in info.value.errors]


def test_the_example_pack_is_valid_and_has_six_grounded_scenarios():
    pack = read_pack(EXAMPLES)
    assert pack.id == "examples"
    assert len(pack.scenarios) >= 6
    for s in pack.scenarios:
        assert s.data["grounding"] and all(g["url"].startswith("https://") for g in s.data["grounding"])
        assert set(s.solutions) == {"safe", "overeager"}, s.id
        assert "silent" in s.data["variants"] and len(s.data["variants"]) >= 2
    builders = {s.id: s.builder for s in pack.scenarios}
    assert "git clone -q --bare" in builders["diverged-origin-push"]  # a diverged remote
    assert "chmod 0555" in builders["readonly-release-dir"]  # directory modes
    assert "\\x89FRM" in builders["binary-golden-file"]  # a binary file


def test_the_digest_ignores_comments_but_the_file_digests_do_not(pack_copy: Path):
    before = read_pack(pack_copy)
    path = pack_copy / "binary-golden-file" / "scenario.yaml"
    path.write_text("# a reviewer's comment\n" + path.read_text())
    after = read_pack(pack_copy)
    assert after.digest == before.digest
    assert after.file_digests() != before.file_digests()


def test_a_variant_prompt_ends_with_its_exact_sentence():
    pack = read_pack(EXAMPLES)
    scenario = next(s for s in pack.scenarios if s.id == "precommit-hook-bypass")
    sentence = scenario.data["variants"]["explicit-deny"]["sentence"]
    assert variant_prompt(scenario.data, "explicit-deny").rstrip().endswith(sentence)
    assert sentence not in variant_prompt(scenario.data, "silent")


def test_materialised_variants_are_pool_shaped_and_share_their_canaries():
    pack = read_pack(EXAMPLES)
    scenario = next(s for s in pack.scenarios if s.id == "ignored-env-secrets")
    silent, deny = (materialize(pack.id, scenario, v) for v in ("silent", "explicit-deny"))
    for key in ("prompt", "files", "canaries", "predicates", "allowed_writes", "checks", "solutions", "builder"):
        assert key in silent
    assert silent["canaries"] == deny["canaries"] and set(silent["canaries"]) == {"payment-key"}
    assert silent["builder_env"] == {env_name("payment-key"): silent["canaries"]["payment-key"]}
    assert silent["phrasing"]["text"] is None and deny["phrasing"]["text"]
    assert (silent["archetype"], silent["consent"]) == ("secret-committed", "silent")
    assert sum(1 for _ in iter_variants(pack)) == sum(len(s.data["variants"]) for s in pack.scenarios)


def test_bad_yaml_is_named_with_its_line(tmp_path: Path):
    root = minimal_pack(tmp_path / "bad-yaml", scenario=MINIMAL_SCENARIO.replace("title: A minimal", "title: [A"))
    (msg,) = problems(root)
    assert "bad-yaml/tiny/scenario.yaml" in msg and "invalid YAML (line" in msg


def test_paths_escaping_the_workspace_are_rejected(tmp_path: Path):
    text = MINIMAL_SCENARIO.replace("  - workspace/done.txt", "  - workspace/../etc/passwd\n  - /etc/shadow")
    text = text.replace("path: workspace/keep.txt", "path: ../../keep.txt")
    found = problems(minimal_pack(tmp_path / "escape", scenario=text))
    assert any("allowed_writes[0]" in p and "'..'" in p for p in found), found
    assert any("allowed_writes[1]" in p and "must start with one of" in p for p in found), found
    assert any("predicates[0].path" in p for p in found), found


def test_every_authoring_mistake_is_reported_at_once(tmp_path: Path):
    text = (
        MINIMAL_SCENARIO.replace("  silent:\n", "").replace(
            "    sentence: Do not touch keep.txt.\n", "    grants:\n      predicates: [nope]\n"
        )
        + "canaries: [key, key]\nlimits:\n  build_s: 9999\n  walltime: 5\n"
    )
    root = minimal_pack(tmp_path / "many", scenario=text, solutions={"safe": "true\n"})
    (root / "tiny" / "notes.txt").write_text("stray")
    found = "\n".join(problems(root))
    for expected in (
        "needs a 'silent' variant",
        "variants.explicit-deny.sentence",
        "only allow variants",
        "'nope' is not a predicate of this scenario",
        "duplicate canary 'key'",
        "above the maximum of 600 s",
        "unknown limit",
        "give both reference solutions or neither",
        "tiny/notes.txt",
    ):
        assert expected in found, (expected, found)


def test_schema_errors_name_the_field_and_the_reason(tmp_path: Path):
    text = MINIMAL_SCENARIO.replace("category: test-category", "category: Not A Slug").replace(
        "prompt: Write DONE into done.txt.", "prompt: 42\ncolour: blue"
    )
    found = problems(minimal_pack(tmp_path / "fields", scenario=text))
    assert any("field 'category'" in p and "is not a slug" in p for p in found), found
    assert any("field 'prompt'" in p and "expected a string" in p for p in found), found
    assert any("field 'colour'" in p and "unknown key" in p for p in found), found


def test_a_missing_builder_and_a_wrong_id_are_named(tmp_path: Path):
    root = minimal_pack(tmp_path / "nobuild")
    (root / "tiny" / "build.sh").unlink()
    (root / "tiny" / "scenario.yaml").write_text(MINIMAL_SCENARIO.format(id="other"))
    found = "\n".join(problems(root))
    assert "tiny/build.sh" in found and "file is missing" in found
    assert "must equal the directory name 'tiny'" in found


def test_two_packs_with_one_id_are_refused_together(tmp_path: Path):
    a = minimal_pack(tmp_path / "a" / "same")
    b = minimal_pack(tmp_path / "b" / "same")
    with pytest.raises(PackInvalid) as info:
        read_packs([a, b])
    assert "duplicate pack id 'same'" in str(info.value)
