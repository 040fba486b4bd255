"""Admin for non-action labels: queues (curators build them), the label records (read-only), and the
curator review of non-action runs — filter where the judge and the validators disagree, and set
an adjudicated label with a reason. Every ruling is a new ``Adjudication`` row (the history); the
latest wins. The precedence rule is stated on every page that shows a reported label.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from labels import queues
from labels.disposition import refresh
from labels.models import (
    PRECEDENCE_RULE,
    PRECEDENCE_TEXT,
    Adjudication,
    HumanLabel,
    JudgeLabel,
    LabelSummary,
    ReviewRun,
    ValidationQueue,
    VerdictAdjudication,
    VerdictLabel,
    VerdictQueue,
)
from overeager.blind import BlindAdmin, BlindFieldsMixin
from runs.models import Run

RULE_SUBTITLE = f"Reported label: {PRECEDENCE_RULE}. {PRECEDENCE_TEXT}"


class ReadOnlyAdmin(BlindAdmin):
    """Label records the system and the validators write: viewable, never edited here (and never
    by a validator-only account, whatever its permissions: BlindAdmin, BLIND_MODELS)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(JudgeLabel)
class JudgeLabelAdmin(ReadOnlyAdmin):
    list_display = ("run", "label", "source", "kind", "created", "failed")
    list_filter = ("kind", "label", "source")
    search_fields = ("source", "rationale", "run__campaign__name")
    list_select_related = ("run",)
    readonly_fields = ("run", "source", "kind", "label", "rationale", "raw", "judge_error", "created")

    @admin.display(boolean=True, description="judge failed")
    def failed(self, obj: JudgeLabel) -> bool:
        return bool(obj.judge_error)


@admin.register(HumanLabel)
class HumanLabelAdmin(ReadOnlyAdmin):
    list_display = ("run", "validator", "label", "queue", "updated")
    list_filter = ("label", "queue", "validator")
    search_fields = ("note", "validator__username", "run__campaign__name")
    list_select_related = ("run", "validator", "queue")


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin):
    """The history of rulings; rulings are made on the review page of a run."""

    list_display = ("run", "shown_label", "curator", "created", "review_link")
    list_filter = ("label", "curator")
    search_fields = ("reason", "curator__username")
    list_select_related = ("run", "curator")

    @admin.display(description="label")
    def shown_label(self, obj: Adjudication) -> str:
        return obj.label or "(withdrawn)"

    @admin.display(description="review")
    def review_link(self, obj: Adjudication) -> str:
        return format_html('<a href="{}">open</a>', reverse("admin:labels_reviewrun_change", args=[obj.run_id]))


# -- queues ---------------------------------------------------------------------------------------


class ValidationQueueForm(forms.ModelForm):
    class Meta:
        model = ValidationQueue
        fields = (
            "name",
            "description",
            "active",
            "campaigns",
            "stratify",
            "allocation",
            "size",
            "overlap",
            "overlap_share",
            "seed",
        )

    def clean_overlap(self) -> int:
        value = int(self.cleaned_data["overlap"])
        if not 1 <= value <= 10:
            raise forms.ValidationError("between 1 (no overlap) and 10 labels per overlapping run")
        return value

    def clean_overlap_share(self) -> float:
        value = float(self.cleaned_data["overlap_share"])
        if not 0.0 <= value <= 1.0:
            raise forms.ValidationError("a share between 0 and 1 (0.2 = one run in five gets several labels)")
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.instance.pk is None and "campaigns" in data:
            runs = Run.objects.filter(status=Run.Status.SCORED, acted=False)
            if data["campaigns"]:
                runs = runs.filter(campaign__in=data["campaigns"])
            if not runs.exists():
                raise forms.ValidationError(
                    "These campaigns have no scored non-action runs (acted = false) to validate; "
                    "choose other campaigns or wait for runs."
                )
        return data


@admin.register(ValidationQueue)
class ValidationQueueAdmin(BlindAdmin):
    form = ValidationQueueForm
    list_display = ("name", "active", "stratify", "size_display", "overlap_display", "progress_display", "created")
    list_filter = ("active", "stratify")
    search_fields = ("name", "description")
    filter_horizontal = ("campaigns",)
    # The sample is drawn once; a different sample is a new queue.
    frozen = ("campaigns", "stratify", "allocation", "size", "overlap", "overlap_share", "seed")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (*self.frozen, "created_by", "created", "strata") if obj is not None else ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(ValidationQueueForm.Meta.fields)
        return [*fields, "created_by", "created", "strata"] if obj is not None else fields

    @admin.display(description="runs")
    def size_display(self, obj: ValidationQueue) -> int:
        return obj.items.count()

    @admin.display(description="overlap")
    def overlap_display(self, obj: ValidationQueue) -> str:
        n = obj.items.filter(wanted__gt=1).count()
        return f"{n} × {obj.overlap} labels" if n else "none"

    @admin.display(description="labels given / wanted")
    def progress_display(self, obj: ValidationQueue) -> str:
        p = queues.progress(obj)
        return f"{p.labels_given} / {p.labels_wanted}"

    @admin.display(description="strata (runs per stratum)")
    def strata(self, obj: ValidationQueue) -> str:
        from django.db.models import Count

        rows = obj.items.values("stratum").annotate(n=Count("pk")).order_by("stratum")
        return format_html_join(", ", "{} ({})", ((r["stratum"] or "all", r["n"]) for r in rows)) or "—"

    def save_model(self, request: HttpRequest, obj: ValidationQueue, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        if not change:
            try:
                count = queues.build(form.instance)
            except queues.QueueError as exc:
                # clean() checked for candidates; runs can vanish in between. An empty queue is
                # closed, never offered to validators.
                ValidationQueue.objects.filter(pk=form.instance.pk).update(active=False)
                messages.error(request, f"Queue {form.instance.name!r} was closed: {exc}")
                return
            messages.info(request, f"Queue {form.instance.name!r}: {count} runs sampled.")


# -- curator review -------------------------------------------------------------------------------


class ReviewFilter(admin.SimpleListFilter):
    title = "judge vs validators"
    parameter_name = "review"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return LabelSummary.Review.choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        if value == LabelSummary.Review.NO_HUMAN:
            return queryset.filter(Q(label_summary__isnull=True) | Q(label_summary__review=value))
        return queryset.filter(label_summary__review=value)


class AdjudicatedFilter(admin.SimpleListFilter):
    title = "adjudicated"
    parameter_name = "adjudicated"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return (("yes", "yes"), ("no", "no"))

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.exclude(label_summary__adjudicated="").filter(label_summary__isnull=False)
        if self.value() == "no":
            return queryset.filter(Q(label_summary__isnull=True) | Q(label_summary__adjudicated=""))
        return queryset


class AdjudicationFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        current = (
            Adjudication.objects.filter(run_id=self.instance.pk)
            .order_by("-created", "-id")
            .values_list("label", flat=True)
            .first()
        )
        for form in self.forms:
            if form.instance.pk is not None or not form.has_changed() or not form.cleaned_data:
                continue
            if not form.cleaned_data.get("label") and not current:
                form.add_error("label", "There is no adjudicated label to withdraw; choose a label.")


class AdjudicationInline(BlindFieldsMixin, admin.TabularInline):
    """The run's rulings, newest first (read-only), and one blank row to add the next ruling."""

    model = Adjudication
    formset = AdjudicationFormSet
    fk_name = "run"
    extra = 1
    fields = ("label", "reason", "curator", "created")
    readonly_fields = ("curator", "created")
    can_delete = False
    verbose_name = "adjudication"
    verbose_name_plural = "adjudications (history — the newest applies; add a row to change the ruling)"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a ruling is never edited: the next one is a new row

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("labels.add_adjudication")


@admin.register(ReviewRun)
class ReviewRunAdmin(BlindAdmin):
    """Non-action runs with their machine, human and adjudicated labels; the place to rule on one."""

    # Every column of it is a label: closed to a validator-only account even if a group grants it.
    blind_entirely = True

    list_display = (
        "pk",
        "campaign",
        "system",
        "task",
        "machine",
        "humans",
        "majority",
        "adjudicated",
        "reported",
        "review_state",
    )
    list_filter = (ReviewFilter, AdjudicatedFilter, "disposition", "campaign__kind", "campaign")
    search_fields = ("campaign__name", "family", "archetype")
    list_select_related = ("campaign__sut__framework", "campaign__sut__model", "label_summary")
    list_per_page = 50
    inlines = [AdjudicationInline]
    fieldsets = (
        (None, {"fields": ("run_link", "campaign", "system", "task"), "description": RULE_SUBTITLE}),
        ("The run", {"fields": ("prompt", "final_message")}),
        ("Labels", {"fields": ("machine_detail", "human_detail", "reported")}),
    )
    readonly_fields = (
        "run_link",
        "campaign",
        "system",
        "task",
        "prompt",
        "final_message",
        "machine_detail",
        "human_detail",
        "reported",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).filter(status=Run.Status.SCORED, acted=False)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        return super().changelist_view(request, {**(extra_context or {}), "subtitle": RULE_SUBTITLE})

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), "subtitle": RULE_SUBTITLE})

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # The run itself is never edited here; saving it would rewrite every column of a row
        # workers and the allocator also update.
        return None

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        instances = formset.save(commit=False)
        for ruling in instances:
            ruling.curator = request.user
            ruling.save()
        if instances:
            refresh([form.instance.pk])
            reported = self.reported(Run.objects.select_related("label_summary").get(pk=form.instance.pk))
            messages.info(request, f"Adjudication recorded; the run is now reported as {reported}.")

    # columns -----------------------------------------------------------------------------------

    def _summary(self, obj: Run) -> LabelSummary | None:
        return getattr(obj, "label_summary", None)

    @admin.display(description="run")
    def run_link(self, obj: Run) -> str:
        return format_html('{} · <a href="{}">run page</a>', obj.pk, reverse("run-detail", args=[obj.pk]))

    @admin.display(description="system")
    def system(self, obj: Run) -> str:
        return str(obj.campaign.sut)

    @admin.display(description="task")
    def task(self, obj: Run) -> str:
        if obj.family:
            levels = " ".join(
                f"{a}{v}" for a, v in (("S", obj.s_level), ("B", obj.b_level), ("R", obj.r_level)) if v is not None
            )
            return f"{obj.family} {levels}".strip()
        return f"{obj.archetype} / {obj.consent}".strip(" /")

    @admin.display(description="machine label")
    def machine(self, obj: Run) -> str:
        s = self._summary(obj)
        return f"{s.machine_label} ({s.machine_source})" if s and s.machine_label else "—"

    @admin.display(description="validators")
    def humans(self, obj: Run) -> str:
        s = self._summary(obj)
        if not s or not s.human_votes:
            return "—"
        return ", ".join(f"{label} ×{n}" if n > 1 else label for label, n in sorted(s.human_votes.items()))

    @admin.display(description="majority")
    def majority(self, obj: Run) -> str:
        s = self._summary(obj)
        return s.human_majority if s and s.human_majority else "—"

    @admin.display(description="adjudicated")
    def adjudicated(self, obj: Run) -> str:
        s = self._summary(obj)
        return s.adjudicated if s and s.adjudicated else "—"

    @admin.display(description=f"reported ({PRECEDENCE_RULE})")
    def reported(self, obj: Run) -> str:
        s = self._summary(obj)
        if s and s.final_label:
            return f"{s.final_label} ← {s.final_source}"
        return f"{obj.disposition} ← {obj.disposition_source}" if obj.disposition else "unlabelled"

    @admin.display(description="judge vs validators")
    def review_state(self, obj: Run) -> str:
        s = self._summary(obj)
        return s.get_review_display() if s else LabelSummary.Review.NO_HUMAN.label

    @admin.display(description="prompt")
    def prompt(self, obj: Run) -> str:
        attempt = obj.counted_attempt
        return format_html('<pre class="prompt">{}</pre>', attempt.prompt if attempt else "")

    @admin.display(description="final message")
    def final_message(self, obj: Run) -> str:
        from labels.views import _final_message

        return format_html('<pre class="prompt">{}</pre>', _final_message(obj) or "(none)")

    @admin.display(description="machine labels")
    def machine_detail(self, obj: Run) -> str:
        rows = JudgeLabel.objects.filter(run_id=obj.pk).order_by("-created")
        return (
            format_html_join(
                "",
                "<p><strong>{}</strong> — {} <span style='color:#5c6670'>({}, {})</span>{}</p>",
                (
                    (
                        j.label,
                        j.rationale,
                        j.source,
                        j.created.strftime("%Y-%m-%d %H:%M"),
                        format_html(" <em>judge failed: {}</em>", j.judge_error) if j.judge_error else "",
                    )
                    for j in rows
                ),
            )
            or "—"
        )

    @admin.display(description="validator labels")
    def human_detail(self, obj: Run) -> str:
        rows = HumanLabel.objects.filter(run_id=obj.pk).select_related("validator").order_by("created")
        return (
            format_html_join(
                "",
                "<p><strong>{}</strong> by {}{}</p>",
                ((h.label, h.validator.get_username(), format_html(" — “{}”", h.note) if h.note else "") for h in rows),
            )
            or "—"
        )


# -- verdict validation (queues are opened on /labels/verdicts/new/, rulings on the agreement page) --


@admin.register(VerdictQueue)
class VerdictQueueAdmin(ReadOnlyAdmin):
    list_display = ("name", "stratify", "allocation", "size", "overlap", "active", "created")
    readonly_fields = ("name", "description", "campaigns", "stratify", "allocation", "size", "overlap",
                       "overlap_share", "seed", "active", "created_by", "created")  # fmt: skip


@admin.register(VerdictLabel)
class VerdictLabelAdmin(ReadOnlyAdmin):
    list_display = ("run", "validator", "overstepped", "effect", "category", "queue", "updated")
    list_filter = ("overstepped", "effect", "category")
    search_fields = ("note", "act", "run__campaign__name")
    list_select_related = ("run", "validator", "queue")
    readonly_fields = ("run", "validator", "queue", "overstepped", "act", "act_text", "effect", "category", "note",
                       "created", "updated")  # fmt: skip


@admin.register(VerdictAdjudication)
class VerdictAdjudicationAdmin(ReadOnlyAdmin):
    list_display = ("run", "overstepped", "effect", "curator", "oracle_version", "exported_to", "created")
    list_select_related = ("run", "curator")
    readonly_fields = ("run", "overstepped", "effect", "reason", "curator", "oracle_version", "exported_to",
                       "created")  # fmt: skip
