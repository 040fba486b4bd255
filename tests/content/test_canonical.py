"""Canonical serialisation (content/canonical.py): digests and the reviewable YAML form. Pure."""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path

import pytest

from content.canonical import canonical_json, digest_of, dump_yaml, normalize_text
from pool.libschema import parse_yaml

REPO = Path(__file__).resolve().parents[2] / "pool" / "libraries"


# ---------------------------------------------------------------------------------------------
# Digests


def test_digest_is_sha256_of_the_canonical_json():
    value = {"b": [1, 2.5, None, True], "a": "x"}
    assert canonical_json(value) == '{"a":"x","b":[1,2.5,null,true]}'
    assert digest_of(value) == hashlib.sha256(b'{"a":"x","b":[1,2.5,null,true]}').hexdigest()


def test_digest_is_stable_under_key_order_at_every_depth():
    one = {"id": "x", "files": [{"path": "a", "mode": "0644"}], "vars": {"p": "1", "q": "2"}}
    two = {"vars": {"q": "2", "p": "1"}, "files": [{"mode": "0644", "path": "a"}], "id": "x"}
    assert digest_of(one) == digest_of(two)


def test_digest_sees_list_order_and_values():
    assert digest_of({"a": [1, 2]}) != digest_of({"a": [2, 1]})
    assert digest_of({"a": "1"}) != digest_of({"a": 1})
    assert digest_of({"a": True}) != digest_of({"a": 1})
    assert digest_of({"a": None}) != digest_of({})


def test_digest_ignores_line_end_style():
    lf = {"content": "line one\nline two\n"}
    assert digest_of({"content": "line one\r\nline two\r\n"}) == digest_of(lf)
    assert digest_of({"content": "line one\rline two\r"}) == digest_of(lf)
    assert digest_of({"content": "line one\nline two"}) != digest_of(lf)  # a missing final newline is content


def test_digest_ignores_unicode_normalisation_form_in_values_and_keys():
    nfc = unicodedata.normalize("NFC", "Café Zürich")
    nfd = unicodedata.normalize("NFD", "Café Zürich")
    assert nfc != nfd
    assert digest_of({"name": nfd, "list": [nfd]}) == digest_of({"name": nfc, "list": [nfc]})
    assert digest_of({nfd: 1}) == digest_of({nfc: 1})
    assert canonical_json({"name": nfd}) == '{"name":"Café Zürich"}'  # ensure_ascii off, NFC


def test_tuples_hash_like_lists():
    assert digest_of({"a": (1, "x")}) == digest_of({"a": [1, "x"]})


def test_normalize_text():
    assert normalize_text("a\r\nb\rc\n") == "a\nb\nc\n"
    assert normalize_text(unicodedata.normalize("NFD", "é")) == "é"


def test_canonical_json_does_not_modify_its_input():
    value = {"b": {"z": "x\r\n"}, "a": ["y"]}
    canonical_json(value)
    assert value == {"b": {"z": "x\r\n"}, "a": ["y"]}


# ---------------------------------------------------------------------------------------------
# YAML


ENTRY = {
    "id": "demo",
    "name": "Demo entry",
    "description": "One line of prose.",
    "tags": ["alpha", "beta"],
    "script": "set -u\ngit status --short\n",
    "fixtures": [
        {"path": "workspace/.env", "mode": "0600", "content": "KEY=value\nOTHER=2\n"},
        {"path": "workspace/empty", "content": ""},
    ],
    "shortcut": {"unblocks": [], "rationale": "Because."},
    "writes": {},
    "flag": True,
}


def test_dump_yaml_keeps_key_order_indents_lists_and_uses_literal_blocks():
    text = dump_yaml(ENTRY)
    assert text == (
        "id: demo\n"
        "name: Demo entry\n"
        "description: One line of prose.\n"
        "tags:\n"
        "  - alpha\n"
        "  - beta\n"
        "script: |\n"
        "  set -u\n"
        "  git status --short\n"
        "fixtures:\n"
        "  - path: workspace/.env\n"
        "    mode: '0600'\n"
        "    content: |\n"
        "      KEY=value\n"
        "      OTHER=2\n"
        "  - path: workspace/empty\n"
        "    content: ''\n"
        "shortcut:\n"
        "  unblocks: []\n"
        "  rationale: Because.\n"
        "writes: {}\n"
        "flag: true\n"
    )


def test_dump_yaml_round_trips_through_the_strict_parser():
    assert parse_yaml(dump_yaml(ENTRY), "demo.yaml") == ENTRY


@pytest.mark.parametrize(
    "value",
    [
        "no final newline\nsecond line",
        "two final newlines\n\n",
        "  leading spaces\nthen text\n",
        "\nleading blank line\n",
        "tabs\tinside\n\tand at the start\n",
        "quotes ' \" and colons: here\n# not a comment\n",
        "{{vars.project}} and {{canary:tok}}\n- not a list\n",
        "unicode: café, ✓, 日本\n",
        "yes\nno\n",
        "0644\n",
    ],
)
def test_multi_line_strings_round_trip(value):
    text = dump_yaml({"text": value})
    assert parse_yaml(text, "x.yaml") == {"text": value}


@pytest.mark.parametrize("value", ["yes", "no", "on", "null", "0644", "1.0", "2025-01-14", "", "a: b", "- x", "#x"])
def test_ambiguous_scalars_stay_strings(value):
    assert parse_yaml(dump_yaml({"v": value, "l": [value]}), "x.yaml") == {"v": value, "l": [value]}


def test_dump_yaml_normalises_line_ends_and_unicode():
    text = dump_yaml({"content": "a\r\nb\r\n", "name": unicodedata.normalize("NFD", "Zürich")})
    assert text == "content: |\n  a\n  b\nname: Zürich\n"
    assert "\r" not in text


def test_dump_yaml_is_deterministic_and_writes_no_anchors_for_shared_objects():
    shared = {"path": "workspace/a", "content": "x\n"}
    data = {"one": [shared], "two": [shared]}
    text = dump_yaml(data)
    assert text == dump_yaml(data)
    assert "&" not in text and "*" not in text
    assert parse_yaml(text, "x.yaml") == data


def test_library_files_round_trip_through_dump_and_parse():
    for path in sorted(REPO.glob("*/*.yaml"))[::4]:
        data = parse_yaml(path.read_text(encoding="utf-8"), path.name)
        assert parse_yaml(dump_yaml(data), path.name) == data, path.name


@pytest.mark.parametrize("value", ["x\x85y\n", "x\x85y"], ids=["multi-line", "one-line"])
def test_next_line_character_round_trips(value):
    assert parse_yaml(dump_yaml({"text": value}), "x.yaml") == {"text": value}


def test_line_and_paragraph_separators_round_trip():
    for value in ("a\u2028b\nc\n", "a\u2029b", "zero\u200bwidth\nx\n"):
        assert parse_yaml(dump_yaml({"text": value}), "x.yaml") == {"text": value}


@pytest.mark.xfail(
    strict=True,
    reason="BUG: a multi-line string with trailing spaces or tabs on a line (a Markdown hard break, say) is "
    "written double-quoted on one line, not as a literal block: PyYAML refuses block style for it",
)
def test_multi_line_string_with_trailing_spaces_is_a_literal_block():
    text = dump_yaml({"content": "First line  \nsecond line\n"})
    assert text.startswith("content: |")
