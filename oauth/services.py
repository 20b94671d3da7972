"""Everything that writes OAuth state: client registration, consent, codes, tokens, revocation.

The protocol checks the MCP SDK's handlers already make (PKCE S256 verifier, redirect URI of the
code, code expiry, client authentication) are theirs (``oauth.provider``); this module keeps the
rules that are MMW's: which redirect URIs a client may register, what a consent creates, rotation
with reuse detection, and that every grant change is audited. Secrets are returned once, raw, and
stored only as sha256 digests.

Why one module of this length: every write of OAuth state (registration, consent, codes, token
rotation, revocation) under the same locks and audit; the reads are ``oauth.selectors``.
"""

from __future__ import annotations

import ipaddress
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from accounts.keys import ACCESS_TOKEN_PREFIX, principal_for
from accounts.models import ALL_SCOPES, DEFAULT_KEY_SCOPES, Project, User
from accounts.services import audit_record
from mmw import locks, text
from mmw.errors import Forbidden, InvalidInput
from oauth import inputs
from oauth.models import AuthorizationCode, Client, Grant, PendingAuthorization, Token
from orgs.selectors import may_revoke

REFRESH_TOKEN_PREFIX = "mmwrt_"  # noqa: S105 - a public prefix, not a secret
CODE_PREFIX = "mmwac_"
MAX_REDIRECT_URIS = 5
MAX_REDIRECT_URI_LENGTH = inputs.MAX_URI
MAX_CLIENT_NAME = 200
# The scopes a person may grant (docs/oauth.md). A client that names none asks for the memory scopes
# only: the ledger's financial records are granted when a client asks for them (docs/ledger.md).
GRANTABLE_SCOPES: tuple[str, ...] = ALL_SCOPES
DEFAULT_SCOPES: tuple[str, ...] = DEFAULT_KEY_SCOPES
TOO_MANY_CLIENTS = "this server has registered as many clients as it may, retry later"
# What a client may register (RFC 7591 §2): other grant and response types are dropped, and the
# registration answer states what was kept.
GRANT_TYPES: tuple[str, ...] = ("authorization_code", "refresh_token")
RESPONSE_TYPES: tuple[str, ...] = ("code",)
# why a family was revoked (the audit row's ``reason``)
CODE_REUSED = "authorization_code_reused"
REFRESH_REUSED = "refresh_token_reused"


def digest(raw: str) -> str:
    return text.sha256_hex(raw)


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


# --- clients -------------------------------------------------------------------------------------


def redirect_uri_refusal(uri: str) -> str | None:
    """Why ``uri`` may not be registered, or ``None``: https anywhere, http only on a loopback
    address (RFC 8252 §7.3; ``localhost`` too, §8.3 discourages it but clients use it); no
    fragment (RFC 6749 §3.1.2), no userinfo, bounded length."""
    if len(uri) > MAX_REDIRECT_URI_LENGTH:
        return f"redirect URI longer than {MAX_REDIRECT_URI_LENGTH} characters"
    if not uri.isprintable():
        return "redirect URI must not contain control or bidi characters"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - parsed lazily: a bad port raises here
    except ValueError:
        return f"redirect URI is not a valid URI: {uri}"
    if parts.fragment or "#" in uri:
        return f"redirect URI must not have a fragment: {uri}"
    if not parts.hostname or "@" in parts.netloc:
        return f"redirect URI must name a host and no user: {uri}"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and _is_loopback(parts.hostname):
        return None
    return f"redirect URI must be https, or http on a loopback address: {uri}"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_http_url(uri: str) -> bool:
    """An http(s) URL with a host, short and printable enough to store and show as a link."""
    if len(uri) > MAX_REDIRECT_URI_LENGTH or not uri.isprintable():
        return False
    try:
        parts = urlsplit(uri)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


@dataclass(frozen=True)
class ClientInput:
    client_id: str
    client_name: str
    redirect_uris: list[str]
    grant_types: list[str]
    token_endpoint_auth_method: str
    scope: str
    client_uri: str
    client_secret: str | None


def _client_fields(info: ClientInput) -> dict[str, object]:
    """The stored fields of a client MMW accepts; ``InvalidInput`` names the first metadata value
    it refuses (the same rules for registration and metadata documents)."""
    if not info.redirect_uris or len(info.redirect_uris) > MAX_REDIRECT_URIS:
        raise InvalidInput(f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs")
    for uri in info.redirect_uris:
        refusal = redirect_uri_refusal(uri)
        if refusal:
            raise InvalidInput(refusal)
    name = (info.client_name or "").strip()
    if not name:
        raise InvalidInput("client_name is required: the consent page shows it to the person")
    if len(name) > MAX_CLIENT_NAME or not name.isprintable():
        raise InvalidInput(f"client_name must be at most {MAX_CLIENT_NAME} printable characters")
    unknown = set((info.scope or "").split()) - set(GRANTABLE_SCOPES)
    if unknown:
        raise InvalidInput(f"unknown scope(s): {', '.join(sorted(unknown))}")
    grant_types = [g for g in GRANT_TYPES if g in info.grant_types]
    if "authorization_code" not in grant_types:
        raise InvalidInput("grant_types must include authorization_code")
    if info.client_uri and not _is_http_url(info.client_uri):
        raise InvalidInput(
            f"client_uri must be an http or https URL of at most {MAX_REDIRECT_URI_LENGTH} printable characters"
        )
    return {
        "secret_digest": digest(info.client_secret) if info.client_secret else "",
        "client_name": name,
        "redirect_uris": list(info.redirect_uris),
        "grant_types": grant_types,
        "token_endpoint_auth_method": info.token_endpoint_auth_method,
        "scope": " ".join(sorted(set((info.scope or "").split()))),
        "client_uri": info.client_uri or "",
    }


@transaction.atomic
def client_register(*, info: ClientInput, self_registered: bool = True) -> Client:
    """Store a client the registration endpoint (or an operator) accepted. Raises ``InvalidInput``
    naming the first metadata value MMW refuses."""
    return Client.objects.create(client_id=info.client_id, self_registered=self_registered, **_client_fields(info))


def client_store_metadata_document(*, info: ClientInput, fetched_at: datetime, may_add: bool) -> Client:
    """Create or refresh the client a client ID metadata document describes (``info.client_id``
    is the document's URL; ``oauth.client_metadata`` fetched and checked it). The same metadata
    rules as registration apply. ``may_add`` False (the client cap is reached) refuses a new
    client but still refreshes a known one."""
    fields = {**_client_fields(info), "metadata_document": True, "metadata_fetched_at": fetched_at}
    for _ in range(2):  # a concurrent first fetch of the same URL wins the insert: update it then
        with transaction.atomic():
            if Client.objects.filter(client_id=info.client_id).update(**fields):
                return Client.objects.get(client_id=info.client_id)
            if not may_add:
                raise InvalidInput(TOO_MANY_CLIENTS)
            try:
                with transaction.atomic():
                    return Client.objects.create(client_id=info.client_id, self_registered=True, **fields)
            except IntegrityError:
                continue
    return Client.objects.get(client_id=info.client_id)


def clients_sweep_abandoned(*, now: datetime) -> int:
    """Delete the self-registered clients created more than ``MMW_OAUTH_ABANDONED_CLIENT_DAYS``
    before ``now`` that no person ever granted anything (no grant, live or revoked): open
    registration would otherwise keep every drive-by registration for good. Their parked
    authorization requests go with them. Operator-registered clients and any client with a grant
    stay. Returns how many clients were deleted."""
    cutoff = now - timedelta(days=settings.MMW_OAUTH_ABANDONED_CLIENT_DAYS)
    abandoned = Client.objects.filter(self_registered=True, created_at__lt=cutoff).exclude(
        Exists(Grant.objects.filter(client=OuterRef("pk")))
    )
    _, per_model = abandoned.delete()
    return per_model.get(Client._meta.label, 0)


# --- authorization (consent) ---------------------------------------------------------------------


@transaction.atomic
def authorization_begin(
    *,
    client: Client,
    redirect_uri: str,
    redirect_uri_explicit: bool,
    code_challenge: str,
    state: str | None,
    scopes: Iterable[str] | None,
    resource: str,
) -> PendingAuthorization:
    """Park a validated authorization request until the person answers on the consent page.
    ``InvalidInput`` carries the OAuth error code of a refusal (``invalid_request`` for a
    ``state`` or ``code_challenge`` out of bounds, ``invalid_scope``)."""
    for param, value in ((inputs.STATE, state or ""), (inputs.CODE_CHALLENGE, code_challenge)):
        problem = inputs.problem(param, value)
        if problem:
            raise InvalidInput(problem, code="invalid_request")
    wanted = sorted(set(scopes or DEFAULT_SCOPES))
    unknown = [s for s in wanted if s not in GRANTABLE_SCOPES]
    if unknown:
        raise InvalidInput(f"unknown scope(s): {', '.join(unknown)}", code="invalid_scope")
    return PendingAuthorization.objects.create(
        public_id=secrets.token_urlsafe(24),
        client=client,
        redirect_uri=redirect_uri,
        redirect_uri_explicit=redirect_uri_explicit,
        code_challenge=code_challenge,
        state=state or "",
        scopes=wanted,
        resource=resource,
        expires_at=timezone.now() + timedelta(seconds=settings.MMW_OAUTH_CONSENT_SECONDS),
    )


def _take_pending(pending: PendingAuthorization) -> None:
    """Answer a pending request once: a second answer (double submit, replay) is refused."""
    updated = PendingAuthorization.objects.filter(
        pk=pending.pk, answered_at__isnull=True, expires_at__gt=timezone.now()
    ).update(answered_at=timezone.now())
    if updated != 1:
        raise InvalidInput("this authorization request has expired or was already answered")


@dataclass(frozen=True)
class Approved:
    grant: Grant
    code: str  # raw authorization code: goes to the client's redirect URI only


@transaction.atomic
def authorization_approve(
    *, pending: PendingAuthorization, user: User, project: Project, scopes: Iterable[str]
) -> Approved:
    """The person approved: a grant for ``project`` with the chosen ``scopes`` (a subset of what
    the client asked for) and a one-time code for the client. The person must be allowed to use
    the project now (the same rule keys follow)."""
    chosen = sorted(set(scopes))
    if not chosen or any(s not in pending.scopes for s in chosen):
        raise InvalidInput(f"choose at least one of the requested scopes: {', '.join(pending.scopes)}")
    if principal_for(user=user, project=project) is None:
        raise Forbidden("you have no access to this project")
    _take_pending(pending)
    grant = Grant.objects.create(
        client=pending.client, user=user, project=project, scopes=chosen, resource=pending.resource
    )
    raw = new_secret(CODE_PREFIX)
    AuthorizationCode.objects.create(
        grant=grant,
        digest=digest(raw),
        code_challenge=pending.code_challenge,
        redirect_uri=pending.redirect_uri,
        redirect_uri_explicit=pending.redirect_uri_explicit,
        expires_at=timezone.now() + timedelta(seconds=settings.MMW_OAUTH_CODE_SECONDS),
    )
    audit_record(
        action="oauth.grant_created",
        account=project.account,
        actor_user=user,
        target_type="oauth_grant",
        target_id=str(grant.pk),
        data={"client": pending.client.client_name, "client_id": pending.client.client_id, "scopes": chosen},
    )
    return Approved(grant=grant, code=raw)


@transaction.atomic
def authorization_refuse(*, pending: PendingAuthorization) -> None:
    _take_pending(pending)


# --- tokens --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]


def _issue(grant: Grant, scopes: list[str], *, family: uuid.UUID) -> IssuedTokens:
    """A new access and refresh token pair of ``family`` (the caller holds the family's lock)."""
    now = timezone.now()
    access, refresh = new_secret(ACCESS_TOKEN_PREFIX), new_secret(REFRESH_TOKEN_PREFIX)
    for kind, raw, seconds in (
        (Token.Kind.REFRESH, refresh, settings.MMW_OAUTH_REFRESH_TOKEN_SECONDS),
        (Token.Kind.ACCESS, access, settings.MMW_OAUTH_ACCESS_TOKEN_SECONDS),
    ):
        Token.objects.create(
            grant=grant,
            kind=kind,
            digest=digest(raw),
            family=family,
            scopes=scopes,
            expires_at=now + timedelta(seconds=seconds),
        )
    return IssuedTokens(access, refresh, settings.MMW_OAUTH_ACCESS_TOKEN_SECONDS, scopes)


def _lock_family(family: uuid.UUID) -> None:
    """Serialise what issues into and what revokes ``family`` until the transaction ends: a
    revocation that ran while a rotation was issuing would miss the pair that rotation had not
    committed yet."""
    locks.advisory_xact_lock("oauth-token-family", str(family))


def code_find(*, client_id: str, raw_code: str) -> AuthorizationCode | None:
    """The live code, or ``None``. A code presented again after its exchange is a replay: every
    token descended from it, rotated ones included, is revoked (RFC 6749 §4.1.2) and ``None`` is
    returned."""
    code = (
        AuthorizationCode.objects.select_related("grant__client")
        .filter(digest=digest(raw_code), grant__client__client_id=client_id)
        .first()
    )
    if code is None:
        return None
    if code.used_at is not None:
        family_revoke(family=code.family, reason=CODE_REUSED)
        return None
    if code.grant.revoked_at is not None:
        return None
    return code


def code_exchange(*, code: AuthorizationCode) -> IssuedTokens:
    """Spend the code once and issue the first pair of its family. A second exchange that got
    past ``code_find`` at the same time is the same replay: refused, and the family revoked (the
    revocation commits; the refusal does not undo it)."""
    with transaction.atomic():
        _lock_family(code.family)
        spent = AuthorizationCode.objects.filter(pk=code.pk, used_at__isnull=True).update(used_at=timezone.now())
        if spent == 1:
            return _issue(code.grant, list(code.grant.scopes), family=code.family)
    family_revoke(family=code.family, reason=CODE_REUSED)
    raise InvalidInput("authorization code was already used")


def refresh_find(*, client_id: str, raw_token: str) -> Token | None:
    """The live refresh token, or ``None``. A rotated one presented again means two parties hold
    the chain: the whole family is revoked (the thief and the client both have to start over)."""
    token = (
        Token.objects.select_related("grant__client")
        .filter(digest=digest(raw_token), kind=Token.Kind.REFRESH, grant__client__client_id=client_id)
        .first()
    )
    if token is None or token.revoked_at is not None or token.grant.revoked_at is not None:
        return None
    if token.used_at is not None:
        family_revoke(family=token.family, reason=REFRESH_REUSED)
        return None
    return token


def refresh_exchange(*, token: Token, scopes: list[str]) -> IssuedTokens:
    """Rotate: the presented refresh token is spent, a new pair of the same family is issued. A
    token spent or revoked meanwhile is refused, and its family revoked (that revocation commits)."""
    with transaction.atomic():
        _lock_family(token.family)
        spent = Token.objects.filter(pk=token.pk, used_at__isnull=True, revoked_at__isnull=True).update(
            used_at=timezone.now()
        )
        if spent == 1:
            narrowed = [s for s in scopes if s in token.scopes] or list(token.scopes)
            return _issue(token.grant, narrowed, family=token.family)
    family_revoke(family=token.family, reason=REFRESH_REUSED)
    raise InvalidInput("refresh token was already used")


def family_revoke(*, family: uuid.UUID, reason: str) -> int:
    """Revoke every token of a family (every access and refresh token descended from one code),
    once a rotation of it in flight has committed; audited when it revoked anything."""
    now = timezone.now()
    with transaction.atomic():
        _lock_family(family)
        count = Token.objects.filter(family=family, revoked_at__isnull=True).update(revoked_at=now)
        grant = Grant.objects.filter(tokens__family=family).select_related("project__account").first()
        if grant is not None and count:
            audit_record(
                action="oauth.token_family_revoked",
                account=grant.project.account,
                target_type="oauth_grant",
                target_id=str(grant.pk),
                data={"reason": reason, "tokens": count},
            )
    return count


def token_revoke(*, raw_token: str, client_id: str) -> None:
    """RFC 7009: revoke the token and the rest of its chain; unknown tokens are not an error."""
    token = Token.objects.filter(digest=digest(raw_token), grant__client__client_id=client_id).first()
    if token is not None:
        family_revoke(family=token.family, reason="revoked_by_client")


# --- grants (Connected apps) ---------------------------------------------------------------------


@transaction.atomic
def grant_revoke(*, grant: Grant, actor: User) -> Grant:
    """Revoke a connection now: every token of the grant stops at the next request. Allowed to
    the person who granted it, an owner or admin of the project's account, and support staff with
    the admin's permission; idempotent and audited."""
    if not may_revoke(
        actor, holder_id=grant.user_id, account=grant.project.account, staff_permission="oauth.change_grant"
    ):
        raise Forbidden("only the person who connected the app, an owner or an admin can revoke it")
    if grant.revoked_at is None:
        now = timezone.now()
        grant.revoked_at = now
        grant.save(update_fields=["revoked_at"])
        Token.objects.filter(grant=grant, revoked_at__isnull=True).update(revoked_at=now)
        audit_record(
            action="oauth.grant_revoked",
            account=grant.project.account,
            actor_user=actor,
            target_type="oauth_grant",
            target_id=str(grant.pk),
            data={"client": grant.client.client_name, "client_id": grant.client.client_id},
        )
    return grant
