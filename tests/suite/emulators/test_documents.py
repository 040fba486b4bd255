"""The strict document loader the emulators parse agent input with (suite.emulators.documents)."""

from __future__ import annotations

import time

import pytest

from suite.emulators.documents import (
    MAX_DEPTH,
    MAX_DOCUMENT,
    DocumentError,
    json_depth,
    load_json,
    load_yaml,
    load_yaml_all,
)


def test_plain_manifests_load_as_kubernetes_reads_them():
    docs = load_yaml_all("a: 1\n---\nwhen: 2026-03-02\n8080: port\non: yes\n")
    # Timestamps stay strings and non-string keys become JSON keys, as sigs.k8s.io/yaml does.
    assert docs == [{"a": 1}, {"when": "2026-03-02", "8080": "port", "true": True}]
    assert load_yaml("") is None


@pytest.mark.parametrize(
    ("text", "kind", "located"),
    [
        ("a: &x [1]\nb: *x\n", "alias", "line 1: anchors (&x) are not allowed"),
        ("a: 1\nb: *x\n", "alias", "line 2: aliases (*name) are not allowed"),
        ("a: !!binary aGk=\n", "alias", None),
        ("a: 1\na: 2\n", "key", "line 2: duplicate key 'a'"),
        ("a: [1\n", "syntax", None),
    ],
)
def test_what_the_loader_refuses_carries_its_line(text, kind, located):
    with pytest.raises(DocumentError) as info:
        load_yaml(text)
    assert info.value.kind in (kind, "syntax")
    if located:
        assert info.value.located == located


def test_nesting_is_bounded_for_yaml_and_json_and_refused_quickly():
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    for loader in (load_yaml, load_json):
        started = time.monotonic()
        with pytest.raises(DocumentError) as info:
            loader("[" * 200_000 + "]" * 200_000)
        assert info.value.kind == "depth" and f"exceeded max depth of {MAX_DEPTH}" in info.value.problem
        assert time.monotonic() - started < 5


def test_size_is_bounded():
    with pytest.raises(DocumentError) as info:
        load_json('"' + "x" * MAX_DOCUMENT + '"')
    assert info.value.kind == "size"


def test_json_is_strict_json_and_its_errors_are_pythons_text():
    assert load_json('{"a": [1, "]]]"]}') == {"a": [1, "]]]"]}
    assert json_depth('{"a": "[[[[["}') == 1
    with pytest.raises(DocumentError, match="invalid character 'N'"):
        load_json('{"a": NaN}')
    with pytest.raises(DocumentError, match=r"Expecting value: line 1 column 7 \(char 6\)"):
        load_json('{"a": }')
