"""Domain errors that escape a dashboard view become the page answer they mean: ``NotFound`` a 404
page, ``Forbidden`` a 403 page (``views.common.raise_as_http`` says the same for the errors a view
catches). So the dashboard's selectors raise the core's errors and never an HTTP exception: the
API (DRF's handler) and the MCP tools translate the same errors their own way."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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
