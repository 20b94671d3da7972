"""REST: ``GET /api/v1/export``, ``POST /api/v1/import`` and ``GET /api/v1/import/<id>``
(docs/reference/export.md). Parse,
call, format: what a key may export or import is decided by ``datarights.export`` / ``restore``."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from datarights import export, presenters
from datarights.models import ImportJob
from datarights.restore import jobs
from interfaces.rest import ApiView, principal_of
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
        return export.export_response(scope)


@extend_schema(exclude=True)
class ImportView(ApiView):
    def post(self, request: Request) -> Response:
        """A small file is imported at once (200 with the report, or its error); a larger one, or
        any with ``Prefer: respond-async``, is queued (202, ``Location`` of the job)."""
        run_async = "respond-async" in request.headers.get("Prefer", "").lower()
        job = jobs.import_start(principal=principal_of(request), upload=request._request.body, run_async=run_async)
        return job_response(job)


@extend_schema(exclude=True)
class ImportJobView(ApiView):
    def get(self, request: Request, job_id: str) -> Response:
        return Response(
            {"import": presenters.import_job(jobs.import_job_get(principal=principal_of(request), job_id=job_id))}
        )


def job_response(job: ImportJob) -> Response:
    """An inline job answers as the import did (its report, or its error with its status); a
    queued one 202 with where to follow it."""
    shown = presenters.import_job(job)
    if job.status == ImportJob.Status.SUCCEEDED:
        return Response({"imported": True, **(job.report or {}), "import": shown})
    if job.status == ImportJob.Status.FAILED:
        error = job.error or {}
        return Response(
            {"error": {"code": error.get("code"), "message": error.get("message")}, "import": shown},
            status=int(error.get("status") or 400),
        )
    return Response({"imported": False, "import": shown}, status=202, headers={"Location": shown["url"]})
