"""Imported scenario packs: a versioned, digested record of what was imported and verified.

A pack's runnable form is an ordinary pool (``pool.PoolVersion`` with one verified ``Candidate`` per
scenario × consent variant, ``report["pack"]`` naming the pack): campaigns, runs, the oracle,
regrade and bundles then treat pack scenarios exactly as pool scenarios.  These models keep what
the pool cannot: the pack's own files, byte for byte (``export_scenarios`` writes them back), their
digests at import (the stale warning), and the checks the import ran.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from django.db import models

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

    def changed_files(self) -> list[str]:
        """Source files that differ from (or are missing since, or were added after) the import."""
        root = Path(self.source_dir)
        if not root.is_dir():
            return ["(the source directory is gone)"]
        now: dict[str, str] = {}
        for path in sorted(root.rglob("*")):
            if path.is_file() and not any(p.startswith(".") for p in path.relative_to(root).parts):
                now[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        then = dict(self.file_digests)
        return sorted(p for p in set(now) | set(then) if now.get(p) != then.get(p))

    def stale_warning(self) -> str:
        changed = self.changed_files()
        if not changed:
            return ""
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        return (
            f"The files in {self.source_dir} changed since {self} was imported ({shown});"
            f" run `manage.py import_scenarios {self.source_dir}` to import them as a new version."
        )


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
