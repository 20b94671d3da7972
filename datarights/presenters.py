"""The shapes of data-rights answers (an import job), the same on REST and the dashboard."""

from __future__ import annotations

from typing import Any, TypedDict

from datarights import format as fmt
from datarights.models import ImportJob


class ImportJobShown(TypedDict):
    id: str
    url: str
    status: str
    via: str
    upload_bytes: int
    progress: dict[str, int]
    report: dict[str, Any] | None
    error: dict[str, Any] | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None


def import_job(job: ImportJob) -> ImportJobShown:
    """A job as its caller reads it: where it is, what it did or why it failed."""
    error = {k: v for k, v in (job.error or {}).items() if k in ("code", "message", "report")} or None
    return {
        "id": str(job.pk),
        "url": f"/api/v1/import/{job.pk}",
        "status": job.status,
        "via": job.via,
        "upload_bytes": job.upload_bytes,
        "progress": {"lines": job.lines, "bytes": job.bytes_read},
        "report": job.report,
        "error": error,
        "created_at": fmt.time(job.created_at),
        "started_at": fmt.time(job.started_at),
        "finished_at": fmt.time(job.finished_at),
    }
