"""Plain Django views that belong to no app."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from mmw import health


@require_GET
async def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database and the broker answer, else 503 naming what is down; within 1 s.

    Needs no key and reveals nothing else. Async, so a hung dependency holds no request thread.
    """
    body = await health.report()
    return JsonResponse(body, status=200 if body["status"] == "ok" else 503)
