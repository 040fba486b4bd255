from django.apps import AppConfig


class SuiteConfig(AppConfig):
    name = "suite"
    verbose_name = "UnderSpecBench suite"
    default_auto_field = "django.db.models.BigAutoField"
