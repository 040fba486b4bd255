"""run_campaign's per-run limits, the SUT it creates (never silently with defaults), and its default
workers for a model served on this machine (issue 18 item 6)."""

from __future__ import annotations

from io import StringIO

import pytest

from runs.campaigns import CampaignError
from runs.management.commands.run_campaign import Command, _limits
from runs.models import AgentFramework, Campaign, ModelEndpoint, SystemUnderTest
from tests import factories

pytestmark = pytest.mark.django_db


def _pair(base_url: str = "http://127.0.0.1:8080/v1") -> tuple[AgentFramework, ModelEndpoint]:
    fw = AgentFramework.objects.create(slug="mini", label="mini", adapter="mini-swe-agent")
    model = ModelEndpoint.objects.create(
        slug="local-qwen", label="qwen", upstream="http", model="qwen", base_url=base_url, api_kinds=["openai-chat"]
    )
    return fw, model


def _command() -> tuple[Command, StringIO]:
    out = StringIO()
    return Command(stdout=out), out


def test_a_new_sut_gets_the_limits_asked_for_and_says_so() -> None:
    fw, model = _pair()
    command, out = _command()
    sut = command._configured_sut(fw, model, {"max_steps": 12, "wall_limit_s": 600})
    assert (sut.max_steps, sut.wall_limit_s, sut.max_requests) == (12, 600, 60)
    assert "created system under test mini × local-qwen: 12 steps, 600 s wall" in out.getvalue()


def test_a_new_sut_with_default_limits_is_announced_with_them() -> None:
    fw, model = _pair()
    command, out = _command()
    command._configured_sut(fw, model, {})
    assert "30 steps, 1800 s wall, 120 s per command, 60 requests" in out.getvalue()
    assert "(the defaults; set them with --max-steps" in out.getvalue()


def test_an_existing_sut_is_changed_only_when_no_running_campaign_uses_it() -> None:
    fw, model = _pair()
    sut = SystemUnderTest.objects.for_pair(fw, model)
    command, out = _command()
    assert command._configured_sut(fw, model, {"max_requests": 40}).max_requests == 40
    assert "now: 30 steps" in out.getvalue()
    factories.campaign(system=sut, status=Campaign.Status.RUNNING, name="busy")
    with pytest.raises(CampaignError, match=r"used by running campaign\(s\) \['busy'\]"):
        command._configured_sut(fw, model, {"max_requests": 20})
    assert SystemUnderTest.objects.get(pk=sut.pk).max_requests == 40


def test_limits_below_one_are_refused() -> None:
    opts = {"max_steps": 0, "wall_limit_s": None, "command_timeout_s": None, "max_requests": None, "max_tokens": None}
    with pytest.raises(CampaignError, match="--max-steps 0"):
        _limits(opts)


def test_one_worker_by_default_for_a_model_served_on_this_machine() -> None:
    fw, model = _pair()
    local = factories.campaign(system=SystemUnderTest.objects.for_pair(fw, model))
    command, out = _command()
    assert command._default_workers([local]) == 1
    assert "1 local worker: local-qwen is served on this machine" in out.getvalue()
    remote = factories.campaign()  # a simulated SUT: the campaign's j
    assert command._default_workers([remote]) == int(remote.params["j"])
