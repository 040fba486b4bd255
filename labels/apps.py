from django.apps import AppConfig


class LabelsConfig(AppConfig):
    name = "labels"
    verbose_name = "Non-action labels"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from labels import bundle, checks  # noqa: F401 - register the bundle section and the judge settings check
        from labels.jobs import judge_non_action_run
        from runs.signals import run_scored

        run_scored.connect(judge_non_action_run, dispatch_uid="labels-judge-non-action")
