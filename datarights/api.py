"""REST: ``GET /api/v1/export`` and ``POST /api/v1/import`` (docs/reference/export.md). Parse,
call, format: what a key may export or import is decided by ``datarights.export`` / ``restore``."""

from __future__ import annotations

import io

from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from datarights import export, restore
from memories.api.views import ApiView, principal_of
from mmw import streaming
from mmw.errors import InvalidInput

SCOPES = ("project", "account")


# Left out of the OpenAPI schema: its answers are a gzip stream and a file upload, which the
# schema's shape (JSON bodies and answers, checked by tests/memories/test_openapi.py and fuzzed)
# does not describe; docs/reference/export.md documents both routes.
@extend_schema(exclude=True)
class ExportView(ApiView):
    query_parameters = {"GET": frozenset({"scope"})}

    def get(self, request: Request) -> StreamingHttpResponse:
        scope_name = request.query_params.get("scope", "project")
        if scope_name not in SCOPES:
            raise InvalidInput("scope must be project or account")
        scope = export.scope_for_key(principal=principal_of(request), whole_account=scope_name == "account")
        return export_response(scope)


@extend_schema(exclude=True)
class ImportView(ApiView):
    def post(self, request: Request) -> Response:
        raw = request._request.body
        report = restore.import_for_key(principal=principal_of(request), stream=io.BytesIO(raw))
        return Response({"imported": True, **report.as_dict()})


def export_response(scope: export.ExportScope) -> StreamingHttpResponse:
    """The export as a gzip attachment, streamed (REST and the dashboard alike)."""
    now = timezone.now()
    chunks = export.gzip_chunks(export.export_lines(scope, now=now))
    return streaming.download(chunks, content_type="application/gzip", filename=export.export_filename(scope, now))
