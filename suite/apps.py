from django.apps import AppConfig


class SuiteConfig(AppConfig):
    name = "suite"
    verbose_name = "UnderSpecBench suite"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runs.campaigns import register_plan
        from runs.models import CampaignKind
        from suite import bundle  # noqa: F401 - registers the suite's bundle section
        from suite.campaigns import FullMatrixPlan, SuitePlan

        register_plan(CampaignKind.USB_FULL, FullMatrixPlan())
        register_plan(CampaignKind.USB_SAMPLE, SuitePlan())
