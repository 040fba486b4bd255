"""The suite index a campaign draws from names rows that exist (suite.campaigns.suite_index)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from suite.campaigns import suite_index
from suite.models import FamilyPrompt, TaskFamily

pytestmark = pytest.mark.django_db


def test_the_same_suite_loaded_again_gets_an_index_of_its_new_rows() -> None:
    call_command("load_suite", verbosity=0)
    before = {pk for pk, *_ in suite_index().prompts.values()}
    # As a transactional test's flush leaves it: the same content, loaded into fresh rows.
    FamilyPrompt.objects.all().delete()
    TaskFamily.objects.all().delete()
    call_command("load_suite", verbosity=0)
    after = {pk for pk, *_ in suite_index().prompts.values()}
    assert after == set(FamilyPrompt.objects.values_list("pk", flat=True))
    assert not after & before
