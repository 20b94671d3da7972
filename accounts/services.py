"""Everything that writes accounts, projects and API keys."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import keys, limits
from accounts.models import ALL_SCOPES, DEFAULT_KEY_SCOPES, Account, ApiKey, AuditEvent, Project, SignInLink, User
from mmw import text
from mmw.errors import Conflict, Forbidden, InvalidInput, Template
from orgs.models import Membership
from orgs.selectors import acting_membership, has_project_access, may_revoke

# The refusals a page may show a person (translated there by template: interfaces.people_errors).
PROJECT_EXISTS = Template("a project named %(name)s already exists")
KEY_LIFETIME = Template("expires_in_days must be one of %(choices)s, or absent for a key that never expires")
KEY_SCOPES = Template("scopes must be a non-empty subset of %(scopes)s")
KEY_HOLDER_NOT_MEMBER = Template("only an active member of the account can hold its keys")
KEY_HOLDER_NO_ACCESS = Template("this member has no access to the project")
KEY_REVOKE_REFUSED = Template("only the key's holder, an owner or an admin can revoke it")
SIGN_IN_LINK_SECOND_FACTOR = Template("this person signs in with a second factor: no sign-in link skips it")


def audit_record(
    *,
    action: str,
    account: Account | None,
    actor_user: User | None = None,
    actor_key: ApiKey | None = None,
    target_type: str = "",
    target_id: str = "",
    data: dict[str, object] | None = None,
) -> AuditEvent:
    """Write one audit row. Call it inside the service's transaction."""
    return AuditEvent.objects.create(
        action=action,
        account=account,
        actor_user=actor_user,
        actor_key=actor_key,
        target_type=target_type,
        target_id=target_id,
        data=data or {},
    )


@transaction.atomic
def user_get_or_create(*, email: str) -> tuple[User, bool]:
    """Return the user with this e-mail (created with an unusable password if new) and, for a new
    user, their personal account with an owner membership."""
    normalized = text.clean_email(email)
    user = User.objects.filter(email=normalized).first()
    if user is not None:
        return user, False
    user = User.objects.create_user(normalized)
    account_create(name=normalized, owner=user, kind=Account.Kind.PERSONAL)
    return user, True


@transaction.atomic
def user_set_language(*, user: User, language: str) -> User:
    """Save the language the person picked (one of settings.LANGUAGES, or "" for the browser's)."""
    if language and language not in dict(settings.LANGUAGES):
        raise InvalidInput(f"unknown language {language!r}")
    if user.language != language:
        user.language = language
        user.save(update_fields=["language"])
    return user


def account_create(*, name: str, owner: User, kind: str = Account.Kind.ORGANIZATION) -> Account:
    account = Account.objects.create(name=text.clean_label("account name", name), kind=kind)
    Membership.objects.create(account=account, user=owner, role=Membership.Role.OWNER)
    audit_record(
        action="account.created", account=account, actor_user=owner, target_type="account", target_id=account.tenant_id
    )
    return account


def personal_account(*, user: User) -> Account:
    """The user's personal account (every user has exactly one, made at sign-up)."""
    return Account.objects.get(
        kind=Account.Kind.PERSONAL, memberships__user=user, memberships__role=Membership.Role.OWNER
    )


@transaction.atomic
def project_get_or_create(*, account: Account, name: str, actor: User) -> tuple[Project, bool]:
    clean = text.clean_label("project name", name)
    project = Project.objects.filter(account=account, name__iexact=clean, deleted_at__isnull=True).first()
    if project is not None:
        return project, False
    project = Project.objects.create(account=account, name=clean)
    audit_record(
        action="project.created", account=account, actor_user=actor, target_type="project", target_id=str(project.id)
    )
    return project, True


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key. ``raw`` is the only copy of the secret: show it once."""

    api_key: ApiKey
    raw: str


# How long a new key may live (the dashboard's choice: 7, 30, 90 or 365 days, or never).
KEY_LIFETIMES_DAYS = (7, 30, 90, 365)


@transaction.atomic
def api_key_create(
    *,
    user: User,
    project: Project,
    name: str = "",
    device_label: str = "",
    scopes: Iterable[str] = DEFAULT_KEY_SCOPES,
    expires_in_days: int | None = None,
) -> IssuedKey:
    """Issue a key for ``user`` bound to ``project``; the user must be an active member.
    ``expires_in_days`` (one of ``KEY_LIFETIMES_DAYS``; None: never) sets when the key stops
    working by itself: ``accounts.keys.resolve_key`` refuses it from then on, cached or not."""
    if expires_in_days is not None and expires_in_days not in KEY_LIFETIMES_DAYS:
        choices = ", ".join(map(str, KEY_LIFETIMES_DAYS))
        raise InvalidInput(KEY_LIFETIME, choices=choices)
    wanted = sorted(set(scopes))
    unknown = [s for s in wanted if s not in ALL_SCOPES]
    if unknown or not wanted:
        raise InvalidInput(KEY_SCOPES, scopes=", ".join(ALL_SCOPES))
    membership = Membership.objects.filter(account=project.account, user=user, is_active=True).first()
    if membership is None:
        raise InvalidInput(KEY_HOLDER_NOT_MEMBER)
    if not has_project_access(membership=membership, project=project):
        raise Forbidden(KEY_HOLDER_NO_ACCESS)
    name = text.check_name("key name", name.strip(), 200, wildcard_ok=True) if name.strip() else ""
    device_label = text.check_name("device label", device_label.strip(), 200, wildcard_ok=True)
    raw, prefix, digest = keys.mint()
    api_key = ApiKey.objects.create(
        account=project.account,
        project=project,
        user=user,
        name=name,
        device_label=device_label,
        prefix=prefix,
        digest=digest,
        scopes=wanted,
        expires_at=timezone.now() + timedelta(days=expires_in_days) if expires_in_days is not None else None,
    )
    audit_record(
        action="api_key.created",
        account=project.account,
        actor_user=user,
        target_type="api_key",
        target_id=str(api_key.pk),
        data={
            "prefix": prefix,
            "scopes": wanted,
            "project": str(project.id),
            "expires_at": api_key.expires_at.isoformat() if api_key.expires_at else None,
        },
    )
    return IssuedKey(api_key=api_key, raw=raw)


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey, actor: User) -> ApiKey:
    """Revoke the key now (idempotent: revoking twice keeps the first time). Allowed to the key's
    holder, an owner or admin of its account, and support staff holding the admin's permission
    to change keys; anyone else gets ``Forbidden`` and nothing changes."""
    if not may_revoke(
        actor, holder_id=api_key.user_id, account=api_key.account, staff_permission="accounts.change_apikey"
    ):
        raise Forbidden(KEY_REVOKE_REFUSED)
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
        audit_record(
            action="api_key.revoked",
            account=api_key.account,
            actor_user=actor,
            target_type="api_key",
            target_id=str(api_key.pk),
            data={"prefix": api_key.prefix},
        )
    return api_key


# --- one-time sign-in links (manage.py quickstart) -------------------------------------------

SIGN_IN_LINK_TTL = timedelta(hours=1)
SIGN_IN_LINK_REFUSAL = "this sign-in link was already used, has expired or does not exist"


@transaction.atomic
def sign_in_link_create(*, user: User, verify_email: bool = False) -> str:
    """A one-time sign-in token for ``user`` (the only copy: put it in a link and show it once),
    valid ``SIGN_IN_LINK_TTL``. Made by whoever runs commands on the server, who may vouch for
    the address: ``verify_email`` marks it verified, so the person is not sent to their inbox
    first. Audited in the user's personal account."""
    if Authenticator.objects.filter(user=user).exists():
        raise InvalidInput(SIGN_IN_LINK_SECOND_FACTOR, code="sign_in_link")
    token = "mmwsl_" + secrets.token_urlsafe(32)
    SignInLink.objects.create(user=user, digest=text.sha256_hex(token), expires_at=timezone.now() + SIGN_IN_LINK_TTL)
    if verify_email:
        EmailAddress.objects.update_or_create(
            user=user, email__iexact=user.email, defaults={"email": user.email, "verified": True, "primary": True}
        )
    audit_record(
        action="user.sign_in_link_created",
        account=personal_account(user=user),
        actor_user=user,
        target_type="user",
        target_id=str(user.pk),
        data={"email_verified": verify_email},
    )
    return token


def sign_in_link_check(*, token: str) -> User | None:
    """The user an open link signs in (read only, for the page that asks to confirm), or None."""
    link = SignInLink.objects.select_related("user").filter(digest=text.sha256_hex(token)).first()
    if link is None or link.used_at is not None or link.expires_at <= timezone.now() or not link.user.is_active:
        return None
    return link.user


@transaction.atomic
def sign_in_link_use(*, token: str) -> User:
    """Spend the link and answer its user (the caller logs them in); a used, expired or unknown
    link raises ``InvalidInput`` with one text for all three."""
    link = (
        SignInLink.objects.select_for_update(of=("self",))
        .select_related("user")
        .filter(digest=text.sha256_hex(token))
        .first()
    )
    if link is None or link.used_at is not None or link.expires_at <= timezone.now() or not link.user.is_active:
        raise InvalidInput(SIGN_IN_LINK_REFUSAL, code="sign_in_link")
    link.used_at = timezone.now()
    link.save(update_fields=["used_at"])
    audit_record(
        action="user.signed_in_by_link",
        account=personal_account(user=link.user),
        actor_user=link.user,
        target_type="user",
        target_id=str(link.user.pk),
    )
    return link.user


# --- projects (created within the plan, renamed, deleted) ---------------------------------------

MANAGE_REFUSAL = "only owners and admins can manage projects"


RENAME_REFUSAL = "only owners and admins can rename an organization"


@transaction.atomic
def account_rename(*, account: Account, actor: User, name: str) -> Account:
    """Rename the account (an organisation, or a personal account): owners and admins; audited
    with the old and new names. The tenant id (in every URL) does not change."""
    acting_membership(account=account, user=actor, manage=True, refusal=RENAME_REFUSAL)
    clean = text.clean_label("organization name", name)
    old = account.name
    if clean != old:
        account.name = clean
        account.save(update_fields=["name"])
        audit_record(
            action="account.renamed",
            account=account,
            actor_user=actor,
            target_type="account",
            target_id=str(account.pk),
            data={"from": old, "to": clean},
        )
    return account


@transaction.atomic
def project_create(*, account: Account, actor: User, name: str) -> Project:
    """A new project, within the plan's number of projects; an existing name is a clear error."""
    acting_membership(account=account, user=actor, manage=True, refusal=MANAGE_REFUSAL)
    clean = text.clean_label("project name", name)
    if Project.objects.filter(account=account, name__iexact=clean, deleted_at__isnull=True).exists():
        raise Conflict(PROJECT_EXISTS, name=repr(clean))
    limits.check_project_limit(account)
    project, _ = project_get_or_create(account=account, name=clean, actor=actor)
    return project


@transaction.atomic
def project_rename(*, project: Project, actor: User, name: str) -> Project:
    acting_membership(account=project.account, user=actor, manage=True, refusal=MANAGE_REFUSAL)
    clean = text.clean_label("project name", name)
    clash = Project.objects.filter(account=project.account, name__iexact=clean, deleted_at__isnull=True)
    if clash.exclude(pk=project.pk).exists():
        raise Conflict(PROJECT_EXISTS, name=repr(clean))
    old = project.name
    project.name = clean
    try:
        with transaction.atomic():
            project.save(update_fields=["name"])
    except IntegrityError:
        raise Conflict(PROJECT_EXISTS, name=repr(clean)) from None
    audit_record(
        action="project.renamed",
        account=project.account,
        actor_user=actor,
        target_type="project",
        target_id=str(project.pk),
        data={"from": old, "to": clean},
    )
    return project


@transaction.atomic
def project_delete(*, project: Project, actor: User) -> Project:
    """Soft-delete the project: its keys stop working at once (the key resolver refuses keys of a
    deleted project) and its records leave every read. Idempotent."""
    acting_membership(account=project.account, user=actor, manage=True, refusal=MANAGE_REFUSAL)
    if project.deleted_at is None:
        project.deleted_at = timezone.now()
        project.save(update_fields=["deleted_at"])
        audit_record(
            action="project.deleted",
            account=project.account,
            actor_user=actor,
            target_type="project",
            target_id=str(project.pk),
            data={"name": project.name},
        )
    return project


AGENT_CONSENT_SOURCES_MAX = 10
AGENT_CONSENT_SOURCE_LENGTH = 100


@dataclass(frozen=True)
class AgentConsent:
    given: bool
    sources: list[str]
    recorded_at: str


@transaction.atomic
def agent_consent_record(*, principal: keys.Principal, payload: object) -> AgentConsent:
    """Record in the account's audit log that the caller gave (or revoked) consent for their local
    ``mmw-agent`` to upload session history from ``sources`` (``claude-code``, ``codex``, …).

    The agent asks the person in a terminal; this is the server-side trace of that answer. It
    changes no permission: uploads are the agent's to stop, and it stops them before telling us.
    """
    if not isinstance(payload, dict):
        raise InvalidInput("the request body must be a JSON object")
    unknown = sorted(str(k) for k in payload if k not in {"given", "sources"})
    if unknown:
        raise InvalidInput(f"unknown parameter(s): {', '.join(unknown)}")
    given = payload.get("given")
    if not isinstance(given, bool):
        raise InvalidInput("given must be true or false")
    sources = payload.get("sources", [])
    if (
        not isinstance(sources, list)
        or len(sources) > AGENT_CONSENT_SOURCES_MAX
        or not all(
            isinstance(s, str) and 0 < len(s) <= AGENT_CONSENT_SOURCE_LENGTH and s.isprintable() for s in sources
        )
    ):
        raise InvalidInput("sources must be a list of at most 10 names of 1-100 printable characters")
    event = audit_record(
        action="agent.consent_given" if given else "agent.consent_revoked",
        account=principal.account,
        actor_user=principal.user,
        actor_key=principal.api_key,
        target_type="project",
        target_id=str(principal.project.pk),
        data={"sources": sources, "device": principal.device_label},
    )
    return AgentConsent(given=given, sources=list(sources), recorded_at=event.created_at.isoformat())
