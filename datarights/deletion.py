"""Deletion with retention (docs/data.md).

- An owner asks to delete an account (typed confirmation: the account's name; re-authentication:
  their password). At once its API keys are revoked and its memberships made inactive — every
  key, OAuth token and dashboard view of it stops, because each builds its ``Principal`` through
  ``accounts.keys.principal_for``, which needs an active membership — and it is hidden from its
  members' dashboards. Both lists are kept on the ``AccountDeletion``, so a cancel (any time
  before ``purge_after``) restores exactly them.
- The retention job (``datarights.tasks.enforce_retention``, hourly) e-mails the owners a few days
  before, then purges the account for good: every row that holds its data is deleted; one audit
  row (``account.purged``, no account, the tenant id only) says it happened.
- Forgotten records keep their row as a stub (id, version, times, author) for
  ``MMW_FORGOTTEN_RETENTION_DAYS``; then their content, keys, sources, tags and vector become
  ``PURGED_CONTENT``/empty and their relations go. Forgotten sessions lose their turns and labels.
- A person deletes their own user: refused while they are the last active owner of an
  organisation (``orgs.selectors.is_last_owner``, the rule leaving and stepping down follow:
  an organisation never loses its last owner, not even one with no other member);
  otherwise they leave their organisations at once (``orgs.services.membership_remove``, as the
  dashboard's Leave does: keys revoked, audited), and their personal account is deleted with
  retention, the user with it.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Model, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts import key_cache
from accounts.models import Account, ApiKey, AuditEvent, User
from accounts.services import audit_record
from datarights.format import PURGED_CONTENT
from datarights.models import AccountDeletion
from memories.models import IdempotencyRecord, Memory, MemoryRelation, TermStat
from mmw.errors import Conflict, Forbidden, InvalidInput, NotFound, Template
from mmw.mail import send_in_languages
from orgs.models import Membership
from orgs.selectors import acting_membership, is_last_owner
from orgs.services import membership_remove
from transcripts.models import Session, Turn

logger = logging.getLogger(__name__)

REMIND_BEFORE = dt.timedelta(days=3)
PURGE_BATCH = 1000
# The refusals a page may show a person (translated there by template: interfaces.people_errors).
OWNER_ONLY = Template("only an owner can delete the account")
WRONG_NAME = Template("type the account's name exactly to confirm")
REAUTH_FAILED = Template("your password is not correct")
REAUTH_UNAVAILABLE = Template("set a password first (Account settings): deleting needs it to confirm it is you")
ALREADY = Template("this account is already being deleted")
LAST_OWNER = Template(
    "you are the last owner of %(name)s: make someone else an owner, or delete that organisation first"
)


def retention(days_setting: str) -> dt.timedelta:
    return dt.timedelta(days=int(getattr(settings, days_setting)))


def _reauthenticate(actor: User, password: str) -> None:
    if not actor.has_usable_password():
        raise Forbidden(REAUTH_UNAVAILABLE)
    if not actor.check_password(password):
        raise Forbidden(REAUTH_FAILED)


@transaction.atomic
def account_deletion_request(*, account: Account, actor: User, confirmation: str, password: str) -> AccountDeletion:
    """Close ``account`` now and schedule its purge (see the module's contract)."""
    membership = acting_membership(account=account, user=actor, manage=True, refusal=OWNER_ONLY)
    if membership.role != Membership.Role.OWNER:
        raise Forbidden(OWNER_ONLY)
    if confirmation.strip() != account.name:
        raise InvalidInput(WRONG_NAME)
    _reauthenticate(actor, password)
    return _close(account, actor, delete_requester=False)


def _close(account: Account, actor: User, *, delete_requester: bool) -> AccountDeletion:
    Account.objects.select_for_update().get(pk=account.pk)
    if AccountDeletion.objects.filter(account=account, cancelled_at__isnull=True).exists():
        raise Conflict(ALREADY)
    now = timezone.now()
    owners = _owner_emails(account)
    keys = list(ApiKey.objects.filter(account=account, revoked_at__isnull=True).values_list("id", flat=True))
    ApiKey.objects.filter(id__in=keys).update(revoked_at=now)
    members = list(Membership.objects.filter(account=account, is_active=True).values_list("id", flat=True))
    Membership.objects.filter(id__in=members).update(is_active=False)
    key_cache.invalidate()  # bulk updates send no signal: the keys stop now, not in a second
    deletion = AccountDeletion.objects.create(
        account=account,
        requested_by=actor,
        requested_at=now,
        purge_after=now + retention("MMW_DELETION_RETENTION_DAYS"),
        revoked_key_ids=keys,
        deactivated_membership_ids=members,
        delete_requester=delete_requester,
    )
    audit_record(
        action="account.deletion_requested",
        account=account,
        actor_user=actor,
        target_type="account",
        target_id=account.tenant_id,
        data={"purge_after": deletion.purge_after.isoformat(), "keys_revoked": len(keys)},
    )
    day, when, url = f"{deletion.purge_after:%Y-%m-%d}", f"{deletion.purge_after:%Y-%m-%d %H:%M}", settings.PUBLIC_URL
    send_in_languages(
        recipients=owners,
        compose=lambda: (
            "[MMW] " + _("%(name)s will be deleted on %(day)s") % {"name": account.name, "day": day},
            _("%(email)s asked to delete the MMW account %(name)s (%(tenant)s).")
            % {"email": actor.email, "name": account.name, "tenant": account.tenant_id}
            + "\n"
            + _("Its API keys stopped working at once and it is hidden from its members.")
            + "\n"
            + _("Everything it holds will be deleted for good on %(when)s UTC.") % {"when": when}
            + "\n"
            + _("Until then an owner can cancel: %(url)s") % {"url": f"{url}/data/"}
            + "\n",
        ),
        what=f"deletion requested, account {account.tenant_id}",
    )
    return deletion


def _owner_emails(account: Account) -> list[tuple[str, str]]:
    """(address, saved language) of the account's active owners."""
    owners = Membership.objects.filter(account=account, is_active=True, role=Membership.Role.OWNER)
    return sorted(set(owners.values_list("user__email", "user__language")))


def open_deletions_for(user: User) -> list[AccountDeletion]:
    """The open deletions ``user`` may cancel: those of accounts where they were an owner."""
    owned = Membership.objects.filter(user=user, role=Membership.Role.OWNER).values_list("id", flat=True)
    return list(
        AccountDeletion.objects.filter(cancelled_at__isnull=True, deactivated_membership_ids__overlap=list(owned))
        .select_related("account")
        .order_by("purge_after")
    )


@transaction.atomic
def account_deletion_cancel(*, deletion_id: int, actor: User) -> AccountDeletion:
    """Reopen the account: exactly the keys and memberships the request closed come back."""
    deletion = next((d for d in open_deletions_for(actor) if d.pk == deletion_id), None)
    if deletion is None:
        raise NotFound("deletion not found")
    deletion = AccountDeletion.objects.select_for_update().get(pk=deletion.pk)
    if deletion.cancelled_at is not None:
        raise NotFound("deletion not found")
    ApiKey.objects.filter(id__in=deletion.revoked_key_ids, revoked_at=deletion.requested_at).update(revoked_at=None)
    Membership.objects.filter(id__in=deletion.deactivated_membership_ids).update(is_active=True)
    key_cache.invalidate()
    if deletion.delete_requester and deletion.requested_by is not None:
        User.objects.filter(pk=deletion.requested_by.pk).update(is_active=True)
    deletion.cancelled_at = timezone.now()
    deletion.save(update_fields=["cancelled_at"])
    audit_record(
        action="account.deletion_cancelled",
        account=deletion.account,
        actor_user=actor,
        target_type="account",
        target_id=deletion.account.tenant_id,
    )
    return deletion


@transaction.atomic
def user_delete(*, user: User, password: str) -> AccountDeletion | None:
    """A person deletes their own user (see the module's contract). Returns the deletion of their
    personal account, if they have one."""
    _reauthenticate(user, password)
    mine = list(Membership.objects.filter(user=user, is_active=True).select_related("account"))
    for membership in mine:  # all checked before anything changes: no half-left user
        if membership.account.kind != Account.Kind.PERSONAL and is_last_owner(membership):
            raise Conflict(LAST_OWNER, name=membership.account.name)
    personal = None
    for membership in mine:
        if membership.account.kind == Account.Kind.PERSONAL and membership.role == Membership.Role.OWNER:
            personal = _close(membership.account, user, delete_requester=True)
        else:
            membership_remove(membership=membership, actor=user)  # leaving, as from the dashboard
    User.objects.filter(pk=user.pk).update(is_active=False)
    key_cache.invalidate()
    return personal


# --- the retention job ----------------------------------------------------------------------


def remind_due(*, now: dt.datetime | None = None) -> int:
    """E-mail the owners of accounts purged within ``REMIND_BEFORE`` (once each)."""
    now = now or timezone.now()
    due = AccountDeletion.objects.filter(
        cancelled_at__isnull=True, reminded_at__isnull=True, purge_after__lte=now + REMIND_BEFORE
    ).select_related("account")
    count = 0
    for deletion in due:
        with transaction.atomic():
            owners = Membership.objects.filter(id__in=deletion.deactivated_membership_ids, role=Membership.Role.OWNER)
            send_in_languages(
                recipients=sorted(set(owners.values_list("user__email", "user__language"))),
                compose=functools.partial(_reminder, deletion),
                what=f"deletion reminder, account {deletion.account.tenant_id}",
            )
            AccountDeletion.objects.filter(pk=deletion.pk).update(reminded_at=now)
            count += 1
    return count


def _reminder(deletion: AccountDeletion) -> tuple[str, str]:
    account, day = deletion.account, f"{deletion.purge_after:%Y-%m-%d}"
    subject = "[MMW] " + _("%(name)s will be deleted on %(day)s") % {"name": account.name, "day": day}
    body = _(
        "The MMW account %(name)s (%(tenant)s) will be deleted for good on %(when)s UTC. "
        "To keep it, cancel before then: %(url)s"
    ) % {
        "name": account.name,
        "tenant": account.tenant_id,
        "when": f"{deletion.purge_after:%Y-%m-%d %H:%M}",
        "url": f"{settings.PUBLIC_URL}/data/",
    }
    return subject, f"{body}\n"


# Called with the account just before it is purged, inside the purge's transaction; billing
# installs one that cancels the account's Stripe subscription (datarights never imports billing).
# A hook that raises stops the purge, which the next hourly run tries again.
BEFORE_PURGE: list[Callable[[Account], None]] = []


def purge_due(*, now: dt.datetime | None = None) -> int:
    """Purge every account whose retention has passed (one transaction each). Returns how many."""
    now = now or timezone.now()
    ids = list(
        AccountDeletion.objects.filter(cancelled_at__isnull=True, purge_after__lte=now).values_list("id", flat=True)
    )
    for deletion_id in ids:
        account_purge(deletion_id=deletion_id)
    return len(ids)


@transaction.atomic
def account_purge(*, deletion_id: int) -> bool:
    """Delete everything of the account for good. Idempotent: a cancelled or already purged
    deletion does nothing. The big tables go by plain SQL DELETEs (Django's cascade would load
    every row); the rest by the models' own cascades."""
    deletion = AccountDeletion.objects.select_for_update().filter(pk=deletion_id, cancelled_at__isnull=True).first()
    if deletion is None:
        return False
    account = deletion.account
    requester = deletion.requested_by if deletion.delete_requester else None
    tenant_id = account.tenant_id
    for hook in BEFORE_PURGE:
        hook(account)
    _delete_sql(Turn, "project_id IN (SELECT id FROM accounts_project WHERE account_id = %s)", account.pk)
    _delete_sql(Session, "account_id = %s", account.pk)
    _delete_sql(MemoryRelation, "from_memory_id IN (SELECT id FROM memories_memory WHERE account_id = %s)", account.pk)
    _delete_sql(MemoryRelation, "to_memory_id IN (SELECT id FROM memories_memory WHERE account_id = %s)", account.pk)
    _delete_sql(IdempotencyRecord, "project_id IN (SELECT id FROM accounts_project WHERE account_id = %s)", account.pk)
    _delete_sql(Memory, "account_id = %s", account.pk)
    AuditEvent.objects.filter(account=account).delete()
    account.delete()  # projects, workspaces, keys, memberships, departments, invitations, billing, labels
    if requester is not None:
        requester.delete()
    audit_record(action="account.purged", account=None, target_type="account", target_id=tenant_id)
    logger.info("account %s purged", tenant_id)
    return True


def _delete_sql(model: type[Model], where: str, value: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE {where}", [value])  # noqa: S608 - names from the code


def forgotten_purge_due(*, now: dt.datetime | None = None, limit: int = PURGE_BATCH) -> int:
    """Purge the content of records and sessions forgotten more than
    ``MMW_FORGOTTEN_RETENTION_DAYS`` ago (up to ``limit`` of each). Their stubs stay."""
    cutoff = (now or timezone.now()) - retention("MMW_FORGOTTEN_RETENTION_DAYS")
    with transaction.atomic():
        rows = list(
            Memory.objects.filter(forgotten_at__lt=cutoff)
            .exclude(content=PURGED_CONTENT)
            .select_for_update(skip_locked=True)
            .values_list("id", "project_id")[:limit]
        )
        ids = [memory_id for memory_id, _ in rows]
        MemoryRelation.objects.filter(Q(from_memory_id__in=ids) | Q(to_memory_id__in=ids)).delete()
        Memory.objects.filter(id__in=ids).update(
            content=PURGED_CONTENT,
            fact_key=None,
            source_id=None,
            source_hash=None,
            source_revision=None,
            reason=None,
            tags=[],
            derived_from=[],
            department_ids=[],
            device_label="",
            embedding=None,
            embedding_model=None,
            context_document=None,
        )
        # The keyword statistics' triggers leave a forgotten record's lexemes at docs = 0 on UPDATE
        # (only DELETE sweeps zero rows): sweep them here, so no word of the content stays behind.
        TermStat.objects.filter(project_id__in={project_id for _, project_id in rows}, docs=0).delete()
        sessions = list(
            Session.objects.filter(forgotten_at__lt=cutoff)
            .annotate(turns_left=Count("turns"))
            .filter(Q(turns_left__gt=0) | ~Q(title="") | ~Q(working_directory="") | ~Q(device=""))
            .values_list("id", flat=True)[:limit]
        )
        Turn.objects.filter(session_id__in=sessions).delete()
        for session_id in sessions:
            Session.objects.filter(pk=session_id).update(
                title="", working_directory="", device="", client_session_id=f"forgotten-{session_id}"
            )
    return len(ids) + len(sessions)
