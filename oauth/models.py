"""OAuth 2.1 for hosted MCP clients: registered clients, a person's grants, and the secrets
issued under a grant (authorization codes, access and refresh tokens), all stored as digests.

A ``Grant`` is one consent: a person let one client act in one project with some scopes. Every
code and token belongs to a grant; revoking the grant stops all of them at once (the resolver
checks the grant on every request). An authorization code names a ``family`` when it is created;
every access and refresh token descended from it — the pair its exchange issues and every pair
rotated from those — carries that family. Presenting the code again (RFC 6749 §4.1.2) or a rotated
refresh token again (RFC 9700 §4.14.2) revokes the whole family.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models

from accounts.models import ALL_SCOPES, Project, User

MAX_CLIENT_ID = 500


class Client(models.Model):
    """A client application: registered by itself (RFC 7591), by an operator, or identified by
    the URL of its client ID metadata document (``metadata_document``: ``client_id`` is that
    https URL and the row is MMW's cache of the document, refreshed after
    ``MMW_OAUTH_CLIENT_METADATA_CACHE_SECONDS``)."""

    client_id = models.CharField(max_length=MAX_CLIENT_ID, unique=True)
    # sha256 hex of the client secret; empty for public clients (token_endpoint_auth_method none)
    secret_digest = models.CharField(max_length=64, blank=True)
    client_name = models.CharField(max_length=200)
    redirect_uris = ArrayField(models.CharField(max_length=2000), size=10)
    grant_types = ArrayField(models.CharField(max_length=32), default=list)
    token_endpoint_auth_method = models.CharField(max_length=32, default="none")
    scope = models.CharField(max_length=200, blank=True)
    client_uri = models.CharField(max_length=2000, blank=True)
    self_registered = models.BooleanField(default=True)
    metadata_document = models.BooleanField(default=False)
    metadata_fetched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.client_name} ({self.client_id})"


class PendingAuthorization(models.Model):
    """An authorization request waiting for the person's answer on the consent page."""

    public_id = models.CharField(max_length=64, unique=True)
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="+")
    redirect_uri = models.CharField(max_length=2000)
    redirect_uri_explicit = models.BooleanField(default=True)
    code_challenge = models.CharField(max_length=128)
    state = models.CharField(max_length=500, blank=True)
    scopes = ArrayField(models.CharField(max_length=32), default=list)
    resource = models.CharField(max_length=2000)
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"authorization request {self.pk} of {self.client_id}"


class Grant(models.Model):
    """A person's consent: ``client`` may act as ``user`` in ``project`` with ``scopes``."""

    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="grants")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="oauth_grants")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="oauth_grants")
    scopes = ArrayField(models.CharField(max_length=32))
    resource = models.CharField(max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(scopes__contained_by=list(ALL_SCOPES)), name="oauth_grant_scopes_known"
            )
        ]

    def __str__(self) -> str:
        return f"{self.client.client_name} → {self.user} in {self.project}"


class AuthorizationCode(models.Model):
    grant = models.ForeignKey(Grant, on_delete=models.CASCADE, related_name="codes")
    digest = models.CharField(max_length=64, unique=True)
    # the family of every token descended from this code: a replayed code revokes it
    family = models.UUIDField(default=uuid.uuid4, unique=True)
    code_challenge = models.CharField(max_length=128)
    redirect_uri = models.CharField(max_length=2000)
    redirect_uri_explicit = models.BooleanField(default=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"code {self.pk} of grant {self.grant_id}"


class Token(models.Model):
    """An access or refresh token (opaque; only its sha256 digest is kept)."""

    class Kind(models.TextChoices):
        ACCESS = "access", "Access token"
        REFRESH = "refresh", "Refresh token"

    grant = models.ForeignKey(Grant, on_delete=models.CASCADE, related_name="tokens")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    digest = models.CharField(max_length=64, unique=True)
    # the family of the code this token descends from (``AuthorizationCode.family``)
    family = models.UUIDField(db_index=True)
    scopes = ArrayField(models.CharField(max_length=32))
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    # a refresh token is rotated once (used_at); a revoked token is dead whatever its expiry
    used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.kind} token {self.pk} of grant {self.grant_id}"
