from django.apps import AppConfig


class LabelsConfig(AppConfig):
    name = "labels"
    verbose_name = "Non-action labels"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from labels import checks  # noqa: F401 - registers the judge settings check
