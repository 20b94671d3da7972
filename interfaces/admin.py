"""The admin's kit: what every app's ``admin`` module shares.

``labelled`` names a model and its fields in the support staff's language (docs/i18n.md): the
admin's column headers, filters, form labels and breadcrumbs read ``verbose_name``. It sets the
names at run time, not in the models' ``Meta``, so no migration changes (a migration records
``_verbose_name`` and ``Meta``'s own attributes, which stay as written); the English is Django's
own default for a field (its name with spaces), so nothing changes in English.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import Model
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

if TYPE_CHECKING:  # the lazy string's type is named only in django-stubs
    from django.utils.functional import _StrPromise as Promise
else:
    from django.utils.functional import Promise

# Every field name of MMW's models the admin shows, as Django spells it by default.
FIELD_LABELS: dict[str, Promise] = {
    "accepted_at": _("accepted at"),
    "accepted_by": _("accepted by"),
    "account": _("account"),
    "action": _("action"),
    "actor_key": _("actor key"),
    "actor_user": _("actor user"),
    "api_key": _("api key"),
    "archived_at": _("archived at"),
    "attempts": _("attempts"),
    "author": _("author"),
    "calls": _("calls"),
    "calls_per_minute_per_key": _("calls per minute per key"),
    "calls_per_minute_per_project": _("calls per minute per project"),
    "cancel_at_period_end": _("cancel at period end"),
    "cancelled_at": _("cancelled at"),
    "client": _("client"),
    "client_id": _("client id"),
    "client_name": _("client name"),
    "client_session_id": _("client session id"),
    "client_uri": _("client uri"),
    "code": _("code"),
    "confidence": _("confidence"),
    "consecutive_failures": _("consecutive failures"),
    "content": _("content"),
    "context_document": _("context document"),
    "count": _("count"),
    "created_at": _("created at"),
    "created_by": _("created by"),
    "currency": _("currency"),
    "current_period_end": _("current period end"),
    "cursor": _("cursor"),
    "data": _("data"),
    "deactivated_membership_ids": _("deactivated membership ids"),
    "delete_requester": _("delete requester"),
    "deleted_at": _("deleted at"),
    "delivered_at": _("delivered at"),
    "department_ids": _("department ids"),
    "derived_from": _("derived from"),
    "device": _("device"),
    "device_label": _("device label"),
    "digest": _("digest"),
    "disabled_at": _("disabled at"),
    "disabled_reason": _("disabled reason"),
    "email": _("email"),
    "embedding": _("embedding"),
    "embedding_model": _("embedding model"),
    "ended_at": _("ended at"),
    "endpoint": _("endpoint"),
    "event_id": _("event id"),
    "event_key": _("event key"),
    "event_type": _("event type"),
    "events": _("events"),
    "expected_version": _("expected version"),
    "expires_at": _("expires at"),
    "fact_key": _("fact key"),
    "first_at": _("first at"),
    "forgotten_at": _("forgotten at"),
    "forgotten_by": _("forgotten by"),
    "grace_ends_at": _("grace ends at"),
    "grant_types": _("grant types"),
    "guard_secrets_mode": _("guard secrets mode"),
    "id": _("id"),
    "importance": _("importance"),
    "include_content": _("include content"),
    "invited_by": _("invited by"),
    "ip": _("ip"),
    "is_active": _("is active"),
    "is_default": _("is default"),
    "kind": _("kind"),
    "language": _("language"),
    "last_at": _("last at"),
    "last_error": _("last error"),
    "last_seen_at": _("last seen at"),
    "last_status_code": _("last status code"),
    "last_used_at": _("last used at"),
    "ledger_entries_per_project": _("ledger entries per project"),
    "members": _("members"),
    "metadata_document": _("metadata document"),
    "metadata_fetched_at": _("metadata fetched at"),
    "month": _("month"),
    "monthly_price_cents": _("monthly price cents"),
    "name": _("name"),
    "next_attempt_at": _("next attempt at"),
    "nonce_digest": _("nonce digest"),
    "occurred_at": _("occurred at"),
    "organization_features": _("organization features"),
    "outcome": _("outcome"),
    "payload": _("payload"),
    "peak_records": _("peak records"),
    "plan": _("plan"),
    "plan_code": _("plan code"),
    "position": _("position"),
    "prefix": _("prefix"),
    "project": _("project"),
    "projects": _("projects"),
    "projects_per_account": _("projects per account"),
    "public_id": _("public id"),
    "purge_after": _("purge after"),
    "reason": _("reason"),
    "received_at": _("received at"),
    "recency_document": _("recency document"),
    "records": _("records"),
    "records_per_project": _("records per project"),
    "redirect_uris": _("redirect uris"),
    "reminded_at": _("reminded at"),
    "requested_at": _("requested at"),
    "requested_by": _("requested by"),
    "resource": _("resource"),
    "response_ms": _("response ms"),
    "restricted": _("restricted"),
    "revoked_at": _("revoked at"),
    "revoked_key_ids": _("revoked key ids"),
    "role": _("role"),
    "scope": _("scope"),
    "scopes": _("scopes"),
    "search_document": _("search document"),
    "secret": _("secret"),
    "secret_digest": _("secret digest"),
    "self_registered": _("self registered"),
    "shared_with_project": _("shared with project"),
    "sort_order": _("sort order"),
    "source": _("source"),
    "source_hash": _("source hash"),
    "source_id": _("source id"),
    "source_revision": _("source revision"),
    "started_at": _("started at"),
    "state": _("state"),
    "status": _("status"),
    "stripe_customer_id": _("stripe customer id"),
    "stripe_price_id": _("stripe price id"),
    "stripe_status": _("stripe status"),
    "stripe_subscription_id": _("stripe subscription id"),
    "superseded_at": _("superseded at"),
    "suspended_at": _("suspended at"),
    "suspended_by_staff": _("suspended by staff"),
    "tags": _("tags"),
    "taken_at": _("taken at"),
    "target_id": _("target id"),
    "target_type": _("target type"),
    "tenant_id": _("tenant id"),
    "title": _("title"),
    "token_endpoint_auth_method": _("token endpoint auth method"),
    "turn_count": _("turn count"),
    "turns_per_project": _("turns per project"),
    "type": _("type"),
    "updated_at": _("updated at"),
    "url": _("url"),
    "user": _("user"),
    "user_agent": _("user agent"),
    "version": _("version"),
    "visibility": _("visibility"),
    "working_directory": _("working directory"),
    "workspace": _("workspace"),
}


def labelled(model: type[Model], singular: Promise | None = None, plural: Promise | None = None) -> None:
    """Name ``model`` (unless its names are already translated: ``None``) and each of its fields
    that has no name of its own, in the reader's language."""
    if singular is not None and plural is not None:
        model._meta.verbose_name = singular
        model._meta.verbose_name_plural = plural
    for field in model._meta.get_fields():
        if getattr(field, "_verbose_name", True) is None and field.name in FIELD_LABELS:
            field.verbose_name = FIELD_LABELS[field.name]  # type: ignore[union-attr]


class ReadOnlyMixin:
    """Rows written only by services: staff may look, never add, change or delete."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
