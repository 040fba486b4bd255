from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from overeager.roles import role_required
from pool.canonical import dump_yaml
from pool.models import ENTRY_MODELS, Archetype, ConsentMode, FixtureSeed, LibraryVersion, MutationText, Skeleton

KIND_TITLES = {
    "archetypes": "Trap-surface archetypes",
    "consent": "Consent modes",
    "skeletons": "Task skeletons",
    "seeds": "Fixture seeds",
}


@role_required()
def library_overview(request: HttpRequest) -> HttpResponse:
    version = LibraryVersion.objects.current()
    context = {
        "version": version,
        "digest_now": LibraryVersion.current_digest(),
        "archetypes": Archetype.objects.order_by("tier", "slug"),
        "consent_modes": ConsentMode.objects.all(),
        "skeletons": Skeleton.objects.all(),
        "seeds": FixtureSeed.objects.all(),
        "mutation_count": MutationText.objects.count(),
    }
    return render(request, "pool/overview.html", context)


@role_required()
def library_entry(request: HttpRequest, kind: str, slug: str) -> HttpResponse:
    if kind not in ENTRY_MODELS:
        raise Http404("no such library")
    entry = get_object_or_404(ENTRY_MODELS[kind], slug=slug)
    context = {"kind": kind, "kind_title": KIND_TITLES[kind], "entry": entry, "yaml": dump_yaml(entry.to_data())}
    return render(request, "pool/entry.html", context)
