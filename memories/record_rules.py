"""Rules about record values (not the Guard's screening rules, which are memories/guard/rules.py):
importance from tags, expiry parsing, idempotency keys and request hashing, token estimates."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

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
