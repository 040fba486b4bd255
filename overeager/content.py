"""What the content apps (SNARE libraries in ``pool``, UnderSpecBench families in ``suite``, scenario
packs) share on the Django side: the version record of a whole library's state and the load report.

The Django-free half — strict YAML, fields and records, errors, canonical form and digests — is
``content.schema`` and ``content.canonical``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, cast

from django.db import models, transaction


@dataclass
class LoadReport:
    """What one load did: entries created, updated, deleted, the resulting digest and version."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    digest: str = ""
    new_version: bool = False
    seconds: float = 0.0
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deleted)


class ContentVersionQuerySet(models.QuerySet[Any]):
    def current(self) -> Any:
        return self.order_by("-created_at", "-id").first()


class ContentVersion(models.Model):
    """A distinct state of a whole body of content, identified by its digest.

    Subclasses say how the digest and the counts are computed from their entries, and name what
    produced a state in ``source``.  Whatever records the digest it used (a pool, a campaign)
    compares it with ``current_digest()`` to warn that the content changed since.
    """

    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Subclasses override it to name their loader in the help text.
    source = models.CharField(max_length=40, help_text="What produced this state: its loader or admin.")
    counts = models.JSONField(default=dict)

    objects: ClassVar[Any] = ContentVersionQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.digest[:12]} ({self.source})"

    @classmethod
    def current_digest(cls) -> str:
        raise NotImplementedError

    @classmethod
    def current_counts(cls) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def record(cls, source: str) -> tuple[Self, bool]:
        """Record the current state (idempotent: an unchanged state adds no row)."""
        digest = cls.current_digest()
        counts = cls.current_counts()
        with transaction.atomic():
            version, created = cls._default_manager.get_or_create(
                digest=digest, defaults={"source": source, "counts": counts}
            )
        return cast(Self, version), created
