"""UnderSpecBench task families and their 32 prompt variants as Django models.

The YAML under ``suite/families/`` is the reviewed source; curators edit families in the admin.
``TaskFamily.to_data()`` rebuilds the canonical family dict (what ``suite.schema`` produces) and
``digest`` is its SHA-256, so any content change — from a file or the admin — changes the family
digest and the suite digest a campaign records.

Prompts are derived, never edited: :meth:`TaskFamily.sync_prompts` materialises exactly the 32
``FamilyPrompt`` rows (S0–S3 × B0–B3 × R0–R1) from the family's wording, updating text in place so
a row's primary key — which runs will reference — never changes for a (family, s, b, r).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from content.canonical import digest_of
from content.schema import ContentError
from overeager.content import ContentVersion
from suite import schema
from suite.oracle import ORACLE_VERSION

DOMAIN_CHOICES = list(schema.DOMAINS.items())
SURFACE_CHOICES = [(k, v[0]) for k, v in schema.SURFACES.items()]


class TaskFamily(models.Model):
    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    domain = models.CharField(max_length=32, choices=DOMAIN_CHOICES)
    surface = models.CharField(max_length=40, choices=SURFACE_CHOICES)
    summary = models.TextField()
    grounding = models.JSONField(default=list, help_text="List of {kind, title, url, note}.")
    runtime = models.JSONField(default=dict, help_text="tools, env, files, git, state — see docs/underspecbench.md.")
    safe_action = models.TextField()
    reference_safe = models.TextField("safe reference script")
    reference_wrong_target = models.TextField("wrong-target reference script")
    reference_overscope = models.TextField("over-scope reference script")
    intended = models.JSONField(
        default=list, help_text="The intended set: [{id, change, fields, expect, match, limits, lines, includes}]."
    )
    allowed = models.JSONField(
        default=list,
        blank=True,
        help_text="Changes the safe action may bring with it but need not: [{id, fields, lines}].",
    )
    candidates = models.JSONField(default=list, help_text="Plausible wrong targets (object ids).")
    overscope = models.JSONField(default=list, help_text="Object-id globs that must stay untouched.")
    ignore = models.JSONField(default=list, blank=True, help_text="Object-id globs of harmless byproducts.")
    unique_names = models.JSONField(
        default=list, help_text="Words that identify the target uniquely (absent at B2/B3)."
    )
    candidate_names = models.JSONField(
        default=list, blank=True, help_text="The candidates' names as the runtime shows them, one per candidate."
    )
    reset = models.JSONField(default=dict, blank=True)
    checks = models.JSONField(
        default=dict, blank=True, help_text="{allow: [{rule, where, reason}]} — measurement-check allowances."
    )
    wording = models.JSONField(default=dict, help_text="{template, S[4], B[4], R[2], overrides}.")
    digest = models.CharField(max_length=64, editable=False, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "task families"

    def __str__(self) -> str:
        return self.slug

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "slug": self.slug,
            "name": self.name,
            "domain": self.domain,
            "surface": self.surface,
            "grounding": self.grounding,
            "summary": self.summary,
            "runtime": self.runtime,
            "safe_action": self.safe_action,
            "references": {
                "safe": self.reference_safe,
                "wrong_target": self.reference_wrong_target,
                "overscope": self.reference_overscope,
            },
            "ground_truth": {
                "intended": self.intended,
                "allowed": self.allowed,
                "candidates": self.candidates,
                "overscope": self.overscope,
                "ignore": self.ignore,
                "unique_names": self.unique_names,
                "candidate_names": self.candidate_names,
            },
            "reset": self.reset,
            "prompts": self.wording,
            "checks": self.checks,
        }
        if not self.allowed:
            data["ground_truth"].pop("allowed")
        if not self.ignore:
            data["ground_truth"].pop("ignore")
        if not self.candidate_names:
            data["ground_truth"].pop("candidate_names")
        if not self.reset:
            data.pop("reset")
        if not self.checks:
            data.pop("checks")
        return data

    def apply_data(self, data: dict[str, Any]) -> None:
        """Copy a canonical family dict into the fields (does not save)."""
        self.slug = data["slug"]
        self.name = data["name"]
        self.domain = data["domain"]
        self.surface = data["surface"]
        self.summary = data["summary"]
        self.grounding = data["grounding"]
        self.runtime = data["runtime"]
        self.safe_action = data["safe_action"]
        self.reference_safe = data["references"]["safe"]
        self.reference_wrong_target = data["references"]["wrong_target"]
        self.reference_overscope = data["references"]["overscope"]
        gt = data["ground_truth"]
        self.intended = gt["intended"]
        self.allowed = gt.get("allowed", [])
        self.candidates = gt["candidates"]
        self.overscope = gt["overscope"]
        self.ignore = gt.get("ignore", [])
        self.unique_names = gt["unique_names"]
        self.candidate_names = gt.get("candidate_names", [])
        self.reset = data.get("reset", {})
        self.wording = data["prompts"]
        self.checks = data.get("checks", {})

    def canonical(self) -> dict[str, Any]:
        """The validated canonical form; raises ValidationError listing every problem."""
        family, errors = schema.validate_family(self.to_data(), f"admin:{self.slug}", expected_slug=self.slug or None)
        if family is None:
            raise ValidationError(_field_errors(errors))
        return family

    def clean(self) -> None:
        self.canonical()

    def refresh_digest(self) -> bool:
        new = digest_of(self.canonical())
        if new == self.digest:
            return False
        TaskFamily.objects.filter(pk=self.pk).update(digest=new)
        self.digest = new
        return True

    def sync_prompts(self) -> int:
        """Make the 32 prompt rows match the wording; returns how many rows were written."""
        family = self.canonical()
        existing = {(p.s, p.b, p.r): p for p in self.prompts.all()}
        written = 0
        for s, b, r, text in schema.all_prompts(family):
            digest = digest_of({"family": self.slug, "variant": schema.variant(s, b, r), "text": text})
            row = existing.get((s, b, r))
            if row is None:
                FamilyPrompt.objects.create(family=self, s=s, b=b, r=r, text=text, digest=digest)
                written += 1
            elif row.digest != digest or row.text != text:
                row.text = text
                row.digest = digest
                row.save(update_fields=["text", "digest"])
                written += 1
        return written


# Map schema error fields onto model fields so the admin shows each problem next to its input.
_FIELD_OF = {
    "references.safe": "reference_safe",
    "references.wrong_target": "reference_wrong_target",
    "references.overscope": "reference_overscope",
    "ground_truth.intended": "intended",
    "ground_truth.allowed": "allowed",
    "ground_truth.candidates": "candidates",
    "ground_truth.overscope": "overscope",
    "ground_truth.ignore": "ignore",
    "ground_truth.unique_names": "unique_names",
    "ground_truth.candidate_names": "candidate_names",
    "prompts": "wording",
}


def _field_errors(errors: list[ContentError]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    model_fields = {f.name for f in TaskFamily._meta.fields}
    for e in errors:
        target = "__all__"
        for prefix, name in _FIELD_OF.items():
            if (
                e.field == prefix
                or e.field.startswith(prefix + ".")
                or e.field.startswith(prefix + "[")
                or e.field.startswith(prefix + " ")
            ):
                target = name
                break
        else:
            head = e.field.split(".")[0].split("[")[0]
            if head in model_fields:
                target = head
        out.setdefault(target, []).append(f"{e.field}: {e.message}" if e.field else e.message)
    return out


class FamilyPrompt(models.Model):
    """One of a family's 32 instruction variants. Regenerated from the wording, never edited."""

    family = models.ForeignKey(TaskFamily, on_delete=models.CASCADE, related_name="prompts")
    s = models.PositiveSmallIntegerField("intent clarity (S)", choices=[(i, f"S{i}") for i in range(schema.S_LEVELS)])
    b = models.PositiveSmallIntegerField("target certainty (B)", choices=[(i, f"B{i}") for i in range(schema.B_LEVELS)])
    r = models.PositiveSmallIntegerField("blast radius (R)", choices=[(i, f"R{i}") for i in range(schema.R_LEVELS)])
    text = models.TextField()
    digest = models.CharField(max_length=64)

    class Meta:
        ordering = ["family", "s", "b", "r"]
        constraints = [
            models.UniqueConstraint(fields=["family", "s", "b", "r"], name="family_prompt_variant_unique"),
            models.CheckConstraint(condition=models.Q(s__lte=3, b__lte=3, r__lte=1), name="family_prompt_levels"),
        ]

    def __str__(self) -> str:
        return f"{self.family.slug} {self.variant}"

    @property
    def variant(self) -> str:
        return schema.variant(self.s, self.b, self.r)


class SuiteVersion(ContentVersion):
    """A distinct state of the whole suite (all families), identified by its digest."""

    source = models.CharField(max_length=40, help_text="What produced this state: load_suite or admin.")

    class Meta(ContentVersion.Meta):
        pass

    @classmethod
    def current_digest(cls) -> str:
        """SHA-256 over every family's slug and digest: changes iff some family's content changed."""
        return digest_of(
            [f"{slug}:{digest}" for slug, digest in TaskFamily.objects.order_by("slug").values_list("slug", "digest")]
        )

    @classmethod
    def current_counts(cls) -> dict[str, Any]:
        families = list(TaskFamily.objects.values_list("domain", "surface"))
        return {
            "families": len(families),
            "prompts": FamilyPrompt.objects.count(),
            "domains": {d: sum(1 for x, _ in families if x == d) for d in schema.DOMAINS},
            "surfaces": {s: sum(1 for _, x in families if x == s) for s in schema.SURFACES},
            "oracle_version": ORACLE_VERSION,
        }
