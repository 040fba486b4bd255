"""Download a finished campaign's (or matrix's) audit bundle as a streamed ``.tar.gz`` (curators only).

The archive is produced member by member while it is sent (``runs.bundle.exporter.stream_archive``),
so a large campaign starts downloading at once and the server never holds the bundle.  The root
hash is the archive's ``ROOT`` member, not a response header: a streamed response cannot carry a
header computed at its end.  ``manage.py verify_bundle`` on the download prints it.
"""

from __future__ import annotations

import re
from typing import cast

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from harness.bundle.format import FORMAT_VERSION
from overeager.roles import CURATOR, role_required
from runs.bundle.exporter import ACTIVE, stream_archive
from runs.bundle.sections.base import ExportScope
from runs.models import Campaign, Matrix


def _filename(kind: str, name: str, uuid: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:60] or kind
    return f"{kind}-{slug}-{uuid[:8]}.bundle.tar.gz"


def _stream(scope: ExportScope, filename: str) -> HttpResponse:
    response = StreamingHttpResponse(stream_archive(scope), content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Bundle-Format"] = FORMAT_VERSION
    response["Cache-Control"] = "no-store"
    # role_required is typed for HttpResponse views; Django's handler serves any HttpResponseBase.
    return cast(HttpResponse, response)


def _still_running(what: str, name: str, status: str) -> HttpResponse:
    return HttpResponse(
        f"{what} {name!r} is {status}: a bundle is a fixed record — wait for it to finish or stop it first.\n",
        status=409,
        content_type="text/plain; charset=utf-8",
    )


@role_required(CURATOR)
@require_GET
def campaign_bundle(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.only("pk", "name", "uuid", "status"), pk=pk)
    if campaign.status in ACTIVE:
        return _still_running("campaign", campaign.name, campaign.status)
    return _stream(ExportScope(campaign_ids=[campaign.pk]), _filename("campaign", campaign.name, str(campaign.uuid)))


@role_required(CURATOR)
@require_GET
def matrix_bundle(request: HttpRequest, pk: int) -> HttpResponse:
    matrix = get_object_or_404(Matrix, pk=pk)
    campaigns = list(matrix.campaigns.order_by("pk").values_list("pk", "status"))
    if not campaigns:
        return HttpResponse("this matrix has no campaigns yet\n", status=409, content_type="text/plain; charset=utf-8")
    active = [status for _, status in campaigns if status in ACTIVE]
    if active:
        return _still_running("matrix", matrix.name, f"still running ({len(active)} campaigns active)")
    scope = ExportScope(campaign_ids=[pk for pk, _ in campaigns], matrix_id=matrix.pk)
    return _stream(scope, _filename("matrix", matrix.name, str(matrix.uuid)))
