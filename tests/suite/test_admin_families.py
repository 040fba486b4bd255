"""Curators edit task families in the admin: validated like the files, prompts regenerated in
place, digest and suite version recorded; prompts themselves are records nobody edits."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from suite.loading import load_suite
from suite.models import FamilyPrompt, SuiteVersion, TaskFamily
from tests.suite.conftest import FAMILY_DIR

pytestmark = pytest.mark.django_db
SLUG = "flag-router-canary"


class _Form(HTMLParser):
    """Collects the submittable values of the admin change form, as a browser would."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, str] = {}
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        name = a.get("name")
        if tag == "input" and name and a.get("type") not in ("submit", "checkbox", "file"):
            self.data[name] = a.get("value") or ""
        elif tag == "input" and name and a.get("type") == "checkbox" and "checked" in a:
            self.data[name] = a.get("value") or "on"
        elif tag == "textarea" and name:
            self._textarea = name
            self.data[name] = ""
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.data[self._select] = a.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._textarea = None
        if tag == "select":
            self._select = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.data[self._textarea] += data


def form_data(client: Client, url: str) -> dict[str, str]:
    page = client.get(url)
    assert page.status_code == 200
    parser = _Form()
    parser.feed(page.content.decode())
    # Textareas start with a newline the browser drops.
    return {k: (v[1:] if v.startswith("\n") else v) for k, v in parser.data.items()}


@pytest.fixture
def curator(role_users) -> Client:
    load_suite(FAMILY_DIR)
    client = Client()
    client.force_login(role_users["curator"])
    return client


def test_a_wording_edit_regenerates_prompts_in_place_and_records_a_version(curator):
    family = TaskFamily.objects.get(slug=SLUG)
    url = reverse("admin:suite_taskfamily_change", args=[family.pk])
    data = form_data(curator, url)
    wording = json.loads(data["wording"])
    wording["R"][0] = "The canary only touches the firm's own paper-trading accounts."
    data["wording"] = json.dumps(wording)
    ids = sorted(family.prompts.values_list("id", flat=True))
    old_digest, versions = family.digest, SuiteVersion.objects.count()
    response = curator.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    family.refresh_from_db()
    assert family.digest != old_digest
    assert sorted(family.prompts.values_list("id", flat=True)) == ids
    assert FamilyPrompt.objects.get(family=family, s=1, b=0, r=0).text.endswith(
        "The canary only touches the firm's own paper-trading accounts."
    )
    assert SuiteVersion.objects.count() == versions + 1 and SuiteVersion.objects.current().source == "admin"


def test_an_invalid_edit_is_refused_next_to_its_field_and_changes_nothing(curator):
    family = TaskFamily.objects.get(slug=SLUG)
    url = reverse("admin:suite_taskfamily_change", args=[family.pk])
    data = form_data(curator, url)
    wording = json.loads(data["wording"])
    wording["B"][3] = "the order-router-v2 flag"
    data["wording"] = json.dumps(wording)
    candidates = json.loads(data["candidates"])
    data["candidates"] = json.dumps(candidates[:1])
    response = curator.post(url, data)
    assert response.status_code == 200
    page = response.content.decode()
    assert "names &#x27;order-router-v2&#x27;, which identifies the target uniquely" in page
    assert "list at least 2 candidates" in page
    family.refresh_from_db()
    assert family.candidates == candidates


def test_prompts_and_versions_are_read_only_for_curators(curator):
    prompt = FamilyPrompt.objects.filter(family__slug=SLUG).first()
    assert curator.get(reverse("admin:suite_familyprompt_change", args=[prompt.pk])).status_code == 200
    response = curator.post(reverse("admin:suite_familyprompt_change", args=[prompt.pk]), {"text": "edited"})
    assert response.status_code == 403
    prompt.refresh_from_db()
    assert prompt.text != "edited"
    assert curator.get(reverse("admin:suite_familyprompt_add")).status_code == 403


def test_viewers_browse_families_but_cannot_change_them(role_users):
    load_suite(FAMILY_DIR)
    client = Client()
    client.force_login(role_users["viewer"])
    listing = client.get(reverse("admin:suite_taskfamily_changelist") + "?surface__exact=deployment-traffic")
    assert listing.status_code == 200 and SLUG in listing.content.decode()
    family = TaskFamily.objects.get(slug=SLUG)
    assert client.post(reverse("admin:suite_taskfamily_change", args=[family.pk]), {}).status_code == 403


def test_grounding_is_edited_as_rows_checked_like_the_files(curator):
    family = TaskFamily.objects.get(slug=SLUG)
    url = reverse("admin:suite_taskfamily_change", args=[family.pk])
    assert 'name="grounding"' not in curator.get(url).content.decode()
    data = form_data(curator, url)
    n = len(family.grounding)
    assert data["grounding-0-url"] == family.grounding[0]["url"]
    data.update(
        {
            f"grounding-{n}-kind": "tool-doc",
            f"grounding-{n}-title": "A flag router's rollout documentation",
            f"grounding-{n}-url": "not a link",
            f"grounding-{n}-note": "How a canary is scoped.",
        }
    )
    refused = curator.post(url, data)
    assert refused.status_code == 200 and "errorlist" in refused.content.decode()
    family.refresh_from_db()
    assert len(family.grounding) == n
    data[f"grounding-{n}-url"] = "https://example.org/rollouts"
    assert curator.post(url, data).status_code == 302
    family.refresh_from_db()
    assert family.grounding[-1] == {
        "kind": "tool-doc",
        "title": "A flag router's rollout documentation",
        "url": "https://example.org/rollouts",
        "note": "How a canary is scoped.",
    }
