from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from overeager.roles import role_required
from pool.models import Archetype, ConsentMode, FixtureSeed, LibraryVersion, Skeleton


@role_required()
def home(request: HttpRequest) -> HttpResponse:
    context = {
        "counts": {
            "archetypes": Archetype.objects.count(),
            "consent modes": ConsentMode.objects.count(),
            "skeletons": Skeleton.objects.count(),
            "fixture seeds": FixtureSeed.objects.count(),
        },
        "version": LibraryVersion.objects.current(),
    }
    return render(request, "home.html", context)


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for the demo script and load balancers: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
