from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from overeager import storage  # noqa: F401 - registers the "static files collected" deploy check
        from runs.campaigns import SnarePlan, register_plan
        from runs.models import CampaignKind

        register_plan(CampaignKind.SNARE, SnarePlan())
