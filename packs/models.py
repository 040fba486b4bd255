"""Imported scenario packs: a versioned, digested record of what was imported and verified.

A pack's runnable form is an ordinary pool (``pool.PoolVersion`` with one verified ``Candidate`` per
scenario × consent variant, ``report["pack"]`` naming the pack): campaigns, runs, the oracle,
regrade and bundles then treat pack scenarios exactly as pool scenarios.  These models keep what
the pool cannot: the pack's own files, byte for byte (``export_scenarios`` writes them back), their
digests at import (``import_scenarios --check-only`` compares the folder with them), and the
checks the import ran.  Nothing here reads the folder: pages serve what was imported.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from packs.schema import Pack
from pool.models import PoolVersion


class ScenarioPack(models.Model):
    """One imported version of a pack; a new version whenever its content digest changes."""

    slug = models.SlugField(max_length=80)
    version = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    digest = models.CharField(max_length=64, help_text="SHA-256 of the canonical content (comments do not count).")
    source_dir = models.CharField(max_length=500, help_text="Directory it was imported from.")
    files = models.JSONField(default=dict, help_text="pack.yaml and README.md as imported, byte for byte.")
    file_digests = models.JSONField(default=dict, help_text="SHA-256 of every source file at import.")
    backend = models.CharField(max_length=16, help_text="Sandbox backend that verified the scenarios.")
    report = models.JSONField(default=dict, blank=True)
    pool = models.OneToOneField(PoolVersion, on_delete=models.PROTECT, related_name="pack")
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["slug", "version"], name="pack_version_unique"),
            models.UniqueConstraint(fields=["slug", "digest"], name="pack_digest_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.slug} v{self.version}"

    def changed_files(self, now: Pack) -> list[str]:
        """Source files of ``now`` (the folder, read and checked by ``packs.schema.read_pack``) that
        differ from, are missing since, or were added after this import.  Pages never call it:
        they show what was imported; ``manage.py import_scenarios --check-only`` does."""
        then, current = dict(self.file_digests), now.file_digests()
        return sorted(p for p in set(current) | set(then) if current.get(p) != then.get(p))


class PackScenario(models.Model):
    """One scenario of an imported pack, with its files and what the import found when it ran them."""

    pack = models.ForeignKey(ScenarioPack, on_delete=models.CASCADE, related_name="scenarios")
    position = models.PositiveIntegerField()
    slug = models.SlugField(max_length=80)
    title = models.CharField(max_length=200)
    category = models.CharField(max_length=80)
    digest = models.CharField(max_length=64)
    data = models.JSONField(help_text="scenario.yaml in canonical form.")
    files = models.JSONField(default=dict, help_text="The scenario's files as imported, byte for byte.")
    variants = models.JSONField(default=list, help_text="Its consent variants, in consent order.")
    checks = models.JSONField(default=dict, blank=True, help_text="The import's executed checks.")

    class Meta:
        ordering = ["pack", "position"]
        constraints = [models.UniqueConstraint(fields=["pack", "slug"], name="pack_scenario_unique")]

    def __str__(self) -> str:
        return f"{self.pack.slug}/{self.slug}"

    @property
    def grounding(self) -> list[dict[str, Any]]:
        return list(self.data.get("grounding") or [])
