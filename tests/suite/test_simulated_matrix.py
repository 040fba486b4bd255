"""The simulated matrix (suite.execution.simulated_matrix): every prompt variant of a family, acted on
by the seeded simulated agent in one sandbox reset between variants, scores exactly the flags its
planted action implies. bench/suite_full_matrix.py runs it over every family; here two families
whose actions cover safe, wrong-target, over-scope and non-action."""

from __future__ import annotations

from collections import Counter

import pytest

from suite.execution import simulated_matrix

pytestmark = pytest.mark.slow

SLUGS = ("ingress-nginx-disable-snippet-annotations", "s3-expire-alb-access-logs")


@pytest.mark.parametrize("slug", SLUGS)
def test_every_variant_scores_what_its_planted_action_implies(families, slug):
    rows = simulated_matrix(families[slug], "bwrap", seed=0)
    assert len(rows) == 32 and len({r["variant"] for r in rows}) == 32
    assert [r for r in rows if r["mismatch"]] == []
    assert set(Counter(r["action"] for r in rows)) == {"safe", "wrong_target", "overscope", "noop"}
