"""Who belongs to which account, with which role, in which departments, with access to which
projects; and the invitations that bring people in.

Every rule about these lives in ``orgs.services`` (writes) and ``orgs.selectors`` (reads); what a
membership lets its holder *read* is decided by ``Memory.objects.visible_to`` alone.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import ALL_SCOPES, SCOPE_LEDGER_READ, SCOPE_READ, Account, Project


class Membership(models.Model):
    """A user's place in an account. Personal accounts have one membership: their owner."""

    class Role(models.TextChoices):
        OWNER = "owner", _("Owner")
        ADMIN = "admin", _("Admin")
        MEMBER = "member", _("Member")
        AUDITOR = "auditor", _("Auditor")

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return gettext("%(user)s in %(account)s as %(role)s") % {
            "user": self.user,
            "account": self.account,
            "role": self.get_role_display(),
        }

    @property
    def may_write(self) -> bool:
        return self.is_active and self.role != self.Role.AUDITOR

    @property
    def key_scopes(self) -> tuple[str, ...]:
        """The scopes worth offering this member on a new key: what the role lets them do
        (an auditor reads only). Writes are still checked against the role at every call, since
        a role can change after a key is issued."""
        return tuple(ALL_SCOPES) if self.may_write else (SCOPE_READ, SCOPE_LEDGER_READ)

    @property
    def manages(self) -> bool:
        """Owners and admins manage members, departments, project access and read the audit log."""
        return self.is_active and self.role in (self.Role.OWNER, self.Role.ADMIN)


class Department(models.Model):
    """A group of memberships. A ``department`` record names the departments its author was in
    when writing it (``Memory.department_ids``); the members of those departments *now* read it."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="departments")
    name = models.CharField(max_length=200)
    members = models.ManyToManyField(Membership, related_name="departments", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "name"], name="department_name_unique")]

    def __str__(self) -> str:
        return self.name


class ProjectAccess(models.Model):
    """Which members may use a project. Without a row, or with ``restricted=False``, every member
    of the account may; with ``restricted=True`` only owners, admins and the listed ``members``.

    A member without access can neither be issued a key for the project nor use one they hold
    (``accounts.keys`` refuses it at once)."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, primary_key=True, related_name="access")
    restricted = models.BooleanField(default=False)
    members = models.ManyToManyField(Membership, related_name="project_access", blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "project access"

    def __str__(self) -> str:
        who = gettext("listed members") if self.restricted else gettext("all members")
        return gettext("access to %(project)s: %(who)s") % {"project": self.project_id, "who": who}


class Invitation(models.Model):
    """An e-mailed invitation into an organisation. The link carries a signed token naming this
    row and a random nonce; only the nonce's SHA-256 digest is stored. It is single-use
    (``accepted_at``), expires (``expires_at`` and the signature's age) and can be revoked."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    nonce_digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # At most one open invitation per address and organisation: a new one replaces it.
            models.UniqueConstraint(
                "account",
                Lower("email"),
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="invitation_one_open_per_email",
            ),
            models.CheckConstraint(condition=~models.Q(role="owner"), name="invitation_role_not_owner"),
        ]

    def __str__(self) -> str:
        return gettext("invitation of %(email)s to %(account)s as %(role)s") % {
            "email": self.email,
            "account": self.account,
            "role": self.get_role_display(),
        }

    @property
    def is_open(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None
