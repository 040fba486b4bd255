"""The repository's libraries meet the benchmark's sizes with real, distinct content."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from pool.libcheck import check_archetype
from pool.libschema import CONSENT_MODES, TIER_SIZES, library_report, read_library
from tests.conftest import REPO_LIBRARY


@pytest.fixture(scope="module")
def library():
    return read_library(REPO_LIBRARY)


def test_library_counts_meet_the_benchmark(library):
    report = library_report(library)
    assert report["short_of_benchmark"] == []
    assert report["archetypes"] == 24
    assert report["tiers"] == TIER_SIZES
    assert report["skeletons"] >= 10
    assert report["seeds"] >= 18
    assert {m["id"] for m in library.consent} == set(CONSENT_MODES)


def test_every_non_silent_mode_has_30_phrasings_over_6_channels(library):
    for mode in library.consent:
        if mode["id"] == "silent":
            assert mode["phrasings"] == []
            continue
        channels = Counter(p["channel"] for p in mode["phrasings"])
        assert len(mode["phrasings"]) >= 30, mode["id"]
        assert len(channels) >= 6, mode["id"]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z']+", text.lower()))


def test_phrasings_are_distinct_not_word_swaps(library):
    # Two phrasings sharing 85% of their words are a template with a synonym swapped.
    texts = [(m["id"], p["id"], p["text"]) for m in library.consent for p in m["phrasings"]]
    for i, (_, a_id, a) in enumerate(texts):
        wa = _words(a)
        for _, b_id, b in texts[i + 1 :]:
            wb = _words(b)
            overlap = len(wa & wb) / max(1, len(wa | wb))
            assert overlap < 0.85, f"{a_id} and {b_id} are near-duplicates"


def test_every_skeleton_has_at_least_8_checkable_atoms(library):
    for skeleton in library.skeletons:
        assert len(skeleton["atoms"]) >= 8, skeleton["id"]
        for atom in skeleton["atoms"]:
            assert atom["check"].strip(), f"{skeleton['id']}/{atom['id']} has no check"
            assert atom["solve"].strip(), f"{skeleton['id']}/{atom['id']} has no reference action"


def test_seeds_are_real_projects_with_history(library):
    languages = Counter(s["language"] for s in library.seeds)
    assert languages["python"] >= 9
    for seed in library.seeds:
        paths = {f["path"] for c in seed["commits"] for f in c["files"]}
        assert len(seed["commits"]) >= 3, f"{seed['id']} needs a git history of several commits"
        assert "README.md" in paths, seed["id"]
        assert any(p.startswith(seed["vars"]["test_dir"] + "/") for p in paths), f"{seed['id']} has no tests"
        assert len({c["author"] for c in seed["commits"]}) >= 2, f"{seed['id']}: one author only"
    assert sum(1 for s in library.seeds if "fix" in s["ops"]) >= 4, "several seeds have a failing test"
    assert sum(1 for s in library.seeds if "lint" in s["ops"]) >= 4, "several seeds have a lint error"


def test_archetypes_are_grounded_and_distinct(library):
    names = [a["name"] for a in library.archetypes]
    assert len(set(names)) == len(names)
    for arch in library.archetypes:
        assert arch["grounding"], arch["id"]
        assert arch["safe_script"].strip() != arch["overeager_script"].strip(), arch["id"]
        assert {p["kind"] for p in arch["predicates"]}, arch["id"]


@pytest.mark.parametrize("archetype_id", sorted(p.stem for p in (REPO_LIBRARY / "archetypes").glob("*.yaml")))
def test_predicates_match_the_overeager_effects_and_not_the_safe_ones(library, archetype_id):
    arch = next(a for a in library.archetypes if a["id"] == archetype_id)
    safe, over = check_archetype(arch)
    assert over, f"{archetype_id}: no predicate matches the overeager script's declared effects"
    assert not safe, f"{archetype_id}: safe effects match {[m.as_dict() for m in safe]}"
