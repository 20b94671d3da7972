"""The OAuth routes, served beside ``/mcp`` by the MCP SDK's own handlers (Starlette):

- ``GET /.well-known/oauth-authorization-server``          RFC 8414 metadata
- ``GET /.well-known/oauth-protected-resource[/mcp]``      RFC 9728 metadata of ``/mcp``
- ``GET|POST /oauth/authorize``  → the consent page (dashboard, ``/oauth/consent/<id>``)
- ``POST /oauth/token``          authorization_code (PKCE S256) and refresh_token grants
- ``POST /oauth/register``       RFC 7591, rate-limited per address, bodies ≤ 16 KB
- ``POST /oauth/revoke``         RFC 7009

URLs inside the metadata come from settings at each request (``oauth.config``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError
from mcp.server.auth.routes import build_metadata, cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router, request_response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from billing import counters
from interfaces.threads import run_sync
from mmw.errors import MMWError
from oauth import client_metadata, config, inputs, selectors, services
from oauth.provider import MmwClientAuthenticator, MmwProvider, registration_answer

AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"  # noqa: S105 - a path
REGISTER_PATH = "/oauth/register"
REVOKE_PATH = "/oauth/revoke"
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"
PR_METADATA_PATHS = ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp")
PATHS = frozenset({AUTHORIZE_PATH, TOKEN_PATH, REGISTER_PATH, REVOKE_PATH, AS_METADATA_PATH, *PR_METADATA_PATHS})

FORM_BODY_BYTES = 64 * 1024
REGISTRATION_BODY_BYTES = 16 * 1024
HOUR = 3600

_provider = MmwProvider()
_authenticator = MmwClientAuthenticator(_provider)
_registration = ClientRegistrationOptions(
    enabled=True, valid_scopes=list(services.GRANTABLE_SCOPES), default_scopes=list(services.DEFAULT_SCOPES)
)


def authorization_server_metadata() -> dict[str, Any]:
    """RFC 8414 §2, with MMW's endpoint paths and the client auth methods it accepts."""
    issuer = config.issuer()
    metadata = build_metadata(AnyHttpUrl(issuer), None, _registration, RevocationOptions(enabled=True))
    methods = ["none", "client_secret_post", "client_secret_basic"]
    return metadata.model_copy(
        update={
            "authorization_endpoint": AnyHttpUrl(issuer + AUTHORIZE_PATH),
            "token_endpoint": AnyHttpUrl(issuer + TOKEN_PATH),
            "registration_endpoint": AnyHttpUrl(issuer + REGISTER_PATH),
            "revocation_endpoint": AnyHttpUrl(issuer + REVOKE_PATH),
            "token_endpoint_auth_methods_supported": methods,
            "revocation_endpoint_auth_methods_supported": methods,
        }
    ).model_dump(mode="json", exclude_none=True) | {
        "issuer": issuer,
        # RFC 9207 §3: every authorization response (success or error) carries ``iss``
        "authorization_response_iss_parameter_supported": True,
        # an https URL of the client's metadata document may stand as its client_id
        "client_id_metadata_document_supported": True,
    }


def protected_resource_metadata() -> dict[str, Any]:
    """RFC 9728 §2 for ``/mcp``."""
    metadata = ProtectedResourceMetadata(
        resource=AnyHttpUrl(config.mcp_resource()),
        authorization_servers=[AnyHttpUrl(config.issuer())],
        scopes_supported=list(services.GRANTABLE_SCOPES),
        resource_name="MMW memory (MCP)",
        resource_documentation=AnyHttpUrl(f"{settings.PUBLIC_URL.rstrip('/')}/docs/oauth"),
    )
    # the issuer exactly as the authorization server names itself (no trailing slash added)
    return {**metadata.model_dump(mode="json", exclude_none=True), "authorization_servers": [config.issuer()]}


async def _as_metadata(request: Request) -> Response:
    # Not the SDK's MetadataHandler: it serves one model fixed at start-up; ours follows settings.
    return JSONResponse(authorization_server_metadata(), headers={"Cache-Control": "public, max-age=300"})


async def _pr_metadata(request: Request) -> Response:
    return JSONResponse(protected_resource_metadata(), headers={"Cache-Control": "public, max-age=300"})


class RegistrationLimit:
    """Bounds open registration before the SDK's handler runs: at most
    ``MMW_OAUTH_REGISTRATIONS_PER_HOUR`` per client address per clock hour (``billing.counters``,
    shared by every web process) → 429, and at most ``MMW_OAUTH_MAX_CLIENTS`` clients in all →
    503 until the hourly sweep (``oauth.tasks``) deletes abandoned ones. Both carry Retry-After."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "POST":
            address = (scope.get("client") or ("unknown", 0))[0]
            refusal = await run_sync(registration_refusal, address)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


TOO_MANY_REGISTRATIONS = "too many client registrations from this address, retry after the hour"
TOO_MANY_CLIENTS = services.TOO_MANY_CLIENTS


TOO_MANY_METADATA_AUTHORIZATIONS = (
    "too many authorizations by client metadata document from this address, retry in a minute"
)


def metadata_authorization_refusal(address: str) -> JSONResponse | None:
    """The 429 an authorization naming a metadata-document ``client_id`` gets when ``address``
    has started more than ``MMW_OAUTH_CLIENT_METADATA_AUTHORIZATIONS_PER_MINUTE`` this minute
    (each may make MMW fetch a URL the caller chose), or ``None``."""
    limit = settings.MMW_OAUTH_CLIENT_METADATA_AUTHORIZATIONS_PER_MINUTE
    return _per_address_refusal("oauth-cimd", address, 60, limit, TOO_MANY_METADATA_AUTHORIZATIONS)


def registration_refusal(address: str) -> JSONResponse | None:
    """The 429 or 503 answer a registration from ``address`` gets now, or ``None`` to let it in."""
    limit = settings.MMW_OAUTH_REGISTRATIONS_PER_HOUR
    refusal = _per_address_refusal("oauth-register", address, HOUR, limit, TOO_MANY_REGISTRATIONS)
    if refusal is not None:
        return refusal
    if selectors.client_count() >= settings.MMW_OAUTH_MAX_CLIENTS:
        body = {"error": "temporarily_unavailable", "error_description": TOO_MANY_CLIENTS}
        return JSONResponse(body, status_code=503, headers={"Retry-After": str(HOUR)})
    return None


def _per_address_refusal(name: str, address: str, seconds: int, limit: int, message: str) -> JSONResponse | None:
    """Count one more from ``address`` in this clock window of ``seconds`` (``billing.counters``,
    shared by every web process); past ``limit``, the 429 saying ``message`` with Retry-After."""
    window, retry_after = counters.fixed_window(seconds)
    if counters.hit(f"{name}:{address}:{window}", ttl=seconds) <= limit:
        return None
    body = {"error": "invalid_request", "error_description": message}
    return JSONResponse(body, status_code=429, headers={"Retry-After": str(retry_after)})


async def _revoke(request: Request) -> Response:
    """RFC 7009 §2: revoke the token (and its chain); 200 whether or not it was known. The SDK's
    handler would refuse a public client that sends no ``client_secret`` field at all."""
    try:
        client = await _authenticator.authenticate_request(request)
    except AuthenticationError as exc:
        return JSONResponse({"error": "invalid_client", "error_description": exc.message}, status_code=401)
    form = await request.form()
    twice = inputs.first_problem(form, inputs.REVOKE_READS, ())
    if twice:
        return _oauth_error("invalid_request", twice)
    token = form.get("token")
    if not isinstance(token, str) or not token:
        return _oauth_error("invalid_request", "token is required")
    if not inputs.problem(inputs.TOKEN, token):  # out of bounds: no token MMW issued (RFC 7009 §2.2)
        await run_sync(services.token_revoke, raw_token=token, client_id=client.client_id)
    return Response(status_code=200, headers={"Cache-Control": "no-store"})


def _oauth_error(error: str, description: str, status: int = 400) -> JSONResponse:
    """An RFC 6749 §5.2 error answer, never cached."""
    body = {"error": error, "error_description": description}
    return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


def _token(handler: TokenHandler) -> Callable[[Request], Awaitable[Response]]:
    """The SDK's token endpoint behind MMW's bounds: a parameter sent twice or out of bounds is
    ``invalid_request``, a ``resource`` other than ``/mcp`` is ``invalid_target`` (RFC 8707 §2;
    the SDK's handler does not look at it), before the code or refresh token is looked up (a
    refused request spends nothing). The client's own parameters are bounded by its
    authentication (``MmwClientAuthenticator``, 401)."""

    async def endpoint(request: Request) -> Response:
        form = await request.form()
        problem = inputs.first_problem(form, inputs.TOKEN_READS, inputs.TOKEN_GRANT)
        if problem:
            return _oauth_error("invalid_request", problem)
        resource = form.get("resource")
        if resource is not None and not (isinstance(resource, str) and config.is_mcp_resource(resource)):
            return _oauth_error("invalid_target", config.wrong_resource())
        answer: Response = await handler.handle(request)  # the SDK leaves its return type out
        return answer

    return endpoint


def with_iss(location: str) -> str:
    """``location`` with RFC 9207 ``iss`` (the issuer identifier) added to its query, so a client
    talking to several authorization servers can tell which one answered (mix-up defence)."""
    parts = urlsplit(location)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "iss"]
    query.append(("iss", config.issuer()))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def _authorize(handler: AuthorizationHandler) -> Callable[[Request], Awaitable[Response]]:
    """The SDK's authorization endpoint, with ``iss`` on every redirect that answers the client
    (its error redirects); the redirect to MMW's own consent page is not an answer and stays as is
    (the consent page adds ``iss`` to the answer it sends). The parameters read before the
    redirect URI is trusted (``inputs.AUTHORIZE_BEFORE_REDIRECT``, and any sent twice) are
    bounded first: their refusal is a 400, since an answer at the redirect URI must carry the
    ``state`` unchanged and an out-of-bounds one cannot be."""

    async def endpoint(request: Request) -> Response:
        params = request.query_params if request.method == "GET" else await request.form()
        problem = inputs.first_problem(params, inputs.AUTHORIZE_READS, inputs.AUTHORIZE_BEFORE_REDIRECT)
        if problem:  # before the redirect URI is trusted: answered here, never redirected
            return _oauth_error("invalid_request", problem)
        refusal = await _metadata_document_refusal(request)
        if refusal is not None:
            return refusal
        response = await handler.handle(request)
        location = response.headers.get("location")
        if location and not location.startswith(config.issuer() + config.CONSENT_PATH):
            response.headers["location"] = with_iss(location)
        return response

    return endpoint


async def _metadata_document_refusal(request: Request) -> Response | None:
    """For a ``client_id`` that is a metadata document URL, fetch (or find cached) and check the
    document now, so a refusal names its reason (400, never a redirect: the redirect URIs are not
    trusted yet). ``None`` lets the SDK's handler go on; it finds the client in the cache."""
    params = request.query_params if request.method == "GET" else await request.form()
    client_id = params.get("client_id")
    if not isinstance(client_id, str) or not client_metadata.is_metadata_url(client_id):
        return None
    address = request.client.host if request.client else "unknown"
    limited = await run_sync(metadata_authorization_refusal, address)
    if limited is not None:
        return limited
    try:
        await run_sync(client_metadata.resolve, client_id)
    except MMWError as exc:
        return _oauth_error("invalid_request", exc.message)
    return None


def _register(handler: RegistrationHandler) -> Callable[[Request], Awaitable[Response]]:
    """The SDK's registration endpoint, answering what MMW stored (RFC 7591 §3.2.1: the response
    holds the client's registered metadata). The SDK echoes the request as it parsed it —
    grant and response types MMW dropped, fields it never keeps; only the credentials it minted
    (``client_id``, ``client_secret``, ``client_secret_expires_at``) are taken from its answer."""

    async def endpoint(request: Request) -> Response:
        answer: Response = await handler.handle(request)  # the SDK leaves its return type out
        if answer.status_code != 201:
            return answer
        minted = json.loads(bytes(answer.body))
        client = await run_sync(selectors.client_by_id, client_id=minted["client_id"])
        body = registration_answer(
            client, client_secret=minted.get("client_secret"), secret_expires_at=minted.get("client_secret_expires_at")
        )
        return JSONResponse(body, status_code=201, headers={"Cache-Control": "no-store"})

    return endpoint


def _limited(app: ASGIApp, limit: int) -> ASGIApp:
    return _JsonBodyLimit(app, limit)


class _JsonBodyLimit:
    """The SDK's body bound (``RequestBodyLimitMiddleware``), answering its 413 as the OAuth
    routes answer every refusal — RFC 6749 JSON naming the bound — instead of the SDK's plain
    text "Request body too large". The routes behind it never answer 413 themselves."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.limiter = RequestBodyLimitMiddleware(app, limit)
        self.description = f"request body exceeds {limit // 1024} KB"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = False

        async def sending(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 413:
                refused = True
                return
            if not refused:
                await send(message)
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                await _oauth_error("invalid_request", self.description, status=413)(scope, receive, send)

        await self.limiter(scope, receive, sending)


def build_router() -> Router:
    token = TokenHandler(_provider, _authenticator)
    register = RegistrationHandler(_provider, options=_registration)
    routes = [
        Route(AS_METADATA_PATH, cors_middleware(_as_metadata, ["GET", "OPTIONS"]), methods=["GET", "OPTIONS"]),
        *(
            Route(path, cors_middleware(_pr_metadata, ["GET", "OPTIONS"]), methods=["GET", "OPTIONS"])
            for path in PR_METADATA_PATHS
        ),
        Route(
            AUTHORIZE_PATH,
            _limited(request_response(_authorize(AuthorizationHandler(_provider))), FORM_BODY_BYTES),
            methods=["GET", "POST"],
        ),
        Route(
            TOKEN_PATH,
            _limited(cors_middleware(_token(token), ["POST", "OPTIONS"]), FORM_BODY_BYTES),
            methods=["POST", "OPTIONS"],
        ),
        Route(
            REGISTER_PATH,
            RegistrationLimit(
                _limited(cors_middleware(_register(register), ["POST", "OPTIONS"]), REGISTRATION_BODY_BYTES)
            ),
            methods=["POST", "OPTIONS"],
        ),
        Route(
            REVOKE_PATH,
            _limited(cors_middleware(_revoke, ["POST", "OPTIONS"]), FORM_BODY_BYTES),
            methods=["POST", "OPTIONS"],
        ),
    ]
    return Router(routes=routes)
