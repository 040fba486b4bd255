"""ASGI entry point: HTTP through Django, WebSockets through Channels.

Sockets are wrapped in a same-origin check (overeager.origin: the Origin must be the page's own
host and port, or a CSRF-trusted origin) and session authentication; the consumers themselves
reject anonymous users, so a socket never streams data a page could not show.
"""

import os
from typing import cast

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "overeager.settings")

from django.conf import settings

from overeager.env import env_int

# Under ASGI, Django runs each request's synchronous code on a fresh single-use thread, and a
# persistent connection belongs to its thread: with CONN_MAX_AGE > 0 every concurrent request
# leaves its connection open until garbage collection (measured with daphne: 38 idle connections
# after 200 requests at 20 concurrency; the dashboard benchmark ran PostgreSQL out of its 100
# slots). Django's docs: disable persistent connections in async mode, pool instead. Workers
# (plain processes) keep their persistent connections. DB_POOL_MAX_SIZE > 0 gives the web process
# Django's psycopg pool of that size, so a request does not pay a connection set-up.
_pool_size = env_int("DB_POOL_MAX_SIZE", 0, minimum=0)
for _database in settings.DATABASES.values():
    _database["CONN_MAX_AGE"] = 0
    if _pool_size > 0 and str(_database["ENGINE"]).endswith("postgresql"):
        _options = cast(dict[str, object], _database.setdefault("OPTIONS", {}))
        _options["pool"] = {"min_size": 1, "max_size": _pool_size, "timeout": 10}

# Django must be set up before importing anything that touches models.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from overeager.origin import SameOriginValidator  # noqa: E402
from runs.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
