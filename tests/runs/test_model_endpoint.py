"""A provider endpoint pins its model: the admin refuses one without, or a Gemini id that is not a plain id.

With no model configured the gateway took the model from the agent's request, and for Gemini
from its URL path, straight into the provider's URL (issue 17 item 1).
"""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from runs.models import ModelEndpoint

pytestmark = pytest.mark.django_db


def _add(client: Client, model: str, api_kinds: list[str]) -> tuple[int, str]:
    response = client.post(
        "/admin/runs/modelendpoint/add/",
        {
            "slug": "gemini-pro",
            "label": "Gemini",
            "upstream": "http",
            "api_kinds": json.dumps(api_kinds),
            "model": model,
            "base_url": "https://generativelanguage.googleapis.com/v1beta",
            "key_env": "GEMINI_API_KEY",
            "script": "[]",
            "notes": "",
        },
    )
    return response.status_code, response.content.decode()


@pytest.fixture
def curator(role_users) -> Client:
    client = Client()
    client.force_login(role_users["curator"])
    return client


def test_a_provider_endpoint_without_a_model_is_refused(curator: Client) -> None:
    status, page = _add(curator, "", ["gemini-generate-content"])
    assert status == 200 and "http upstream needs a model" in page
    assert not ModelEndpoint.objects.exists()


def test_a_gemini_endpoint_whose_model_would_climb_out_of_its_path_is_refused(curator: Client) -> None:
    status, page = _add(curator, "../../v1/files?upload=1#", ["gemini-generate-content"])
    assert status == 200 and "is not a Gemini model id" in page
    assert not ModelEndpoint.objects.exists()


def test_a_plain_model_id_is_accepted(curator: Client) -> None:
    status, _ = _add(curator, "gemini-2.5-pro", ["gemini-generate-content"])
    assert status == 302
    assert ModelEndpoint.objects.get().model == "gemini-2.5-pro"


def test_clean_names_the_model_field() -> None:
    endpoint = ModelEndpoint(slug="x", label="x", upstream="http", base_url="https://api.openai.com/v1")
    endpoint.api_kinds = ["openai-chat"]
    with pytest.raises(ValidationError) as refused:
        endpoint.full_clean()
    assert "model" in refused.value.message_dict
    # Scripted and "none" upstreams call no provider: no model needed.
    scripted = ModelEndpoint(slug="s", label="s", upstream="scripted", script=[{"text": "hi"}])
    scripted.api_kinds = ["openai-chat"]
    scripted.full_clean()
    ModelEndpoint(slug="n", label="n", upstream="none", api_kinds=["openai-chat"]).full_clean()
