"""``make real-demo``: the SUT it configures is the one docs/local-model.md tells a curator to make,
and the script runs its campaign on exactly that SUT (the script's steps run for real in
`make real-demo`; here its model-free parts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import call_command

from harness.agents.base import get_adapter
from harness.gateway import local_model
from runs.management.commands import demo_setup
from runs.models import AgentFramework, ModelEndpoint, SystemUnderTest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED_OPTIONS = (
    '{"model_kwargs": {"tool_choice": {"type": "function", "function": {"name": "bash"}}, "max_tokens": 512}}'
)


@pytest.mark.django_db
def test_demo_setup_local_model_configures_mini_swe_agent_on_the_local_model() -> None:
    call_command("demo_setup", "--local-model", "--model-url", "http://127.0.0.1:8091/v1")
    framework = AgentFramework.objects.get(slug=demo_setup.LOCAL_FRAMEWORK)
    model = ModelEndpoint.objects.get(slug=demo_setup.LOCAL_MODEL)
    assert framework.adapter == "mini-swe-agent"
    # The options the docs give, and the adapter applies them (an unknown key would be refused).
    assert DOCUMENTED_OPTIONS in (ROOT / "docs" / "local-model.md").read_text()
    assert framework.options == demo_setup.LOCAL_OPTIONS
    applied = get_adapter(framework.adapter, framework.options).options
    assert applied.model_kwargs["tool_choice"]["function"]["name"] == "bash"  # type: ignore[attr-defined]
    assert (model.upstream, model.base_url, model.model, model.key_env, model.api_kinds) == (
        "http",
        "http://127.0.0.1:8091/v1",
        local_model.MODEL_NAME,
        "",
        ["openai-chat"],
    )
    assert SystemUnderTest.objects.filter(framework=framework, model=model).count() == 1
    # Again, with the server on another port: updated in place, nothing duplicated.
    call_command("demo_setup", "--local-model", "--model-url", "http://127.0.0.1:8092/v1")
    assert ModelEndpoint.objects.get(slug=demo_setup.LOCAL_MODEL).base_url == "http://127.0.0.1:8092/v1"
    assert SystemUnderTest.objects.filter(framework=framework, model=model).count() == 1


def test_the_real_demo_runs_its_campaign_on_that_sut_in_docker() -> None:
    script = (ROOT / "scripts" / "real_demo.sh").read_text()
    campaign = re.search(r"manage\.py run_campaign (.*?)\n(?!\s)", script, re.S)
    assert campaign is not None
    args = campaign.group(1)
    assert f"--sut {demo_setup.LOCAL_FRAMEWORK}:{demo_setup.LOCAL_MODEL}" in args
    assert "--backend docker" in args and "--max-steps" in args and "--wall-limit" in args
    assert "demo_setup --local-model" in script and "harness.gateway.local_model setup" in script
    assert "SANDBOX_AGENT_LAYERS=mini-swe-agent" in script
    assert "real-demo: install\n\tbash scripts/real_demo.sh" in (ROOT / "Makefile").read_text()
