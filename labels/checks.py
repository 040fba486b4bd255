"""System check: the judge settings are complete and well-formed (``manage.py check``)."""

from __future__ import annotations

import os
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured


@checks.register()
def judge_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from labels.config import judge_config

    try:
        config = judge_config()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), hint="See .env.example (JUDGE_*).", id="labels.E001")]
    if config is not None and config.key_env and not os.environ.get(config.key_env):
        return [
            checks.Warning(
                f"JUDGE_KEY_ENV names {config.key_env}, which is not set in this process",
                hint="Set it where the rq workers run judge_runs; until then the fallback classifier labels runs.",
                id="labels.W001",
            )
        ]
    return []
