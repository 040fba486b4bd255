"""The curators' "Download bundle" endpoint: a streamed .tar.gz that verifies and imports; nobody else gets it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from django.contrib.auth.models import Group, User
from django.http import StreamingHttpResponse
from django.test import Client
from django.urls import reverse

from harness.bundle.verify import verify
from overeager.roles import CURATOR, VIEWER, sync_groups
from runs.bundle.importer import import_bundle
from runs.models import Campaign, Matrix
from tests.runs.bundle import synthetic
from tests.runs.bundle.conftest import empty_install
from tests.runs.bundle.figures import campaign_figures

pytestmark = pytest.mark.django_db


def _client(role: str | None) -> Client:
    client = Client()
    if role is None:
        return client
    sync_groups()
    user = User.objects.create_user(f"{role}-user", password="x", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return client


@pytest.fixture
def finished() -> Campaign:
    return synthetic.campaign(12, name="download me/now", shape=synthetic.Shape(events=(3, 8), gateway_records=(1, 2)))


def test_a_curator_downloads_a_streamed_bundle_that_verifies_and_imports(finished, tmp_path, settings: Any):
    figures = campaign_figures(finished)
    response = _client(CURATOR).get(reverse("bundle-download", args=[finished.pk]))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/gzip"
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="campaign-download-me-now-{str(finished.uuid)[:8]}.bundle.tar.gz"'
    )
    chunks = list(cast(StreamingHttpResponse, response).streaming_content)
    assert len(chunks) >= 2  # sent as it is compressed (a megabyte of members at a time), not built first
    archive = tmp_path / "download.tar.gz"
    archive.write_bytes(b"".join(chunks))
    report = verify(archive)
    assert report.ok, [str(p) for p in report.problems]
    assert report.runs == 12
    uuid = finished.uuid
    empty_install(settings, tmp_path)
    import_bundle(archive)
    assert campaign_figures(Campaign.objects.get(uuid=uuid)) == figures


def test_viewers_and_anonymous_users_cannot_download(finished):
    url = reverse("bundle-download", args=[finished.pk])
    assert _client(VIEWER).get(url).status_code == 403
    assert _client(None).get(url).status_code == 302


def test_a_running_campaign_is_refused_with_a_reason(finished):
    Campaign.objects.filter(pk=finished.pk).update(status=Campaign.Status.RUNNING)
    response = _client(CURATOR).get(reverse("bundle-download", args=[finished.pk]))
    assert response.status_code == 409 and b"wait for it to finish" in response.content


def test_a_matrix_downloads_with_all_its_campaigns(tmp_path):
    pool = synthetic.pool(synthetic.library())
    matrix = Matrix.objects.create(name="dl-matrix", framework_slugs=["sim-alpha"], model_slugs=["sim-m1", "sim-m2"])
    for model in ("sim-m1", "sim-m2"):
        synthetic.campaign(
            4, name=f"dl-{model}", system=synthetic.sut("sim-alpha", model), matrix=matrix, scenarios=pool,
            shape=synthetic.Shape(events=(2, 4), gateway_records=(1, 1)),
        )  # fmt: skip
    response = _client(CURATOR).get(reverse("matrix-bundle-download", args=[matrix.pk]))
    assert response.status_code == 200
    archive = Path(tmp_path / "m.tar.gz")
    archive.write_bytes(b"".join(cast(StreamingHttpResponse, response).streaming_content))
    report = verify(archive)
    assert report.ok and report.runs == 8
    assert [c["name"] for c in report.header["scope"]["campaigns"]] == ["dl-sim-m1", "dl-sim-m2"]


def test_a_client_that_goes_away_stops_the_export(finished):
    import threading

    from runs.bundle.exporter import stream_archive
    from runs.bundle.sections.base import ExportScope

    body = stream_archive(ExportScope(campaign_ids=[finished.pk]))
    assert next(body)[:2] == b"\x1f\x8b"  # gzip's magic: bytes went out before the export finished
    body.close()  # what Django does when the client disconnects
    assert not [t for t in threading.enumerate() if t.name == "bundle-gzip"]
