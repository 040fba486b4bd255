"""A system under test configured through the admin runs a pool scenario end to end (issue 5).

The curator adds the framework (the built-in shell agent), the model (a scripted upstream) and the
SUT with the admin's own forms; a one-run campaign is then executed by the real job function —
claim, sandbox, gateway process, agent, oracle, fenced write — on both sandbox backends.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from overeager.roles import CURATOR, sync_groups
from runs.campaigns import campaign_params, start_campaign
from runs.jobs import execute_run
from runs.models import AgentFramework, ModelEndpoint, Run, RunAttempt, RunEvent, SystemUnderTest

pytestmark = pytest.mark.slow

SCRIPT = [
    {"tool_call": {"name": "bash", "arguments": {"command": "git status --short && echo checked > CHECKED.txt"}}},
    {"text": "I checked the repository status and wrote CHECKED.txt."},
]


def _curator() -> Client:
    sync_groups()
    user = User.objects.create_user("cura", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=CURATOR))
    client = Client()
    client.force_login(user)
    return client


def _configure_in_admin(client: Client) -> SystemUnderTest:
    r = client.post(
        "/admin/runs/agentframework/add/",
        {"slug": "shell", "label": "Built-in shell agent", "adapter": "shell", "options": "{}", "notes": ""},
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    r = client.post(
        "/admin/runs/modelendpoint/add/",
        {
            "slug": "scripted-demo",
            "label": "Scripted demo model",
            "upstream": "scripted",
            "api_kinds": json.dumps(["openai-chat", "anthropic-messages", "openai-responses"]),
            "model": "scripted",
            "base_url": "",
            "key_env": "",
            "script": json.dumps(SCRIPT),
            "notes": "",
        },
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    r = client.post(
        "/admin/runs/systemundertest/add/",
        {
            "framework": AgentFramework.objects.get(slug="shell").pk,
            "model": ModelEndpoint.objects.get(slug="scripted-demo").pk,
            "api_kind": "openai-chat",
            "max_steps": 10,
            "wall_limit_s": 300,
            "command_timeout_s": 60,
            "max_requests": 20,
            "max_tokens": 1_000_000,
            "notes": "",
        },
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    return SystemUnderTest.objects.get()


def test_the_admin_refuses_a_sut_whose_api_the_framework_does_not_speak(pool):
    client = _curator()
    _configure_in_admin(client)
    fw = AgentFramework.objects.get(slug="shell")
    model = ModelEndpoint.objects.create(
        slug="anthropic-only", label="x", upstream="scripted", api_kinds=["anthropic-messages"], script=SCRIPT
    )
    r = client.post(
        "/admin/runs/systemundertest/add/",
        {
            "framework": fw.pk,
            "model": model.pk,
            "api_kind": "anthropic-messages",
            "max_steps": 10,
            "wall_limit_s": 300,
            "command_timeout_s": 60,
            "max_requests": 20,
            "max_tokens": 1000,
            "notes": "",
        },
    )
    assert r.status_code == 200
    assert "shell speaks [&#x27;openai-chat&#x27;], not anthropic-messages" in r.content.decode()


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_a_sut_configured_in_the_admin_runs_a_pool_scenario(pool, backend, queue_name, evidence_dir):
    sut = _configure_in_admin(_curator())
    campaign = start_campaign(
        name=f"admin-sut-{backend}",
        sut=sut,
        pool=pool,
        params=campaign_params(n=1, k=1, j=1, q_floor=0, q_ceil=1, seed=5),
        backend=backend,
    )
    run = Run.objects.get(campaign=campaign)
    status = execute_run(run.pk)
    assert "stored" in status, status
    run.refresh_from_db()
    attempt = RunAttempt.objects.get(run=run)
    assert run.status == Run.Status.SCORED, (attempt.validity, attempt.validity_reason, attempt.error)
    assert attempt.backend == backend
    assert run.validity == "valid" and run.overeager is not None and run.acted is True
    commands = attempt.evidence["commands"]
    assert any("git status --short" in c for c in commands), commands[:20]
    assert {"path": "workspace/CHECKED.txt", "change": "created"} in attempt.evidence["changes"]
    # The scripted model's two turns went through the gateway and are on the record.
    assert [g["status"] for g in attempt.evidence["gateway"]] == [200, 200]
    assert (evidence_dir / str(campaign.uuid) / str(run.pk) / "1" / "gateway.jsonl").exists()
    kinds = list(RunEvent.objects.filter(attempt=attempt).values_list("kind", flat=True))
    assert "tool_call" in kinds and "command" in kinds and kinds[-1] in ("final_message", "usage")
    # The unsolicited CHECKED.txt is outside the allowed write set: the composite oracle says so.
    assert run.overeager is True
    assert any(c["path"] == "workspace/CHECKED.txt" for c in attempt.verdict["unsolicited_changes"])
