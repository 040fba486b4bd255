"""Non-action labels: the machine's (judge or fallback), the validators' (blind), the curators' (adjudication).

A run in which the agent took no action (``Run.acted = False``) gets a disposition —
clarification, refusal, deferment or empty — from three kinds of label, each kept in its own
table so no label ever overwrites another:

* ``JudgeLabel`` — one per (run, source): the LLM judge (``judge:<model>:<prompt version>``) or
  the deterministic fallback (``fallback:<version>``). The unique pair is the judge's cache.
* ``HumanLabel`` — one per (run, validator), given blind through a ``ValidationQueue``; adds
  ``unclear``. A validator may revise their own label; the row keeps ``created`` and ``updated``.
* ``Adjudication`` — a curator's ruling, every change a new row (the history); the latest wins,
  and a latest row with a blank label withdraws the ruling.

The rule that picks the reported label (``oracles.agreement.final_label``): adjudicated > human
majority > judge > fallback. ``LabelSummary`` holds its inputs and result per run and
``Run.disposition``/``disposition_source`` the result, both kept by ``labels.disposition.refresh``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from oracles.agreement import DISPOSITIONS, LABELS
from runs.models import Campaign, Run

DISPOSITION_CHOICES = [(d, d) for d in DISPOSITIONS]
LABEL_CHOICES = [(label, label) for label in LABELS]
PRECEDENCE_RULE = "adjudicated > human majority > judge > fallback"
PRECEDENCE_TEXT = (
    "Reported dispositions use the adjudicated label when a curator set one, else the validators' majority "
    "(unclear abstains, a tie is no majority), else the LLM judge's label, else the fallback classifier's."
)


class JudgeLabel(models.Model):
    """A machine label of a non-action run: the LLM judge's or the fallback classifier's."""

    class Kind(models.TextChoices):
        JUDGE = "judge", "LLM judge"
        FALLBACK = "fallback", "fallback classifier"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="judge_labels")
    source = models.CharField(max_length=200, help_text="judge:<model>:<prompt version> or fallback:<version>.")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    label = models.CharField(max_length=16, choices=DISPOSITION_CHOICES)
    rationale = models.TextField(blank=True)
    raw = models.JSONField(
        default=dict, blank=True, help_text="The judge's answer (text, response id, model, usage) for audit."
    )
    judge_error = models.TextField(
        blank=True, help_text="On a fallback label: why the configured judge failed (the next pass retries it)."
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "-created", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "source"], name="judgelabel_run_source_unique"),
            models.CheckConstraint(condition=Q(label__in=DISPOSITIONS), name="judgelabel_label_valid"),
            models.CheckConstraint(condition=Q(kind__in=["judge", "fallback"]), name="judgelabel_kind_valid"),
        ]
        indexes = [models.Index(fields=["source"])]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.label} ({self.source})"


class ValidationQueue(models.Model):
    """A fixed, ordered sample of non-action runs for validators to label blind.

    The sample is drawn once, when the queue is created (``labels.queues.build``), from the scored
    runs with ``acted = False`` of the chosen campaigns (all campaigns when none is chosen). Its
    parameters are then frozen: a different sample is a new queue.
    """

    class Stratify(models.TextChoices):
        NONE = "none", "no stratification"
        SYSTEM = "system", "by system (framework × model)"
        AXES = "axes", "by axis levels (S × B × R)"
        SYSTEM_AXES = "system+axes", "by system and axis levels"

    class Allocation(models.TextChoices):
        PROPORTIONAL = "proportional", "proportional to the stratum's size"
        EQUAL = "equal", "equal per stratum"

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    campaigns = models.ManyToManyField(
        Campaign, blank=True, related_name="validation_queues", help_text="Leave empty for every campaign."
    )
    stratify = models.CharField(max_length=16, choices=Stratify.choices, default=Stratify.NONE)
    allocation = models.CharField(max_length=16, choices=Allocation.choices, default=Allocation.PROPORTIONAL)
    size = models.PositiveIntegerField(null=True, blank=True, help_text="Runs in the queue; empty = every candidate.")
    overlap = models.PositiveSmallIntegerField(
        default=2, help_text="Labels wanted for each overlapping run (for inter-validator agreement)."
    )
    overlap_share = models.FloatField(
        default=0.2, help_text="Share of the queue's runs (0–1) that want `overlap` labels; the rest want one."
    )
    seed = models.PositiveIntegerField(default=1, help_text="Seeds the sample and its order (reproducible).")
    active = models.BooleanField(default=True, help_text="Inactive queues are not offered to validators.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1) & Q(overlap__lte=10), name="queue_overlap_range"),
            models.CheckConstraint(
                condition=Q(overlap_share__gte=0.0) & Q(overlap_share__lte=1.0), name="queue_overlap_share_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class QueueItem(models.Model):
    queue = models.ForeignKey(ValidationQueue, on_delete=models.CASCADE, related_name="items")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="queue_items")
    position = models.PositiveIntegerField()
    wanted = models.PositiveSmallIntegerField(default=1, help_text="Labels wanted for this run.")
    stratum = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["queue", "position"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "run"], name="queueitem_run_unique"),
            models.UniqueConstraint(fields=["queue", "position"], name="queueitem_position_unique"),
            models.CheckConstraint(condition=Q(wanted__gte=1), name="queueitem_wanted_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.queue_id}#{self.position}: run {self.run_id}"


class Assignment(models.Model):
    """A queue item served to a validator: a claim while they label it, or a skip.

    A fresh unlabelled, unskipped assignment holds one of the item's wanted labels for
    ``LABEL_CLAIM_SECONDS``, so two validators are not both given the last slot of a run; a
    stale one frees it again. A skip is kept here rather than as a label row, so every
    ``HumanLabel`` is a label the agreement statistics can use and skipping never counts as one.
    """

    item = models.ForeignKey(QueueItem, on_delete=models.CASCADE, related_name="assignments")
    validator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    served_at = models.DateTimeField(default=timezone.now)
    skipped = models.BooleanField(default=False)
    done = models.BooleanField(default=False, help_text="The validator labelled the run.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "validator"], name="assignment_unique")]
        indexes = [models.Index(fields=["item", "skipped", "done", "served_at"])]

    def __str__(self) -> str:
        return f"item {self.item_id} → {self.validator_id}"


class HumanLabel(models.Model):
    """A validator's blind label of a non-action run; one per validator per run (the database says so)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="human_labels")
    # PROTECT: deleting an account must not delete the labels the agreement figures rest on.
    validator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="disposition_labels")
    queue = models.ForeignKey(ValidationQueue, null=True, blank=True, on_delete=models.SET_NULL, related_name="labels")
    label = models.CharField(max_length=16, choices=LABEL_CHOICES)
    note = models.TextField(blank=True, max_length=2000)
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "validator"]
        constraints = [
            models.UniqueConstraint(fields=["run", "validator"], name="humanlabel_one_per_validator"),
            models.CheckConstraint(condition=Q(label__in=LABELS), name="humanlabel_label_valid"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.label} by {self.validator_id}"


class Adjudication(models.Model):
    """A curator's ruling on a run's disposition; never edited — a change is a new row."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="adjudications")
    label = models.CharField(
        max_length=16,
        choices=[("", "— withdraw the adjudication —"), *DISPOSITION_CHOICES],
        blank=True,
        help_text="Blank withdraws an earlier ruling (the human majority or the judge applies again).",
    )
    reason = models.TextField(help_text="Why: what in the transcript decides it.")
    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications")
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "-created", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(label__in=["", *DISPOSITIONS]), name="adjudication_label_valid"),
            models.CheckConstraint(condition=~Q(reason=""), name="adjudication_reason_required"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.label or 'withdrawn'} by {self.curator_id}"


class LabelSummary(models.Model):
    """Per run: the inputs of the precedence rule and its result, for filters and GROUP BY.

    Written only by ``labels.disposition.refresh`` (under a lock on the run), never by hand.
    ``review`` says how the humans and the machine relate, so the curator's disagreement filter
    is one indexed column.
    """

    class Review(models.TextChoices):
        NO_HUMAN = "no-human", "no human label yet"
        AGREE = "agree", "judge = human majority"
        DISAGREE = "disagree", "judge ≠ human majority"
        TIE = "tie", "validators tied (no majority)"
        UNCLEAR = "unclear", "validators said unclear"
        NO_MACHINE = "no-machine", "human labels, no machine label"

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="label_summary")
    machine_label = models.CharField(max_length=16, blank=True)
    machine_source = models.CharField(max_length=200, blank=True)
    human_count = models.PositiveSmallIntegerField(default=0)
    human_votes = models.JSONField(default=dict, blank=True, help_text="Label → number of validators.")
    human_majority = models.CharField(max_length=16, blank=True)
    adjudicated = models.CharField(max_length=16, blank=True)
    final_label = models.CharField(max_length=16, blank=True)
    final_source = models.CharField(max_length=200, blank=True)
    review = models.CharField(max_length=12, choices=Review.choices, default=Review.NO_HUMAN, db_index=True)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "label summaries"

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.final_label or '—'} ({self.final_source or 'unlabelled'})"


class ReviewRun(Run):
    """Non-action runs as curators review them in the admin (a proxy: no table of its own)."""

    class Meta:
        proxy = True
        verbose_name = "non-action run to review"
        verbose_name_plural = "non-action runs to review"


# -- verdict validation ---------------------------------------------------------------------------
#
# The same three-table split for the oracle's overeager verdicts: the oracle's verdict (on the
# run's counted attempt, snapshotted on the queue item when the sample is drawn), the
# validators' blind ``VerdictLabel`` rows, and the curators' ``VerdictAdjudication`` rows.

VERDICT_STRATA = ("verdict", "leg", "effect", "archetype", "consent")
EFFECT_CHOICES = [("effective", "effective"), ("attempted", "only attempted")]


class VerdictQueue(models.Model):
    """A fixed, ordered, stratified sample of scored runs whose oracle verdicts validators check blind.

    The sample is drawn once (``labels.verdicts.build``) from the scored runs with a verdict of
    the chosen campaigns, stratified by any of ``VERDICT_STRATA``. Each item records its sampling
    weight (stratum size / items drawn from it) so agreement extrapolates to the campaigns.
    """

    Allocation = ValidationQueue.Allocation

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    campaigns = models.ManyToManyField(
        Campaign, blank=True, related_name="verdict_queues", help_text="Leave empty for every campaign."
    )
    stratify = models.JSONField(
        default=list, blank=True, help_text=f"Strata dimensions, any of: {', '.join(VERDICT_STRATA)}."
    )
    allocation = models.CharField(
        max_length=16, choices=ValidationQueue.Allocation.choices, default=ValidationQueue.Allocation.EQUAL
    )
    size = models.PositiveIntegerField(null=True, blank=True, help_text="Runs in the queue; empty = every candidate.")
    overlap = models.PositiveSmallIntegerField(default=2, help_text="Labels wanted for each overlapping run.")
    overlap_share = models.FloatField(default=0.2, help_text="Share of the runs (0–1) that want `overlap` labels.")
    seed = models.PositiveIntegerField(default=1)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1) & Q(overlap__lte=10), name="verdictqueue_overlap_range"),
            models.CheckConstraint(
                condition=Q(overlap_share__gte=0.0) & Q(overlap_share__lte=1.0), name="verdictqueue_overlap_share_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class VerdictQueueItem(models.Model):
    """A run of a verdict queue, with the oracle's verdict as it stood when the sample was drawn.

    The ``oracle_*`` fields are what validators are blind to (``overeager.blind``); agreement is
    computed against them, so a later regrade does not silently change what was audited.
    """

    queue = models.ForeignKey(VerdictQueue, on_delete=models.CASCADE, related_name="items")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="verdict_items")
    position = models.PositiveIntegerField()
    wanted = models.PositiveSmallIntegerField(default=1)
    stratum = models.CharField(max_length=300, blank=True)
    weight = models.FloatField(default=1.0, help_text="Sampling weight: runs of the stratum / runs drawn from it.")
    oracle_version = models.CharField(max_length=20, blank=True)
    oracle_overeager = models.BooleanField()
    oracle_effective = models.BooleanField()
    oracle_leg = models.CharField(max_length=16, help_text="Deciding leg: trap, overreach, unsolicited or none.")

    class Meta:
        ordering = ["queue", "position"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "run"], name="verdictitem_run_unique"),
            models.UniqueConstraint(fields=["queue", "position"], name="verdictitem_position_unique"),
            models.CheckConstraint(condition=Q(wanted__gte=1), name="verdictitem_wanted_positive"),
            models.CheckConstraint(condition=Q(weight__gt=0), name="verdictitem_weight_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.queue_id}#{self.position}: run {self.run_id}"


class VerdictAssignment(models.Model):
    """A verdict item served to a validator: a claim while they label it, or a skip (as ``Assignment``)."""

    item = models.ForeignKey(VerdictQueueItem, on_delete=models.CASCADE, related_name="assignments")
    validator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    served_at = models.DateTimeField(default=timezone.now)
    skipped = models.BooleanField(default=False)
    done = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "validator"], name="verdictassignment_unique")]
        indexes = [models.Index(fields=["item", "skipped", "done", "served_at"])]

    def __str__(self) -> str:
        return f"verdict item {self.item_id} → {self.validator_id}"


class VerdictLabel(models.Model):
    """A validator's blind judgement of a run: did the agent overstep, by which act, with what effect."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="verdict_labels")
    # PROTECT, as for HumanLabel: the agreement figures rest on these rows.
    validator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="verdict_labels")
    queue = models.ForeignKey(VerdictQueue, null=True, blank=True, on_delete=models.SET_NULL, related_name="labels")
    overstepped = models.BooleanField()
    act = models.CharField(
        max_length=400,
        blank=True,
        help_text="The act picked from the evidence: command[i], a changed path, request[i].",
    )
    act_text = models.TextField(blank=True, help_text="What the picked act showed, as the validator saw it.")
    effect = models.CharField(max_length=10, blank=True, choices=EFFECT_CHOICES)
    category = models.CharField(max_length=40, blank=True)
    note = models.TextField(blank=True, max_length=2000)
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "validator"]
        constraints = [
            models.UniqueConstraint(fields=["run", "validator"], name="verdictlabel_one_per_validator"),
            models.CheckConstraint(condition=Q(effect__in=["", "effective", "attempted"]), name="verdictlabel_effect"),
            # "did not overstep" names no act and no effect.
            models.CheckConstraint(
                condition=Q(overstepped=True) | (Q(effect="") & Q(act="")), name="verdictlabel_no_act_when_no"
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id}: {'overstepped' if self.overstepped else 'did not'} by {self.validator_id}"


class VerdictAdjudication(models.Model):
    """A curator's ruling on a run's verdict; never edited — a change is a new row, the latest wins."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="verdict_adjudications")
    overstepped = models.BooleanField()
    effect = models.CharField(max_length=10, blank=True, choices=EFFECT_CHOICES)
    reason = models.TextField(help_text="Why: what in the evidence decides it.")
    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="verdict_rulings")
    oracle_version = models.CharField(max_length=20, blank=True, help_text="The oracle version the ruling was on.")
    exported_to = models.CharField(max_length=400, blank=True, help_text="The regression case file, once exported.")
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "-created", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="verdictadjudication_reason_required"),
            models.CheckConstraint(
                condition=Q(effect__in=["", "effective", "attempted"]), name="verdictadjudication_effect"
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id}: {'overstepped' if self.overstepped else 'did not'} by {self.curator_id}"
