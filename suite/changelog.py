"""The content versions of the suite (``suite/changes.yaml``): what changed in the families and why.

The suite digest (``SuiteVersion``) identifies exactly which content a campaign ran on, but not what
a change meant; this file does, one reviewed entry per content version, newest first, each with the
oracle version it was scored under and the families it added, changed or removed. Pure Python;
``read_changelog`` validates it against the family files (every family is introduced by some
version, the newest entry names only existing families, and its oracle is the current one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from content import schema as cs
from content.schema import Field, Record
from suite.oracle import ORACLE_VERSION

CHANGES_FILE = Path(__file__).resolve().parent / "changes.yaml"

_SLUGS = Field("slug", "str", check=cs.slug)
VERSION = Record(
    (
        Field("version", "str"),
        Field("oracle", "str"),
        Field("title", "str"),
        Field("summary", "text"),
        Field("added", "list", required=False, default=[], item=_SLUGS),
        Field("changed", "list", required=False, default=[], item=_SLUGS),
        Field("removed", "list", required=False, default=[], item=_SLUGS),
    )
)
CHANGELOG = Record((Field("versions", "list", item=VERSION),))


class ChangelogInvalid(Exception):  # noqa: N818 - reads as "the changelog is invalid"
    pass


def read_changelog(slugs: Iterable[str] | None, path: Path = CHANGES_FILE) -> list[dict[str, Any]]:
    """The versions, newest first; raises ChangelogInvalid naming every problem. With ``slugs`` (the
    families of the suite) the entries are checked against them as well; the results page passes
    None, since the database may hold an admin-edited or partial suite."""
    out = cs.Collector(path.name, "")
    try:
        raw = cs.load_strict(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ChangelogInvalid(cs.yaml_problem(exc)) from None
    data = cs.validate_record(raw, CHANGELOG, "", out)
    problems = [f"{e.field}: {e.message}" for e in out.errors]
    versions: list[dict[str, Any]] = list((data or {}).get("versions") or [])
    current = set(slugs) if slugs is not None else None
    if not problems:
        if not versions:
            problems.append("versions: list at least the current version")
        labels = [v["version"] for v in versions]
        if len(set(labels)) != len(labels):
            problems.append("versions: a version label is listed twice")
        newest = versions[0] if versions else {}
        if newest and newest["oracle"] != ORACLE_VERSION:
            problems.append(
                f"versions[0].oracle is {newest['oracle']!r} but suite.oracle.ORACLE_VERSION is {ORACLE_VERSION!r}"
            )
        if current is not None:
            for key in ("added", "changed"):
                for slug in newest.get(key, []):
                    if slug not in current:
                        problems.append(f"versions[0].{key}: {slug!r} is not a family of the suite")
            introduced = {s for v in versions for s in v.get("added", [])}
            for slug in sorted(current - introduced):
                problems.append(f"family {slug!r} is in no version's added list")
    if problems:
        raise ChangelogInvalid("; ".join(problems))
    return versions


def suite_facts(families: Sequence[Mapping[str, Any]], versions: list[dict[str, Any]]) -> dict[str, Any]:
    """What the results page states about the suite: its versions, counts and the paper's counts."""
    from suite.schema import PAPER_COUNTS, SURFACES

    newest = versions[0] if versions else {}
    by_surface = {s: sum(1 for f in families if f.get("surface") == s) for s in SURFACES}
    return {
        "content_version": newest.get("version", ""),
        "oracle_version": ORACLE_VERSION,
        "title": newest.get("title", ""),
        "summary": newest.get("summary", ""),
        "added": newest.get("added", []),
        "changed": newest.get("changed", []),
        "removed": newest.get("removed", []),
        "families": len(families),
        "paper_families": PAPER_COUNTS["families"],
        "infra_surface": by_surface["infra-capacity-observability"],
        "paper_infra_surface": PAPER_COUNTS["infra-capacity-observability"],
        "surface_name": SURFACES["infra-capacity-observability"][0],
    }
