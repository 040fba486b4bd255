"""The blindness rule, item by item (issue 33, items 1–4): pages, sockets, figures and exports."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from labels import verdicts
from labels.models import VerdictLabel, VerdictQueue
from overeager.blind import withhold
from tests.labels import verdict_world, world

pytestmark = pytest.mark.django_db


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def others(role_users) -> dict[str, User]:
    other = User.objects.create_user("validator-two", password="pw", is_staff=True)
    other.groups.add(Group.objects.get(name="validator"))
    return {**role_users, "other": other}


# -- item 1: the pack page ------------------------------------------------------------------------


def test_a_validator_cannot_open_a_pack_page_that_marks_overeager_runs(others, tmp_path):
    from pool.models import Candidate
    from runs.models import Run
    from tests.overeager.test_roles import _a_pack

    pack = _a_pack()
    c = world.campaign("pack-runs", kind="pack")
    run = verdict_world.verdict_run(c, tmp_path, commands=["rm -rf backups/a"])
    candidate = Candidate.objects.create(
        pool=pack.pool, position=0, key="k", archetype="backup-cleanup", consent="silent", skeleton="s", seed="",
        digest="0" * 64, status=Candidate.Status.VERIFIED, pool_rank=0,
    )  # fmt: skip
    Run.objects.filter(pk=run.pk).update(scenario=candidate)
    from packs.models import PackScenario

    PackScenario.objects.create(
        pack=pack, position=0, slug="s", title="S", category="c", digest="1" * 64, data={}, variants=["silent"]
    )
    url = reverse("pack-detail", args=[pack.pk])
    assert f"{run.pk}!" in _client(others["viewer"]).get(url).content.decode()
    response = _client(others["validator"]).get(url)
    assert response.status_code == 403 and f"{run.pk}!" not in response.content.decode()


# -- item 2: the consent pair page ----------------------------------------------------------------


def test_a_validator_cannot_open_a_consent_pair_with_its_verdicts(others):
    from tests import factories

    paired = factories.paired_campaign("blind-pairs")
    factories.pairs(paired, {("explicit-deny", "user-prompt"): (1, 0, 0, 0)})
    url = reverse("consent-pair", args=[paired.pk, "p0"])
    assert _client(others["viewer"]).get(url).status_code == 200
    response = _client(others["validator"]).get(url)
    assert response.status_code == 403 and response.content.startswith(b"Validator accounts label blind")


# -- item 3: the campaign socket ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_run_events_reach_a_viewers_socket_and_never_a_validators(others, settings):
    from asgiref.sync import sync_to_async
    from channels.testing import WebsocketCommunicator

    from overeager.asgi import application
    from runs.progress import publish
    from tests.asyncrun import run_async

    def headers(user: User) -> list[tuple[bytes, bytes]]:
        client = _client(user)
        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        return [(b"origin", b"http://127.0.0.1:8000"), (b"host", b"127.0.0.1:8000"), (b"cookie", cookie.encode())]

    async def follow(user: User) -> tuple[bool, Any]:
        comm = WebsocketCommunicator(
            application, "/ws/progress/campaign-42/", headers=await sync_to_async(headers)(user)
        )
        connected, code = await comm.connect(timeout=5)
        if not connected:
            return False, code
        await sync_to_async(publish)("campaign-42", {"event": "run", "run": 7, "overeager": True})
        message = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return True, message

    connected, message = run_async(follow, others["viewer"])
    assert connected and message["data"]["overeager"] is True
    assert run_async(follow, others["validator"]) == (False, 4403)


# -- item 4: agreement and validity figures -------------------------------------------------------


@pytest.fixture
def audited(others, tmp_path, settings) -> dict[str, Any]:
    """Four audited runs (three trap, one clean) in an open verdict queue, labelled by another validator."""
    settings.BLIND_MIN_CELL = 3
    c = world.campaign("audited", kind="snare")
    runs = [verdict_world.verdict_run(c, tmp_path, commands=["ls", f"rm -rf backups/{i}"]) for i in range(3)]
    runs.append(verdict_world.verdict_run(c, tmp_path, commands=["ls"], archetype="other"))
    queue = VerdictQueue.objects.create(name="audited", overlap=1)
    queue.campaigns.set([c])
    verdicts.build(queue)
    for run in runs:
        VerdictLabel.objects.create(run=run, validator=others["other"], overstepped=bool(run.overeager), note="theirs")
    return {"queue": queue, "runs": runs, **others}


def _figures(client: Client, name: str, query: str = "") -> dict[str, Any]:
    response = client.get(reverse(name) + query)
    assert response.status_code == 200
    return response.json()


def test_one_labelled_run_in_a_queue_shows_a_validator_nothing_of_its_verdict_or_label(audited, tmp_path):
    """The issue's n = 1: one more queue with one run the other validator labelled."""
    c = world.campaign("single", kind="snare")
    run = verdict_world.verdict_run(c, tmp_path, commands=["rm -rf backups/x"])
    single = VerdictQueue.objects.create(name="single", overlap=1)
    single.campaigns.set([c])
    verdicts.build(single)
    VerdictLabel.objects.create(run=run, validator=audited["other"], overstepped=True)
    single.active = False
    single.save(update_fields=["active"])
    validator = _client(audited["validator"])
    query = f"?queue={single.pk}"
    curator = _figures(_client(audited["curator"]), "verdicts-agreement-data", query)
    assert curator["overall"]["n"] == 1 and curator["by"]["leg"]["groups"] == {
        "trap": curator["by"]["leg"]["groups"]["trap"]
    }
    for name in ("verdicts-agreement-data", "validity-data"):
        data = _figures(validator, name, query if name != "validity-data" else "")
        assert data.get("withheld") is True or data["overall"].get("withheld"), name
        assert "trap" not in str(data) and "by" not in data
    page = validator.get(reverse("verdicts-agreement") + query).content.decode()
    assert "at least 3 runs" in page and "trap" not in page.split("</form>", 1)[1]
    for fmt in ("csv", "json"):
        body = validator.get(reverse("verdicts-agreement-export", args=[fmt]) + query).content.decode()
        assert "trap" not in body and ("withheld" in body)


def test_a_validator_sees_no_figures_over_runs_an_open_queue_holds(audited):
    """Labelling or revising a label in an open queue would move the figures: none rest on such runs."""
    validator = _client(audited["validator"])
    data = _figures(validator, "verdicts-agreement-data")
    assert data.get("withheld") is True
    assert _figures(_client(audited["viewer"]), "verdicts-agreement-data")["overall"]["n"] == 4


def test_settled_figures_show_cells_of_at_least_the_minimum_and_withhold_the_rest(audited):
    queue = audited["queue"]
    queue.active = False
    queue.save(update_fields=["active"])
    validator = _client(audited["validator"])
    data = _figures(validator, "verdicts-agreement-data")
    assert data["overall"]["n"] == 4 and data["overall"]["raw"]["value"] == 1.0
    assert "matrix" not in data["overall"] and "confusion_cases" not in data
    legs = data["by"]["leg"]["groups"]
    assert legs["trap"]["n"] == 3 and legs["none"] == {"withheld": True}
    assert data["blind"]["min_cell"] == 3
    assert data["validator_pairs"] == []
    rows = list(
        csv.reader(io.StringIO(validator.get(reverse("verdicts-agreement-export", args=["csv"])).content.decode()))
    )
    none_row = next(r for r in rows if r[:2] == ["leg", "none"])
    assert none_row[2] == "withheld" and set(none_row[3:]) == {""}
    page = validator.get(reverse("validity")).content.decode()
    assert "each resting on at least 3 runs" in page
    # Curators and viewers see every figure, the confusion matrix and the cases.
    full = _figures(_client(audited["viewer"]), "verdicts-agreement-data")
    assert full["by"]["leg"]["groups"]["none"]["n"] == 1 and "matrix" in full["overall"]


def test_the_non_action_agreement_export_applies_the_rule_the_page_applies(others, settings):
    """The issue's export that skipped the blind check: the same figures, withheld the same way."""
    from labels.models import HumanLabel

    settings.BLIND_MIN_CELL = 3
    run = world.non_action_run(world.campaign("na"))
    world.judge_label(run, "refusal")
    HumanLabel.objects.create(run=run, validator=others["other"], label="deferment", note="their note")
    validator = _client(others["validator"])
    for url in (
        reverse("labels-agreement-data"),
        reverse("labels-agreement-export", args=["json"]),
        reverse("labels-agreement-export", args=["csv"]) + "?table=summary",
        reverse("labels-agreement-export", args=["csv"]) + "?table=validators",
        reverse("labels-agreement-export", args=["csv"]) + "?table=confusion",
    ):
        body = validator.get(url).content.decode()
        assert "deferment" not in body and "refusal" not in body.replace("refusal,", ""), url
    assert (
        "deferment" in _client(others["viewer"]).get(reverse("labels-agreement-export", args=["json"])).content.decode()
    )


def test_withhold_keeps_names_and_drops_small_blocks_and_confusion_matrices():
    data = {
        "compared": 12,
        "overall": {"n": 12, "raw": {"value": 0.5}, "matrix": {"counts": [[1, 2], [3, 4]]}},
        "by": {"leg": {"title": "leg", "groups": {"trap": {"n": 2, "raw": {"value": 1.0}}, "none": {"n": 10}}}},
        "validator_pairs": [{"validator_a": "a", "validator_b": "b", "overlap": 1, "kappa": 1.0}],
        "confusion": {"counts": [[5]]},
    }
    shown = withhold(data, 10)
    assert shown == {
        "compared": 12,
        "overall": {"n": 12, "raw": {"value": 0.5}},
        "by": {"leg": {"title": "leg", "groups": {"trap": {"withheld": True}, "none": {"n": 10}}}},
        "validator_pairs": [{"validator_a": "a", "validator_b": "b", "withheld": True}],
    }
    assert withhold({"compared": 3, "overall": {"n": 3}, "reference_rule": "r"}, 10) == {
        "reference_rule": "r",
        "withheld": True,
    }


def test_a_figures_page_that_skips_the_figures_rule_is_refused(others, monkeypatch):
    """Fail closed: a page listed as figures must pass them through blind.figures, or 403."""
    from overeager import blind

    monkeypatch.setitem(blind.VALIDATOR_REACH, "library-overview", blind.Reach.FIGURES)
    assert _client(others["validator"]).get(reverse("library-overview")).status_code == 403
    assert _client(others["viewer"]).get(reverse("library-overview")).status_code == 200
