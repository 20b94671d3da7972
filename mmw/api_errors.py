"""REST's exception boundary: every error becomes ``{"error": {"code", "message"}}``.

Domain errors keep their code, message and status; an unavailable database (connect failure,
pool timeout) is 503 with ``Retry-After``; anything else is a JSON 500 ``internal error
(request <id>)``, logged here once with the id and the traceback (and marked logged, so Django
does not log it a second time). ``mmw.boundary`` makes sure nothing else on /api/ is HTML.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from mmw.boundary import RETRY_AFTER_SECONDS, UNAVAILABLE_MESSAGE, is_unavailable, new_request_id, request_state
from mmw.errors import MMWError, RateLimited

logger = logging.getLogger(__name__)

# The pages people get outside /api/ (dashboard/templates/errors/): the site's header and links home.
PAGE_403, PAGE_404, PAGE_500 = "errors/403.html", "errors/404.html", "errors/500.html"


def error_response(code: str, message: str, http_status: int, headers: dict[str, str] | None = None) -> Response:
    return Response({"error": {"code": code, "message": message}}, status=http_status, headers=headers)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Translate domain errors and DRF's own errors into MMW's error shape."""
    if isinstance(exc, MMWError):
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
        return error_response(exc.code, exc.message, exc.http_status, headers)
    response = drf_exception_handler(exc, context)
    if response is None:
        request = context.get("request")
        return _unexpected(exc, getattr(request, "_request", request))
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        response.data = {"error": {"code": "not_authenticated", "message": _detail(exc)}}
        response.status_code = status.HTTP_401_UNAUTHORIZED
        response["WWW-Authenticate"] = 'Bearer realm="mmw"'
        return response
    if isinstance(exc, exceptions.APIException):
        code = exc.default_code if isinstance(exc.default_code, str) else "error"
        response.data = {"error": {"code": code, "message": _detail(exc)}}
    return response


def _detail(exc: exceptions.APIException) -> str:
    detail = exc.detail
    if isinstance(detail, list | dict):
        return _flatten(detail)
    return str(detail)


def _flatten(detail: Any) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_flatten(value)}" for key, value in detail.items())
    if isinstance(detail, list):
        return "; ".join(_flatten(item) for item in detail)
    return str(detail)


def _unexpected(exc: BaseException, request: HttpRequest | None) -> Response:
    code, message, http_status, headers = _classify(exc, request)
    response = error_response(code, message, http_status, headers)
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's own flag: logged once, here
    return response


def _classify(exc: BaseException, request: HttpRequest | None) -> tuple[str, str, int, dict[str, str] | None]:
    """Log ``exc`` once and return (code, message, status, headers) for it."""
    request_id = request_id_of(request)
    path = request.path if request is not None else "?"
    if is_unavailable(exc):
        logger.warning("database unavailable (request %s) on %s: %r", request_id, path, exc)
        return "service_unavailable", UNAVAILABLE_MESSAGE, 503, {"Retry-After": str(RETRY_AFTER_SECONDS)}
    logger.error("internal error (request %s) on %s", request_id, path, exc_info=exc)
    return "internal_error", f"internal error (request {request_id})", 500, None


def request_id_of(request: HttpRequest | None) -> str:
    """The boundary's id for this request (ASGI), else a fresh one (WSGI, tests' client)."""
    state = request_state(getattr(request, "scope", None))
    return state.request_id if state is not None else new_request_id()


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON (500, or 503 for an unavailable database) on /api/, the branded page
    elsewhere (rendered without the request: no database read can fail it again).

    Reached for exceptions outside DRF's views (middleware, URL resolution).
    """
    exc = sys.exc_info()[1]
    if not request.path.startswith("/api/") or exc is None:
        return defaults.server_error(request, template_name=PAGE_500)
    code, message, http_status, headers = _classify(exc, request)
    response = JsonResponse({"error": {"code": code, "message": message}}, status=http_status, headers=headers)
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: JSON ``not_found`` naming the route on /api/ (an agent that mistypes a path
    reads why), the branded page with the site's navigation elsewhere."""
    if not request.path.startswith("/api/"):
        return defaults.page_not_found(request, exception, template_name=PAGE_404)
    message = f"no such route: {request.method} {request.path[:200]}"
    return JsonResponse({"error": {"code": "not_found", "message": message}}, status=404)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler403``: JSON ``forbidden`` on /api/ (DRF answers its own views' refusals), the
    branded page naming the reason elsewhere."""
    if request.path.startswith("/api/"):
        message = str(exception) or "forbidden"
        return JsonResponse({"error": {"code": "forbidden", "message": message}}, status=403)
    return defaults.permission_denied(request, exception, template_name=PAGE_403)
