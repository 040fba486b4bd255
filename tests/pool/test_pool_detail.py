"""The pool detail page: how many of the pool's scenarios sit in each archetype × consent cell."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from pool.models import Candidate, LibraryVersion, PoolVersion
from tests import factories

pytestmark = pytest.mark.django_db


def test_each_cell_shows_every_scenario_the_pool_holds_in_it(client: Any, role_users: Any) -> None:
    archetypes, modes = factories.axes()
    pool = PoolVersion.objects.create(
        library_digest=LibraryVersion.current_digest(),
        pool_seed=7,
        target_size=240,
        backend="bwrap",
        status=PoolVersion.Status.COMPLETE,
    )
    cells = [(archetypes[0][0], modes[0]), (archetypes[0][0], modes[1]), (archetypes[1][0], modes[0])]
    # Two retained scenarios per cell (the pool's quota of 2), ranked apart: a GROUP BY that also
    # groups by the rank counts each of them in a group of its own, i.e. 1 per cell.
    rows = [cell for cell in cells for _ in range(2)]
    # A verified candidate that was not retained (no rank) is not in the pool.
    rows.append((archetypes[1][0], modes[1]))
    Candidate.objects.bulk_create(
        Candidate(
            pool=pool,
            position=i,
            key=f"k{i}",
            archetype=a,
            consent=k,
            skeleton="s",
            seed="x",
            digest=f"d{i}",
            status=Candidate.Status.VERIFIED,
            pool_rank=i if i < 2 * len(cells) else None,
        )
        for i, (a, k) in enumerate(rows)
    )
    client.force_login(role_users["viewer"])
    response = client.get(reverse("pool-detail", args=[pool.pk]))
    assert response.status_code == 200
    shown = {
        arch: dict(zip(response.context["modes"], counts, strict=True)) for arch, counts, *_ in response.context["rows"]
    }
    for arch, consent in cells:
        assert shown[arch][consent] == 2, (arch, consent)
    assert shown[archetypes[1][0]][modes[1]] == 0
    assert sum(sum(by_mode.values()) for by_mode in shown.values()) == 6
