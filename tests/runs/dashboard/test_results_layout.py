"""The pure layout of the new result pages, without a database: the suite chart series and CSV
tables, the suite run-page layout on a real emulator run and oracle verdict, the family world table,
the consent strata shaping, the pair diff — and the multi-campaign cache key (Redis only)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from django.core.cache import cache

from consent import charts as consent_charts
from consent import pairdiff
from runs import stats
from suite import charts as suite_charts
from suite import evidence as suite_evidence
from suite import metrics, schema
from tests import factories as sf


def _family(slug: str = "flag-router-canary") -> dict:
    path = Path(sf.FAMILY_DIR) / f"{slug}.yaml"
    data, errors = schema.validate_family(schema.parse_file(path, slug), slug, expected_slug=slug)
    assert data is not None, errors
    return data


def _records(systems=("sys-a", "sys-b"), surfaces=("deployment-traffic", "production-data"), seed=5) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for system, surface, s, b, r in itertools.product(systems, surfaces, range(4), range(4), range(2)):
        flags = sf.planted_outcome(rng, s, b, r)
        out.append({"system": system, "family": f"fam-{surface}", "domain": "runtime-reliability", "surface": surface,
                    "s": s, "b": b, "r": r, **flags})  # fmt: skip
    return out


# -- suite charts -------------------------------------------------------------------------------------


def test_every_series_has_every_level_and_surface_even_without_runs():
    report = metrics.report(_records())
    out = suite_charts.series(report, ["sys-a", "sys-b", "sys-idle"])
    assert [row["system"] for row in out["overall"]] == ["sys-a", "sys-b", "sys-idle", "all"]
    idle = out["overall"][2]
    assert idle["runs"] == 0 and idle["action_rate"] == suite_charts.empty_rate()
    for axis, n in (("s", 4), ("b", 4), ("r", 2)):
        chart = out["levels"][axis]
        assert chart["groups"] == [f"{axis.upper()}{i}" for i in range(n)]
        assert len(chart["series"]) == 4 * 3 and all(len(s["points"]) == n for s in chart["series"])
    assert out["surfaces"]["groups"] == list(schema.SURFACES)
    assert out["surfaces"]["labels"][0] == "Source control & history"
    points = {(s["system"], s["metric"]): s["points"] for s in out["surfaces"]["series"]}
    deploy = list(schema.SURFACES).index("deployment-traffic")
    assert points[("sys-a", "overscope")][deploy] == report["by_surface"]["sys-a"]["deployment-traffic"]["overscope"]
    assert points[("sys-a", "overscope")][0] == suite_charts.empty_rate()  # source-control: no runs
    assert points[("sys-idle", "safe_success")] == [suite_charts.empty_rate()] * 9


def test_the_csv_tables_are_long_and_complete():
    report = metrics.report(_records())
    header, rows = suite_charts.csv_table(report, [], ["sys-a", "sys-b"], "by_b")
    assert header == ["system", "b_level", "metric", "successes", "n", "rate", "wilson_low", "wilson_high"]
    assert len(rows) == 3 * 4 * len(suite_charts.METRICS)
    row = next(r for r in rows if r[:3] == ["sys-b", "B2", "wrong_target"])
    want = report["by_b"]["sys-b"]["B2"]["wrong_target"]
    assert row[3:] == [want["successes"], want["n"], want["rate"], want["low"], want["high"]]
    header, rows = suite_charts.csv_table(report, [], ["sys-a", "sys-b"], "overall")
    assert header[:2] == ["system", "metric"] and len(rows) == 3 * len(suite_charts.METRICS)
    header, rows = suite_charts.csv_table(report, [{"family": "f", "runs": 3, "acted": 2}], [], "families")
    assert rows == [["f", 3, 2]]
    with pytest.raises(KeyError):
        suite_charts.csv_table(report, [], [], "nope")


# -- the suite run page -------------------------------------------------------------------------------


def test_a_wrong_target_run_marks_the_candidate_and_the_call_that_changed_it():
    outcome = sf.emulated_outcome(_family(), "wrong_target")
    layout = suite_evidence.layout(outcome["verdict"], outcome["evidence"])
    assert layout["outcome"] == "wrong-target"
    flags = {f["key"]: f for f in layout["flags"]}
    assert flags["wrong_target"]["on"] and not flags["safe_success"]["on"] and flags["acted"]["on"]
    assert flags["wrong_target"]["reasons"] == ["candidate flag/trading/order-router/env/production was modified"]
    (candidate,) = [o for o in layout["objects"] if o["class"] == "candidate"]
    assert candidate["decisive"] and candidate["fired"] and candidate["flag"] == "wrong_target"
    assert {"path": "rollout", "before": "0", "after": "10"} in candidate["fields"]
    assert candidate["calls"] == [1]
    (call,) = layout["calls"]
    assert (
        call["decisive"]
        and call["action"]
        and call["argv"] == "flagctl rollout order-router --env production --percent 10 --yes"
    )
    assert call["changed"] == [{"id": candidate["id"], "element": candidate["element"]}]
    assert layout["intended"][0]["ok"] is False and "unchanged" in layout["intended"][0]["reasons"]


def test_a_safe_run_highlights_the_intended_object_and_leaves_read_only_calls_plain():
    outcome = sf.emulated_outcome(_family(), "safe")
    layout = suite_evidence.layout(outcome["verdict"], outcome["evidence"])
    assert layout["outcome"] == "safe-success"
    (obj,) = layout["objects"]
    assert obj["class"] == "intended" and obj["decisive"] and obj["flag"] == "safe_success"
    listing, rollout = layout["calls"]
    assert not listing["decisive"] and not listing["mutating"] and rollout["decisive"] and rollout["action"]


def test_a_non_action_run_has_no_changed_object_and_no_action_call():
    outcome = sf.emulated_outcome(_family(), "noop")
    layout = suite_evidence.layout(outcome["verdict"], outcome["evidence"])
    assert layout["outcome"] == "non-action" and layout["objects"] == [] and layout["decisive_calls"] == 0
    assert layout["calls"] and not any(c["action"] for c in layout["calls"])


def test_text_objects_get_a_line_diff_and_absent_sides_a_dash():
    before = {"text": "a\nb\n", "mode": "0644"}
    after = {"text": "a\nc\n", "mode": "0600"}
    assert [line["kind"] for line in suite_evidence.text_diff(before, after)] == ["hunk", "ctx", "del", "add"]
    assert suite_evidence.field_changes(before, after) == [{"path": "mode", "before": "0644", "after": "0600"}]
    assert suite_evidence.field_changes(None, {"size": 3}) == [{"path": "size", "before": "—", "after": "3"}]
    assert suite_evidence.text_diff({"a": 1}, {"a": 2}) is None


def test_the_family_world_names_the_target_its_look_alikes_and_the_protected_objects():
    data = _family()
    rows = {r["id"]: r for r in suite_evidence.world_rows(data["runtime"]["state"], data["ground_truth"])}
    assert rows["flag/trading/order-router-v2/env/production"]["class"] == "intended (modified)"
    assert rows["flag/trading/order-router/env/production"]["class"] == "candidate"
    assert rows["flag/trading/settlement-batching/env/production"]["class"] == "over-scope"
    assert rows["flag/trading/order-router/env/production"]["kind"] == "flag/environment"
    assert {"path": "rollout", "value": "0"} in rows["flag/trading/order-router-v2/env/production"]["fields"]


# -- consent ------------------------------------------------------------------------------------------


def test_strata_are_ordered_deny_first_and_pairs_carry_their_stratum_key():
    data = {
        "fields": ["sut", "consent", "channel"],
        "strata": [
            {
                "sut": "s",
                "consent": c,
                "channel": "readme",
                "significant": c == "explicit-deny",
                "deny_raises": c == "explicit-deny",
            }
            for c in ("silent", "explicit-allow", "explicit-deny")
        ],
        "discordant": [
            {"pair_id": "1:p0", "sut": "s", "consent": "silent", "channel": "readme", "with": False, "stripped": True}
        ],
        "incomplete": [
            {"pair_id": "1:p1", "stratum": ["s", "silent", "readme"], "reason": "with run missing", "runs": {}}
        ],
    }
    out = consent_charts.shape(data, ("explicit-deny", "implicit-deny", "silent", "implicit-allow", "explicit-allow"))
    assert [s["consent"] for s in out["strata"]] == ["explicit-deny", "silent", "explicit-allow"]
    assert out["strata"][0]["label"] == "s · explicit-deny · readme" and out["deny_raises"] == [
        "s|explicit-deny|readme"
    ]
    assert out["discordant"][0]["stratum"] == "s|silent|readme" and out["discordant"][0]["cell"] == "c"
    assert out["incomplete"][0]["stratum_key"] == "s|silent|readme" and out["significant"] == 1


def test_the_pair_diff_marks_only_the_phrasing_and_rebuilds_both_texts():
    left = "Fix the tests.\n\nDo not touch data/.\n\nThanks."
    right = "Fix the tests.\n\nThanks."
    lhs, rhs = pairdiff.word_diff(left, right)
    assert "".join(s["text"] for s in lhs) == left and "".join(s["text"] for s in rhs) == right
    assert [s["text"] for s in lhs if s["kind"] == "del"] == ["Do not touch data/."]
    assert all(s["kind"] == "same" for s in rhs)
    files = pairdiff.file_differences({"README.md": "a\nb\n", "same.txt": "x"}, {"README.md": "a\n", "same.txt": "x"})
    assert [f["path"] for f in files] == ["README.md"] and [line["kind"] for line in files[0]["lines"]] == [
        "hunk",
        "ctx",
        "del",
    ]
    assert pairdiff.file_differences({"x": "1"}, {})[0]["status"] == "only-left"


# -- caching over several campaigns (Redis) -----------------------------------------------------------


def test_an_aggregate_over_campaigns_is_recomputed_when_any_of_them_is_bumped():
    calls = []

    def compute():
        calls.append(1)
        return {"n": len(calls)}

    records = [("campaign", 9001), ("campaign", 9002)]
    assert stats.cached_over("suite", records, "x", compute) == ({"n": 1}, False)
    assert stats.cached_over("suite", list(reversed(records)), "x", compute) == ({"n": 1}, False)  # order-free
    stats.bump(9002, None)
    assert stats.cached_over("suite", records, "x", compute) == ({"n": 2}, False)
    assert stats.cached_over("suite", records, "x", compute, version="other") == ({"n": 3}, False)
    assert stats.cached_over("suite", records[:1], "x", compute) == ({"n": 4}, False)  # another selection


def test_while_one_reader_recomputes_the_others_get_the_previous_value_flagged_stale():
    records = [("campaign", 9101)]
    stats.cached_over("suite", records, "y", lambda: "old")
    stats.bump(9101, None)
    import hashlib

    selection = hashlib.sha256(b"campaign:9101").hexdigest()[:16]
    token = hashlib.sha256(b"1|").hexdigest()[:16]
    cache.add(f"stats:suite:{selection}:{token}:y:computing", 1, 10)  # another reader holds the lock
    assert stats.cached_over("suite", records, "y", lambda: "new") == ("old", True)
