"""Systems under test, campaigns, runs and their attempts.

One run's path through these models (SPEC §9):

    Campaign ─allocator picks slots─▶ Run rows (status queued) ─enqueue on commit─▶ rq job
    job claims the Run (conditional update: status queued → running, attempt + 1 = fencing token)
    → RunAttempt row → sandbox + adapter + gateway → evidence → verdict written once, guarded by
    the attempt → Campaign.advance() folds the outcome into the allocator → next round.

Every status change is a conditional ``UPDATE … WHERE status = <expected> [AND attempt = n]``
(all of them in runs/state.py, with the transition table)
whose row count is checked, so two workers, a reaper and a coordinator can race over one run and
exactly one of them wins each transition.  A retry is a new ``RunAttempt``; an attempt's result is
never overwritten.

The outcome columns on ``Run`` (validity, overeager, task_success, acted, the UnderSpecBench flags,
the disposition) are copies of the counted attempt's result: the dashboard aggregates them in the
database with GROUP BY, never by looping over attempts in Python.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Count, Q
from django.utils import timezone

from harness.gateway.pricing import Price
from harness.gateway.protocols import ApiKind
from harness.outcome import LIMIT_COLUMNS, Validity

VALIDITY_CHOICES = Validity.choices()
DISPOSITIONS = ("clarification", "refusal", "deferment", "empty")


def _adapter_choices() -> list[tuple[str, str]]:
    from harness.agents.base import adapter_names

    return [(name, name) for name in adapter_names()]


# -- systems under test -------------------------------------------------------------------------


class AgentFramework(models.Model):
    """An agent framework as the benchmark names it, backed by a registered adapter.

    Several frameworks may share one adapter: the simulated frameworks of a demo matrix are all
    the ``stochastic`` adapter under different names (their planted effects are keyed by slug).
    """

    slug = models.SlugField(max_length=60, unique=True)
    label = models.CharField(max_length=120)
    adapter = models.CharField(max_length=40, help_text="Registered adapter (harness.agents.base.adapter_names()).")
    options = models.JSONField(
        default=dict,
        blank=True,
        help_text='The adapter\'s typed options; mini-swe-agent: {"model_kwargs": {"max_tokens": 512}}.',
    )
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        # Campaigns under way pick the edit up in their next runs: each records it with its time.
        Campaign.objects.active().filter(sut__framework=self).record_sut_changes()

    def clean(self) -> None:
        names = [n for n, _ in _adapter_choices()]
        if self.adapter not in names:
            raise ValidationError({"adapter": f"unknown adapter {self.adapter!r}; choose one of {names}"})
        from harness.agents.base import AdapterOptionsError

        try:
            self.applied_options()
        except AdapterOptionsError as exc:
            raise ValidationError({"options": str(exc)}) from None

    def applied_options(self) -> dict[str, Any]:
        """``options`` as the adapter's typed config applies them (AdapterOptionsError if it cannot)."""
        from harness.agents.base import adapter_options

        return adapter_options(self.adapter, self.options).as_dict()

    @property
    def is_simulated(self) -> bool:
        return self.adapter in ("stochastic", "reference-safe", "reference-overeager")


class ModelEndpoint(models.Model):
    """A model as the benchmark names it, and the upstream the gateway forwards it to."""

    class Upstream(models.TextChoices):
        HTTP = "http", "provider endpoint (HTTP)"
        SCRIPTED = "scripted", "scripted model"
        NONE = "none", "none (simulated agents call no model)"

    slug = models.SlugField(max_length=60, unique=True)
    label = models.CharField(max_length=120)
    upstream = models.CharField(max_length=16, choices=Upstream.choices, default=Upstream.HTTP)
    # Blank only for scripted and "none" upstreams: clean() requires it of a provider endpoint.
    model = models.CharField(
        max_length=200, blank=True, help_text="Model id sent upstream (required for a provider endpoint)."
    )
    base_url = models.CharField(
        max_length=400, blank=True, help_text="Including the version prefix, e.g. https://api.openai.com/v1."
    )
    key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="NAME of the environment variable holding the key (read by the gateway; never stored).",
    )
    api_kinds = models.JSONField(default=list, help_text="Wire APIs the endpoint speaks.")
    script = models.JSONField(default=list, blank=True, help_text="Scripted upstream: the list of turns.")
    notes = models.TextField(blank=True)
    # Prices (harness.gateway.pricing): USD per million tokens, as the provider lists them.
    price_input = models.DecimalField(
        "input price", max_digits=12, decimal_places=6, null=True, blank=True, help_text="USD per million input tokens."
    )
    price_output = models.DecimalField(
        "output price",
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million output tokens.",
    )
    price_cached_input = models.DecimalField(
        "cached-input price",
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million prompt tokens read from the provider's cache (blank: the input price).",
    )
    price_cache_write = models.DecimalField(
        "cache-write price",
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million prompt tokens written to the cache, where the provider bills them apart "
        "(Anthropic; blank: the input price).",
    )
    price_set_on = models.DateField("prices set on", null=True, blank=True, help_text="The day the prices held.")
    price_notional = models.BooleanField(
        "notional price",
        default=False,
        help_text="No provider bills these tokens (a model served here): costs are shown labelled notional.",
    )
    price_source = models.CharField(max_length=300, blank=True, help_text="Where the prices come from.")

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        _endpoint_saved(self)

    def price(self) -> Price | None:
        """The endpoint's prices (None when unpriced)."""
        if self.price_input is None or self.price_output is None:
            return None
        return Price(
            input=Decimal(self.price_input),
            output=Decimal(self.price_output),
            cached_input=None if self.price_cached_input is None else Decimal(self.price_cached_input),
            cache_write=None if self.price_cache_write is None else Decimal(self.price_cache_write),
            # A date as assigned in code ("2026-12-01") is the same date once saved.
            set_on=models.DateField().to_python(self.price_set_on),
            notional=self.is_notional,
            source=self.price_source,
        )

    @property
    def is_notional(self) -> bool:
        """A scripted model's price is notional whatever the box says: nobody bills its tokens."""
        return self.price_notional or self.upstream == self.Upstream.SCRIPTED

    def apply_default_price(self) -> bool:
        """Copy the shipped default table's row for this endpoint's model id; False if it has none."""
        from harness.gateway.pricing import default_price

        found = default_price(self.model or self.slug)
        if found is None:
            return False
        _, price = found
        self.price_input, self.price_output = price.input, price.output
        self.price_cached_input, self.price_cache_write = price.cached_input, price.cache_write
        self.price_set_on, self.price_source, self.price_notional = price.set_on, price.source, False
        return True

    def upstream_config(self) -> dict[str, Any]:
        """The gateway's ``UpstreamConfig`` fields for this endpoint."""
        return {
            "kind": self.upstream,
            "base_url": self.base_url,
            "model": self.model,
            "key_env": self.key_env,
            "script": self.script if self.upstream == self.Upstream.SCRIPTED else None,
        }

    def clean(self) -> None:
        from harness.gateway.registry import UpstreamConfig

        errors: dict[str, str] = {}
        kinds = {k.value for k in ApiKind}
        if not isinstance(self.api_kinds, list) or any(k not in kinds for k in self.api_kinds):
            errors["api_kinds"] = f"a list drawn from {sorted(kinds)}"
        if self.upstream != self.Upstream.NONE:
            # A Gemini endpoint's model goes into the provider's URL path: checked by the stricter rule.
            gemini = isinstance(self.api_kinds, list) and ApiKind.GEMINI.value in self.api_kinds
            try:
                UpstreamConfig(**self.upstream_config()).validate(ApiKind.GEMINI if gemini else None)
            except (ValueError, TypeError) as exc:
                errors[getattr(exc, "field", "") or "upstream"] = str(exc)
        errors.update(self._price_problems())
        if errors:
            raise ValidationError(errors)

    def _price_problems(self) -> dict[str, str]:
        prices = (self.price_input, self.price_output, self.price_cached_input, self.price_cache_write)
        if all(p is None for p in prices):
            return {}
        problems: dict[str, str] = {}
        for name in ("price_input", "price_output", "price_cached_input", "price_cache_write"):
            value = getattr(self, name)
            if value is not None and value < 0:
                problems[name] = "a price cannot be negative"
        if self.price_input is None or self.price_output is None:
            problems["price_input" if self.price_input is None else "price_output"] = (
                "give both the input and the output price (or neither: unpriced)"
            )
        if self.price_set_on is None:
            problems["price_set_on"] = "say on which day these prices held: providers change them"
        return problems


def _endpoint_saved(endpoint: ModelEndpoint) -> None:
    # Campaigns under way pick the edit up in their next runs: each records it with its time.
    Campaign.objects.active().filter(sut__model=endpoint).record_sut_changes()


class SystemUnderTestQuerySet(models.QuerySet["SystemUnderTest"]):
    def for_pair(self, framework: AgentFramework, model: ModelEndpoint) -> SystemUnderTest:
        sut, _ = self.get_or_create(framework=framework, model=model, defaults={"api_kind": default_api_kind(model)})
        return sut


def default_api_kind(model: ModelEndpoint) -> str:
    kinds = list(model.api_kinds or [])
    return kinds[0] if kinds else ApiKind.OPENAI_CHAT.value


class SystemUnderTest(models.Model):
    """An agent framework × a model, with the per-run limits the gateway and sandbox enforce."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    framework = models.ForeignKey(AgentFramework, on_delete=models.PROTECT, related_name="suts")
    model = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="suts")
    api_kind = models.CharField(max_length=24, choices=[(k.value, k.value) for k in ApiKind])
    max_steps = models.PositiveIntegerField(default=30)
    wall_limit_s = models.PositiveIntegerField("wall-time limit (s)", default=1800)
    command_timeout_s = models.PositiveIntegerField(default=120)
    max_requests = models.PositiveIntegerField(default=60)
    max_tokens = models.PositiveBigIntegerField(default=4_000_000)
    notes = models.TextField(blank=True)

    objects = SystemUnderTestQuerySet.as_manager()

    class Meta:
        ordering = ["framework__slug", "model__slug"]
        constraints = [models.UniqueConstraint(fields=["framework", "model"], name="sut_pair_unique")]
        verbose_name = "system under test"

    def __str__(self) -> str:
        return f"{self.framework.slug} × {self.model.slug}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        # Campaigns under way read the limits and options live for their next runs (each run
        # records the limits it used); the campaign records the edit with its time.
        Campaign.objects.active().filter(sut=self).record_sut_changes()

    @property
    def slug(self) -> str:
        return f"{self.framework.slug}__{self.model.slug}"

    def clean(self) -> None:
        from harness.agents.base import get_adapter

        try:
            adapter = get_adapter(self.framework.adapter)
        except KeyError as exc:
            raise ValidationError({"framework": str(exc)}) from None
        if adapter.uses_gateway:
            if self.model.upstream == ModelEndpoint.Upstream.NONE:
                raise ValidationError({"model": f"{self.framework.slug} calls a model; this endpoint has no upstream"})
            if adapter.api_kinds and self.api_kind not in {k.value for k in adapter.api_kinds}:
                raise ValidationError(
                    {"api_kind": f"{adapter.name} speaks {[k.value for k in adapter.api_kinds]}, not {self.api_kind}"}
                )
            if self.model.api_kinds and self.api_kind not in self.model.api_kinds:
                raise ValidationError({"api_kind": f"{self.model.slug} serves {self.model.api_kinds} only"})

    def runner_config(self) -> dict[str, Any]:
        """The ``sut`` mapping ``pool.execution.run_agent`` takes."""
        return {
            "framework": self.framework.slug,
            "model": self.model.model or self.model.slug,
            "api_kind": self.api_kind,
            "upstream": self.model.upstream_config(),
        }

    def snapshot(self) -> dict[str, Any]:
        """What a campaign records of its SUT (no secrets: key variable names only).

        ``options`` is what the adapter applies — the typed config with its defaults — never the
        raw field: a record must not claim settings no run used (AdapterOptionsError if invalid).
        """
        return {
            "framework": {
                "slug": self.framework.slug,
                "adapter": self.framework.adapter,
                "options": self.framework.applied_options(),
            },
            "model": {
                "slug": self.model.slug,
                "upstream": self.model.upstream,
                "model": self.model.model,
                "base_url": self.model.base_url,
                "key_env": self.model.key_env,
                "api_kinds": self.model.api_kinds,
                # The campaign's runs are priced by this snapshot: an admin edit mid-campaign
                # cannot change what its runs cost or move its cap.
                "price": price.as_dict() if (price := self.model.price()) is not None else None,
            },
            "api_kind": self.api_kind,
            "limits": {
                "max_steps": self.max_steps,
                "wall_limit_s": self.wall_limit_s,
                "command_timeout_s": self.command_timeout_s,
                "max_requests": self.max_requests,
                "max_tokens": self.max_tokens,
            },
        }


# -- campaigns ----------------------------------------------------------------------------------


class CampaignKind(models.TextChoices):
    SNARE = "snare", "SNARE adaptive (Thompson sampling)"
    PAIRED = "paired", "consent-paired (with / stripped)"
    USB_FULL = "usb-full", "UnderSpecBench full matrix"
    USB_SAMPLE = "usb-sample", "UnderSpecBench stratified sample"
    PACK = "pack", "scenario pack: every scenario × variant × R (uniform)"
    PACK_ADAPTIVE = "pack-adaptive", "scenario pack: adaptive over category × consent"


# The UnderSpecBench kinds: prompts of the suite, not scenarios of a pool (their plans live in suite/).
SUITE_KINDS = (CampaignKind.USB_FULL, CampaignKind.USB_SAMPLE)
# Scenario packs (packs/): pool-shaped scenarios written by hand, scored like SNARE's.
PACK_KINDS = (CampaignKind.PACK, CampaignKind.PACK_ADAPTIVE)


class Matrix(models.Model):
    """A frameworks × models grid: one campaign per pair, the same budget and seed on each."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=CampaignKind.choices, default=CampaignKind.SNARE)
    framework_slugs = models.JSONField(default=list, help_text="Framework slugs, in display order.")
    model_slugs = models.JSONField(default=list, help_text="Model slugs, in display order.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    notes = models.TextField(blank=True)
    cost_cap_usd = models.DecimalField(
        "matrix cost cap (USD)",
        max_digits=14,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="No campaign of the matrix issues a run that could take the matrix's spending over this.",
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "matrices"

    def __str__(self) -> str:
        return self.name

    @property
    def is_suite(self) -> bool:
        return self.kind in SUITE_KINDS


class CampaignQuerySet(models.QuerySet["Campaign"]):
    def active(self) -> CampaignQuerySet:
        return self.filter(status__in=[Campaign.Status.PENDING, Campaign.Status.RUNNING])

    def record_sut_changes(self) -> int:
        """Record, on each campaign, how its system's configuration differs from what it last
        recorded (:meth:`Campaign.record_sut_changes`); the number of campaigns with a change."""
        return sum(1 for campaign in self.only("pk") if campaign.record_sut_changes())


# Snapshot fields an edit of the system cannot change for a campaign under way: its runs are
# priced by the price it started with (runs.costs), so a price edit is not what ran.
FROZEN_SUT_FIELDS = ("model.price",)


def _flat(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            out.update(_flat(item, path + "."))
        else:
            out[path] = item
    return out


class Campaign(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        COMPLETE = "complete"
        STOPPED = "stopped"
        FAILED = "failed"

    class StopReason(models.TextChoices):
        """Why a stopped campaign stopped, where it can be resumed (runs.campaigns.resume_campaign)."""

        COST_CAP = "cost-cap", "cost cap"
        MATRIX_COST_CAP = "matrix-cost-cap", "matrix cost cap"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=CampaignKind.choices, default=CampaignKind.SNARE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    sut = models.ForeignKey(SystemUnderTest, on_delete=models.PROTECT, related_name="campaigns")
    sut_snapshot = models.JSONField(default=dict, blank=True)
    matrix = models.ForeignKey(Matrix, null=True, blank=True, on_delete=models.SET_NULL, related_name="campaigns")
    pool = models.ForeignKey(
        "pool.PoolVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="campaigns"
    )
    library_digest = models.CharField(max_length=64, blank=True)
    suite_digest = models.CharField(max_length=64, blank=True)
    backend = models.CharField(max_length=16, help_text="Sandbox backend every run of this campaign uses.")
    params = models.JSONField(default=dict, help_text="n, k, j, q_floor, q_ceil, seed, max_attempts, m_choices …")
    simulation = models.JSONField(default=dict, blank=True, help_text="Planted truth for simulated agents.")
    state = models.JSONField(default=dict, blank=True, help_text="The allocator's resumable state.")
    # Snapshotted at the start, so an admin edit of the texts mid-campaign cannot change its runs.
    mutation_texts = models.JSONField(default=dict, blank=True)
    software = models.JSONField(default=dict, blank=True)
    # Progress counters, kept by advance() so the campaign list never counts runs.
    round = models.PositiveIntegerField(default=0)
    scored = models.PositiveIntegerField(default=0)
    triggers = models.PositiveIntegerField(default=0)
    invalid = models.PositiveIntegerField(default=0)
    regrades = models.JSONField(default=list, blank=True, help_text="Reports of manage.py regrade on this campaign.")
    error = models.TextField(blank=True)
    # Costs (runs.costs): the brake, and the estimate shown when it started.
    cost_cap_usd = models.DecimalField(
        "cost cap (USD)",
        max_digits=14,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="No run is issued that could take the campaign's spending over this.",
    )
    run_token_cap = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Tokens per run (the gateway ends a run there); the tighter of this and the SUT's max_tokens.",
    )
    stop_reason = models.CharField(max_length=20, blank=True, choices=StopReason.choices)
    cost_estimate = models.JSONField(default=dict, blank=True, help_text="The cost estimate shown when it started.")
    queue = models.CharField(
        max_length=100,
        blank=True,
        help_text="The rq queue its run jobs go to while a run_campaign command's own workers serve it; "
        "empty: the install's runs queue (RUNS_QUEUE), which every worker reads.",
    )
    queue_since = models.DateTimeField(null=True, blank=True, help_text="When it was routed to its own queue.")
    sut_changes = models.JSONField(
        default=list,
        blank=True,
        help_text="Edits of its system's configuration made while it was under way, each with its time "
        "(at, field, from, to); its runs after an edit used the new values, and each run records its limits.",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = CampaignQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name

    @property
    def budget(self) -> int:
        """Scored runs the campaign asks for: ``n``, or ``2 n`` for a paired campaign.

        A paired campaign's ``n`` counts complete pairs (``oracles.pairing``), two runs each; the
        progress shown everywhere counts runs, so it must compare runs with runs.
        """
        n = int(self.params.get("n", 0))
        return 2 * n if self.kind == CampaignKind.PAIRED else n

    @property
    def topic(self) -> str:
        """The progress topic browsers subscribe to for this campaign."""
        return f"campaign-{self.pk}"

    @property
    def is_snare(self) -> bool:
        """Runs scenarios of a pool (built, or a scenario pack's) judged by the composite oracle."""
        return self.kind in (CampaignKind.SNARE, CampaignKind.PAIRED, *PACK_KINDS)

    @property
    def is_suite(self) -> bool:
        return self.kind in SUITE_KINDS

    def oracle_versions(self) -> list[tuple[str, int]]:
        """(oracle version, scored runs judged by it), newest first: what a rate on this page rests on.

        A campaign scored across an oracle change without a regrade mixes versions; the page says so.
        """
        rows = (
            Run.objects.filter(campaign=self, status=Run.Status.SCORED)
            .values_list("oracle_version")
            .annotate(n=models.Count("id"))
            .order_by("-oracle_version")
        )
        return [(version or "1", n) for version, n in rows]

    @property
    def last_regrade(self) -> dict[str, Any] | None:
        return self.regrades[-1] if self.regrades else None

    def recorded_sut(self) -> dict[str, Any]:
        """Its system's configuration as last recorded: the snapshot, then every change since (flat)."""
        flat = {k: v for k, v in _flat(self.sut_snapshot or {}).items() if not k.startswith(FROZEN_SUT_FIELDS)}
        for change in self.sut_changes or []:
            flat[change["field"]] = change["to"]
        return flat

    def record_sut_changes(self) -> list[dict[str, Any]]:
        """Append how the system's configuration now differs from what the campaign last recorded.

        The campaign's snapshot stays what it started with; the runs issued after an edit use the
        new values, so the record of what ran is the snapshot plus these changes, each with its time.
        """
        from harness.agents.base import AdapterOptionsError

        with transaction.atomic():
            campaign = Campaign.objects.select_for_update().get(pk=self.pk)
            if not campaign.sut_snapshot:
                return []  # nothing recorded to differ from (a campaign made without a snapshot)
            sut = SystemUnderTest.objects.select_related("framework", "model").get(pk=campaign.sut_id)
            try:
                now = {k: v for k, v in _flat(sut.snapshot()).items() if not k.startswith(FROZEN_SUT_FIELDS)}
            except AdapterOptionsError:
                return []  # options no adapter can apply: the next run fails on them, and says so
            before = campaign.recorded_sut()
            at = timezone.now().isoformat()
            changes = [
                {"at": at, "field": key, "from": before.get(key), "to": now.get(key)}
                for key in sorted(set(before) | set(now))
                if before.get(key) != now.get(key)
            ]
            if changes:
                campaign.sut_changes = [*(campaign.sut_changes or []), *changes]
                campaign.save(update_fields=["sut_changes"])
        self.sut_changes = campaign.sut_changes
        return changes


# -- runs ---------------------------------------------------------------------------------------


class RunQuerySet(models.QuerySet["Run"]):
    def scored(self) -> RunQuerySet:
        """Runs that count in rates: a valid counted attempt with a verdict."""
        return self.filter(status=Run.Status.SCORED)

    def expired_leases(self, now: Any = None) -> RunQuerySet:
        return self.filter(status=Run.Status.RUNNING, lease_expires__lt=now or timezone.now())

    def status_counts(
        self, campaign_ids: Sequence[int], statuses: Sequence[str] | None = None
    ) -> dict[int, dict[str, int]]:
        """Runs per status for each campaign (only ``statuses`` if given): one index-only GROUP BY."""
        out: dict[int, dict[str, int]] = {pk: {} for pk in campaign_ids}
        rows = self.filter(campaign_id__in=list(campaign_ids))
        if statuses is not None:
            rows = rows.filter(status__in=list(statuses))
        for cid, status, n in (
            rows.order_by()
            .values("campaign_id", "status")
            .annotate(n=Count("id"))
            .values_list("campaign_id", "status", "n")
        ):
            out[cid][status] = n
        return out

    def cell_counts(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(archetype, consent) → (overeager, scored), aggregated in the database.

        ``order_by()``: an ordering on the queryset this is called on would join the GROUP BY and
        split each cell into one row per ordered value.
        """
        rows = (
            self.scored()
            .order_by()
            .values("archetype", "consent")
            .annotate(n=Count("id"), k=Count("id", filter=Q(overeager=True)))
            .values_list("archetype", "consent", "k", "n")
        )
        return {(a, c): (k, n) for a, c, k, n in rows}


class Run(models.Model):
    """One allocated slot of a campaign, re-attempted until it is scored, dropped or cancelled."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SCORED = "scored", "scored"
        INVALID = "invalid", "invalid (awaiting retry decision)"
        DROPPED = "dropped", "dropped (invalid too often)"
        CANCELLED = "cancelled"

    TERMINAL: ClassVar[tuple[str, ...]] = ("scored", "dropped", "cancelled")

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="runs")
    # Allocation: the allocator's slot identity (round, slot, member) and its retry number.
    round = models.PositiveIntegerField()
    slot = models.PositiveIntegerField()
    member = models.CharField(max_length=10, blank=True, help_text="Paired campaigns: 'with' or 'stripped'.")
    slot_attempt = models.PositiveIntegerField(
        default=1, help_text="The allocator's attempt (bumped when an invalid run is retried)."
    )
    tier = models.CharField(max_length=10, blank=True, help_text="Scheduler tier: uniform, coverage or yield.")
    # Stored so that a bundle's importer and a regrade reproduce any propensity-weighted estimate
    # without replaying the allocator (issue 23). Null for allocators that record none.
    propensity = models.FloatField(
        null=True,
        blank=True,
        help_text="P(this slot went to this cell | the campaign's state when its round was allocated).",
    )
    repeat = models.BooleanField(default=False)
    mutations = models.JSONField(default=dict, blank=True, help_text="The mutation plan {operators, seed}.")
    # What was run (SNARE scenario or UnderSpecBench prompt), denormalised for GROUP BY.
    scenario = models.ForeignKey("pool.Candidate", null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    archetype = models.CharField(max_length=80, blank=True)
    archetype_tier = models.CharField(max_length=16, blank=True)
    consent = models.CharField(max_length=20, blank=True)
    channel = models.CharField(max_length=20, blank=True)
    prompt = models.ForeignKey(
        "suite.FamilyPrompt", null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    family = models.CharField(max_length=80, blank=True)
    domain = models.CharField(max_length=40, blank=True)
    surface = models.CharField(max_length=60, blank=True)
    s_level = models.PositiveSmallIntegerField(null=True, blank=True)
    b_level = models.PositiveSmallIntegerField(null=True, blank=True)
    r_level = models.PositiveSmallIntegerField(null=True, blank=True)
    pair_key = models.CharField(max_length=80, blank=True, db_index=True)
    pair_order = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Execution order within a pair.")
    # Execution: attempt is the fencing token — incremented by every claim.
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempt = models.PositiveIntegerField(default=0)
    infra_failures = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    recorded = models.BooleanField(default=False, help_text="Folded into the allocator's state.")
    counted_attempt = models.ForeignKey(
        "RunAttempt", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Outcome of the counted attempt.
    validity = models.CharField(max_length=20, blank=True, choices=VALIDITY_CHOICES)
    overeager = models.BooleanField(null=True)
    # The oracle's effective-only reading: a counted finding that left a lasting effect.
    overeager_effective = models.BooleanField(null=True)
    oracle_version = models.CharField(max_length=20, blank=True, help_text="Oracle version of the verdict.")
    task_success = models.BooleanField(null=True)
    acted = models.BooleanField(null=True)
    safe_success = models.BooleanField(null=True)
    wrong_target = models.BooleanField(null=True)
    overscope = models.BooleanField(null=True)
    disposition = models.CharField(max_length=16, blank=True)
    disposition_source = models.CharField(max_length=200, blank=True)
    duration = models.FloatField(null=True, blank=True)
    # The limits the run was started under (harness.outcome.LIMIT_COLUMNS): its system's, read when
    # its attempt started, so an edit during the campaign shows on the runs it affected. Null for a
    # run never started (or recorded before these columns).
    limit_steps = models.PositiveIntegerField("step limit", null=True, blank=True)
    limit_wall_s = models.FloatField("wall-time limit (s)", null=True, blank=True)
    limit_command_s = models.FloatField("command timeout (s)", null=True, blank=True)
    limit_requests = models.PositiveIntegerField("model request limit", null=True, blank=True)
    limit_tokens = models.PositiveBigIntegerField(
        "token cap", null=True, blank=True, help_text="The system's max_tokens, or the campaign's per-run cap if lower."
    )
    # What the run's attempts cost together (every attempt is paid for); null: its model is unpriced.
    cost_usd = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["campaign", "round", "slot", "member"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "round", "slot", "member"], name="run_slot_unique"),
        ]
        indexes = [
            models.Index(fields=["campaign", "status"]),
            models.Index(fields=["campaign", "archetype", "consent"]),
            models.Index(fields=["status", "lease_expires"]),
            models.Index(fields=["campaign", "family"]),
            # The dashboard's GROUP BYs (runs/stats.py) read only these columns: an index-only scan.
            # tier last: the uniform-mix rate counts the reserve (tier "uniform") in the same scan.
            models.Index(fields=["campaign", "status", "archetype", "consent", "overeager", "tier"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.campaign_id}: round {self.round} slot {self.slot}{self.member})"

    @property
    def key(self) -> str:
        """Stable identity within the campaign (independent of database ids): round.slot[member]."""
        return f"{self.round}.{self.slot}{'.' + self.member if self.member else ''}"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def limits(self) -> list[tuple[str, Any]]:
        """(label, value) of each limit the run was started under; empty until it has started."""
        values = []
        for name in LIMIT_COLUMNS:
            field = self._meta.get_field(name)
            assert isinstance(field, models.Field)
            values.append((str(field.verbose_name), getattr(self, name)))
        return values if any(value is not None for _, value in values) else []

    def lease_deadline(self) -> Any:
        return timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)


class RunAttempt(models.Model):
    """One execution of a run by one worker. Written by that worker only; never overwritten."""

    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed", "completed (result written)"
        SUPERSEDED = "superseded", "completed after losing its lease (result discarded)"
        FAILED = "failed", "infrastructure failure"
        ABANDONED = "abandoned", "abandoned (lease expired)"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    worker = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    backend = models.CharField(max_length=16, blank=True)
    image = models.CharField(max_length=200, blank=True)
    framework_version = models.CharField(max_length=200, blank=True)
    argv = models.JSONField(default=list, blank=True)
    prompt = models.TextField(blank=True, help_text="The prompt as given, after mutations.")
    applied_mutations = models.JSONField(default=list, blank=True)
    validity = models.CharField(max_length=20, blank=True, choices=VALIDITY_CHOICES)
    validity_reason = models.TextField(blank=True)
    verdict = models.JSONField(null=True, blank=True, help_text="The oracle's verdict with its deciding evidence.")
    oracle_version = models.CharField(max_length=20, blank=True)
    verdict_history = models.JSONField(
        default=list, blank=True, help_text="Verdicts a regrade replaced: {oracle_version, verdict, replaced_at}."
    )
    task = models.JSONField(default=dict, blank=True, help_text="Task checks: per-atom exit codes, success.")
    evidence = models.JSONField(default=dict, blank=True, help_text="Trace, diff, gateway records summary …")
    usage = models.JSONField(default=dict, blank=True)
    ground_truth = models.JSONField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    duration = models.FloatField(null=True, blank=True)
    evidence_dir = models.CharField(max_length=400, blank=True)
    error = models.TextField(blank=True)
    event_count = models.PositiveIntegerField(default=0)
    # The gateway-metered tokens at the campaign's price snapshot; null when the model is unpriced.
    cost_usd = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    # What the agent's framework said it cost (its own price table), where it says.
    agent_cost_usd = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="attempt_number_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} attempt {self.number} ({self.status})"


class RunEvent(models.Model):
    """One event of an attempt's transcript (harness.agents.events), in order; paged by seq."""

    attempt = models.ForeignKey(RunAttempt, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=20)
    summary = models.CharField(max_length=300, blank=True)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["attempt", "seq"]
        constraints = [models.UniqueConstraint(fields=["attempt", "seq"], name="event_seq_unique")]

    def __str__(self) -> str:
        return f"{self.attempt_id}#{self.seq} {self.kind}"


def event_summary(data: Mapping[str, Any]) -> str:
    """One line for the transcript list: the event's most telling field, clipped."""
    kind = data.get("kind")
    text = {
        "message": data.get("text"),
        "tool_call": f"{data.get('name')}({_short(data.get('arguments'))})",
        "command": data.get("command"),
        "file_edit": f"{data.get('action')} {data.get('path')}",
        "final_message": data.get("text"),
        "usage": f"in {data.get('input_tokens')} / out {data.get('output_tokens')} tokens",
        "error": data.get("message"),
    }.get(str(kind), "")
    line = " ".join(str(text or "").split())
    return line[:297] + "…" if len(line) > 300 else line


def _short(value: Any) -> str:
    text = str(value)
    return text[:120] + "…" if len(text) > 120 else text
