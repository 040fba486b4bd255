from django.apps import AppConfig


class OraclesConfig(AppConfig):
    name = "oracles"
    default_auto_field = "django.db.models.BigAutoField"
