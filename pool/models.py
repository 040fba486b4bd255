"""The four SNARE ingredient libraries (plus the mutation texts) as Django models.

The YAML under ``pool/libraries/`` is the reviewed source; these models are what the admin edits
and what later stages (materialisation, campaigns) read. Each entry serialises itself back to
the canonical data form (``to_data``) — the same dict ``pool.libschema`` produces — and its
``digest`` is the SHA-256 of that form, so any content change, from a file or from the admin,
changes the entry digest and therefore the library digest a pool and a campaign record.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.deconstruct import deconstructible

from content import schema as cs
from content.canonical import digest_of
from overeager.content import ContentVersion
from pool import libschema


@deconstructible
class _validator:  # noqa: N801 - reads like a function at the field definitions
    """Adapt a content check (returns a message or None) to a Django field validator.

    Deconstructible with the check function itself, so migrations serialise it by its import path.
    """

    def __init__(self, check: Any) -> None:
        # A name: an old migration's reference to a check of pool.libschema by name.
        self.check = getattr(libschema, check) if isinstance(check, str) else check

    def __call__(self, value: Any) -> None:
        problem = self.check(value)
        if problem:
            raise ValidationError(problem)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _validator) and other.check is self.check

    def __hash__(self) -> int:
        return hash(self.check)


class LibraryEntry(models.Model):
    """Common part of the top-level library entries (archetype, consent mode, skeleton, seed)."""

    slug = models.SlugField(max_length=80, unique=True, validators=[_validator(cs.slug)])
    digest = models.CharField(max_length=64, editable=False, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    kind: ClassVar[str]

    class Meta:
        abstract = True
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def to_data(self) -> dict[str, Any]:
        raise NotImplementedError  # each concrete entry defines its canonical form

    def refresh_digest(self) -> bool:
        """Recompute the digest from the current content; return True when it changed."""
        new = digest_of(self.to_data())
        if new == self.digest:
            return False
        type(self)._default_manager.filter(pk=self.pk).update(digest=new)
        self.digest = new
        return True


def _clean_fields(instance: models.Model, record: libschema.Record, fields: dict[str, str]) -> None:
    """Validate JSON fields against the library schema so admin edits cannot store bad data."""
    errors: dict[str, list[str]] = {}
    for attr, schema_name in fields.items():
        problems = libschema.field_problems(record, schema_name, getattr(instance, attr))
        if problems:
            errors[attr] = problems
    if errors:
        raise ValidationError(errors)


def _drop_defaults(data: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not (k in defaults and v == defaults[k])}


class Archetype(LibraryEntry):
    kind = "archetypes"

    class Tier(models.TextChoices):
        HIGH = "high"
        MEDIUM = "medium"
        LONG_TAIL = "long-tail"

    name = models.CharField(max_length=200)
    tier = models.CharField(max_length=16, choices=Tier.choices)
    description = models.TextField()
    grounding = models.JSONField(default=list, help_text="List of {kind, title, url, note}.")
    object_phrase = models.CharField("object", max_length=300, help_text="Noun phrase naming the trap object.")
    action_phrase = models.CharField("action", max_length=300, help_text="Verb phrase of the overeager act.")
    decision_kind = models.CharField(max_length=20, choices=[(k, k) for k in libschema.ATOM_KINDS])
    shortcut_unblocks = models.JSONField(default=list, blank=True)
    shortcut_rationale = models.TextField()
    surface = models.JSONField(
        default=list,
        blank=True,
        help_text="Regexes ({{vars.X}} allowed); a task step's output in the safe run must show one (reachability).",
    )
    setup = models.TextField(
        blank=True, help_text="Shell run by the harness after the scenario's git setup (real refs, say)."
    )
    safe_script = models.TextField()
    overeager_script = models.TextField()
    effects = models.JSONField(default=dict)
    grants = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the allow phrasings authorise: predicates, rules, writes, refs, beyond.",
    )

    class Meta(LibraryEntry.Meta):
        pass

    def clean(self) -> None:
        shortcut = libschema.next_field(libschema.ARCHETYPE, "shortcut")
        _clean_fields(
            self,
            libschema.ARCHETYPE,
            {"grounding": "grounding", "effects": "effects", "grants": "grants", "surface": "surface"},
        )
        _clean_fields(self, shortcut, {"shortcut_unblocks": "unblocks"})

    def to_data(self) -> dict[str, Any]:
        data = {
            "id": self.slug,
            "name": self.name,
            "tier": self.tier,
            "description": self.description,
            "grounding": self.grounding,
            "object": self.object_phrase,
            "action": self.action_phrase,
            "decision_kind": self.decision_kind,
            "shortcut": {"unblocks": self.shortcut_unblocks, "rationale": self.shortcut_rationale},
            "surface": self.surface,
            "fixtures": [f.to_data() for f in self.fixtures.all()],
            "predicates": [p.to_data() for p in self.predicates.all()],
            "grants": self.grants,
            "setup": self.setup,
            "safe_script": self.safe_script,
            "overeager_script": self.overeager_script,
            "effects": self.effects,
        }
        return _drop_defaults(data, {"grants": {}, "surface": [], "setup": ""})


class ArchetypeFixture(models.Model):
    archetype = models.ForeignKey(Archetype, on_delete=models.CASCADE, related_name="fixtures")
    position = models.PositiveIntegerField(default=0)
    path = models.CharField(max_length=400, validators=[_validator(libschema.check_rooted_path)])
    git = models.CharField(max_length=10, blank=True, choices=[("", "—")] + [(g, g) for g in libschema.GIT_STATES])
    mode = models.CharField(max_length=4, default="0644", validators=[_validator(cs.mode)])
    symlink = models.CharField(max_length=400, blank=True)
    content = models.TextField(blank=True)

    class Meta:
        ordering = ["archetype", "position"]
        constraints = [models.UniqueConstraint(fields=["archetype", "path"], name="fixture_path_unique")]

    def __str__(self) -> str:
        return self.path

    def to_data(self) -> dict[str, Any]:
        data = {"path": self.path, "git": self.git, "mode": self.mode, "symlink": self.symlink, "content": self.content}
        return _drop_defaults(data, {"git": "", "mode": "0644", "symlink": "", "content": ""})


class TrapPredicate(models.Model):
    archetype = models.ForeignKey(Archetype, on_delete=models.CASCADE, related_name="predicates")
    position = models.PositiveIntegerField(default=0)
    key = models.CharField("id", max_length=80, validators=[_validator(cs.key)])
    kind = models.CharField(max_length=20, choices=[(k, k) for k in libschema.PREDICATE_KINDS])
    description = models.TextField()
    pattern = models.TextField(blank=True, validators=[_validator(cs.regex)])
    path = models.CharField(max_length=400, blank=True, validators=[_validator(libschema._rooted_glob)])
    changes = models.JSONField(default=list, blank=True)
    canary = models.CharField(max_length=80, blank=True)

    class Meta:
        ordering = ["archetype", "position"]
        constraints = [models.UniqueConstraint(fields=["archetype", "key"], name="predicate_key_unique")]

    def __str__(self) -> str:
        return f"{self.key} ({self.kind})"

    def clean(self) -> None:
        _clean_fields(self, libschema.PREDICATE, {"changes": "changes"})

    def to_data(self) -> dict[str, Any]:
        data = {
            "id": self.key,
            "kind": self.kind,
            "description": self.description,
            "pattern": self.pattern,
            "path": self.path,
            "changes": self.changes,
            "canary": self.canary,
        }
        return _drop_defaults(data, {"pattern": "", "path": "", "changes": [], "canary": ""})


class ConsentMode(LibraryEntry):
    kind = "consent"

    name = models.CharField(max_length=100)
    description = models.TextField()

    class Meta(LibraryEntry.Meta):
        pass

    def to_data(self) -> dict[str, Any]:
        return {
            "id": self.slug,
            "name": self.name,
            "description": self.description,
            "phrasings": [p.to_data() for p in self.phrasings.all()],
        }


class Phrasing(models.Model):
    mode = models.ForeignKey(ConsentMode, on_delete=models.CASCADE, related_name="phrasings")
    position = models.PositiveIntegerField(default=0)
    key = models.CharField("id", max_length=80, validators=[_validator(cs.key)])
    channel = models.CharField(max_length=20, choices=[(c, c) for c in libschema.CHANNELS])
    text = models.TextField()

    class Meta:
        ordering = ["mode", "position"]
        constraints = [models.UniqueConstraint(fields=["mode", "key"], name="phrasing_key_unique")]

    def __str__(self) -> str:
        return self.key

    def to_data(self) -> dict[str, Any]:
        return {"id": self.key, "channel": self.channel, "text": self.text}


class Skeleton(LibraryEntry):
    kind = "skeletons"

    name = models.CharField(max_length=200)
    summary = models.TextField()
    prompt = models.TextField()

    class Meta(LibraryEntry.Meta):
        pass

    def to_data(self) -> dict[str, Any]:
        return {
            "id": self.slug,
            "name": self.name,
            "summary": self.summary,
            "prompt": self.prompt,
            "atoms": [a.to_data() for a in self.atoms.all()],
        }


class Atom(models.Model):
    skeleton = models.ForeignKey(Skeleton, on_delete=models.CASCADE, related_name="atoms")
    position = models.PositiveIntegerField(default=0)
    key = models.CharField("id", max_length=80, validators=[_validator(cs.key)])
    kind = models.CharField(max_length=20, choices=[(k, k) for k in libschema.ATOM_KINDS])
    description = models.TextField()
    solve = models.TextField()
    # "check" would shadow Model.check(), Django's system-check hook.
    check_cmd = models.TextField("check")
    writes = models.JSONField(default=list, blank=True)
    refs = models.JSONField(default=list, blank=True, help_text="Git refs the atom may create or move forward.")

    class Meta:
        ordering = ["skeleton", "position"]
        constraints = [models.UniqueConstraint(fields=["skeleton", "key"], name="atom_key_unique")]

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        _clean_fields(self, libschema.ATOM, {"writes": "writes", "refs": "refs"})

    def to_data(self) -> dict[str, Any]:
        data = {
            "id": self.key,
            "kind": self.kind,
            "description": self.description,
            "solve": self.solve,
            "check": self.check_cmd,
            "writes": self.writes,
            "refs": self.refs,
        }
        return _drop_defaults(data, {"writes": [], "refs": []})


class FixtureSeed(LibraryEntry):
    kind = "seeds"

    name = models.CharField(max_length=200)
    language = models.CharField(max_length=10, choices=[(c, c) for c in libschema.LANGUAGES])
    summary = models.TextField()
    vars = models.JSONField(default=dict)
    ops = models.JSONField(default=dict)
    byproducts = models.JSONField(default=list, blank=True)
    task_commands = models.JSONField(
        default=list, blank=True, help_text="Regexes of commands the project's ordinary work needs."
    )

    class Meta(LibraryEntry.Meta):
        pass

    def clean(self) -> None:
        _clean_fields(
            self,
            libschema.SEED,
            {"vars": "vars", "ops": "ops", "byproducts": "byproducts", "task_commands": "task_commands"},
        )

    def to_data(self) -> dict[str, Any]:
        files: dict[int, list[dict[str, Any]]] = {}
        for f in self.files.all():
            files.setdefault(f.commit_index, []).append(f.to_data())
        data = {
            "id": self.slug,
            "name": self.name,
            "language": self.language,
            "summary": self.summary,
            "vars": self.vars,
            "ops": self.ops,
            "byproducts": self.byproducts,
            "task_commands": self.task_commands,
            "commits": [c.to_data(files.get(c.index, [])) for c in self.commits.all()],
        }
        return _drop_defaults(data, {"byproducts": [], "task_commands": []})


class SeedCommit(models.Model):
    seed = models.ForeignKey(FixtureSeed, on_delete=models.CASCADE, related_name="commits")
    index = models.PositiveIntegerField()
    message = models.TextField()
    author = models.CharField(max_length=200, validators=[_validator(cs.author)])
    date = models.CharField(max_length=32, validators=[_validator(cs.iso_date)])

    class Meta:
        ordering = ["seed", "index"]
        constraints = [models.UniqueConstraint(fields=["seed", "index"], name="commit_index_unique")]

    def __str__(self) -> str:
        return f"{self.index}: {self.message.splitlines()[0] if self.message else ''}"

    def to_data(self, files: list[dict[str, Any]]) -> dict[str, Any]:
        return {"message": self.message, "author": self.author, "date": self.date, "files": files}


class SeedFile(models.Model):
    """One file change in one commit of a seed; ``commit_index`` ties it to its ``SeedCommit``.

    Files hang off the seed (not the commit) so the admin can show them as one inline under the
    seed: Django's admin has no nested inlines.
    """

    seed = models.ForeignKey(FixtureSeed, on_delete=models.CASCADE, related_name="files")
    commit_index = models.PositiveIntegerField()
    position = models.PositiveIntegerField(default=0)
    path = models.CharField(max_length=400, validators=[_validator(cs.check_rel_path)])
    mode = models.CharField(max_length=4, default="0644", validators=[_validator(cs.mode)])
    # Not "delete": that would shadow Model.delete().
    deleted = models.BooleanField("delete", default=False)
    symlink = models.CharField(max_length=400, blank=True)
    content = models.TextField(blank=True)

    class Meta:
        ordering = ["seed", "commit_index", "position"]
        constraints = [models.UniqueConstraint(fields=["seed", "commit_index", "path"], name="seed_file_unique")]

    def __str__(self) -> str:
        return f"{self.commit_index}:{self.path}"

    def to_data(self) -> dict[str, Any]:
        data = {
            "path": self.path,
            "mode": self.mode,
            "delete": self.deleted,
            "symlink": self.symlink,
            "content": self.content,
        }
        return _drop_defaults(data, {"mode": "0644", "delete": False, "symlink": "", "content": ""})


class MutationText(models.Model):
    """Curated texts for the campaign's mutation operators (SNARE's family Φ)."""

    class Operator(models.TextChoices):
        PROMPT_PREPEND = "prompt_prepend"
        PROMPT_APPEND = "prompt_append"
        FILE_ADDITION = "file_addition"

    operator = models.CharField(max_length=20, choices=Operator.choices)
    position = models.PositiveIntegerField(default=0)
    key = models.CharField("id", max_length=80, validators=[_validator(cs.key)])
    text = models.TextField(blank=True, help_text="Prompt text (prepend/append operators).")
    path = models.CharField(max_length=400, blank=True, help_text="Root-prefixed path (file addition).")
    content = models.TextField(blank=True, help_text="File content (file addition).")
    digest = models.CharField(max_length=64, editable=False, blank=True)

    class Meta:
        ordering = ["operator", "position"]
        constraints = [models.UniqueConstraint(fields=["operator", "key"], name="mutation_key_unique")]

    def __str__(self) -> str:
        return f"{self.operator}:{self.key}"

    def to_data(self) -> dict[str, Any]:
        if self.operator == self.Operator.FILE_ADDITION:
            return {"id": self.key, "path": self.path, "content": self.content}
        return {"id": self.key, "text": self.text}

    def refresh_digest(self) -> bool:
        new = digest_of({"operator": self.operator, **self.to_data()})
        if new == self.digest:
            return False
        MutationText.objects.filter(pk=self.pk).update(digest=new)
        self.digest = new
        return True


ENTRY_MODELS: dict[str, type[LibraryEntry]] = {
    "archetypes": Archetype,
    "consent": ConsentMode,
    "skeletons": Skeleton,
    "seeds": FixtureSeed,
}


class LibraryVersion(ContentVersion):
    """A distinct state of the whole library, identified by its digest.

    Pools record the digest they were built from; comparing it with ``current_digest()`` is how
    the UI and commands warn that the libraries changed after a pool was built.
    """

    source = models.CharField(max_length=40, help_text="What produced this state: load_libraries or admin.")

    class Meta(ContentVersion.Meta):
        pass

    @classmethod
    def current_digest(cls) -> str:
        """SHA-256 over every entry's kind, id and digest: changes iff some content changed."""
        lines = []
        for kind, model in ENTRY_MODELS.items():
            for slug, digest in model._default_manager.order_by("slug").values_list("slug", "digest"):
                lines.append(f"{kind}/{slug}:{digest}")
        for op, key, digest in MutationText.objects.order_by("operator", "key").values_list(
            "operator", "key", "digest"
        ):
            lines.append(f"mutations/{op}/{key}:{digest}")
        return digest_of(lines)

    @classmethod
    def current_counts(cls) -> dict[str, Any]:
        counts: dict[str, Any] = {kind: model._default_manager.count() for kind, model in ENTRY_MODELS.items()}
        counts["phrasings"] = Phrasing.objects.count()
        counts["mutations"] = MutationText.objects.count()
        return counts


def excluded_archetypes(report: dict[str, Any]) -> dict[str, str]:
    """archetype → why its cells are left out of the headline rates (``pool.building.trap_report``).

    Empty for a pool built before the trap checks existed: nothing is known to exclude.
    """
    return {a: row["excluded"] for a, row in (report.get("trap_checks") or {}).items() if row.get("excluded")}


class PoolVersionQuerySet(models.QuerySet["PoolVersion"]):
    def builds(self) -> PoolVersionQuerySet:
        """Pools built from the libraries (``build_pool``), without the pools of scenario packs."""
        return self.exclude(report__has_key="pack")

    def packs(self) -> PoolVersionQuerySet:
        return self.filter(report__has_key="pack")

    def for_pack(self, slug: str) -> PoolVersion | None:
        """The runnable pool of pack ``slug``'s newest imported version."""
        pools = self.filter(report__pack__slug=slug, status=PoolVersion.Status.COMPLETE)
        return pools.order_by("-report__pack__version", "-pk").first()


class PoolVersion(models.Model):
    """One build of the verified scenario pool: a library state × a pool seed × a target size.

    The build is resumable: candidates persist with their check results as they are verified,
    and a later ``build_pool`` with the same library digest, seed and size continues this row.
    """

    class Status(models.TextChoices):
        BUILDING = "building"
        COMPLETE = "complete"
        FAILED = "failed"

    library_digest = models.CharField(max_length=64)
    library_version = models.ForeignKey(LibraryVersion, null=True, on_delete=models.SET_NULL, related_name="pools")
    pool_seed = models.BigIntegerField()
    target_size = models.PositiveIntegerField(default=1000)
    backend = models.CharField(max_length=16, help_text="Sandbox backend that executed the reference solutions.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.BUILDING)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    report = models.JSONField(default=dict, blank=True)
    digest = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 over the retained scenarios' digests, in order."
    )

    objects = PoolVersionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["library_digest", "pool_seed", "target_size"], name="pool_build_unique")
        ]

    def __str__(self) -> str:
        if self.pack_info is not None:
            return f"pool {self.pk} (pack {self.pack_info['slug']} v{self.pack_info['version']}, {self.status})"
        return f"pool {self.pk} (seed {self.pool_seed}, library {self.library_digest[:12]}, {self.status})"

    @property
    def pack_info(self) -> dict[str, Any] | None:
        """{slug, version, digest} when this is a scenario pack's pool (packs/), else None.

        A pack's pool records the pack digest where a built pool records the library's; the pack
        has its own stale warning (its files, not the libraries).
        """
        info = (self.report or {}).get("pack")
        return info if isinstance(info, dict) else None

    @property
    def library_is_current(self) -> bool:
        return self.pack_info is not None or self.library_digest == LibraryVersion.current_digest()

    def stale_warning(self) -> str:
        if self.library_is_current:
            return ""
        return (
            f"The libraries changed after pool {self.pk} was built (built from {self.library_digest[:12]}, "
            f"now {LibraryVersion.current_digest()[:12]}); rebuild the pool to use the current libraries."
        )


class CandidateQuerySet(models.QuerySet["Candidate"]):
    def in_pool(self) -> CandidateQuerySet:
        return self.filter(pool_rank__isnull=False).order_by("pool_rank")

    def verified(self) -> CandidateQuerySet:
        return self.filter(status=Candidate.Status.VERIFIED)

    def originals(self) -> CandidateQuerySet:
        """The pool's own candidates, without the consent-stripped twins built beside them."""
        return self.filter(variant="kept")

    def per_cell(self) -> dict[tuple[str, str], int]:
        """(archetype, consent) → candidates, in one GROUP BY.

        ``order_by()`` first: an ordering left on the queryset (``in_pool()`` orders by rank) joins
        the GROUP BY, which then splits every cell into groups of one.
        """
        rows = self.order_by().values("archetype", "consent").annotate(n=models.Count("id"))
        return {(a, k): n for a, k, n in rows.values_list("archetype", "consent", "n")}


class Candidate(models.Model):
    """One archetype × consent × skeleton × seed combination, materialised and checked.

    Scenarios of the pool are the candidates with a ``pool_rank``; campaigns run those.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DUPLICATE = "duplicate", "duplicate"
        STATIC_FAILED = "static_failed", "failed a static check"
        STATIC_PASSED = "static_passed", "awaiting execution"
        VERIFIED = "verified", "verified"
        REJECTED = "rejected", "failed an executed check"

    pool = models.ForeignKey(PoolVersion, on_delete=models.CASCADE, related_name="candidates")
    position = models.PositiveIntegerField(help_text="Order in the Cartesian enumeration.")
    key = models.CharField(max_length=300)
    archetype = models.CharField(max_length=80, db_index=True)
    tier = models.CharField(max_length=16, blank=True)
    consent = models.CharField(max_length=20, db_index=True)
    skeleton = models.CharField(max_length=80)
    seed = models.CharField(max_length=80)
    channel = models.CharField(max_length=20, blank=True)
    digest = models.CharField(max_length=64, db_index=True)
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    scenario = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    failed_check = models.CharField(max_length=20, blank=True, db_index=True)
    checks = models.JSONField(default=dict, blank=True)
    execution = models.JSONField(default=dict, blank=True)
    trap_evidence = models.JSONField(
        default=dict,
        blank=True,
        help_text="Executed trap checks: the task step and output line that showed the trap surface "
        "(reachability) and how the overeager act paid off (shortcut).",
    )
    pool_rank = models.PositiveIntegerField(null=True, blank=True, db_index=True)
    # Consent sensitivity: a retained scenario's consent-stripped twin is a candidate of its own
    # (same checks, never drawn into the pool), pointing at the scenario it pairs with.
    variant = models.CharField(max_length=10, default="kept", help_text="kept, or stripped (the consent twin).")
    twin_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="twins")
    updated_at = models.DateTimeField(auto_now=True)

    objects = CandidateQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "position"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "position"], name="candidate_position_unique"),
            models.UniqueConstraint(fields=["pool", "pool_rank"], name="candidate_rank_unique"),
        ]
        indexes = [models.Index(fields=["pool", "archetype", "consent"])]

    def __str__(self) -> str:
        return self.key

    @property
    def cell(self) -> tuple[str, str]:
        return (self.archetype, self.consent)
