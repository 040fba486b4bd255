"""Every admin and app URL, for every role: the expected status code.

The URL list is built from the admin registry and the URLconf, so a new model or page that is
not covered here fails the completeness test below instead of slipping through unchecked.
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from pool.loading import load_library
from pool.models import LibraryVersion, PoolVersion
from tests.conftest import REPO_LIBRARY

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "norole", "viewer", "validator", "curator", "admin")
READ_ONLY_MODELS = {"libraryversion", "poolversion", "candidate"}
# Accounts and roles are administered by superusers only.
ADMIN_ONLY_MODELS = {"user", "group"}
LIBRARY_APP = "pool"


def _admin_urls() -> list[tuple[str, str, str]]:
    """(kind, model, url) for every registered model's admin views."""
    urls = [
        ("admin-index", "", reverse("admin:index")),
        ("admin-app", "", reverse("admin:app_list", args=[LIBRARY_APP])),
    ]
    for model in admin.site._registry:
        opts = model._meta
        model_name = str(opts.model_name)
        name = f"admin:{opts.app_label}_{model_name}"
        obj = model._default_manager.order_by("pk").first()
        urls.append(("changelist", model_name, reverse(f"{name}_changelist")))
        urls.append(("add", model_name, reverse(f"{name}_add")))
        if obj is not None:
            urls.append(("change", model_name, reverse(f"{name}_change", args=[obj.pk])))
            urls.append(("history", model_name, reverse(f"{name}_history", args=[obj.pk])))
            urls.append(("delete", model_name, reverse(f"{name}_delete", args=[obj.pk])))
    return urls


def _a_pool() -> PoolVersion:
    pool, _ = PoolVersion.objects.get_or_create(
        library_digest=LibraryVersion.current_digest(), pool_seed=1, target_size=10, defaults={"backend": "bwrap"}
    )
    return pool


def _app_urls() -> list[tuple[str, str, str]]:
    return [
        ("page", "", reverse("home")),
        ("page", "", reverse("library-overview")),
        ("page", "", reverse("library-entry", args=["archetypes", "credential-hoarding"])),
        ("page", "", reverse("library-entry", args=["seeds", "invoice-totals"])),
        ("page", "", reverse("pool-list")),
        ("page", "", reverse("pool-detail", args=[_a_pool().pk])),
        ("public", "", reverse("login")),
        ("public", "", reverse("healthz")),
        ("rq", "", reverse("django_rq:home")),
    ]


def expected(role: str, kind: str, model: str) -> int:
    if kind == "public":
        return 200
    if role == "anonymous":
        return 302
    if kind == "page":
        return 403 if role == "norole" else 200
    if kind == "rq":
        # The queue dashboard is for operators: superusers only.
        return 200 if role == "admin" else 403
    if role == "norole":
        return 302  # not staff: the admin sends them to its login page
    if model in ADMIN_ONLY_MODELS:
        return 200 if role == "admin" else 403
    if kind in ("admin-index", "admin-app", "changelist", "change", "history"):
        return 200
    # add / delete
    if model in READ_ONLY_MODELS:
        return 403
    return 200 if role in ("curator", "admin") else 403


@pytest.fixture
def loaded(role_users):
    load_library(REPO_LIBRARY)
    LibraryVersion.record("test")
    _a_pool()
    return role_users


def _client(role: str, users) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(users[role])
    return client


def test_role_url_matrix(loaded):
    urls = _admin_urls() + _app_urls()
    failures = []
    for role in ROLES:
        client = _client(role, loaded)
        for kind, model, url in urls:
            code = client.get(url).status_code
            want = expected(role, kind, model)
            if code != want:
                failures.append(f"{role:<9} {url:<60} got {code}, expected {want}")
    assert not failures, "\n" + "\n".join(failures)


def test_viewers_cannot_change_a_library_entry_by_post(loaded):
    from pool.models import Archetype

    arch = Archetype.objects.get(slug="credential-hoarding")
    url = reverse("admin:pool_archetype_change", args=[arch.pk])
    for role in ("viewer", "validator"):
        response = _client(role, loaded).post(url, {"name": "hijacked"})
        assert response.status_code == 403
    arch.refresh_from_db()
    assert arch.name != "hijacked"


def test_every_url_pattern_is_in_the_matrix():
    from django.urls import get_resolver

    covered = {
        "home",
        "healthz",
        "library-overview",
        "library-entry",
        "pool-list",
        "pool-detail",
        "login",
        "logout",
        "django_rq:home",
    }
    names = {name for name in get_resolver().reverse_dict if isinstance(name, str)}
    app_names = {n for n in names if not n.startswith("admin")}
    assert app_names <= covered, f"add these to the role matrix: {sorted(app_names - covered)}"


def test_logout_needs_post(loaded):
    client = _client("viewer", loaded)
    assert client.get(reverse("logout")).status_code == 405
    assert client.post(reverse("logout")).status_code == 302
