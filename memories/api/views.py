"""REST views: parse, call a service or selector, format. No business rule lives here."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.keys import Principal
from memories import selectors


def principal_of(request: Request) -> Principal:
    assert isinstance(request.auth, Principal)
    return request.auth


class WorkspaceListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(selectors.workspace_list(principal=principal_of(request)))
