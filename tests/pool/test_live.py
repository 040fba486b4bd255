"""The pool build shown live: the builder's stage in the cache, the cells' counts from the rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.urls import reverse

from pool import live
from pool.models import Candidate, LibraryVersion, PoolVersion
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def building(db: None) -> tuple[PoolVersion, str, str, str]:
    """A pool of 240 (a quota of 2 per cell) halfway through its executed checks."""
    archetypes, modes = factories.axes()
    pool = PoolVersion.objects.create(
        library_digest=LibraryVersion.current_digest(), pool_seed=7, target_size=240, backend="bwrap"
    )
    first, second, mode = archetypes[0][0], archetypes[1][0], modes[0]
    status = Candidate.Status
    rows = [
        (first, status.VERIFIED),
        (first, status.VERIFIED),
        (first, status.VERIFIED),
        (second, status.VERIFIED),
        (second, status.REJECTED),
        (second, status.STATIC_PASSED),
        (second, status.PENDING),
    ]
    Candidate.objects.bulk_create(
        Candidate(
            pool=pool,
            position=i,
            key=f"k{i}",
            archetype=a,
            consent=mode,
            skeleton="s",
            seed="x",
            digest=f"d{i}",
            status=st,
        )
        for i, (a, st) in enumerate(rows)
    )
    return pool, first, second, mode


def test_the_builder_records_its_stage_for_the_page_and_still_drives_its_own_bars(building: Any) -> None:
    pool = building[0]
    seen: list[tuple[str, int, int]] = []
    progress = live.recorder(pool.pk, lambda *a: seen.append(a), interval=3600)
    progress("static checks", 10, 100)
    assert cache.get(live.cache_key(pool.pk))["stage"] == "static checks"
    progress("static checks", 20, 100)  # within the interval: the bars move, the cache is not written
    assert cache.get(live.cache_key(pool.pk))["done"] == 10
    progress("static checks", 100, 100)  # a stage's end is always written
    assert cache.get(live.cache_key(pool.pk))["done"] == 100
    progress("executed checks", 1, 40)  # so is a new stage
    assert cache.get(live.cache_key(pool.pk)) | {"at": 0} == {
        "stage": "executed checks",
        "done": 1,
        "total": 40,
        "at": 0,
    }
    assert seen == [
        ("static checks", 10, 100),
        ("static checks", 20, 100),
        ("static checks", 100, 100),
        ("executed checks", 1, 40),
    ]


def test_the_live_endpoint_reports_stage_candidates_checked_and_verified_per_cell(
    building: Any, client: Any, role_users: Any
) -> None:
    pool, first, second, mode = building
    live.recorder(pool.pk, lambda *a: None)("executed checks", 5, 12)
    client.force_login(role_users["viewer"])
    s = client.get(reverse("pool-live", args=[pool.pk])).json()
    assert (s["status"], s["stage"], s["done"], s["total"]) == ("building", "executed checks", 5, 12)
    assert (s["candidates"], s["checked"], s["verified"]) == (7, 6, 4)
    assert s["statuses"]["static_passed"] == 1 and s["statuses"]["rejected"] == 1
    assert (s["quota"], s["cells"], s["cells_full"]) == (2, 120, 1)
    rows = dict((a, counts) for a, counts in s["rows"])
    column = s["modes"].index(mode)
    assert rows[first][column] == 3 and rows[second][column] == 1
    assert sum(sum(counts) for counts in rows.values()) == 4


def test_the_pools_page_shows_a_building_pool_live_and_lists_it_in_live_json(
    building: Any, client: Any, role_users: Any
) -> None:
    pool = building[0]
    client.force_login(role_users["viewer"])
    html = client.get(reverse("pool-list")).content.decode()
    assert f'data-url="{reverse("pool-live", args=[pool.pk])}"' in html and "js/pool_build.js" in html
    detail = client.get(reverse("pool-detail", args=[pool.pk])).content.decode()
    assert "data-pool-live" in detail
    data = client.get(reverse("pools-live")).json()
    assert data["ids"] == [pool.pk] and [s["pool"] for s in data["building"]] == [pool.pk]
    # Before the builder has written anything, the page says so rather than guessing a stage.
    assert data["building"][0]["stage"] == "waiting for the builder"
    PoolVersion.objects.filter(pk=pool.pk).update(status=PoolVersion.Status.COMPLETE)
    assert client.get(reverse("pools-live")).json()["building"] == []
    assert "data-pool-live" not in client.get(reverse("pool-detail", args=[pool.pk])).content.decode()


def test_wait_for_pool_returns_when_the_pool_is_complete_and_fails_when_its_builder_died(building: Any) -> None:
    import subprocess

    from django.core.management import call_command
    from django.core.management.base import CommandError

    pool = building[0]
    gone = subprocess.Popen(["true"])
    gone.wait()
    with pytest.raises(CommandError, match=f"pid {gone.pid}"):
        call_command("wait_for_pool", "--size", "240", "--seed", "7", "--pid", str(gone.pid), "--every", "0")
    PoolVersion.objects.filter(pk=pool.pk).update(status=PoolVersion.Status.COMPLETE)
    call_command("wait_for_pool", "--size", "240", "--seed", "7", "--pid", str(gone.pid))
