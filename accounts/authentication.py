"""DRF authentication through the one key resolver."""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.keys import Principal, Refusal, refusal_text, resolve_bearer_or_refusal


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer mmw_…`` → ``request.auth`` is the ``Principal``."""

    def authenticate(self, request: Request) -> tuple[object, Principal] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        principal = resolve_bearer_or_refusal(header)
        # OAuth access tokens are audience-bound to /mcp (RFC 8707): REST is not their resource.
        if not isinstance(principal, Principal) or principal.oauth is not None:
            refusal = principal if isinstance(principal, Refusal) else Refusal.UNKNOWN
            raise exceptions.AuthenticationFailed(refusal_text(refusal))  # the same text /mcp answers
        return (principal.user, principal)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="mmw"'
