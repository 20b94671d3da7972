"""MMW as the MCP SDK's ``OAuthAuthorizationServerProvider``: the SDK's handlers parse and check
the protocol (docs/oauth.md lists which checks are whose); every method here hands over to
``oauth.services`` in a worker thread and converts between the SDK's models and ours."""

from __future__ import annotations

import base64
import binascii
import hmac
from typing import Any
from urllib.parse import unquote

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationErrorCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.requests import Request

from accounts.keys import resolve_access_token
from interfaces.threads import run_sync
from mmw.errors import MMWError
from oauth import client_metadata, config, inputs, models, services

# The OAuth error codes ``services.authorization_begin`` refusals carry (``MMWError.code``).
AUTHORIZE_ERRORS: dict[str, AuthorizationErrorCode] = {
    "invalid_request": "invalid_request",
    "invalid_scope": "invalid_scope",
}


class ExactRedirectClient(OAuthClientInformationFull):
    """A client whose redirect URIs match exactly, character for character (OAuth 2.1 §2.3.1;
    the SDK compares parsed URLs, which normalises case and an empty path)."""

    registered_redirects: list[str] = []

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:
            if len(self.registered_redirects) == 1:
                return AnyUrl(self.registered_redirects[0])
            raise InvalidRedirectUriError("redirect_uri is required")
        if str(redirect_uri) not in self.registered_redirects:
            raise InvalidRedirectUriError(f"redirect_uri {str(redirect_uri)!r} is not registered for this client")
        return redirect_uri


def _client_info(client: models.Client) -> ExactRedirectClient:
    return ExactRedirectClient(
        client_id=client.client_id,
        # the digest stands in for the secret: MmwClientAuthenticator compares digests
        client_secret=client.secret_digest or None,
        client_name=client.client_name,
        redirect_uris=[AnyUrl(u) for u in client.redirect_uris],
        registered_redirects=list(client.redirect_uris),
        grant_types=client.grant_types or ["authorization_code", "refresh_token"],
        token_endpoint_auth_method=client.token_endpoint_auth_method,
        scope=client.scope or " ".join(services.DEFAULT_SCOPES),
        client_id_issued_at=int(client.created_at.timestamp()),
    )


def registration_answer(
    client: models.Client, *, client_secret: str | None, secret_expires_at: int | None
) -> dict[str, Any]:
    """RFC 7591 §3.2.1: the client's registered metadata — what MMW stored and uses, nothing
    else — with the secret minted for a confidential client (shown this once)."""
    answer: dict[str, Any] = {
        "client_id": client.client_id,
        "client_id_issued_at": int(client.created_at.timestamp()),
        "client_name": client.client_name,
        "redirect_uris": list(client.redirect_uris),
        "grant_types": list(client.grant_types),
        "response_types": list(services.RESPONSE_TYPES),
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "scope": client.scope or " ".join(services.DEFAULT_SCOPES),
    }
    if client.client_uri:
        answer["client_uri"] = client.client_uri
    if client_secret:
        answer |= {"client_secret": client_secret, "client_secret_expires_at": secret_expires_at or 0}
    return answer


class MmwCode(AuthorizationCode):
    pk: int


class MmwRefreshToken(RefreshToken):
    pk: int


class MmwProvider(OAuthAuthorizationServerProvider[MmwCode, MmwRefreshToken, AccessToken]):
    """``mcp.server.auth.provider.OAuthAuthorizationServerProvider`` over ``oauth.services``."""

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """A registered client, or the one a client ID metadata document describes (fetched, or
        cached; ``None`` when it cannot be used, or ``client_id`` is out of bounds — ``oauth.endpoints``
        says why)."""
        if inputs.problem(inputs.CLIENT_ID, client_id):
            return None
        if client_metadata.is_metadata_url(client_id):
            try:
                client = await run_sync(client_metadata.resolve, client_id)
            except MMWError:
                return None
            return _client_info(client)
        found = await run_sync(lambda: models.Client.objects.filter(client_id=client_id).first())
        return _client_info(found) if found is not None else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        info = services.ClientInput(
            client_id=client_info.client_id,
            client_name=client_info.client_name or "",
            redirect_uris=[str(u) for u in client_info.redirect_uris or []],
            grant_types=list(client_info.grant_types),
            token_endpoint_auth_method=client_info.token_endpoint_auth_method or "none",
            scope=client_info.scope or "",
            client_uri=str(client_info.client_uri or ""),
            client_secret=client_info.client_secret,
        )
        try:
            await run_sync(services.client_register, info=info)
        except MMWError as exc:
            if "redirect" in exc.message:
                raise RegistrationError("invalid_redirect_uri", exc.message) from None
            raise RegistrationError("invalid_client_metadata", exc.message) from None

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and not config.is_mcp_resource(params.resource):
            raise AuthorizeError("invalid_target", config.wrong_resource())
        resource = config.mcp_resource()

        def begin() -> str:
            row = models.Client.objects.get(client_id=client.client_id)
            pending = services.authorization_begin(
                client=row,
                redirect_uri=str(params.redirect_uri),
                redirect_uri_explicit=params.redirect_uri_provided_explicitly,
                code_challenge=params.code_challenge,
                state=params.state,
                scopes=params.scopes,
                resource=resource,
            )
            return f"{config.issuer()}{config.CONSENT_PATH}{pending.public_id}"

        try:
            return await run_sync(begin)
        except MMWError as exc:
            raise AuthorizeError(AUTHORIZE_ERRORS.get(exc.code, "invalid_request"), exc.message) from None

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> MmwCode | None:
        if inputs.problem(inputs.CODE, authorization_code):
            return None
        code = await run_sync(services.code_find, client_id=client.client_id, raw_code=authorization_code)
        if code is None:
            return None
        return MmwCode(
            pk=code.pk,
            code=authorization_code,
            scopes=list(code.grant.scopes),
            expires_at=code.expires_at.timestamp(),
            client_id=client.client_id,
            code_challenge=code.code_challenge,
            redirect_uri=AnyUrl(code.redirect_uri),
            redirect_uri_provided_explicitly=code.redirect_uri_explicit,
            resource=code.grant.resource,
            subject=str(code.grant.user_id),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: MmwCode
    ) -> OAuthToken:
        def exchange() -> services.IssuedTokens:
            code = models.AuthorizationCode.objects.select_related("grant").get(pk=authorization_code.pk)
            return services.code_exchange(code=code)

        try:
            return _token(await run_sync(exchange))
        except MMWError as exc:
            raise TokenError("invalid_grant", exc.message) from None

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> MmwRefreshToken | None:
        if inputs.problem(inputs.REFRESH_TOKEN, refresh_token):
            return None
        token = await run_sync(services.refresh_find, client_id=client.client_id, raw_token=refresh_token)
        if token is None:
            return None
        return MmwRefreshToken(
            pk=token.pk,
            token=refresh_token,
            client_id=client.client_id,
            scopes=list(token.scopes),
            expires_at=int(token.expires_at.timestamp()),
            resource=token.grant.resource,
            subject=str(token.grant.user_id),
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: MmwRefreshToken, scopes: list[str]
    ) -> OAuthToken:
        def exchange() -> services.IssuedTokens:
            token = models.Token.objects.select_related("grant").get(pk=refresh_token.pk)
            return services.refresh_exchange(token=token, scopes=scopes)

        try:
            return _token(await run_sync(exchange))
        except MMWError as exc:
            raise TokenError("invalid_grant", exc.message) from None

    async def load_access_token(self, token: str) -> AccessToken | None:
        if inputs.problem(inputs.ACCESS_TOKEN, token):
            return None
        principal = await run_sync(resolve_access_token, token)
        use = principal.oauth if principal is not None else None
        if principal is None or use is None:
            return None
        grants = models.Grant.objects.filter(pk=use.grant_id)
        client_id = await run_sync(lambda: grants.values_list("client__client_id", flat=True).first())
        scopes = sorted(principal.scopes)
        return AccessToken(token=token, client_id=client_id or "", scopes=scopes, resource=use.resource)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await run_sync(services.token_revoke, raw_token=token.token, client_id=token.client_id)


def _token(issued: services.IssuedTokens) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        token_type="Bearer",  # noqa: S106 - the token type, not a secret
        expires_in=issued.expires_in,
        refresh_token=issued.refresh_token,
        scope=" ".join(issued.scopes),
    )


PUBLIC_CLIENT_SECRET = "a public client (token_endpoint_auth_method none) has no client_secret: send none"  # noqa: S105 - an error text


class MmwClientAuthenticator(ClientAuthenticator):
    """The SDK's client authentication, comparing the sha256 of the presented secret with the
    stored digest (MMW never keeps a client secret in clear)."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        if isinstance(client_id, str) and inputs.problem(inputs.CLIENT_ID, client_id):
            raise AuthenticationError(inputs.CLIENT_ID.rule)
        client = await self.provider.get_client(client_id) if isinstance(client_id, str) and client_id else None
        if client is None:
            raise AuthenticationError("Invalid client_id")
        if client.token_endpoint_auth_method == "none":  # noqa: S105 - a method name
            if form.get("client_secret"):  # a public client has none: a secret sent is not checked
                raise AuthenticationError(PUBLIC_CLIENT_SECRET)
            return client
        presented = _presented_secret(request, form.get("client_secret"), client)
        if not presented or not client.client_secret:
            raise AuthenticationError("Client secret is required")
        if inputs.problem(inputs.CLIENT_SECRET, presented):
            raise AuthenticationError(inputs.CLIENT_SECRET.rule)
        if not hmac.compare_digest(client.client_secret, services.digest(presented)):
            raise AuthenticationError("Invalid client_secret")
        return client


def _presented_secret(request: Request, posted: Any, client: OAuthClientInformationFull) -> str | None:
    if client.token_endpoint_auth_method == "client_secret_post":  # noqa: S105 - a method name
        return posted if isinstance(posted, str) else None
    header = request.headers.get("authorization", "")
    if not header.startswith("Basic "):
        raise AuthenticationError("Missing or invalid Basic authentication in Authorization header")
    try:
        user, _, secret = base64.b64decode(header[6:]).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise AuthenticationError("Invalid Basic authentication header") from None
    if unquote(user) != client.client_id:
        raise AuthenticationError("Client ID mismatch in Basic auth")
    return unquote(secret)
