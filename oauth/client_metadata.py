"""Client ID metadata documents (the MCP authorization spec's preferred client identification;
draft-ietf-oauth-client-id-metadata-document): a client whose ``client_id`` is an https URL
serving a JSON document that describes it, instead of registering.

MMW fetches the document through ``mmw.outbound`` (the SSRF guard webhooks use: every
hop checked, public addresses only, the resolved address pinned) with a bounded GET — at most
5 KB, 5 s, 3 redirects each checked again — then checks it: a JSON object whose ``client_id``
is exactly the URL, ``redirect_uris`` under the registration rules (``oauth.services``), a
public client (``token_endpoint_auth_method`` ``none``, no ``client_secret``). The result is
stored as a ``Client`` row (``metadata_document``) that serves as the cache for
``MMW_OAUTH_CLIENT_METADATA_CACHE_SECONDS``; after that the next use fetches again, and a
document that has gone or no longer passes stops the client. A URL that fails is remembered
(Django's cache, ``FAILURE_CACHE_SECONDS``) with its reason, so repeating it fetches nothing: an
unauthenticated caller cannot make MMW fetch the same bad URL over and over (``oauth.endpoints``
also bounds how many metadata-document authorizations one address may start per minute).

Test allowances, off by default: ``MMW_OAUTH_CLIENT_METADATA_ALLOW_HTTP`` (http URLs),
``MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS`` (addresses otherwise refused, such as loopback),
``MMW_OAUTH_CLIENT_METADATA_CA_FILE`` (a CA bundle trusted instead of the system's).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from mmw import outbound
from mmw.errors import InvalidInput
from mmw.text import sha256_hex
from oauth import services
from oauth.models import MAX_CLIENT_ID, Client

MAX_BYTES = 5 * 1024
FAILURE_CACHE_SECONDS = 60
TIMEOUT_SECONDS = 5.0
HEADERS = {"Accept": "application/json", "User-Agent": "MMW-OAuth/1"}
PUBLIC_METHODS = ("none",)


def is_metadata_url(client_id: str) -> bool:
    """Whether ``client_id`` names a metadata document (an https URL; http too when allowed)."""
    schemes = ("https://", "http://") if settings.MMW_OAUTH_CLIENT_METADATA_ALLOW_HTTP else ("https://",)
    return client_id.startswith(schemes)


def policy() -> outbound.Policy:
    """The outbound policy of a document fetch, from settings at each use."""
    return outbound.Policy(
        allow_http=settings.MMW_OAUTH_CLIENT_METADATA_ALLOW_HTTP,
        allowed_networks=tuple(settings.MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS),
        ca_file=settings.MMW_OAUTH_CLIENT_METADATA_CA_FILE,
        timeout=TIMEOUT_SECONDS,
        max_bytes=MAX_BYTES,
    )


def url_refusal(url: str) -> str | None:
    """Why ``url`` cannot be a client ID (the draft's §3 rules, then the outbound guard's checks
    that need no lookup: a well-formed host name and port), or ``None``. Never raises."""
    if len(url) > MAX_CLIENT_ID:
        return f"a client ID URL is at most {MAX_CLIENT_ID} characters"
    try:
        parts = urlsplit(url)
    except ValueError:
        return _guard_refusal(url)  # the guard names what is malformed
    if parts.fragment or "#" in url or parts.username or parts.password or not parts.hostname:
        return "a client ID URL names a host, without user, password or fragment"
    if parts.path in ("", "/"):
        return "a client ID URL must have a path (the document's location)"
    segments = parts.path.split("/")
    if "." in segments or ".." in segments:
        return "a client ID URL must not contain . or .. path segments"
    return _guard_refusal(url)


def _guard_refusal(url: str) -> str | None:
    """What ``mmw.outbound`` says of ``url`` before any lookup, as the fetch would say it."""
    try:
        outbound.check_url(url, policy())
    except outbound.Refused as exc:
        return f"client metadata document refused: {exc}"
    return None


def resolve(client_id: str, *, now: datetime | None = None) -> Client:
    """The client ``client_id`` (a metadata URL) names: the cached row while fresh, otherwise the
    document fetched and checked again. ``InvalidInput`` says why the client cannot be used."""
    now = now or timezone.now()
    refusal = url_refusal(client_id)
    if refusal:
        raise InvalidInput(refusal)
    cached = Client.objects.filter(client_id=client_id, metadata_document=True).first()
    fresh_after = now - timedelta(seconds=settings.MMW_OAUTH_CLIENT_METADATA_CACHE_SECONDS)
    if cached is not None and cached.metadata_fetched_at is not None and cached.metadata_fetched_at > fresh_after:
        return cached
    if cached is None and Client.objects.filter(client_id=client_id).exists():
        raise InvalidInput("this client ID is taken by a registered client")
    failure_key = "oauth-cimd-failed:" + sha256_hex(client_id)
    failed = cache.get(failure_key)
    if isinstance(failed, str):
        raise InvalidInput(failed)
    try:
        info = client_input(client_id, fetch(client_id))
        may_add = Client.objects.count() < settings.MMW_OAUTH_MAX_CLIENTS
        return services.client_store_metadata_document(info=info, fetched_at=now, may_add=may_add)
    except InvalidInput as exc:  # the document, or what it asks to register, does not pass
        cache.set(failure_key, exc.message, FAILURE_CACHE_SECONDS)
        raise


def fetch(url: str) -> dict[str, Any]:
    """The document at ``url`` as a JSON object; ``InvalidInput`` naming what went wrong."""
    try:
        answer = outbound.get(url, headers=HEADERS, policy=policy())
    except outbound.Refused as exc:
        raise InvalidInput(f"client metadata document refused: {exc}") from exc
    except httpx.HTTPError as exc:
        raise InvalidInput(f"client metadata document could not be fetched: {type(exc).__name__}") from exc
    if answer.status != 200:
        raise InvalidInput(f"client metadata document answered HTTP {answer.status}")
    try:
        document = json.loads(answer.body)
    except (ValueError, UnicodeDecodeError):
        document = None
    if not isinstance(document, dict):
        raise InvalidInput("client metadata document is not a JSON object")
    return document


def client_input(url: str, document: dict[str, Any]) -> services.ClientInput:
    """The client the document describes, checked against its URL (the draft's §4.1)."""
    if document.get("client_id") != url:
        raise InvalidInput("client metadata document's client_id is not its URL")
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise InvalidInput("client metadata document must not carry a client secret")
    method = document.get("token_endpoint_auth_method", "none")
    if method not in PUBLIC_METHODS:
        raise InvalidInput("client metadata document's token_endpoint_auth_method must be none")
    redirect_uris = document.get("redirect_uris")
    if not isinstance(redirect_uris, list) or not all(isinstance(u, str) for u in redirect_uris):
        raise InvalidInput("client metadata document must list redirect_uris")
    grant_types = document.get("grant_types", ["authorization_code", "refresh_token"])
    return services.ClientInput(
        client_id=url,
        client_name=_text(document, "client_name") or (urlsplit(url).hostname or url),
        redirect_uris=redirect_uris,
        grant_types=[g for g in grant_types if isinstance(g, str)] if isinstance(grant_types, list) else [],
        token_endpoint_auth_method="none",  # noqa: S106 - a method name
        scope=_text(document, "scope"),
        client_uri=_text(document, "client_uri"),
        client_secret=None,
    )


def _text(document: dict[str, Any], field: str) -> str:
    value = document.get(field, "")
    if not isinstance(value, str):
        raise InvalidInput(f"client metadata document's {field} must be a string")
    return value
