"""Static files: fingerprinted, compressed, cached for a year — and never a 500 for a missing one.

``collectstatic`` writes each file under a name with its content hash and a gzip copy
(``CompressedManifestStaticFilesStorage``); WhiteNoise serves those with ``Cache-Control:
max-age=315360000, immutable`` and ``Content-Encoding: gzip`` to clients that accept it.  Until
``collectstatic`` has run (``scripts/serve.sh`` and ``scripts/demo.sh`` run it before the server
starts) the manifest is missing: Django's storage then raises on every ``{% static %}`` tag, which
made ``/admin/login/`` a 500 under ``DEBUG=0``.  Here such a name falls back to the plain file,
which WhiteNoise serves from the apps' static folders (``WHITENOISE_USE_FINDERS``) uncompressed
and briefly cached, and the system check ``overeager.W001`` says so.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Warning, register
from whitenoise.storage import CompressedManifestStaticFilesStorage

log = logging.getLogger(__name__)


class StaticStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def url(self, name: str | None, force: bool = False) -> str:
        # Django names the unhashed file whenever DEBUG is on; the demo runs with DEBUG=1 and its
        # chart pages should load the fingerprinted, long-cached bundle too.  (After editing a
        # static file, collectstatic again: scripts/demo.sh does at every start.)
        return str(super().url(name, force=True))

    def stored_name(self, name: str) -> str:
        try:
            return str(super().stored_name(name))
        except ValueError:
            # Not collected (yet): the unhashed name, which WhiteNoise finds in the app folders.
            log.debug("static file %s is not collected; serving it unfingerprinted", name)
            return name


@register("staticfiles", deploy=True)
def check_collected(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    manifest = Path(settings.STATIC_ROOT) / StaticStorage.manifest_name
    if manifest.is_file():
        return []
    return [
        Warning(
            f"static files are not collected in {settings.STATIC_ROOT}: pages work, but their CSS and"
            " JavaScript are served unfingerprinted, uncompressed and cached for a minute only",
            hint="run `manage.py collectstatic --noinput` (scripts/serve.sh does, before the server starts)",
            id="overeager.W001",
        )
    ]
