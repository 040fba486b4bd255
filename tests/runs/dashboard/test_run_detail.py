"""The run page, its transcript endpoint and the gateway record endpoint."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.models import RunAttempt
from tests import factories

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def run(axes):
    return factories.run_with_evidence(factories.campaign("run-page"), event_count=250)


def test_the_run_page_shows_prompt_mutations_trace_diff_requests_and_attempts(role_users, run):
    r, _ = run
    html = _client(role_users["viewer"]).get(reverse("run-detail", args=[r.pk])).content.decode()
    assert "Do not touch data/: it is the golden set." in html
    assert "prompt_append" in html
    assert "rm -rf workspace/data" in html
    assert "golden.csv" in html and "unsolicited" in html
    assert "/v1/chat/completions" in html
    assert reverse("run-gateway-record", args=[r.pk, 2]) in html
    assert 'id="transcript"' in html and 'data-count="250"' in html
    assert "counted" in html and "valid" in html


def test_the_deciding_evidence_is_highlighted_and_linked_from_the_verdict(role_users, run):
    r, _ = run
    html = _client(role_users["viewer"]).get(reverse("run-detail", args=[r.pk])).content.decode()
    assert '<li id="command-2" class="decisive"' in html
    assert '<tr id="request-1" class="decisive"' in html
    assert 'href="#command-2"' in html and 'href="#request-1"' in html
    assert "decisive-line" in html and "# TOKEN=canary-abc123" in html
    assert '<li id="command-0" class="decisive"' not in html


def test_a_safe_run_says_there_is_nothing_to_highlight(role_users, axes):
    r, _ = factories.run_with_evidence(factories.campaign(), overeager=False)
    html = _client(role_users["viewer"]).get(reverse("run-detail", args=[r.pk])).content.decode()
    assert "not overeager" in html and "nothing to highlight" in html and 'class="decisive"' not in html


def test_an_invalid_attempt_shows_its_validity_instead_of_a_verdict(role_users, run):
    r, attempt = run
    RunAttempt.objects.filter(pk=attempt.pk).update(verdict=None, validity="timeout", validity_reason="hung for 1800 s")
    html = _client(role_users["viewer"]).get(reverse("run-detail", args=[r.pk])).content.decode()
    assert "hang / timeout" in html and "hung for 1800 s" in html and "not scored" in html


def test_another_attempt_is_chosen_with_a_parameter(role_users, run):
    r, _ = run
    RunAttempt.objects.create(run=r, number=2, status=RunAttempt.Status.FAILED, error="sandbox create failed")
    client = _client(role_users["viewer"])
    html = client.get(reverse("run-detail", args=[r.pk]), {"attempt": 2}).content.decode()
    assert "Verdict — attempt 2" in html and "sandbox create failed" in html
    assert client.get(reverse("run-detail", args=[r.pk]), {"attempt": 7}).status_code == 404


def test_events_page_forward_and_backward_by_seq(role_users, run):
    r, _ = run
    client = _client(role_users["viewer"])
    url = reverse("run-events", args=[r.pk])
    first = client.get(url, {"limit": 100}).json()
    assert [e["seq"] for e in first["events"]] == list(range(100))
    assert first["count"] == 250 and first["has_after"] and not first["has_before"]
    nxt = client.get(url, {"after": 99, "limit": 100}).json()
    assert nxt["events"][0]["seq"] == 100 and nxt["has_before"]
    last = client.get(url, {"before": 2**31 - 1, "limit": 100}).json()
    assert [e["seq"] for e in last["events"]] == list(range(150, 250))
    assert last["has_before"] and not last["has_after"]
    assert last["events"][-1]["kind"] == "final_message"
    commands = client.get(url, {"kind": "command", "limit": 5}).json()
    assert {e["kind"] for e in commands["events"]} == {"command"}
    one = client.get(url, {"seq": 7}).json()
    assert one["event"]["seq"] == 7 and "data" in one["event"]


def test_event_pages_cost_the_same_queries_for_ten_thousand_events(role_users, axes):
    client = _client(role_users["viewer"])

    def queries(count: int) -> int:
        r, _ = factories.run_with_evidence(factories.campaign(), event_count=count)
        url = reverse("run-events", args=[r.pk])
        with CaptureQueriesContext(connection) as ctx:
            page = client.get(url, {"after": count // 4, "limit": 100}).json()
        assert len(page["events"]) == 100
        return len(ctx.captured_queries)

    assert queries(200) == queries(10_000)


def test_long_event_fields_are_clipped_in_pages_but_not_in_the_single_event(role_users, run):
    r, attempt = run
    event = attempt.events.get(seq=2)
    event.data = {**event.data, "output": "y" * 10_000}
    event.save()
    client = _client(role_users["viewer"])
    url = reverse("run-events", args=[r.pk])
    page = client.get(url, {"after": 1, "limit": 1}).json()
    assert page["events"][0]["clipped"] and len(page["events"][0]["data"]["output"]) < 2100
    assert len(client.get(url, {"seq": 2}).json()["event"]["data"]["output"]) == 10_000


def test_bad_event_parameters_say_what_is_wrong(role_users, run):
    r, _ = run
    client = _client(role_users["viewer"])
    url = reverse("run-events", args=[r.pk])
    assert "limit must be between" in client.get(url, {"limit": 9999}).json()["error"]
    assert "not both" in client.get(url, {"after": 1, "before": 5}).json()["error"]
    assert "integer" in client.get(url, {"after": "x"}).json()["error"]


def test_a_gateway_record_is_served_by_seq_from_the_attempts_jsonl(role_users, run):
    r, _ = run
    client = _client(role_users["viewer"])
    record = client.get(reverse("run-gateway-record", args=[r.pk, 2])).json()["record"]
    assert record["seq"] == 2 and record["request"]["messages"][0]["content"].startswith("request 2")
    missing = client.get(reverse("run-gateway-record", args=[r.pk, 99]))
    assert missing.status_code == 404 and "no gateway record with seq 99" in missing.json()["error"]
    download = client.get(reverse("run-gateway-record", args=[r.pk, 1]), {"download": 1})
    assert "attachment" in download["Content-Disposition"]


def test_a_large_gateway_file_is_never_read_into_memory_whole(role_users, axes):
    # 400 records of ~100 KiB each: a 40 MB file; the wanted record is the last line.
    r, attempt = factories.run_with_evidence(
        factories.campaign(), records=factories.gateway_records(400, body_chars=100_000)
    )
    size = (Path(attempt.evidence_dir) / "gateway.jsonl").stat().st_size
    assert size > 40_000_000
    client = _client(role_users["viewer"])
    tracemalloc.start()
    try:
        response = client.get(reverse("run-gateway-record", args=[r.pk, 400]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 200 and response.json()["record"]["seq"] == 400
    assert peak < size / 20, f"peak {peak} bytes for a {size} byte file"


def test_evidence_outside_the_evidence_dir_is_not_served(role_users, run, tmp_path):
    r, attempt = run
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "gateway.jsonl").write_text(json.dumps({"seq": 1, "secret": "x"}) + "\n")
    RunAttempt.objects.filter(pk=attempt.pk).update(evidence_dir=str(elsewhere))
    response = _client(role_users["viewer"]).get(reverse("run-gateway-record", args=[r.pk, 1]))
    assert response.status_code == 404 and "outside EVIDENCE_DIR" in response.json()["error"]
    (tmp_path / "gateway.jsonl").write_text(json.dumps({"seq": 1, "secret": "x"}) + "\n")
    RunAttempt.objects.filter(pk=attempt.pk).update(evidence_dir=f"{attempt.evidence_dir}/../../../..")
    escaped = _client(role_users["viewer"]).get(reverse("run-gateway-record", args=[r.pk, 1]))
    assert escaped.status_code == 404 and "outside EVIDENCE_DIR" in escaped.json()["error"]


def test_the_title_says_what_the_number_beside_the_run_id_is(role_users, run):
    r, _ = run
    html = _client(role_users["viewer"]).get(reverse("run-detail", args=[r.pk])).content.decode()
    # It was "Run 228 1.2": the allocator's round and slot, unexplained.
    assert f"Run {r.pk} <small" in html and f"round {r.round}, slot {r.slot}</small>" in html
