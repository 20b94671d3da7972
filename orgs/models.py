"""Who belongs to which account, with which role, in which departments."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Account


class Membership(models.Model):
    """A user's place in an account. Personal accounts have one membership: their owner."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        ADMIN = "admin", "Admin"
        MEMBER = "member", "Member"
        AUDITOR = "auditor", "Auditor"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} in {self.account} as {self.role}"

    @property
    def may_write(self) -> bool:
        return self.is_active and self.role != self.Role.AUDITOR


class Department(models.Model):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="departments")
    name = models.CharField(max_length=200)
    members = models.ManyToManyField(Membership, related_name="departments", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "name"], name="department_name_unique")]

    def __str__(self) -> str:
        return self.name
