"""The run page's evidence layout (runs.evidence): pure functions, no database."""

from __future__ import annotations

import io

from runs import evidence as ev
from tests.factories import verdict_and_evidence


def _marks():
    verdict, evidence = verdict_and_evidence(overeager=True)
    paths = ev.path_index(evidence["changes"], evidence["file_diffs"])
    return verdict, evidence, paths, ev.highlights(verdict, paths)


def test_every_kind_of_location_maps_to_the_element_that_shows_it():
    _, _, paths, marks = _marks()
    assert "command-2" in marks.elements
    assert "request-1" in marks.elements
    invoice = ev.path_id("workspace/app/invoice.py", paths)
    golden = ev.path_id("workspace/data/golden.csv", paths)
    assert invoice in marks.elements and golden in marks.elements  # a file line, an unsolicited change
    assert marks.diff_lines == {"workspace/app/invoice.py": {3}}
    assert [link["anchor"] for link in marks.links] == ["command-2", invoice, "request-1", golden]


def test_outputs_and_plain_paths_are_located_and_unknown_places_are_listed_without_a_link():
    paths = {"workspace/.env": 0}
    verdict = {
        "predicate_matches": [
            {"predicate": "p", "kind": "canary", "where": "output[1]", "excerpt": "tok"},
            {"predicate": "q", "kind": "fs_delta", "where": "workspace/.env", "excerpt": "modified"},
            {"predicate": "r", "kind": "canary", "where": "somewhere:else", "excerpt": "?"},
        ],
        "unsolicited_changes": [],
    }
    marks = ev.highlights(verdict, paths)
    assert set(marks.elements) == {"output-1", "file-0"}
    assert marks.links[2]["anchor"] == ""


def test_no_verdict_highlights_nothing():
    assert ev.highlights(None, {}).elements == {}


def test_the_file_tree_nests_paths_under_their_directories():
    _, evidence, paths, marks = _marks()
    rows = ev.file_tree(evidence["changes"], evidence["file_diffs"], paths, marks, ["workspace/data/golden.csv"])
    names = [(r.depth, r.name) for r in rows]
    assert names == [
        (0, "workspace/"),
        (1, "app/"),
        (2, "invoice.py"),
        (1, "data/"),
        (2, "golden.csv"),
        (1, "notes/"),
        (2, "todo.txt"),
    ]
    golden = rows[4]
    assert golden.changes == ("deleted",) and golden.unsolicited and golden.decisive and not golden.has_diff
    assert rows[2].has_diff and rows[2].decisive and not rows[6].decisive


def test_diff_lines_carry_new_file_line_numbers_and_mark_the_deciding_line():
    diff = "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n keep\n-old\n+new\n+TOKEN\n tail\n"
    lines = ev.diff_lines(diff, [3])
    assert [(d.kind, d.new_line, d.decisive) for d in lines] == [
        ("meta", None, False),
        ("meta", None, False),
        ("hunk", None, False),
        ("ctx", 1, False),
        ("del", None, False),
        ("add", 2, False),
        ("add", 3, True),
        ("ctx", 4, False),
    ]


def test_long_strings_are_clipped_and_reported():
    value, clipped = ev.clip_strings({"a": "x" * 50, "b": [1, "short"]}, 10)
    assert clipped and value["a"].startswith("x" * 10) and "40 more" in value["a"] and value["b"] == [1, "short"]
    assert ev.clip_strings({"a": "ok"}, 10) == ({"a": "ok"}, False)


def test_find_record_reads_line_by_line_and_matches_seq_exactly():
    lines = io.StringIO(
        '{"seq":12,"x":1}\nnot json at all\n{"seq":1,"x":2}\n{"seq": 123, "x": 3}\n{"seq":1'  # a torn last line
    )
    assert ev.find_record(lines, 1) == {"seq": 1, "x": 2}
    assert ev.find_record(io.StringIO('{"seq": 123, "x": 3}\n'), 123) == {"seq": 123, "x": 3}
    assert ev.find_record(io.StringIO('{"seq":12}\n'), 1) is None
