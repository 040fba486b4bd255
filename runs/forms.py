"""The form curators start a SNARE campaign with: one SUT, or a frameworks × models matrix."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from oracles.scheduler import CampaignParams
from pool.models import PoolVersion
from runs.campaigns import CampaignError, campaign_params
from runs.costs import CostError, check_priced
from runs.models import AgentFramework, Campaign, CampaignKind, Matrix, ModelEndpoint, SystemUnderTest

_DEFAULTS = CampaignParams()


class CampaignStartForm(forms.Form):
    MODES = (("single", "one system under test"), ("matrix", "frameworks × models matrix"))

    name = forms.CharField(max_length=150, help_text="Unique; a matrix names its campaigns NAME/framework__model.")
    mode = forms.ChoiceField(choices=MODES, initial="single", widget=forms.RadioSelect)
    sut = forms.ModelChoiceField(
        queryset=SystemUnderTest.objects.select_related("framework", "model"),
        required=False,
        label="system under test",
    )
    frameworks = forms.ModelMultipleChoiceField(queryset=AgentFramework.objects.all(), required=False)
    models = forms.ModelMultipleChoiceField(queryset=ModelEndpoint.objects.all(), required=False)
    pool = forms.ModelChoiceField(
        queryset=PoolVersion.objects.builds().filter(status=PoolVersion.Status.COMPLETE),
        help_text="A complete verified pool (manage.py build_pool).",
    )
    n = forms.IntegerField(min_value=1, max_value=100_000, initial=_DEFAULTS.n, label="budget N (scored runs)")
    k = forms.IntegerField(min_value=1, max_value=1000, initial=_DEFAULTS.k, label="slots per round K")
    j = forms.IntegerField(min_value=1, max_value=64, initial=_DEFAULTS.j, label="concurrent sandboxes J")
    q_floor = forms.IntegerField(min_value=0, initial=_DEFAULTS.q_floor, label="q_floor")
    q_ceil = forms.IntegerField(min_value=1, initial=_DEFAULTS.q_ceil, label="q_ceil")
    seed = forms.IntegerField(min_value=0, initial=_DEFAULTS.seed)
    max_attempts = forms.IntegerField(min_value=1, max_value=20, initial=_DEFAULTS.max_attempts)
    uniform_share = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        initial=_DEFAULTS.uniform_share,
        label="uniform reserve share",
        help_text="Share of slots drawn uniformly over cells: the sample of the uniform-mix rate. 0: none.",
    )
    cost_cap = forms.DecimalField(
        required=False,
        min_value=Decimal("0.0001"),
        decimal_places=4,
        max_digits=14,
        label="cost cap per campaign (USD)",
        help_text="No run is issued that could take a campaign's spending over this; raise it to resume.",
    )
    matrix_cost_cap = forms.DecimalField(
        required=False,
        min_value=Decimal("0.0001"),
        decimal_places=4,
        max_digits=14,
        label="matrix cost cap (USD)",
        help_text="Matrix only: the same brake on the sum over its campaigns.",
    )
    run_token_cap = forms.IntegerField(
        required=False,
        min_value=1,
        label="tokens per run",
        help_text="The gateway ends a run at this many tokens (the tighter of this and the SUT's own limit).",
    )
    backend = forms.ChoiceField(choices=[("auto", "auto"), ("docker", "docker"), ("bwrap", "bwrap")], initial="auto")
    simulation = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=(
            'Simulated (stochastic) frameworks only: planted truth as JSON, e.g. {"default": 0.2}. '
            "Empty: the demo default."
        ),
    )

    def clean_name(self) -> str:
        name = str(self.cleaned_data["name"]).strip()
        if Campaign.objects.filter(name=name).exists() or Matrix.objects.filter(name=name).exists():
            raise ValidationError(f"a campaign or matrix named {name!r} exists already; choose another name")
        return name

    def clean_simulation(self) -> dict[str, Any]:
        raw = str(self.cleaned_data.get("simulation") or "").strip()
        if not raw:
            return {}
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ValidationError(f"not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValidationError("expected a JSON object")
        from harness.agents.stochastic import propensities_from

        try:
            propensities_from(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise ValidationError(f"not a valid planted truth: {exc}") from None
        return data

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        if data["mode"] == "single":
            if data.get("sut") is None:
                self.add_error("sut", "choose the system under test")
                return data
            suts = [data["sut"]]
        else:
            frameworks = list(data.get("frameworks") or [])
            models = list(data.get("models") or [])
            if not frameworks or not models:
                self.add_error(None, "a matrix needs at least one framework and one model")
                return data
            suts = [SystemUnderTest(framework=f, model=m) for f in frameworks for m in models]
        for sut in suts:
            if sut.pk is None:
                from runs.models import default_api_kind

                sut.api_kind = default_api_kind(sut.model)
            try:
                sut.clean()
            except ValidationError as exc:
                self.add_error(None, f"{sut.framework.slug} × {sut.model.slug}: {'; '.join(exc.messages)}")
            for field, what in (("cost_cap", "a cost cap"), ("matrix_cost_cap", "a matrix cost cap")):
                if data.get(field) is None or (field == "matrix_cost_cap" and data["mode"] == "single"):
                    continue
                try:
                    check_priced(sut, what)
                except CostError as exc:
                    self.add_error(field, str(exc))
        data["suts"] = suts
        try:
            data["params"] = campaign_params(
                n=data["n"],
                k=data["k"],
                j=data["j"],
                q_floor=data["q_floor"],
                q_ceil=data["q_ceil"],
                seed=data["seed"],
                max_attempts=data["max_attempts"],
                uniform_share=data.get("uniform_share"),
            )
        except CampaignError as exc:
            self.add_error(None, str(exc))
        data["kind"] = CampaignKind.SNARE
        return data
