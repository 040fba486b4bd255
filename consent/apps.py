from django.apps import AppConfig


class ConsentConfig(AppConfig):
    """Consent sensitivity: campaigns of (scenario, consent-stripped twin) pairs and their analysis."""

    name = "consent"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from consent.campaigns import PairedPlan
        from runs.campaigns import register_plan
        from runs.models import CampaignKind

        register_plan(CampaignKind.PAIRED, PairedPlan())
