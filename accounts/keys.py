"""API keys: minting and the one resolver from a bearer header to a ``Principal``.

Both REST (``accounts.authentication``) and MCP (the SDK's token verifier) call
``resolve_bearer``/``resolve_key``; nothing else decides whether a key is valid.
"""

from __future__ import annotations

import hmac
import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Literal

from django.utils import timezone

from accounts import key_cache, refusals, refused_calls
from accounts.models import SCOPE_READ, Account, ApiKey, Project, User
from accounts.refusals import Refusal as Refusal  # re-exported: the surfaces name it through accounts.keys
from mmw import text
from oauth.models import Token
from orgs.models import Membership
from orgs.selectors import active_membership, department_ids_of, has_project_access

KEY_PREFIX = "mmw_"
LOOKUP_CHARS = 8
# A key's last_used_at is written at most this often, so reads do not turn into writes.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class OAuthUse:
    """How a principal reached MMW when it came with an OAuth access token instead of a key: the
    person's grant, the client's name (the principal's device label) and the token's audience."""

    grant_id: int
    client_name: str
    resource: str


# Who is reading or writing: a program through an API key or OAuth token (REST, MCP), or a person
# browsing the dashboard. Only API calls are metered (rate limits, monthly calls): billing asks
# ``Principal.via`` instead of the dashboard skipping rules (docs/billing.md, Limits).
Via = Literal["api", "dashboard"]
VIA_API: Via = "api"
VIA_DASHBOARD: Via = "dashboard"


@dataclass(frozen=True)
class Principal:
    """Who is calling: the user, their account and membership, the key (or OAuth grant) and its
    project, and ``via`` which surface (an API client, or a person in the dashboard)."""

    user: User
    account: Account
    project: Project
    membership: Membership
    api_key: ApiKey | None
    scopes: frozenset[str] = field(default_factory=frozenset)
    department_ids: frozenset[int] = field(default_factory=frozenset)
    oauth: OAuthUse | None = None
    via: Via = VIA_API

    @property
    def is_api_call(self) -> bool:
        """True for a program calling REST or MCP (metered), False for a person in the dashboard."""
        return self.via == VIA_API

    @property
    def device_label(self) -> str:
        if self.oauth is not None:
            return self.oauth.client_name
        return self.api_key.device_label if self.api_key else ""


def digest(raw_key: str) -> str:
    return text.sha256_hex(raw_key)


def mint() -> tuple[str, str, str]:
    """Return ``(raw_key, prefix, digest)`` for a new key. Only the raw key is secret."""
    token = secrets.token_urlsafe(32).replace("-", "x").replace("_", "y")
    raw = f"{KEY_PREFIX}{token}"
    return raw, token[:LOOKUP_CHARS], digest(raw)


# The one rule for an ``Authorization`` header, on REST and MCP alike: the scheme ``Bearer`` in
# any case, one or more spaces or tabs, then the key; blanks around the whole value are ignored.
# Anything else (another scheme, no key, a key with a blank inside) carries no key.
_BEARER = re.compile(r"[ \t]*bearer[ \t]+(?P<key>[^ \t]+)[ \t]*", re.IGNORECASE)


def bearer_token(header: str | None) -> str | None:
    """The key in an ``Authorization`` header value, or ``None`` when it carries none."""
    match = _BEARER.fullmatch(header or "")
    return match.group("key") if match else None


def resolve_bearer(header: str | None) -> Principal | None:
    """Resolve an ``Authorization`` header value; ``None`` for anything but a live key."""
    result = resolve_bearer_or_refusal(header)
    return result if isinstance(result, Principal) else None


def resolve_bearer_or_refusal(header: str | None) -> Principal | Refusal:
    """``resolve_bearer`` saying why a header was refused (``accounts.refusals``)."""
    token = bearer_token(header)
    return resolve_key_or_refusal(token) if token is not None else Refusal.UNKNOWN


def resolve_key(raw_key: str) -> Principal | None:
    """Return the principal of a live key, or ``None`` (unknown, malformed, revoked, expired, its project
    deleted, its membership deactivated or removed, or its holder without access to the
    project). Compares digests in constant time. An OAuth access token (``mmwat_…``) resolves
    through its grant to the same kind of principal (``resolve_access_token``)."""
    result = resolve_key_or_refusal(raw_key)
    return result if isinstance(result, Principal) else None


def resolve_key_or_refusal(raw_key: str) -> Principal | Refusal:
    """``resolve_key`` saying why a key was refused, for the 401's text (REST and MCP alike). A
    refusal that names one of our keys (its prefix matched) is counted for support
    (``accounts.refused_calls``: aggregated in the process, written at most every few seconds)."""
    if raw_key.startswith(ACCESS_TOKEN_PREFIX):
        return resolve_access_token(raw_key) or Refusal.UNKNOWN
    if not raw_key.startswith(KEY_PREFIX) or len(raw_key) < len(KEY_PREFIX) + LOOKUP_CHARS:
        return Refusal.UNKNOWN
    prefix = raw_key[len(KEY_PREFIX) : len(KEY_PREFIX) + LOOKUP_CHARS]
    wanted = digest(raw_key)
    cached = key_cache.CACHE.get(wanted)
    if cached is not None:
        live = _unexpired(cached)
        if live is not None:
            return live
    # Every key with this prefix, live or not (the same index as before): the one whose digest
    # matches is the caller's, and if it is refused, the reason is read from its own row.
    candidates = list(ApiKey.objects.select_related("account", "project__account", "user").filter(prefix=prefix))
    key = next((c for c in candidates if hmac.compare_digest(c.digest, wanted)), None)
    if key is None:
        if candidates:
            refused_calls.note(candidates[0], Refusal.WRONG_SECRET)
        return Refusal.UNKNOWN
    refusal = _refusal_of(key)
    if refusal is None:
        principal = principal_for(user=key.user, project=key.project, api_key=key, scopes=frozenset(key.scopes))
        if principal is not None:
            _touch(key)
            key_cache.CACHE.put(wanted, principal)
            return principal
        refusal = Refusal.NO_ACCESS
    refused_calls.note(key, refusal)
    return refusal


def refusal_text(refusal: Refusal) -> str:
    """The 401 text of a refusal, the same on REST (``accounts.authentication``) and ``/mcp``."""
    return refusals.text_of(refusal)


def _refusal_of(key: ApiKey) -> Refusal | None:
    """Why this key (its digest matched) may not be used now, or None."""
    if key.account_id != key.project.account_id:
        return Refusal.UNKNOWN
    if key.revoked_at is not None:
        return Refusal.PENDING_DELETION if refusals.pending_deletion(key.account_id) else Refusal.REVOKED
    if key.project.deleted_at is not None:
        return Refusal.PROJECT_DELETED
    if key.is_expired:
        return Refusal.EXPIRED
    return None


def cached_principal(raw_key: str) -> Principal | None:
    """The principal ``resolve_key`` answers for ``raw_key`` from ``accounts.key_cache`` alone, or
    ``None`` when that takes more (not cached, an OAuth token, or cached but expired: ask
    ``resolve_key``). No SQL and no I/O: safe on an event loop (the MCP endpoint verifies a cached
    key there, without a thread hop)."""
    if not raw_key.startswith(KEY_PREFIX) or len(raw_key) < len(KEY_PREFIX) + LOOKUP_CHARS:
        return None
    cached = key_cache.CACHE.get(digest(raw_key))
    return _unexpired(cached) if cached is not None else None


def _unexpired(cached: Principal) -> Principal | None:
    # A cached principal outlives nothing: an expiry passing while cached ends it here.
    return None if cached.api_key is not None and cached.api_key.is_expired else cached


def principal_for(
    *,
    user: User,
    project: Project,
    api_key: ApiKey | None = None,
    scopes: frozenset[str] = frozenset({SCOPE_READ}),
    via: Via = VIA_API,
) -> Principal | None:
    """The principal of ``user`` working in ``project``, or ``None`` when the user may not use it
    now: an inactive user, a deleted project, no active membership in the project's account, or no
    access to the project. The one place a ``Principal`` is built (keys, and callers without a key
    such as the dashboard or the archivist acting for a record's author), so the department ids
    ``visible_to`` relies on are always the membership's current ones."""
    if not user.is_active or project.deleted_at is not None:
        return None
    membership = active_membership(account=project.account, user=user)
    if membership is None or not has_project_access(membership=membership, project=project):
        return None
    return Principal(
        user=user,
        account=project.account,
        project=project,
        membership=membership,
        api_key=api_key,
        scopes=scopes,
        department_ids=department_ids_of(membership=membership),
        via=via,
    )


def _touch(key: ApiKey) -> None:
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now


# --- OAuth access tokens (docs/oauth.md): the same principal a key of that person and project gives.

ACCESS_TOKEN_PREFIX = "mmwat_"  # noqa: S105 - a public prefix, not a secret


def resolve_access_token(raw_token: str) -> Principal | None:
    """The principal of a live OAuth access token, or ``None`` (unknown, expired, revoked, its
    grant revoked, or its holder no longer allowed in the project — ``principal_for`` decides that
    exactly as for keys). Looked up by the token's sha256 digest (a unique index; the digest of a
    random 256-bit token reveals nothing to time). Scopes are the token's, within the grant's."""
    token = (
        Token.objects.select_related("grant__client", "grant__user", "grant__project__account")
        .filter(digest=digest(raw_token), kind=Token.Kind.ACCESS, revoked_at__isnull=True)
        .filter(expires_at__gt=timezone.now(), grant__revoked_at__isnull=True)
        .first()
    )
    if token is None:
        return None
    grant = token.grant
    scopes = frozenset(token.scopes) & frozenset(grant.scopes)
    principal = principal_for(user=grant.user, project=grant.project, scopes=scopes)
    if principal is None:
        return None
    now = timezone.now()
    if grant.last_used_at is None or now - grant.last_used_at >= LAST_USED_RESOLUTION:
        type(grant).objects.filter(pk=grant.pk).update(last_used_at=now)
    return replace(principal, oauth=OAuthUse(grant.pk, grant.client.client_name, grant.resource))
