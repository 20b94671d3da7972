"""A member's import as a job (``ImportJob``): created by the request, run inline when the file is
small, else by the ``imports`` worker, and read back by the caller while it runs.

Contract:
- ``import_start`` checks who may import (owners and admins, a ``memory:write`` key; ledger lines
  need ``ledger:write``) and how many of the account's imports are unfinished
  (``MAX_UNFINISHED``), then records the job. A file whose decompressed size fits
  ``INLINE_BYTES`` is imported at once and the job comes back finished; a larger one is kept in
  the job and queued, and the job comes back ``queued``.
- ``import_job_run`` (the task) runs a queued job once: a second delivery of the same message, or a
  second worker, finds it locked or finished and does nothing. The import and the job's outcome
  commit together; a worker killed half-way leaves nothing imported and the job queued for the
  redelivered message. Progress (lines and bytes read) is written beside the import's
  transaction (``mmw.db.side``), about once a second.
- Every failure is the job's ``error`` (``{"code", "message", "status"}``, the same texts and
  codes the request would have answered); a bug is ``internal_error`` and logged, never retried.
- Reading a job (``import_job_get``) is scoped like the import: the job's project, by its owners
  and admins; another project's job is "not found", as a job that does not exist.
"""

from __future__ import annotations

import io
import logging
import time
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.keys import VIA_API, VIA_DASHBOARD, Principal, principal_for
from accounts.models import ALL_SCOPES, SCOPE_LEDGER_WRITE, SCOPE_WRITE
from datarights.models import ImportJob
from datarights.restore import importer, reader
from memories import admission
from memories import tasks as memory_tasks
from mmw.db import side
from mmw.errors import Forbidden, MMWError, NotFound, RateLimited
from mmw.locks import try_advisory_xact_lock
from transcripts.services import TURN_LIMIT_TEXT

logger = logging.getLogger(__name__)

MANAGERS_ONLY = "403 Forbidden: only owners and admins can import"
INLINE_BYTES = 4 * reader.MiB  # decompressed: imported inside the request
MAX_UNFINISHED = 2  # queued or running imports per account
SWEEP_MIN_AGE = 120.0  # seconds a job may wait for its message before the sweep sends it again
SWEEP_BATCH = 50
BUSY = "an import of this account is still running; wait for it to finish (GET /api/v1/import/<id>)"


def member_limits(deadline: float | None = None) -> reader.Limits:
    """The bounds of a member's import (docs/export-format.md, "Bounds")."""
    return reader.Limits(
        max_bytes=settings.MMW_IMPORT_MAX_BYTES,
        max_lines=settings.MMW_IMPORT_MAX_LINES,
        max_line_bytes=reader.Limits().max_line_bytes,
        deadline=deadline,
    )


def _check_may_import(principal: Principal) -> None:
    if SCOPE_WRITE not in principal.scopes:
        raise Forbidden("403 Forbidden: key lacks memory:write")
    if not principal.membership.manages:
        raise Forbidden(MANAGERS_ONLY)


def import_start(*, principal: Principal, upload: bytes, run_async: bool = False) -> ImportJob:
    """Record an import of ``upload`` into the principal's project and run it now when it is small
    (and ``run_async`` is not asked), else queue it (module docstring)."""
    _check_may_import(principal)
    admission.admit(principal).check_rate()
    unfinished = ImportJob.objects.filter(
        account=principal.account, status__in=(ImportJob.Status.QUEUED, ImportJob.Status.RUNNING)
    )
    if unfinished.count() >= MAX_UNFINISHED:
        raise RateLimited(BUSY, retry_after=30, code="import_busy")
    inline = not run_async and reader.fits(upload, INLINE_BYTES)
    job = ImportJob.objects.create(
        account=principal.account,
        project=principal.project,
        user=principal.user,
        api_key=principal.api_key,
        via=ImportJob.Via.API if principal.via == VIA_API else ImportJob.Via.DASHBOARD,
        ledger_allowed=SCOPE_LEDGER_WRITE in principal.scopes,
        upload=None if inline else upload,
        upload_bytes=len(upload),
    )
    if inline:
        _run(job, principal, io.BytesIO(upload), member_limits())
        job.refresh_from_db()
    else:
        job_id = str(job.pk)
        transaction.on_commit(lambda: _queue(job_id))
    return job


def _queue(job_id: str) -> bool:
    """Send the job to the ``imports`` worker; False (logged) when the broker is away — the job
    stays queued and ``import_jobs_sweep`` sends it again."""
    from datarights import tasks  # the task module imports this one

    return memory_tasks.publish(tasks.run_import, job_id)


def import_jobs_sweep(*, min_age_seconds: float = SWEEP_MIN_AGE) -> int:
    """Send again every unfinished job older than ``min_age_seconds`` that no worker is running
    now (its message was lost with the broker, or its worker was killed half-way); returns how
    many. A job a worker holds is left alone (its advisory lock is taken)."""
    cutoff = timezone.now() - timedelta(seconds=min_age_seconds)
    stale = ImportJob.objects.filter(
        status__in=(ImportJob.Status.QUEUED, ImportJob.Status.RUNNING), created_at__lte=cutoff
    ).values_list("pk", flat=True)
    sent = 0
    for pk in stale[:SWEEP_BATCH]:
        with transaction.atomic():
            if not try_advisory_xact_lock("import", str(pk)):
                continue  # a worker runs it
        sent += _queue(str(pk))
    return sent


def import_job_run(job_id: str) -> str:
    """Run one queued job (the task's body); its status after this call."""
    try:
        pk = uuid.UUID(job_id)
    except ValueError:
        return "missing"
    job = ImportJob.objects.filter(pk=pk).first()
    if job is None or job.finished:
        return job.status if job is not None else "missing"
    principal = _principal_of(job)
    if principal is None:
        _fail(job, Forbidden("403 Forbidden: the key or membership that started this import is no longer valid"))
        return job.status
    deadline = time.monotonic() + settings.MMW_IMPORT_MAX_SECONDS
    _run(job, principal, io.BytesIO(bytes(job.upload or b"")), member_limits(deadline))
    job.refresh_from_db()
    return job.status


def _principal_of(job: ImportJob) -> Principal | None:
    """The caller of the job again, as they are now: a revoked key or a lost role stops it."""
    if job.user is None:
        return None
    if job.via == ImportJob.Via.API:
        key = job.api_key
        if key is None or not key.is_active:
            return None
        principal = principal_for(user=job.user, project=job.project, api_key=key, scopes=frozenset(key.scopes))
    else:
        principal = principal_for(user=job.user, project=job.project, scopes=frozenset(ALL_SCOPES), via=VIA_DASHBOARD)
    if principal is None or SCOPE_WRITE not in principal.scopes or not principal.membership.manages:
        return None
    return principal


def _run(job: ImportJob, principal: Principal, stream: io.BytesIO, limits: reader.Limits) -> None:
    """Import ``stream`` for ``job`` and record the outcome with it, in one transaction."""
    with transaction.atomic():
        if not try_advisory_xact_lock("import", str(job.pk)):
            return  # another worker runs it
        job.refresh_from_db()
        if job.finished:
            return
        _mark_running(job)
        policy = importer.Policy(
            operator=False,
            account=principal.account,
            actor=principal.user,
            actor_key=principal.api_key,
            target=principal.project,
            ledger_allowed=job.ledger_allowed,
            quota=_plan_quota(admission.admit(principal)),
            limits=limits,
        )
        try:
            with transaction.atomic():
                report = importer.Importer(policy, progress=lambda r: _progress(job, r)).run(stream)
        except MMWError as exc:
            _finish(job, error=_error_of(exc))
        except Exception:
            logger.exception("import %s failed", job.pk)
            _finish(job, error={"code": "internal_error", "message": f"internal error (import {job.pk})",
                                "status": 500})  # fmt: skip
        else:
            _finish(job, report=report)


def _mark_running(job: ImportJob) -> None:
    job.status, job.started_at = ImportJob.Status.RUNNING, timezone.now()
    side.execute(
        "UPDATE datarights_importjob SET status = %s, started_at = %s WHERE id = %s",
        [job.status, job.started_at, job.pk],
    )


def _progress(job: ImportJob, report: importer.ImportReport) -> None:
    side.execute(
        "UPDATE datarights_importjob SET lines = %s, bytes_read = %s WHERE id = %s",
        [report.lines, report.bytes, job.pk],
    )


def _finish(
    job: ImportJob, *, report: importer.ImportReport | None = None, error: dict[str, Any] | None = None
) -> None:
    """The outcome, saved on the caller's connection (it commits with the import, or alone)."""
    job.status = ImportJob.Status.FAILED if error is not None else ImportJob.Status.SUCCEEDED
    job.report = report.as_dict() if report is not None else None
    if report is not None:
        job.lines, job.bytes_read = report.lines, report.bytes
    job.error = error
    job.upload = None
    job.finished_at = timezone.now()
    job.save()


def _fail(job: ImportJob, exc: MMWError) -> None:
    with transaction.atomic():
        _finish(job, error=_error_of(exc))


def _error_of(exc: MMWError) -> dict[str, Any]:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message, "status": exc.http_status}
    report = getattr(exc, "report", None)
    if report is not None:
        error["report"] = list(report)
    return error


def import_job_get(*, principal: Principal, job_id: str) -> ImportJob:
    """A job of the principal's project, read by its owners and admins; any other id is 404."""
    _check_may_import(principal)
    try:
        pk = uuid.UUID(job_id)
    except ValueError:
        raise NotFound("import not found") from None
    job = ImportJob.objects.filter(pk=pk, project=principal.project).first()
    if job is None:
        raise NotFound("import not found")
    return job


def import_jobs_of(*, principal: Principal, limit: int = 10) -> list[ImportJob]:
    """The project's latest imports, newest first (the dashboard's list)."""
    _check_may_import(principal)
    return list(ImportJob.objects.filter(project=principal.project).defer("upload").order_by("-created_at")[:limit])


def _plan_quota(admitted: admission.Admission) -> importer.Quota:
    """A member's import counts against the project's plan like the writes it replays: before each
    batch of records, turns or ledger entries is inserted, the batch must fit under its limit
    (``project memory limit exceeded``, ``project session turn limit exceeded``, ``project ledger
    entry limit exceeded``: 403 ``limit_exceeded``; the whole import is rolled back). Forgotten
    records do not count, as for ``remember``. The operator's import is not bounded."""

    def check(kind: str, objs: list[Any]) -> None:
        if kind == "memory":
            live = sum(1 for m in objs if m.forgotten_at is None)
            if live:
                admitted.check_quota(pending=live - 1)
        elif kind == "turn":
            if admitted.turn_room(len(objs)) < len(objs):
                raise Forbidden(TURN_LIMIT_TEXT, code="limit_exceeded")
        elif kind == "ledger_entry":
            admitted.check_ledger_quota(pending=len(objs) - 1)

    return check
