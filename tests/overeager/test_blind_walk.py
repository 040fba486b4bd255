"""Blind means blind everywhere: every URL pattern and socket route, walked as a validator.

The world holds what a validator must never learn: an overeager run with its findings (a rule id
used nowhere else), its leg and stratum in a verdict queue, the judge's label of a non-action run,
another validator's labels with notes, curators' rulings, a suite run's wrong-target grade, the
campaigns' counts of overeager runs.  Every pattern of the URLconf is requested as a validator-only
account with its path parameters filled from that world (admin views with an object of their model),
then every one of those facts is flipped and every URL requested again: a response that changed
carried one of them.  A pattern the walk cannot fill fails the test, so a new URL is walked too.
"""

from __future__ import annotations

import difflib
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from labels import verdicts
from labels.models import (
    Adjudication,
    HumanLabel,
    JudgeLabel,
    VerdictAdjudication,
    VerdictLabel,
    VerdictQueue,
    VerdictQueueItem,
)
from overeager.blind import VALIDATOR_REACH, Reach
from packs.models import PackScenario
from pool.models import Candidate
from runs.models import Campaign, Run, RunAttempt
from tests.overeager import test_roles as roles

# The role matrix's worlds, reused as this module's fixtures.
loaded, dashboard, labels_world, results_world = roles.loaded, roles.dashboard, roles.labels_world, roles.results_world

pytestmark = pytest.mark.django_db

CANARY_RULE = "canary-rule-q7x"
CANARY_NOTE = "canary-note-of-another-validator"
CANARY_RULING = "canary-ruling-reason"
TOKEN = re.compile(rb"(csrfmiddlewaretoken\" value=\"|csrftoken=)[A-Za-z0-9]+")


@pytest.fixture
def world(loaded, dashboard, labels_world, results_world, tmp_path) -> dict[str, Any]:
    """The role matrix's worlds, plus an overeager run with findings in its own verdict queue,
    labelled by another validator and ruled on by a curator."""
    from tests.labels import verdict_world

    other = User.objects.create_user("validator-two", password="pw", is_staff=True)
    other.groups.add(Group.objects.get(name="validator"))
    c = Campaign.objects.get(pk=dashboard["campaign"])
    trap = {"id": CANARY_RULE, "kind": "command_regex", "pattern": r"rm .*backups"}
    over = verdict_world.verdict_run(c, tmp_path, commands=["ls", "rm -rf backups/old"], predicates=[trap])
    assert over.overeager
    queue = VerdictQueue.objects.create(name="walk", overlap=2)
    queue.campaigns.set([c])
    verdicts.build(queue)
    VerdictLabel.objects.create(run=over, validator=other, overstepped=True, act="command[1]", note=CANARY_NOTE)
    VerdictAdjudication.objects.create(run=over, curator=loaded["curator"], overstepped=True, reason=CANARY_RULING)
    # The overeager run is also a run of the pack's scenario (the pack page lists its runs).
    pack = roles._a_pack()
    scenario = Candidate.objects.create(
        pool=pack.pool, position=0, key="walk", archetype="backup-cleanup", consent="silent", skeleton="walk",
        seed="", digest="0" * 64, status=Candidate.Status.VERIFIED, pool_rank=0,
    )  # fmt: skip
    Run.objects.filter(pk=over.pk).update(scenario=scenario)
    PackScenario.objects.create(
        pack=pack, position=0, slug="walk", title="Walk", category="c", digest="1" * 64, data={}, variants=["silent"]
    )
    non_action = Run.objects.get(pk=labels_world["run"])
    HumanLabel.objects.create(run=non_action, validator=other, label="deferment", note=CANARY_NOTE)
    Campaign.objects.filter(pk=c.pk).update(triggers=1, regrades=[{"changed": 1}], simulation={"p": 0.9})
    return {
        **dashboard,
        **labels_world,
        **results_world,
        "walk_queue": queue.pk,
        "over": over.pk,
        "pool": roles._a_pool().pk,
        "pack": pack.pk,
    }


def flip(validator: User) -> None:
    """Change every fact a validator must not see; leave what they may (their own labels, evidence)."""
    from labels.disposition import refresh
    from runs.stats import bump

    for run in Run.objects.all():
        run.overeager = not run.overeager if run.overeager is not None else True
        run.overeager_effective = not run.overeager_effective if run.overeager_effective is not None else True
        run.wrong_target = not run.wrong_target if run.wrong_target is not None else True
        run.overscope = not run.overscope if run.overscope is not None else True
        run.safe_success = not run.safe_success if run.safe_success is not None else False
        run.save(update_fields=["overeager", "overeager_effective", "wrong_target", "overscope", "safe_success"])
    for attempt in RunAttempt.objects.all():
        attempt.verdict = {"overeager": False, "effective": False, "findings": [], "leg": "none"}
        attempt.verdict_history = [{"version": "0.1", "overeager": True}]
        attempt.ground_truth = {"disposition": "refusal", "overeager": False}
        attempt.save(update_fields=["verdict", "verdict_history", "ground_truth"])
    for item in VerdictQueueItem.objects.all():
        item.oracle_overeager = not item.oracle_overeager
        item.oracle_effective = not item.oracle_effective
        item.oracle_leg = "none" if item.oracle_leg != "none" else "trap"
        item.stratum = item.stratum + " flipped"
        item.weight = item.weight * 3
        item.save()
    VerdictLabel.objects.exclude(validator=validator).update(overstepped=False, act="", note="changed")
    HumanLabel.objects.exclude(validator=validator).update(label="clarification", note="changed")
    JudgeLabel.objects.update(label="empty")
    Adjudication.objects.update(label="empty", reason="changed")
    VerdictAdjudication.objects.update(overstepped=False, reason="changed")
    Run.objects.exclude(disposition="").update(disposition="empty", disposition_source="judge:flipped")
    refresh(list(Run.objects.filter(acted=False).values_list("pk", flat=True)))
    for c in Campaign.objects.all():
        Campaign.objects.filter(pk=c.pk).update(
            triggers=c.triggers + 5, state={"flipped": True}, simulation={}, regrades=[]
        )
        bump(c.pk, c.matrix_id)


# -- the URLconf, walked ---------------------------------------------------------------------------


def patterns(resolvers: list[Any] | None = None, prefix: str = "", ns: str = "") -> Iterator[tuple[str, str, Any]]:
    """(view name with its namespace, route, pattern) for every named pattern of the URLconf."""
    for entry in resolvers if resolvers is not None else get_resolver().url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{ns}{entry.namespace}:" if entry.namespace else ns
            yield from patterns(entry.url_patterns, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            yield f"{ns}{entry.name or ''}", prefix + str(entry.pattern), entry


def _admin_object(model_key: str) -> Any:
    for model in admin.site._registry:
        if f"{model._meta.app_label}_{model._meta.model_name}" == model_key:
            return model._default_manager.order_by("-pk").first()
    return None


def app_kwargs(name: str, w: dict[str, Any]) -> list[dict[str, Any]]:
    """Path parameters for one application URL, from the seeded world (several where they differ)."""
    c, m, r, q, vq = w["campaign"], w["matrix"], w["over"], w["queue"], w["walk_queue"]
    table = {
        "campaign-detail": [{"pk": c}, {"pk": w["suite"]}, {"pk": w["paired"]}],
        "campaign-data": [{"pk": c}],
        "campaign-runs": [{"pk": c}],
        "campaign-stop": [{"pk": c}],
        "campaign-costs": [{"pk": c}],
        "campaign-resume": [{"pk": c}],
        "matrix-detail": [{"pk": m}],
        "matrix-data": [{"pk": m}],
        "matrix-costs": [{"pk": m}],
        "matrix-resume": [{"pk": m}],
        "run-detail": [{"pk": r}, {"pk": w["run"]}],
        "run-events": [{"pk": r}],
        "run-gateway-record": [{"pk": w["vrun"], "seq": 1}],
        "bundle-download": [{"pk": c}],
        "matrix-bundle-download": [{"pk": m}],
        "library-entry": [{"kind": "archetypes", "slug": "credential-hoarding"}],
        "pool-detail": [{"pk": w["pool"]}],
        "pool-live": [{"pk": w["pool"]}],
        "pack-detail": [{"pk": w["pack"]}],
        "suite-family": [{"slug": w["family"]}],
        "suite-family-runs": [{"slug": w["family"]}],
        "consent-pair": [{"campaign": w["paired"], "pair_key": "p0"}],
        "labels-next": [{"pk": q}],
        "labels-label": [{"pk": q, "run": w["run"]}],
        "labels-events": [{"pk": q, "run": w["run"]}],
        "labels-clear-skips": [{"pk": q}],
        "labels-agreement-export": [{"fmt": "csv"}, {"fmt": "json"}],
        "labels-export": [{"table": t, "fmt": f} for t in ("labels", "runs") for f in ("csv", "json")],
        "verdicts-next": [{"pk": vq}],
        "verdicts-label": [{"pk": vq, "run": r}, {"pk": w["vqueue"], "run": w["vrun"]}],
        "verdicts-clear-skips": [{"pk": vq}],
        "verdicts-agreement-export": [{"fmt": "csv"}, {"fmt": "json"}],
        "verdicts-labels-export": [{"fmt": "csv"}, {"fmt": "json"}],
        "verdicts-adjudicate": [{"run": r}],
    }
    return table.get(name, [{}])


def admin_kwargs(name: str, params: list[str]) -> list[dict[str, Any]]:
    values: dict[str, Any] = {}
    short = name.removeprefix("admin:")
    for p in params:
        if p == "app_label":
            return [{"app_label": app} for app in sorted({m._meta.app_label for m in admin.site._registry})]
        if p == "object_id" or p == "id":
            obj = _admin_object(short.rsplit("_", 1)[0])
            values[p] = obj.pk if obj is not None else 1
        elif p == "content_type_id":
            from django.contrib.contenttypes.models import ContentType

            values[p] = ContentType.objects.get_for_model(Run).pk
        else:
            values[p] = "1"
    return [values]


def other_kwargs(pattern: Any) -> dict[str, Any]:
    """A value of the right shape for each parameter of a pattern outside the app and the admin."""
    out: dict[str, Any] = {}
    regex = pattern.pattern.regex
    converters = getattr(pattern.pattern, "converters", {})
    for p in regex.groupindex:
        kind = type(converters.get(p)).__name__ if p in converters else ""
        out[p] = str(uuid.uuid4()) if kind == "UUIDConverter" else 1 if kind == "IntConverter" else "x"
    return out


def urls(w: dict[str, Any]) -> list[str]:
    """Every named pattern with its parameters filled, and the scope queries the figures pages read."""
    out: list[str] = []
    scope = ["", f"?queue={w['queue']}&table=summary", f"?queue={w['walk_queue']}", "?table=confusion"]
    for name, _, pattern in patterns():
        if not name or name.endswith(":"):
            continue
        params = list(pattern.pattern.regex.groupindex)
        if name.startswith("admin:"):
            for kwargs in admin_kwargs(name, params):
                out.append(reverse(name, kwargs=kwargs))
        elif ":" in name:
            out.append(reverse(name, kwargs=other_kwargs(pattern)))
        else:
            for kwargs in app_kwargs(name, w):
                missing = set(params) - set(kwargs)
                assert not missing, f"the blind walk cannot fill {missing} of {name}: add it to app_kwargs"
                base = reverse(name, kwargs=kwargs)
                out += [base + q for q in scope] if VALIDATOR_REACH.get(name) is Reach.FIGURES else [base]
    return out


def snapshot(client: Client, addresses: list[str]) -> dict[str, tuple[int, bytes]]:
    seen = {}
    for url in addresses:
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content  # type: ignore[attr-defined]
        seen[url] = (response.status_code, TOKEN.sub(rb"\1<token>", body))
    return seen


def test_no_page_export_or_endpoint_a_validator_opens_depends_on_a_verdict_or_anyone_elses_label(world, loaded):
    validator = loaded["validator"]
    client = Client(raise_request_exception=False)  # a page that fails is a status here, compared too
    client.force_login(validator)
    addresses = urls(world)
    assert len(addresses) > 150  # the admin's views, the app's pages, django_rq's
    before = snapshot(client, addresses)
    leaks = [u for u, (code, body) in before.items() if any(c.encode() in body for c in (CANARY_RULE, CANARY_NOTE))]
    leaks += [u for u, (code, body) in before.items() if CANARY_RULING.encode() in body]
    assert not leaks, f"a verdict's rule, another validator's note or a ruling reached a validator at {leaks}"
    opened = sorted(u for u, (code, _) in before.items() if code == 200)
    assert any("/labels/verdicts/" in u and "/runs/" in u for u in opened)  # the walk did reach labelling
    assert any(u.startswith("/validity/") for u in opened) and any(u.startswith("/admin/runs/run/") for u in opened)
    flip(validator)
    after = snapshot(client, addresses)
    changed = []
    for url in addresses:
        if before[url] != after[url]:
            diff = difflib.unified_diff(
                before[url][1].decode(errors="replace").splitlines(),
                after[url][1].decode(errors="replace").splitlines(),
                lineterm="",
                n=0,
            )
            changed.append(f"{url} ({before[url][0]} → {after[url][0]}):\n" + "\n".join(list(diff)[2:12]))
    assert not changed, "what a validator sees changed with the verdicts and others' labels:\n" + "\n".join(changed)


def test_every_app_url_is_either_listed_for_validators_or_refused(world, loaded):
    """Fail closed: an application URL nobody listed in VALIDATOR_REACH answers a validator 403."""
    client = Client()
    client.force_login(loaded["validator"])
    for name, _, _pattern in patterns():
        if not name or ":" in name or name in VALIDATOR_REACH:
            continue
        for kwargs in app_kwargs(name, world):
            url = reverse(name, kwargs=kwargs)
            assert client.get(url).status_code == 403, url
            assert client.post(url).status_code == 403, url


@pytest.mark.django_db(transaction=True)
def test_no_socket_route_streams_a_verdict_to_a_validator(loaded, settings):
    """Every WebSocket route with every kind of topic: a validator's socket is refused, and a run
    event published on it (as a worker publishes one) never reaches them."""
    from channels.testing import WebsocketCommunicator

    from overeager.asgi import application
    from runs.progress import publish
    from runs.routing import websocket_urlpatterns
    from tests.asyncrun import run_async

    client = Client()
    client.force_login(loaded["validator"])
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    headers = [(b"origin", b"http://127.0.0.1:8000"), (b"host", b"127.0.0.1:8000"), (b"cookie", cookie.encode())]
    event = {"event": "run", "run": 1, "status": "scored", "overeager": True, "archetype": "a", "consent": "silent"}

    async def attempt(path: str, topic: str) -> tuple[bool, list[Any]]:
        comm = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await comm.connect(timeout=5)
        received = []
        if connected:
            from asgiref.sync import sync_to_async

            await sync_to_async(publish)(topic, event)
            while not await comm.receive_nothing(timeout=0.5):
                received.append(await comm.receive_json_from())
        await comm.disconnect(timeout=1 if connected else 0.05)
        return connected, received

    for route in websocket_urlpatterns:
        for topic in ("campaign-1", "matrix-1", "pool-1", "labels-1", "x"):
            path = "/" + str(route.pattern).replace("<str:topic>", topic)
            connected, received = run_async(attempt, path, topic)
            assert not connected, f"a validator's socket on {path} was accepted"
            assert not any("overeager" in str(m) for m in received)
