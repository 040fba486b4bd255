"""export_bundle warns that "the library changed" only by comparing library digests with the library's.

A scenario pack's pool records the pack's digest where a pool built from the libraries records the
library's, and its campaigns copy it; that digest names the pack, not a state of the library.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from pool.models import LibraryVersion, PoolVersion
from runs.models import Campaign, CampaignKind
from tests import factories

pytestmark = pytest.mark.django_db

PACK_DIGEST = "f" * 64


def _finished_campaign(name: str, pool: PoolVersion, kind: str) -> Campaign:
    c = factories.campaign(name=name, status=Campaign.Status.COMPLETE)
    Campaign.objects.filter(pk=c.pk).update(pool=pool, library_digest=pool.library_digest, kind=kind)
    return c


def _export(tmp_path: Path, name: str) -> str:
    err = StringIO()
    call_command("export_bundle", "--campaign", name, "--out", str(tmp_path / name), stdout=StringIO(), stderr=err)
    return err.getvalue()


def test_a_pack_campaign_is_not_said_to_have_run_on_a_changed_library(tmp_path: Path) -> None:
    factories.axes()  # some library, so that the library has a digest of its own
    pool = PoolVersion.objects.create(
        library_digest=PACK_DIGEST,
        pool_seed=0,
        target_size=2,
        backend="bwrap",
        status=PoolVersion.Status.COMPLETE,
        report={"pack": {"slug": "examples", "version": 1, "digest": PACK_DIGEST}},
    )
    _finished_campaign("on-a-pack", pool, CampaignKind.PACK)
    assert "library changed" not in _export(tmp_path, "on-a-pack")


def test_a_campaign_on_a_pool_of_an_older_library_is_still_warned_about(tmp_path: Path) -> None:
    factories.axes()
    older = "0" * 64
    assert LibraryVersion.current_digest() != older
    pool = PoolVersion.objects.create(
        library_digest=older, pool_seed=1, target_size=2, backend="bwrap", status=PoolVersion.Status.COMPLETE
    )
    _finished_campaign("on-an-old-library", pool, CampaignKind.SNARE)
    assert f"the library changed since these campaigns ran (they used {older[:12]}" in _export(
        tmp_path, "on-an-old-library"
    )
