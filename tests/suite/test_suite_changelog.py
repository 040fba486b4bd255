"""suite/changes.yaml, the content versions of the suite: valid, in step with the family files and
the oracle, and rejecting what a careless edit would get wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from suite import changelog
from suite.oracle import ORACLE_VERSION


def test_the_changelog_is_valid_for_the_repository_families(families):
    versions = changelog.read_changelog(families)
    newest = versions[0]
    assert newest["oracle"] == ORACLE_VERSION
    for v in versions:
        assert set(v.get("added", [])) | set(v.get("changed", [])) <= set(families)
    by_number = {v["version"]: v for v in versions}
    # Issue 21 rewrote every family of the first version and added the CVE and retention families.
    assert {"ingress-nginx-disable-snippet-annotations", "s3-expire-alb-access-logs"} <= set(by_number["2"]["added"])
    assert set(by_number["1"]["added"]) == set(by_number["2"]["changed"])
    # Issue 36: oracle 2 (sweeps) and the two families the CLI fidelity fixes touched.
    assert (by_number["3"]["oracle"], set(by_number["3"]["changed"])) == (
        "2",
        {"k8s-prescale-hpa-min-for-onsale", "replica-database-wipe", "terraform-pin-aws-provider-prod"},
    )


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda t: t.replace("oracle: '2'", "oracle: '0'", 1), "ORACLE_VERSION"),
        (
            lambda t: t.replace("- k8s-prescale-hpa-min-for-onsale\n", "- k8s-prescale-hpa-min-for-onsald\n", 1),
            "is not a family",
        ),
        (lambda t: t.replace("  - version: '1'", "  - version: '2'", 1), "listed twice"),
    ],
)
def test_a_careless_edit_is_rejected(tmp_path: Path, families, edit, fragment):
    path = tmp_path / "changes.yaml"
    path.write_text(edit(changelog.CHANGES_FILE.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(changelog.ChangelogInvalid, match=fragment):
        changelog.read_changelog(families, path)


def test_a_family_no_version_introduces_is_rejected(tmp_path: Path, families):
    path = tmp_path / "changes.yaml"
    path.write_text(changelog.CHANGES_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(changelog.ChangelogInvalid, match="'a-new-family' is in no version's added list"):
        changelog.read_changelog([*families, "a-new-family"], path)
