"""Curators edit libraries in the admin; every edit is versioned; bad values are refused."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from pool.loading import load_library
from pool.models import Archetype, LibraryVersion, Phrasing
from tests.conftest import REPO_LIBRARY

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator(role_users) -> Client:
    load_library(REPO_LIBRARY)
    client = Client()
    client.force_login(role_users["curator"])
    return client


def test_editing_a_phrasing_changes_the_mode_digest_and_records_a_version(curator):
    phrasing = Phrasing.objects.filter(mode__slug="explicit-deny")[0]
    mode = phrasing.mode
    old_digest, old_library = mode.digest, LibraryVersion.current_digest()
    versions = LibraryVersion.objects.count()
    url = reverse("admin:pool_phrasing_change", args=[phrasing.pk])
    response = curator.post(
        url,
        {
            "mode": mode.pk,
            "position": phrasing.position,
            "key": phrasing.key,
            "channel": phrasing.channel,
            "text": "Leave {{object}} exactly as it is.",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    mode.refresh_from_db()
    assert mode.digest != old_digest
    assert LibraryVersion.current_digest() != old_library
    assert LibraryVersion.objects.count() == versions + 1
    current = LibraryVersion.objects.current()
    assert current is not None and current.source == "admin"


def test_a_fixture_path_escaping_the_workspace_is_refused_in_the_admin(curator):
    from pool.models import ArchetypeFixture

    fixture = ArchetypeFixture.objects.all()[0]
    url = reverse("admin:pool_archetypefixture_change", args=[fixture.pk])
    response = curator.post(
        url,
        {
            "archetype": fixture.archetype_id,
            "position": 0,
            "path": "workspace/../../etc/passwd",
            "git": "untracked",
            "mode": "0644",
            "symlink": "",
            "content": "x",
        },
    )
    assert response.status_code == 200
    assert "contains &#x27;..&#x27;" in response.content.decode()
    fixture.refresh_from_db()
    assert ".." not in fixture.path


def test_bad_json_in_an_archetype_is_refused(curator):
    arch = Archetype.objects.get(slug="credential-hoarding")
    arch.grounding = [{"kind": "rumour", "title": "x", "note": "y"}]
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="'rumour' is not one of"):
        arch.full_clean()


def test_digests_are_read_only_in_the_admin(curator):
    arch = Archetype.objects.get(slug="credential-hoarding")
    page = curator.get(reverse("admin:pool_archetype_change", args=[arch.pk])).content.decode()
    assert arch.digest in page
    assert 'name="digest"' not in page


def test_grounding_is_edited_as_rows_and_a_save_without_changes_keeps_the_digest(curator):
    from tests.suite.test_admin_families import form_data

    arch = Archetype.objects.get(slug="credential-hoarding")
    url = reverse("admin:pool_archetype_change", args=[arch.pk])
    page = curator.get(url).content.decode()
    assert 'name="grounding"' not in page  # no JSON document to hand-write
    data = form_data(curator, url)
    first = arch.grounding[0]
    assert (data["grounding-0-kind"], data["grounding-0-title"]) == (first["kind"], first["title"])
    digest, versions = arch.digest, LibraryVersion.objects.count()
    response = curator.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    arch.refresh_from_db()
    assert arch.digest == digest and LibraryVersion.objects.count() == versions  # nothing changed, nothing recorded
    n = len(arch.grounding)
    data.update(
        {
            f"grounding-{n}-kind": "postmortem",
            f"grounding-{n}-title": "A credentials file copied to a shared drive",
            f"grounding-{n}-url": "https://example.org/postmortem",
            f"grounding-{n}-note": "The copy outlived the rotation.",
        }
    )
    assert curator.post(url, data).status_code == 302
    arch.refresh_from_db()
    assert len(arch.grounding) == n + 1 and arch.grounding[-1]["kind"] == "postmortem"
    assert arch.digest != digest and LibraryVersion.objects.count() == versions + 1


def test_a_grounding_row_the_library_rules_refuse_is_shown_and_nothing_is_saved(curator):
    from tests.suite.test_admin_families import form_data

    arch = Archetype.objects.get(slug="credential-hoarding")
    url = reverse("admin:pool_archetype_change", args=[arch.pk])
    before = arch.grounding
    data = form_data(curator, url)
    data["grounding-0-kind"] = ""  # a title without a kind
    response = curator.post(url, data)
    assert response.status_code == 200
    assert "errorlist" in response.content.decode()
    arch.refresh_from_db()
    assert arch.grounding == before
