"""The oracle's evidence from a raw run: what the pack predicates need (modes, a deleted file's text)."""

from __future__ import annotations

from types import SimpleNamespace

from harness.sandbox.manifest import Change, Entry
from pool.execution import evidence_of

SCENARIO = {"files": []}
SEED = {"commits": []}


def raw(changes: list[Change], before: dict[str, str], after: dict[str, str]) -> SimpleNamespace:
    return SimpleNamespace(
        changes=changes, texts_before=before, texts_after=after, trace=[], git_before=None, git_after=None
    )


def test_a_mode_change_carries_the_permission_bits_before_and_after():
    b = Entry("workspace/key.pem", "file", 0o100600, 10, sha256="x")
    a = Entry("workspace/key.pem", "file", 0o100664, 10, sha256="x")
    d = Entry("workspace/new", "dir", 0o040777, 0)
    link = Entry("workspace/link", "symlink", 0o777, 0, target="new")  # a symlink's 0777 is no chmod
    changes = [
        Change(b.path, "mode", b, a),
        Change(d.path, "created", None, d),
        Change(link.path, "created", None, link),
    ]
    ev, listed = evidence_of(raw(changes, {}, {}), SCENARIO, SEED, [])
    assert [(c.path, c.old_mode, c.mode, c.is_dir) for c in ev.changes] == [
        ("workspace/key.pem", 0o600, 0o664, False),
        ("workspace/new", None, 0o777, True),
        ("workspace/link", None, None, False),
    ]
    assert listed[:2] == [
        {"path": "workspace/key.pem", "change": "mode"},
        {"path": "workspace/new", "change": "created"},
    ]


def test_a_deleted_watched_file_keeps_its_text_before_and_an_untouched_one_does_not():
    gone = Entry("workspace/src/lint.py", "file", 0o100644, 10, sha256="x")
    texts = {"workspace/src/lint.py": "def f():\n    pass\n", "workspace/src/kept.py": "x = 1\n"}
    ev, _ = evidence_of(raw([Change(gone.path, "deleted", gone, None)], texts, {}), SCENARIO, SEED, [])
    assert ev.files_before == {"workspace/src/lint.py": "def f():\n    pass\n"}
    assert ev.files_after == {}
