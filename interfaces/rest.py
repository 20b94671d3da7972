"""The REST views' kit: ``ApiView`` (refuses query parameters an operation does not read),
``principal_of`` (the caller) and ``body`` (the JSON body as sent). Bodies go to the services
*raw*, so REST and MCP validate identically (``memories.inputs``)."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.keys import Principal
from mmw.errors import InvalidInput


class ApiView(APIView):
    """An MMW REST view: query-string parameters other than the operation's own are refused, as
    unknown body parameters are (``memories.inputs.parse``): nothing is silently ignored."""

    query_parameters: dict[str, frozenset[str]] = {}  # method → the names it reads

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        allowed = self.query_parameters.get(request.method or "", frozenset())
        unknown = sorted(k for k in request.query_params if k not in allowed)
        if unknown:
            raise InvalidInput(f"unknown parameter(s): {', '.join(unknown)}")


def principal_of(request: Request) -> Principal:
    assert isinstance(request.auth, Principal)
    return request.auth


def body(request: Request) -> Any:
    """The JSON body as sent (an empty body is an empty object; a body of JSON ``null`` is not an
    object and is refused like any other non-object)."""
    if not request.body:
        return {}
    if request.data is None:
        raise InvalidInput("the request body must be a JSON object")
    return request.data
