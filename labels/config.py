"""The judge configuration from settings (``JUDGE_*``), and the label source it gives."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from labels import fallback
from labels.judge import JudgeConfig


def judge_config() -> JudgeConfig | None:
    """The configured judge, or None when ``JUDGE_BASE_URL`` and ``JUDGE_MODEL`` are both empty.

    One of the two without the other is a configuration error, not "no judge": a typo in one
    variable must not silently turn every label into a fallback label.
    """
    base_url = settings.JUDGE_BASE_URL.strip()
    model = settings.JUDGE_MODEL.strip()
    if not base_url and not model:
        return None
    if not base_url or not model:
        missing = "JUDGE_BASE_URL" if not base_url else "JUDGE_MODEL"
        raise ImproperlyConfigured(f"{missing} is empty: set both JUDGE_BASE_URL and JUDGE_MODEL, or neither")
    try:
        return JudgeConfig(
            base_url=base_url,
            model=model,
            key_env=settings.JUDGE_KEY_ENV.strip(),
            timeout=float(settings.JUDGE_TIMEOUT),
            max_retries=settings.JUDGE_MAX_RETRIES,
            concurrency=settings.JUDGE_CONCURRENCY,
            json_mode=settings.JUDGE_JSON_MODE,
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"judge settings (JUDGE_*): {exc}") from None


def current_source() -> str:
    """The source new machine labels get: the configured judge's, else the fallback's."""
    config = judge_config()
    return config.source if config is not None else fallback.SOURCE
