"""Domain errors that escape a dashboard view become the page answer they mean: ``NotFound`` a 404
page, ``Forbidden`` a 403 page (``views.common.raise_as_http`` says the same for the errors a view
catches). So the dashboard's selectors raise the core's errors and never an HTTP exception: the
API (DRF's handler) and the MCP tools translate the same errors their own way."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

from dashboard.views.common import raise_as_http
from mmw.errors import Forbidden, NotFound


class DomainErrors:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        """Re-raise ``NotFound`` / ``Forbidden`` as Django's 404 / 403; anything else passes on."""
        if isinstance(exception, NotFound | Forbidden) and not request.path.startswith("/api/"):
            raise_as_http(exception)


# What agents read stays English whatever the caller's language (issue #42): REST, the health
# check, OAuth metadata, and /mcp (served outside Django by mmw.routing; listed all the same).
STABLE_ENGLISH_PREFIXES = ("/api/", "/mcp", "/healthz", "/.well-known/")


class PersonLocale(LocaleMiddleware):
    """Django's LocaleMiddleware, with the person's saved language (``User.language``) first, then
    the language cookie and Accept-Language; machine surfaces get English and no language headers,
    so their answers are byte-identical whatever the request's Accept-Language."""

    def process_request(self, request: HttpRequest) -> None:
        if request.path.startswith(STABLE_ENGLISH_PREFIXES):
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = settings.LANGUAGE_CODE
            return
        saved = getattr(getattr(request, "user", None), "language", "")
        if saved and saved in dict(settings.LANGUAGES):
            translation.activate(saved)
            request.LANGUAGE_CODE = saved
            return
        super().process_request(request)

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if request.path.startswith(STABLE_ENGLISH_PREFIXES):
            return response
        return super().process_response(request, response)
