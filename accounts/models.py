"""Users, accounts (tenants), projects, workspaces, API keys and the audit log."""

from __future__ import annotations

import secrets
import uuid
from typing import Any, ClassVar

from django.conf import settings
from django.contrib.auth.models import AbstractUser, BaseUserManager
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

SCOPE_READ = "memory:read"
SCOPE_WRITE = "memory:write"
SCOPE_LEDGER_READ = "ledger:read"
SCOPE_LEDGER_WRITE = "ledger:write"
MEMORY_SCOPES = (SCOPE_READ, SCOPE_WRITE)
LEDGER_SCOPES = (SCOPE_LEDGER_READ, SCOPE_LEDGER_WRITE)
ALL_SCOPES = (*MEMORY_SCOPES, *LEDGER_SCOPES)
# A key gets the memory scopes unless its creator asks for more: the ledger holds financial
# records, so reaching it is a choice made per key (docs/ledger.md, "Scopes"); keys made before
# the ledger existed keep exactly the scopes they had.
DEFAULT_KEY_SCOPES = MEMORY_SCOPES


class UserManager(BaseUserManager["User"]):
    """Users are identified by e-mail; there is no username."""

    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra: Any) -> User:
        if not email:
            raise ValueError("an e-mail address is required")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self.create_user(email, password, **extra)


class User(AbstractUser):
    username = None  # type: ignore[assignment]
    email = models.EmailField("e-mail address", unique=True)
    # The language the person picked in the dashboard's header (settings.LANGUAGES); empty: the
    # browser's Accept-Language decides. E-mails to them use it too (docs/i18n.md).
    language = models.CharField(max_length=8, blank=True, default="", choices=settings.LANGUAGES)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    objects: ClassVar[UserManager] = UserManager()  # type: ignore[assignment]

    def __str__(self) -> str:
        return self.email


def new_tenant_id() -> str:
    return f"t-{secrets.token_hex(4)}"


class Account(models.Model):
    """A tenant: a person's personal account or an organisation."""

    class Kind(models.TextChoices):
        PERSONAL = "personal", _("Personal")
        ORGANIZATION = "organization", _("Organisation")

    tenant_id = models.CharField(max_length=16, unique=True, default=new_tenant_id, editable=False)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PERSONAL)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.tenant_id})"


class Project(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)

    class GuardSecrets(models.TextChoices):
        REDACT = "redact", _("Redact secrets and keep the record")
        REFUSE = "refuse", _("Refuse records that contain secrets")

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=200)
    guard_secrets_mode = models.CharField(max_length=8, choices=GuardSecrets.choices, default=GuardSecrets.REDACT)
    created_at = models.DateTimeField(auto_now_add=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                "account",
                Lower("name"),
                condition=models.Q(deleted_at__isnull=True),
                name="project_name_unique_per_account",
            )
        ]

    def __str__(self) -> str:
        return self.name


class Workspace(models.Model):
    """A named partition of a project's memory. A deleted workspace keeps its row (and so its
    name) forever: the unique constraint covers deleted rows, so the name is never reused."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="workspaces")
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="workspace_name_unique_per_project"),
            models.CheckConstraint(condition=~models.Q(name=""), name="workspace_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """A bearer key ``mmw_<prefix><secret>``: shown once, stored as a SHA-256 digest.

    ``prefix`` (the first characters after ``mmw_``) is stored in clear to find the row; the
    digest of the whole key is compared in constant time."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="api_keys")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    device_label = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, db_index=True)
    digest = models.CharField(max_length=64, unique=True)
    scopes = ArrayField(models.CharField(max_length=32), default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # When the key stops working by itself (chosen at creation); None: never.
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(scopes__contained_by=list(ALL_SCOPES)), name="api_key_scopes_known"
            )
        ]

    def __str__(self) -> str:
        return f"mmw_{self.prefix}… ({self.name or self.device_label or 'key'})"

    @property
    def is_active(self) -> bool:
        """Neither revoked nor past its expiry: the key authenticates."""
        return self.revoked_at is None and not self.is_expired

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class AuditEvent(models.Model):
    """An append-only record of a security-relevant action, written by the service doing it."""

    account = models.ForeignKey(Account, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_user = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["account", "-created_at"], name="audit_account_time")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action}"


class SignInLink(models.Model):
    """A one-time link into the dashboard, made by ``manage.py quickstart`` on the server: whoever
    runs commands there may sign its user in. Only the token's SHA-256 digest is stored; the link
    works once, until ``expires_at``."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"sign-in link for {self.user_id} ({'used' if self.used_at else 'open'})"


class RefusedCall(models.Model):
    """Calls refused with one of our keys, for one reason (``accounts.refusals``): how many, the
    first and the last. One row per (key, reason), so a flood of refused calls grows a counter,
    never the table; a key's rows go with it. Written by ``accounts.refused_calls`` in batches."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="refused_calls")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=32)
    count = models.BigIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["api_key", "reason"], name="refused_call_key_reason")]
        indexes = [models.Index(fields=["account", "-last_at"], name="refused_call_account_time")]

    def __str__(self) -> str:
        from accounts.refusals import LABELS

        return f"{LABELS.get(self.reason, self.reason)} ×{self.count}"
