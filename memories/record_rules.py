"""Rules about record values (not the Guard's screening rules, which are memories/guard/rules.py):
importance from tags, expiry parsing, idempotency keys and request hashing, token estimates, and
how a Guard refusal reaches a caller (``guarded``)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from memories import guard
from memories.guard.screen import FieldValue
from mmw.errors import InvalidInput

KIND_IMPORTANCE: dict[str, float] = {
    "pinned": 1.0,
    "incident": 0.85,
    "decision": 0.80,
    "preference": 0.80,
    "learning": 0.70,
    "fact": 0.60,
}
CHECKPOINT_KIND = "session-checkpoint"
CHECKPOINT_IMPORTANCE = 0.30
DEFAULT_IMPORTANCE = 0.50

_DURATION = re.compile(r"^\s*(\d{1,6})\s*(s|m|h|d|w)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_IDEMPOTENCY_KEY = re.compile(r"^[\x20-\x7e]{1,256}$")
MAX_EXPIRY_YEARS = 100
MAX_EXPIRY = timedelta(days=round(MAX_EXPIRY_YEARS * 365.25))
_TOO_FAR = f"expires_at must be at most {MAX_EXPIRY_YEARS} years ahead"


def importance_from_tags(tags: Iterable[str]) -> float:
    """``kind:`` tags set importance; ``kind:session-checkpoint`` overrides every other kind."""
    kinds = {t.split(":", 1)[1].strip().lower() for t in tags if t.lower().startswith("kind:")}
    if CHECKPOINT_KIND in kinds:
        return CHECKPOINT_IMPORTANCE
    scores = [KIND_IMPORTANCE[k] for k in kinds if k in KIND_IMPORTANCE]
    return max(scores, default=DEFAULT_IMPORTANCE)


def parse_expires_at(value: str, *, now: datetime) -> datetime:
    """An RFC 3339 time (with offset or ``Z``) or a duration like ``72h``/``30m``/``7d``; it must
    lie in the future and at most ``MAX_EXPIRY_YEARS`` ahead (so every stored time can be read
    back: PostgreSQL stores years past 9999 that Python cannot load). Returned in UTC."""
    match = _DURATION.match(value)
    if match:
        seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
        if seconds == 0:
            raise InvalidInput("expires_at must lie in the future")
        if seconds > MAX_EXPIRY.total_seconds():
            raise InvalidInput(_TOO_FAR)
        return now + timedelta(seconds=seconds)
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput('expires_at must be an RFC 3339 time or a duration like "72h"') from None
    if parsed.tzinfo is None:
        raise InvalidInput("expires_at must include a time zone offset (e.g. Z or +02:00)")
    if parsed <= now:
        raise InvalidInput("expires_at must lie in the future")
    if parsed > now + MAX_EXPIRY:  # compared before converting: year 9999 at -14:00 is past 9999 in UTC
        raise InvalidInput(_TOO_FAR)
    return parsed.astimezone(UTC)


EARLIEST_OCCURRED = datetime(1900, 1, 1, tzinfo=UTC)
OCCURRED_AHEAD = timedelta(days=1)
MAX_POSITION = 1_000_000_000
_EARLIEST_FILTER_YEAR, _LATEST_FILTER_YEAR = 1900, 9998


def _rfc3339(name: str, value: str) -> datetime:
    """An RFC 3339 time with an offset (or ``Z``), as given (not converted)."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{name} must be an RFC 3339 time such as 2026-01-31T09:30:00Z") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"{name} must include a time zone offset (e.g. Z or +02:00)")
    return parsed


def parse_occurred_at(value: str, *, now: datetime) -> datetime:
    """When a fact happened: an RFC 3339 time from the year 1900 to one day after ``now`` (a
    clock a little ahead is tolerated; a date years ahead is a mistake). Returned in UTC."""
    parsed = _rfc3339("occurred_at", value)
    # The year first: comparing a time near year 1 with another offset would overflow.
    if parsed.year < EARLIEST_OCCURRED.year or parsed < EARLIEST_OCCURRED or parsed > now + OCCURRED_AHEAD:
        raise InvalidInput("occurred_at must lie between the year 1900 and one day from now")
    return parsed.astimezone(UTC)


def parse_time_filter(name: str, value: str) -> datetime:
    """``since`` / ``until``: an RFC 3339 time in years 1900-9998, in UTC."""
    parsed = _rfc3339(name, value)
    if not _EARLIEST_FILTER_YEAR <= parsed.year <= _LATEST_FILTER_YEAR:
        raise InvalidInput(f"{name} must lie between the years 1900 and 9998")
    return parsed.astimezone(UTC)


def valid_idempotency_key(value: str) -> bool:
    """1-256 printable ASCII characters (0x20-0x7E)."""
    return bool(_IDEMPOTENCY_KEY.match(value))


def request_hash(values: Mapping[str, Any]) -> str:
    """A stable digest of a parsed request, to tell a replay from a reuse with other input."""
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def approx_tokens(text: str) -> int:
    """A model-independent token estimate (~4 characters a token), never below 1."""
    return max(1, (len(text) + 3) // 4)


# A record's text fields, every one screened by Memory Guard on every way in (remember, import).
SCREENED_FIELDS = ("content", "source_id", "source_revision", "fact_key", "tags", "reason")


def guarded(
    fields: Mapping[str, FieldValue], *, secrets_mode: str
) -> tuple[dict[str, FieldValue], tuple[guard.Redaction, ...]]:
    """Memory Guard over the text ``fields`` of one write (records, session labels, ledger
    entries): the clean values and what was redacted; a refusal becomes the documented error,
    ``Memory rejected by Security Guard: <reason>`` (code ``guard_rejected``)."""
    try:
        return guard.screen_fields(fields, secrets_mode=secrets_mode)
    except guard.GuardRejection as exc:
        raise InvalidInput(f"Memory rejected by Security Guard: {exc.reason}", code="guard_rejected") from None
