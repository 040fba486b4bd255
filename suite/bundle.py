"""The UnderSpecBench suite the campaigns ran: its version records and, when available, its families.

The same contract as the SNARE library (``library.py``): the database keeps only each suite
state's digest (``SuiteVersion``), so the families travel as their canonical YAML
(``suite.loading.export_suite``) only while the current suite is the state a campaign recorded.
The 32 prompts of a family are derived from it (``TaskFamily.sync_prompts``), so loading the
families recreates exactly the prompts runs refer to (by family slug and S/B/R, checked by digest).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.apps import apps

from overeager.content import ContentVersion, LoadReport
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, register
from runs.bundle.sections.content import ContentSection
from runs.models import Campaign

FOLDER = "suite"
STATE = f"{FOLDER}/state.json"
VERSIONS = f"{FOLDER}/versions.jsonl"
FAMILIES = f"{FOLDER}/families"


def _version_codec() -> Codec:
    from suite.models import SuiteVersion

    return Codec(SuiteVersion)


class SuiteSection(ContentSection):
    name = "suite"
    order = 50
    files = (STATE, VERSIONS, f"{FAMILIES}/<slug>.yaml")
    folder = FOLDER
    entries_folder = FAMILIES
    label = "UnderSpecBench suite"
    entries_label = "task families"
    state_key = "families"

    def available(self) -> bool:
        return apps.is_installed("suite")

    def version_model(self) -> type[ContentVersion]:
        from suite.models import SuiteVersion

        return SuiteVersion

    def wanted(self, scope: ExportScope) -> set[str]:
        return set(Campaign.objects.filter(pk__in=scope.campaign_ids).values_list("suite_digest", flat=True))

    def entry_digests(self) -> list[str]:
        from suite.models import TaskFamily

        return [f"{s}:{d}" for s, d in TaskFamily.objects.order_by("slug").values_list("slug", "digest")]

    def is_empty(self) -> bool:
        from suite.models import TaskFamily

        return not TaskFamily.objects.exists()

    def exporter(self) -> Callable[[Path], list[Path]]:
        from suite.loading import export_suite

        return export_suite

    def loader(self) -> Callable[..., LoadReport]:
        from suite.loading import load_suite

        return load_suite


register(SuiteSection())
