"""Where MMW's authorization server and MCP resource live, read from settings at each use (so a
test server or a changed public URL is honoured without rebuilding anything)."""

from __future__ import annotations

from django.conf import settings

CONSENT_PATH = "/oauth/consent/"


def issuer() -> str:
    """The authorization server's issuer identifier (RFC 8414 §2): MMW_OAUTH_ISSUER, else the public URL."""
    return (settings.MMW_OAUTH_ISSUER or settings.PUBLIC_URL).rstrip("/")


def mcp_resource() -> str:
    """The MCP endpoint's resource identifier (RFC 8707 / RFC 9728 ``resource``)."""
    return f"{settings.PUBLIC_URL.rstrip('/')}/mcp"


def is_mcp_resource(resource: str) -> bool:
    """Whether an RFC 8707 ``resource`` names MMW's MCP endpoint (a trailing slash tolerated)."""
    return resource.rstrip("/") == mcp_resource()


def wrong_resource() -> str:
    """The ``invalid_target`` refusal of any other ``resource``."""
    return f"this server issues tokens only for {mcp_resource()}"


def resource_metadata_url() -> str:
    """RFC 9728 §3.1: the well-known path inserted before the resource's path."""
    return f"{settings.PUBLIC_URL.rstrip('/')}/.well-known/oauth-protected-resource/mcp"
