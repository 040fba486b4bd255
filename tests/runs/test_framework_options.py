"""AgentFramework.options: checked by the adapter's typed config, applied by the job, recorded as
applied in the campaign's snapshot (issue 18 item 1)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from runs.campaigns import CampaignError, start_campaign
from runs.models import AgentFramework, ModelEndpoint, Run, SystemUnderTest
from runs.performing import adapter_for
from tests import factories

pytestmark = pytest.mark.django_db
TOOL_CHOICE = {"type": "function", "function": {"name": "bash"}}


def _mini_sut(options: Any) -> SystemUnderTest:
    fw = AgentFramework.objects.create(slug="mini", label="mini", adapter="mini-swe-agent", options=options)
    model = ModelEndpoint.objects.create(
        slug="scripted", label="scripted", upstream="scripted", api_kinds=["openai-chat"], script=[]
    )
    return SystemUnderTest.objects.for_pair(fw, model)


def test_the_admin_rejects_options_the_adapter_does_not_take_and_says_which_it_takes() -> None:
    fw = AgentFramework(slug="mini", label="mini", adapter="mini-swe-agent", options={"tool_choice": TOOL_CHOICE})
    with pytest.raises(ValidationError) as caught:
        fw.full_clean()
    assert "unknown option(s) ['tool_choice']" in str(caught.value.message_dict["options"])
    assert "model_kwargs" in str(caught.value.message_dict["options"])
    AgentFramework(
        slug="mini2", label="mini", adapter="mini-swe-agent", options={"model_kwargs": {"tool_choice": TOOL_CHOICE}}
    ).full_clean()


def test_the_job_builds_the_adapter_with_the_frameworks_options() -> None:
    system = _mini_sut({"model_kwargs": {"tool_choice": TOOL_CHOICE, "max_tokens": 512}})
    run = Run.objects.create(campaign=factories.campaign(system=system), round=1, slot=0)
    adapter = adapter_for(run)
    assert adapter.model_kwargs == {"tool_choice": TOOL_CHOICE, "max_tokens": 512}


def test_the_snapshot_records_the_options_as_applied_defaults_included() -> None:
    assert _mini_sut({}).snapshot()["framework"]["options"] == {"model_kwargs": {}}
    assert factories.sut().snapshot()["framework"]["options"] == {}


def test_a_campaign_whose_framework_options_cannot_be_applied_does_not_start() -> None:
    system = _mini_sut({"max_tokens": 512})
    with pytest.raises(CampaignError, match=r"framework 'mini': unknown option\(s\) \['max_tokens'\]"):
        start_campaign(name="never", sut=system, pool=None, params={"n": 2}, backend="docker")
