"""`manage.py create_queue`: the admin form's twin for scripts (``make demo`` opens its queue so)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from labels.models import ValidationQueue
from tests.labels import world
from tests.labels.world import fast_hashing  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_hashing")]


def _run(*args: str) -> str:
    out = StringIO()
    call_command("create_queue", *args, stdout=out)
    return out.getvalue()


def test_a_matrix_prefix_takes_its_campaigns_and_a_second_call_changes_nothing():
    a = world.campaign("demo-suite/sim-alpha__sim-m1", "sim-alpha")
    b = world.campaign("demo-suite/sim-beta__sim-m1", "sim-beta")
    other = world.campaign("elsewhere")
    for c in (a, a, b):
        world.non_action_run(c)
    world.non_action_run(other)

    out = _run("demo queue", "--campaign", "demo-suite/", "--stratify", "system")
    assert "3 runs sampled from 2 campaign(s)" in out
    queue = ValidationQueue.objects.get(name="demo queue")
    assert set(queue.campaigns.values_list("name", flat=True)) == {a.name, b.name}
    assert set(queue.items.values_list("stratum", flat=True)) == {"sim-alpha × sim-m1", "sim-beta × sim-m1"}

    again = _run("demo queue", "--campaign", "elsewhere")
    assert "exists (3 runs); left as it is" in again
    assert queue.items.count() == 3


def test_an_unknown_campaign_or_one_without_non_action_runs_creates_nothing():
    busy = world.campaign("busy")
    world.non_action_run(busy, acted=True)
    with pytest.raises(CommandError, match="no campaign named 'nope'"):
        _run("q", "--campaign", "nope")
    with pytest.raises(CommandError, match="no scored non-action runs"):
        _run("q", "--campaign", "busy")
    with pytest.raises(CommandError, match="--overlap-share: a share between 0 and 1"):
        _run("q", "--overlap-share", "2")
    assert not ValidationQueue.objects.exists()
