"""The pools page follows a build in a real browser: stage, counts and cells move without a reload,
and the page redraws itself when the pool is complete (issue 18 item 8)."""

from __future__ import annotations

import pytest

from pool import live
from pool.models import Candidate, LibraryVersion, PoolVersion
from tests import factories
from tests.browser.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_pools_page_follows_a_build_and_redraws_when_it_completes(page, server, role_users):
    archetypes, modes = factories.axes()
    pool = PoolVersion.objects.create(
        library_digest=LibraryVersion.current_digest(), pool_seed=7, target_size=240, backend="bwrap"
    )
    first, mode = archetypes[0][0], modes[0]
    Candidate.objects.bulk_create(
        Candidate(
            pool=pool,
            position=i,
            key=f"k{i}",
            archetype=first,
            consent=mode,
            skeleton="s",
            seed="x",
            digest=f"d{i}",
            status=Candidate.Status.VERIFIED if i == 0 else Candidate.Status.STATIC_PASSED,
        )
        for i in range(3)
    )
    # interval=0: the recorder writes every call (a build throttles to one write per WRITE_INTERVAL_S).
    progress = live.recorder(pool.pk, lambda *a: None, interval=0)
    progress("executed checks", 1, 3)
    login(page, server, "viewer")
    page.goto(f"{server.url}/pools/")
    summary = page.locator("[data-pool-live] [data-field=summary]")
    page.wait_for_function(
        "() => document.querySelector('[data-pool-live] [data-field=stage]').textContent.includes('1 / 3')"
    )
    assert "1 verified" in summary.inner_text() and "0 of 120 cells have their 2" in summary.inner_text()
    assert page.locator("[data-pool-live] table.cells tbody tr").count() == 24
    page.evaluate("() => { window.__notReloaded = true; }")

    # The builder verifies a second scenario of the cell: the page follows, without a reload.
    Candidate.objects.filter(pool=pool, position=1).update(status=Candidate.Status.VERIFIED)
    progress("executed checks", 2, 3)
    # The cells come from the database and the stage from the build's progress record, written a
    # moment later: a poll in between shows the one without the other, so wait for both.
    page.wait_for_function(
        "() => document.querySelector('[data-pool-live] [data-field=summary]').textContent.includes('2 verified')"
        " && document.querySelector('[data-pool-live] [data-field=stage]').textContent.includes('2 / 3')",
        timeout=10_000,
    )
    assert page.evaluate("() => window.__notReloaded") is True
    assert "1 of 120 cells have their 2" in summary.inner_text()
    assert page.locator("[data-pool-live] table.cells td.full").all_inner_texts() == ["2/2"]
    assert "executed checks 2 / 3" in page.inner_text("[data-pool-live] [data-field=stage]")
    shot(page, "pools-build-live", doc=True)

    # Complete: the page redraws itself, the live panel gives way to the pool's row.
    PoolVersion.objects.filter(pk=pool.pk).update(status=PoolVersion.Status.COMPLETE)
    page.wait_for_function("() => !document.querySelector('[data-pool-live]')", timeout=10_000)
    assert "complete" in page.inner_text("table.grid tbody")
    assert page.js_errors == []
