"""Same-origin check for WebSockets (browsers do not apply the same-origin policy to them).

Channels' ``AllowedHostsOriginValidator`` accepts any Origin whose *host* is in ALLOWED_HOSTS:
with the development default (127.0.0.1, localhost) a page served from another local port —
another origin — could open a socket with the user's cookies, and ``ALLOWED_HOSTS=*`` accepts
everything.  This validator applies the rule Django's CSRF check applies to unsafe requests:
the Origin must be the origin the socket was opened on (same host and port as the Host header,
the host itself allowed), or be listed in CSRF_TRUSTED_ORIGINS.  A socket without an Origin is
refused: every browser sends one, and only a browser carries the session cookie a hijack needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def _netloc(scheme: str, host: str) -> str:
    """host[:port] lower-cased, with the scheme's default port made explicit."""
    domain, port = split_domain_port(host.lower())
    return f"{domain}:{port or _DEFAULT_PORTS.get(scheme, '')}"


def origin_allowed(origin: str, host: str, allowed_hosts: Iterable[str], trusted_origins: Iterable[str] = ()) -> bool:
    if not origin or origin == "null":
        return False
    if origin.rstrip("/") in {o.rstrip("/") for o in trusted_origins}:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc or not host:
        return False
    domain, _ = split_domain_port(host.lower())
    if not domain or not validate_host(domain, list(allowed_hosts)):
        return False
    # Behind a TLS-terminating proxy the socket arrives as ws:// while the page is https://, so the
    # port is compared with the origin's scheme defaults; the host and port must be the page's.
    return _netloc(parts.scheme, parts.netloc) == _netloc(parts.scheme, host)


class SameOriginValidator:
    """ASGI middleware: deny WebSocket handshakes whose Origin is not the site's own."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: Mapping[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            return await self.application(scope, receive, send)
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        origin = headers.get(b"origin", b"").decode("latin1")
        host = headers.get(b"host", b"").decode("latin1")
        if origin_allowed(origin, host, settings.ALLOWED_HOSTS, settings.CSRF_TRUSTED_ORIGINS):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
