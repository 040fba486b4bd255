"""Every admin and app URL, for every role: the expected status code.

The URL list is built from the admin registry and the URLconf, so a new model or page that is
not covered here fails the completeness test below instead of slipping through unchecked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib import admin
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from pool.loading import load_library
from pool.models import LibraryVersion, PoolVersion
from tests.conftest import REPO_LIBRARY

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "norole", "viewer", "validator", "curator", "admin")
READ_ONLY_MODELS = {
    "libraryversion",
    "poolversion",
    "candidate",
    "matrix",
    "campaign",
    "run",
    "runattempt",
    "familyprompt",
    "suiteversion",
    "scenariopack",
    "packscenario",
}
# Accounts and roles are administered by superusers only.
ADMIN_ONLY_MODELS = {"user", "group"}
# Non-action label records and queues: hidden from validators in the admin (they would unblind them).
LABEL_RECORD_MODELS = {
    "judgelabel",
    "humanlabel",
    "adjudication",
    "reviewrun",
    # Verdict validation: read-only in the admin (queues open on their own page), hidden from validators.
    "verdictqueue",
    "verdictlabel",
    "verdictadjudication",
}
LABEL_CURATED_MODELS = {"validationqueue"}
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
        if model_name == "reviewrun":  # the review lists scored non-action runs only
            obj = model._default_manager.filter(acted=False, status="scored").order_by("pk").first()
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


def _a_pack() -> Any:
    from packs.models import ScenarioPack

    pack = ScenarioPack.objects.filter(slug="roles").first()
    if pack is None:
        info = {"slug": "roles", "version": 1, "digest": "d" * 64}
        pool = PoolVersion.objects.create(
            library_digest="d" * 64, pool_seed=0, target_size=0, backend="bwrap", report={"pack": info}
        )
        pack = ScenarioPack.objects.create(
            slug="roles",
            version=1,
            title="Roles",
            digest="d" * 64,
            source_dir="/nonexistent",
            backend="bwrap",
            pool=pool,
        )
    return pack


def _app_urls() -> list[tuple[str, str, str]]:
    return [
        ("page", "", reverse("home")),
        ("page", "", reverse("library-overview")),
        ("page", "", reverse("library-entry", args=["archetypes", "credential-hoarding"])),
        ("page", "", reverse("library-entry", args=["seeds", "invoice-totals"])),
        ("page", "", reverse("pool-list")),
        ("page", "", reverse("pool-detail", args=[_a_pool().pk])),
        ("page", "", reverse("pools-live")),
        ("page", "", reverse("pool-live", args=[_a_pool().pk])),
        ("page", "", reverse("pack-list")),
        ("results", "", reverse("pack-detail", args=[_a_pack().pk])),
        ("public", "", reverse("login")),
        ("public", "", reverse("healthz")),
        ("rq", "", reverse("django_rq:home")),
    ]


def _dashboard_urls(objs: dict[str, int]) -> list[tuple[str, str, str]]:
    """The dashboard's pages and JSON endpoints (any role reads them) and its curator-only POSTs."""
    c, m, r = objs["campaign"], objs["matrix"], objs["run"]
    return [
        ("results", "", reverse("campaign-list")),
        ("results", "", reverse("campaign-detail", args=[c])),
        ("results", "", reverse("campaign-data", args=[c])),
        ("results", "", reverse("campaign-data", args=[c]) + "?format=csv&chart=heatmap"),
        ("results", "", reverse("campaign-runs", args=[c])),
        ("results", "", reverse("campaign-costs", args=[c])),
        ("results", "", reverse("matrix-list")),
        ("results", "", reverse("matrix-detail", args=[m])),
        ("results", "", reverse("matrix-data", args=[m]) + "?tier=high"),
        ("results", "", reverse("matrix-costs", args=[m])),
        ("results", "", reverse("run-detail", args=[r])),
        ("results", "", reverse("run-events", args=[r])),
        ("results", "", reverse("run-gateway-record", args=[r, 1])),
        # GET on a POST-only action: a 405 shows the role got past the permission check.
        ("curator-post", "", reverse("campaign-start")),
        ("curator-post", "", reverse("campaign-stop", args=[c])),
        ("curator-post", "", reverse("campaign-resume", args=[c])),
        ("curator-post", "", reverse("matrix-resume", args=[m])),
        # Bundle downloads (curators only); the fixture's campaigns are running, so a curator gets
        # the 409 that comes after the permission check (tests/runs/bundle/test_download_view.py streams one).
        ("curator-download", "", reverse("bundle-download", args=[c])),
        ("curator-download", "", reverse("matrix-bundle-download", args=[m])),
    ]


def expected(role: str, kind: str, model: str) -> int:
    if kind == "public":
        return 200
    if role == "anonymous":
        return 302
    if kind == "curator-post":
        return 405 if role in ("curator", "admin") else 403
    if kind == "curator-download":
        return 409 if role in ("curator", "admin") else 403
    if kind == "curator-page":
        return 200 if role in ("curator", "admin") else 403
    if kind == "validator-page":
        return 200 if role in ("validator", "curator", "admin") else 403
    if kind == "validator-post":
        return 405 if role in ("validator", "curator", "admin") else 403
    if kind == "label-export":
        # Per-run labels carry the judge's: not for validator-only accounts (blindness).
        return 200 if role in ("viewer", "curator", "admin") else 403
    if kind == "page":
        return 403 if role == "norole" else 200
    if kind == "results":
        # Verdicts, dispositions and their live counts: closed to validator-only accounts (overeager/blind.py).
        return 403 if role in ("norole", "validator") else 200
    if kind == "rq":
        # The queue dashboard is for operators: superusers only.
        return 200 if role == "admin" else 403
    if role == "norole":
        return 302  # not staff: the admin sends them to its login page
    if model in ADMIN_ONLY_MODELS:
        return 200 if role == "admin" else 403
    if model in LABEL_RECORD_MODELS | LABEL_CURATED_MODELS:
        if role == "validator":
            return 403
        if kind in ("changelist", "change", "history"):
            return 200
        return 200 if model in LABEL_CURATED_MODELS and role in ("curator", "admin") else 403
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


@pytest.fixture
def dashboard(loaded, settings, tmp_path) -> Iterator[dict[str, int]]:
    """A campaign with a scored run (evidence, transcript, gateway file) and a 2 × 2 matrix."""
    from tests import factories

    settings.EVIDENCE_DIR = tmp_path / "evidence"
    prefix = factories.isolate_prefixes(settings)
    archetypes, modes = factories.axes()
    campaign = factories.campaign("role-matrix")
    run, _ = factories.run_with_evidence(campaign)
    matrix = factories.matrix(["fw-a", "fw-b"], ["m-1", "m-2"], {(archetypes[0][0], modes[0]): (1, 2)}, {})
    yield {"campaign": campaign.pk, "matrix": matrix.pk, "run": run.pk}
    factories.drop_prefix(settings, prefix)


@pytest.fixture
def labels_world(loaded, tmp_path) -> dict[str, int]:
    """A non-action run in a queue, with a judge label, a validator's label and an adjudication."""
    from labels.disposition import refresh
    from labels.models import Adjudication, HumanLabel
    from tests.labels import world

    run = world.non_action_run(world.campaign("role-matrix-labels"))
    world.judge_label(run, "refusal")
    queue = world.queue("role-matrix-queue", overlap=1)
    HumanLabel.objects.create(run=run, validator=loaded["validator"], label="refusal")
    Adjudication.objects.create(run=run, curator=loaded["curator"], label="refusal", reason="clear decline")
    refresh([run.pk])
    # A verdict queue over a run with an oracle verdict, labelled and adjudicated.
    from labels import verdicts
    from labels.models import VerdictAdjudication, VerdictLabel, VerdictQueue
    from tests.labels import verdict_world

    vrun = verdict_world.verdict_run(world.campaign("role-matrix-verdicts", kind="snare"), tmp_path, commands=["ls"])
    vqueue = VerdictQueue.objects.create(name="role-matrix-verdicts", overlap=1)
    vqueue.campaigns.set([vrun.campaign])
    verdicts.build(vqueue)
    VerdictLabel.objects.create(run=vrun, validator=loaded["validator"], overstepped=False)
    VerdictAdjudication.objects.create(run=vrun, curator=loaded["curator"], overstepped=False, reason="only ls")
    return {"queue": queue.pk, "run": run.pk, "vqueue": vqueue.pk, "vrun": vrun.pk}


def _labels_urls(objs: dict[str, int]) -> list[tuple[str, str, str]]:
    """Validator pages, the agreement page and its exports (any role), per-run label exports."""
    q, r = objs["queue"], objs["run"]
    vq, vr = objs["vqueue"], objs["vrun"]
    return [
        ("validator-page", "", reverse("labels-queues")),
        ("validator-page", "", reverse("labels-next", args=[q])),
        ("validator-page", "", reverse("labels-label", args=[q, r])),
        ("validator-page", "", reverse("labels-events", args=[q, r])),
        ("validator-post", "", reverse("labels-clear-skips", args=[q])),
        ("page", "", reverse("labels-agreement")),
        ("page", "", reverse("labels-agreement-data")),
        ("page", "", reverse("labels-agreement-export", args=["csv"]) + "?table=summary"),
        ("page", "", reverse("labels-agreement-export", args=["json"])),
        ("results", "", reverse("labels-composition") + "?by=s_level"),
        ("label-export", "", reverse("labels-export", args=["labels", "csv"])),
        ("label-export", "", reverse("labels-export", args=["runs", "json"])),
        # Verdict validation: queues and blind labelling (validators, curators), opening a queue
        # and adjudicating (curators), agreement and validity (any role; the confusion cases are
        # left out for validators), per-run verdict labels (not for validator-only accounts).
        ("validator-page", "", reverse("verdicts-queues")),
        ("validator-page", "", reverse("verdicts-next", args=[vq])),
        ("validator-page", "", reverse("verdicts-label", args=[vq, vr])),
        ("validator-post", "", reverse("verdicts-clear-skips", args=[vq])),
        ("curator-page", "", reverse("verdicts-queue-new")),
        ("curator-post", "", reverse("verdicts-adjudicate", args=[vr])),
        ("page", "", reverse("verdicts-agreement")),
        ("page", "", reverse("verdicts-agreement-data")),
        ("page", "", reverse("verdicts-agreement-export", args=["csv"])),
        ("page", "", reverse("verdicts-agreement-export", args=["json"])),
        ("page", "", reverse("validity")),
        ("page", "", reverse("validity-data")),
        ("label-export", "", reverse("verdicts-labels-export", args=["csv"])),
        ("label-export", "", reverse("verdicts-labels-export", args=["json"])),
    ]


@pytest.fixture
def results_world(labels_world) -> dict[str, object]:
    """A suite campaign with scored runs on a family, and a paired campaign with pairs (after the
    labels world, whose queue would otherwise sample these non-action runs)."""
    from tests import factories as suite_factories

    family = suite_factories.family()
    suite = suite_factories.suite_campaign("role-matrix-suite")
    suite_factories.scored_suite_runs(suite, [family])
    paired = suite_factories.paired_campaign("role-matrix-paired")
    suite_factories.pairs(paired, {("explicit-deny", "user-prompt"): (1, 2, 0, 3)})
    return {"suite": suite.pk, "family": family.slug, "paired": paired.pk}


def _results_urls(objs: dict[str, object]) -> list[tuple[str, str, str]]:
    """UnderSpecBench results and families, consent sensitivity: every role reads them."""
    paired, family = objs["paired"], objs["family"]
    return [
        ("results", "", reverse("suite-results")),
        ("results", "", reverse("suite-data")),
        ("results", "", reverse("suite-data") + "?format=csv&chart=by_surface"),
        ("results", "", reverse("suite-families")),
        ("results", "", reverse("suite-family", args=[family])),
        ("results", "", reverse("suite-family-runs", args=[family])),
        ("results", "", reverse("campaign-detail", args=[objs["suite"]])),
        ("results", "", reverse("consent-sensitivity")),
        ("results", "", reverse("consent-data") + "?view=across-suts"),
        ("results", "", reverse("consent-data") + "?format=csv&chart=strata"),
        ("results", "", reverse("consent-pair", args=[paired, "p0"])),
    ]


def _client(role: str, users) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(users[role])
    return client


def test_role_url_matrix(loaded, dashboard, labels_world, results_world):
    urls = _admin_urls() + _app_urls() + _dashboard_urls(dashboard) + _labels_urls(labels_world)
    urls += _results_urls(results_world)
    failures = []
    for role in ROLES:
        client = _client(role, loaded)
        for kind, model, url in urls:
            code = client.get(url).status_code
            want = expected(role, kind, model)
            if code != want:
                failures.append(f"{role:<9} {url:<60} got {code}, expected {want}")
    assert not failures, "\n" + "\n".join(failures)


def _blind_lookups(model: type[Model], depth: int = 2) -> list[str]:
    """Every ORM path from ``model`` to a blind field or into a blind model, through at most
    ``depth`` relations (forward and reverse), never back through a model already on the path."""
    from overeager.blind import BLIND_FIELDS, BLIND_MODELS

    found: list[str] = []

    def label(m: type[Model]) -> str:
        return str(m._meta.concrete_model._meta.label_lower)

    def walk(m: type[Model], prefix: str, left: int, seen: frozenset[str]) -> None:
        if label(m) in BLIND_MODELS:
            found.append(prefix + "pk")
            return
        found.extend(prefix + name for name in sorted(BLIND_FIELDS.get(label(m), ())))
        if left == 0:
            return
        for f in m._meta.get_fields():
            related = f.related_model if f.is_relation else None
            if related is None or isinstance(related, str) or label(related) in seen:
                continue
            walk(related, f"{prefix}{f.name}__", left - 1, seen | {label(related)})

    walk(model, "", depth, frozenset({label(model)}))
    return found


def test_every_admin_is_blind_aware():
    """A new admin that forgets BlindAdmin would let a validator filter by any local label field."""
    from overeager.blind import BLIND_FIELDS, BLIND_MODELS, BlindAdmin, BlindFieldsMixin

    missing = []
    for model, model_admin in admin.site._registry.items():
        if model._meta.model_name in ADMIN_ONLY_MODELS:
            continue  # superusers only: a validator never reaches them
        if not isinstance(model_admin, BlindAdmin):
            missing.append(type(model_admin).__qualname__)
        for inline in model_admin.inlines:
            label = inline.model._meta.label_lower
            if (label in BLIND_FIELDS or label in BLIND_MODELS) and not issubclass(inline, BlindFieldsMixin):
                missing.append(inline.__qualname__)
    assert not missing, f"derive these from overeager.blind.BlindAdmin / BlindFieldsMixin: {missing}"


def test_no_admin_shows_sorts_searches_or_filters_a_blind_field_to_a_validator(loaded, dashboard, labels_world):
    """Each admin's options as a validator's request sees them: no entry reads a blind path."""
    from django.test import RequestFactory

    from overeager.blind import _paths, touches_blind

    request = RequestFactory().get("/admin/")
    request.user = loaded["validator"]
    leaks = []
    for model, ma in admin.site._registry.items():
        obj = model._default_manager.order_by("pk").first()
        options: dict[str, Any] = {
            "list_display": ma.get_list_display(request),
            "list_filter": ma.get_list_filter(request),
            "search_fields": ma.get_search_fields(request),
            "sortable_by": ma.get_sortable_by(request),
            "ordering": ma.get_ordering(request) or (),
            "fields": [f for _, opts in ma.get_fieldsets(request, obj) for f in opts["fields"]],
            "readonly_fields": ma.get_readonly_fields(request, obj),
        }
        for inline in ma.get_inline_instances(request, obj):
            options[f"inline {type(inline).__name__}"] = inline.get_fields(request, obj)
        for option, items in options.items():
            for item in items:
                if any(touches_blind(model, path) for path in _paths(item)):
                    leaks.append(f"{model._meta.label_lower}.{option}: {item}")
    assert not leaks, "\n" + "\n".join(leaks)


def test_no_admin_lets_a_validator_look_up_a_blind_field(loaded, dashboard, labels_world):
    """``?<path>=…`` for every blind path of every admin: refused (400), or the admin is closed (403)."""
    validator = _client("validator", loaded)
    curator = _client("curator", loaded)
    failures = []
    checked = 0
    for model in admin.site._registry:
        name = str(model._meta.model_name)
        url = reverse(f"admin:{model._meta.app_label}_{name}_changelist")
        closed = name in LABEL_RECORD_MODELS | LABEL_CURATED_MODELS | ADMIN_ONLY_MODELS
        for path in _blind_lookups(model):
            for lookup in (path, f"{path}__isnull", f"{path}__in"):
                query = f"{url}?{lookup}={'False' if lookup.endswith('isnull') else '1'}"
                code = validator.get(query).status_code
                checked += 1
                if code != (403 if closed else 400):
                    failures.append(f"validator {query}: {code}")
        # The same lookup stays a curator's tool where Django allows it (a local field).
        if name == "run":
            assert curator.get(f"{url}?disposition=refusal").status_code == 200
    assert checked > 200
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
        "pools-live",
        "pool-live",
        "pack-list",
        "pack-detail",
        "login",
        "logout",
        "django_rq:home",
        "campaign-list",
        "campaign-start",
        "campaign-detail",
        "campaign-data",
        "campaign-runs",
        "campaign-stop",
        "campaign-costs",
        "campaign-resume",
        "matrix-list",
        "matrix-detail",
        "matrix-data",
        "matrix-costs",
        "matrix-resume",
        "run-detail",
        "run-events",
        "run-gateway-record",
        "suite-results",
        "suite-data",
        "suite-families",
        "suite-family",
        "suite-family-runs",
        "consent-sensitivity",
        "consent-data",
        "consent-pair",
        "labels-queues",
        "labels-next",
        "labels-label",
        "labels-events",
        "labels-clear-skips",
        "labels-agreement",
        "labels-agreement-data",
        "labels-agreement-export",
        "labels-export",
        "labels-composition",
        "verdicts-queues",
        "verdicts-queue-new",
        "verdicts-next",
        "verdicts-label",
        "verdicts-clear-skips",
        "verdicts-agreement",
        "verdicts-agreement-data",
        "verdicts-agreement-export",
        "verdicts-labels-export",
        "verdicts-adjudicate",
        "validity",
        "validity-data",
        "bundle-download",
        "matrix-bundle-download",
    }
    names = {name for name in get_resolver().reverse_dict if isinstance(name, str)}
    app_names = {n for n in names if not n.startswith("admin")}
    assert app_names <= covered, f"add these to the role matrix: {sorted(app_names - covered)}"


def test_logout_needs_post(loaded):
    client = _client("viewer", loaded)
    assert client.get(reverse("logout")).status_code == 405
    assert client.post(reverse("logout")).status_code == 302


# Validator-only accounts follow no results topic (run events carry verdicts; overeager/blind.py).
SOCKET_EXPECTED = {"anonymous": 4401, "norole": 4403, "viewer": 0, "validator": 4403, "curator": 0, "admin": 0}


@pytest.mark.django_db(transaction=True)
def test_role_socket_matrix(loaded, settings):
    """Every role on the progress socket of a campaign and a matrix; 0 = accepted."""
    from channels.testing import WebsocketCommunicator

    from overeager.asgi import application
    from tests.asyncrun import run_async

    def outcome(role: str, topic: str, origin: str = "http://127.0.0.1:8000") -> int | None:
        headers = [(b"origin", origin.encode()), (b"host", b"127.0.0.1:8000")]
        if role != "anonymous":
            client = _client(role, loaded)
            cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
            headers.append((b"cookie", cookie.encode()))

        async def scenario() -> int | None:
            comm = WebsocketCommunicator(application, f"/ws/progress/{topic}/", headers=headers)
            connected, code = await comm.connect(timeout=5)
            # A refused socket's consumer never ends by itself; do not wait the default second for it.
            await comm.disconnect(timeout=1 if connected else 0.05)
            return 0 if connected else code

        return run_async(scenario)

    failures = []
    for role, want in SOCKET_EXPECTED.items():
        for topic in ("campaign-1", "matrix-1"):
            got = outcome(role, topic)
            if got != want:
                failures.append(f"{role:<9} {topic}: got {got}, expected {want}")
            # Another origin (here: another local port) is refused whatever the role.
            if outcome(role, topic, origin="http://127.0.0.1:8001") == 0:
                failures.append(f"{role:<9} {topic}: accepted from another origin")
    assert not failures, "\n" + "\n".join(failures)
