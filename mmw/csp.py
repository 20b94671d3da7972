"""Content-Security-Policy on every response Django serves (dashboard, allauth, admin, REST).

The policy (``settings.MMW_CONTENT_SECURITY_POLICY``, built in settings) allows scripts, styles,
images and connections from this origin only: no inline script, no inline style, no ``eval``, no
framing, no plugins, forms posting only here (and to the payment provider the billing pages
redirect to). Templates therefore carry no ``<script>`` bodies, ``on*=`` handlers or ``style=``
attributes (``dashboard/static/dashboard/dashboard.js`` does what inline handlers did), and htmx
is told not to inject its indicator ``<style>`` (``<meta name="htmx-config">`` in the dashboard's
base template). A view that sets its own policy keeps it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

HEADER = "Content-Security-Policy"

SyncHandler = Callable[[HttpRequest], HttpResponseBase]
AsyncHandler = Callable[[HttpRequest], Awaitable[HttpResponseBase]]


def build_policy(*, form_action_extra: list[str]) -> str:
    """The policy text: ``default-src 'self'`` and the directives ``default-src`` does not cover."""
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'", *form_action_extra],
        "frame-ancestors": ["'none'"],
    }
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in directives.items())


class ContentSecurityPolicyMiddleware:
    """Adds the policy header to every response that has none; works in sync and async stacks
    (no thread hop under ASGI)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: SyncHandler | AsyncHandler) -> None:
        self.get_response = get_response
        self.policy: str = settings.MMW_CONTENT_SECURITY_POLICY
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self._acall(request)
        response = self.get_response(request)
        assert isinstance(response, HttpResponseBase)
        return self._apply(response)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        assert not isinstance(response, HttpResponseBase)
        return self._apply(await response)

    def _apply(self, response: HttpResponseBase) -> HttpResponseBase:
        if HEADER not in response:
            response[HEADER] = self.policy
        return response
