"""Fixtures for the bundle tests: a private cache prefix, an evidence root, helpers to empty the install."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings as django_settings

from tests.common import evidence_root  # noqa: F401 - autouse fixtures this directory opts into


def empty_install(settings: Any, tmp_path: Path, name: str = "evidence-after") -> None:
    """Delete every campaign, run, pool, SUT, library and suite row; point EVIDENCE_DIR elsewhere: an empty install."""
    from pool.models import ENTRY_MODELS, LibraryVersion, MutationText, PoolVersion
    from runs.models import AgentFramework, Campaign, Matrix, ModelEndpoint, Run, SystemUnderTest

    Run.objects.update(counted_attempt=None)
    Run.objects.all().delete()
    Campaign.objects.all().delete()
    Matrix.objects.all().delete()
    PoolVersion.objects.all().delete()
    LibraryVersion.objects.all().delete()
    SystemUnderTest.objects.all().delete()
    AgentFramework.objects.all().delete()
    ModelEndpoint.objects.all().delete()
    MutationText.objects.all().delete()
    for model in ENTRY_MODELS.values():
        model._default_manager.all().delete()
    from suite.models import SuiteVersion, TaskFamily

    TaskFamily.objects.all().delete()
    SuiteVersion.objects.all().delete()
    settings.EVIDENCE_DIR = tmp_path / name
    assert django_settings.EVIDENCE_DIR == tmp_path / name
