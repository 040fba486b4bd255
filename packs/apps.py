from django.apps import AppConfig


class PacksConfig(AppConfig):
    name = "packs"
    verbose_name = "Scenario packs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from packs.campaigns import AdaptivePackPlan, UniformPackPlan
        from runs.campaigns import register_plan
        from runs.models import CampaignKind

        register_plan(CampaignKind.PACK, UniformPackPlan())
        register_plan(CampaignKind.PACK_ADAPTIVE, AdaptivePackPlan())
