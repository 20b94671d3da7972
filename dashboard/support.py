"""The "Support" group: what support staff may see and do in the Django admin without being
superusers. Kept in step after every ``migrate`` and by ``manage.py support_group``."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission

SUPPORT_GROUP = "Support"
# (app_label, model, actions): view everything support needs; change only where an admin action
# goes through a service (revoking a key or an OAuth grant, suspending/reinstating a subscription,
# a plan change).
SUPPORT_PERMISSIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("accounts", "user", ("view",)),
    ("accounts", "account", ("view",)),
    ("accounts", "project", ("view",)),
    ("accounts", "workspace", ("view",)),
    ("accounts", "apikey", ("view", "change")),
    ("accounts", "auditevent", ("view",)),
    ("accounts", "refusedcall", ("view",)),
    ("orgs", "membership", ("view",)),
    ("orgs", "department", ("view",)),
    ("orgs", "invitation", ("view",)),
    ("orgs", "projectaccess", ("view",)),
    ("memories", "memory", ("view",)),
    ("billing", "plan", ("view", "change")),
    ("billing", "subscription", ("view", "change")),
    ("billing", "stripeevent", ("view",)),
    ("billing", "usagesnapshot", ("view",)),
    ("datarights", "accountdeletion", ("view",)),
    ("webhooks", "webhookendpoint", ("view",)),
    ("webhooks", "webhookdelivery", ("view",)),
    ("oauth", "client", ("view",)),
    ("oauth", "grant", ("view", "change")),  # change: the admin's revoke action (oauth.services)
)


def ensure_support_group() -> Group:
    """Create or update the group so it holds exactly ``SUPPORT_PERMISSIONS`` (those that exist)."""
    group, _ = Group.objects.get_or_create(name=SUPPORT_GROUP)
    wanted = [f"{action}_{model}" for app, model, actions in SUPPORT_PERMISSIONS for action in actions]
    perms = Permission.objects.filter(
        content_type__app_label__in={app for app, _, _ in SUPPORT_PERMISSIONS}, codename__in=wanted
    ).select_related("content_type")
    allowed = {(app, f"{action}_{model}") for app, model, actions in SUPPORT_PERMISSIONS for action in actions}
    group.permissions.set([p for p in perms if (p.content_type.app_label, p.codename) in allowed])
    return group
