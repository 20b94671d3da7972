"""DRF exception handler: every error becomes ``{"error": {"code", "message"}}``."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from mmw.errors import MMWError, RateLimited


def error_response(code: str, message: str, http_status: int, headers: dict[str, str] | None = None) -> Response:
    return Response({"error": {"code": code, "message": message}}, status=http_status, headers=headers)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Translate domain errors and DRF's own errors into MMW's error shape."""
    if isinstance(exc, MMWError):
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
        return error_response(exc.code, exc.message, exc.http_status, headers)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
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
