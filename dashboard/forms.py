"""Dashboard forms: they parse and keep input; the rules live in the services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from accounts.models import (
    ALL_SCOPES,
    DEFAULT_KEY_SCOPES,
    SCOPE_LEDGER_READ,
    SCOPE_LEDGER_WRITE,
    SCOPE_READ,
    SCOPE_WRITE,
)
from accounts.services import KEY_LIFETIMES_DAYS
from memories import inputs
from orgs.models import Membership
from orgs.selectors import AuditFilters


class NameForm(forms.Form):
    name = forms.CharField(
        max_length=200, label=_("Name"), widget=forms.TextInput(attrs={"placeholder": _("e.g. backend")})
    )


class OrganizationForm(forms.Form):
    name = forms.CharField(max_length=200, label=_("Organisation name"))


SCOPE_CHOICES = [
    (SCOPE_READ, _("memory:read — search and read")),
    (SCOPE_WRITE, _("memory:write — remember and forget")),
    (SCOPE_LEDGER_READ, _("ledger:read — list entries, balances and reminders")),
    (SCOPE_LEDGER_WRITE, _("ledger:write — record and reverse ledger entries")),
]


class KeyForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, label=_("Name"), help_text=_("What this key is for."))
    device_label = forms.CharField(
        max_length=200,
        required=False,
        label=_("Device label"),
        help_text=_("Shown on every record written with this key, e.g. 'work laptop'."),
    )
    scopes = forms.MultipleChoiceField(
        choices=SCOPE_CHOICES,
        initial=list(DEFAULT_KEY_SCOPES),
        widget=forms.CheckboxSelectMultiple,
        label=_("Scopes"),
        help_text=_("An MCP client is shown only the tools these allow; tick the ledger's to record money."),
    )
    expires = forms.TypedChoiceField(
        label=_("Expires"),
        choices=[*((str(d), f"in {d} days") for d in KEY_LIFETIMES_DAYS), ("", "never")],  # translated in __init__
        coerce=int,
        empty_value=None,
        required=False,
        initial="90",
        help_text=_("The key stops working by itself then; revoke it any time before."),
    )

    def __init__(self, *args: Any, scopes: tuple[str, ...] = tuple(ALL_SCOPES), **kwargs: Any) -> None:
        """``scopes``: what the person's role allows (``Membership.key_scopes``); only those are
        offered, and a posted scope outside them is refused as an invalid choice. Ticked at first:
        the default scopes among them, never the ledger's (financial records are opt-in)."""
        super().__init__(*args, **kwargs)
        field = self.fields["scopes"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [(value, label) for value, label in SCOPE_CHOICES if value in scopes]
        field.initial = [scope for scope in DEFAULT_KEY_SCOPES if scope in scopes]
        expires = self.fields["expires"]
        assert isinstance(expires, forms.TypedChoiceField)
        expires.choices = [
            *(
                (str(d), ngettext("in %(count)d day", "in %(count)d days", d) % {"count": d})
                for d in KEY_LIFETIMES_DAYS
            ),
            ("", _("never")),
        ]


class SearchForm(forms.Form):
    # Bounds from the one parameter table (memories.inputs), so the browser and the API refuse alike.
    q = forms.CharField(
        required=False,
        max_length=inputs.QUERY_CHARS,
        label=_("Search"),
        widget=forms.TextInput(attrs={"type": "search"}),
    )
    workspace = forms.CharField(required=False, max_length=inputs.NAME_CHARS, initial="*")
    scope = forms.CharField(required=False, max_length=inputs.NAME_CHARS, label=_("Scope"))
    fact_key = forms.CharField(required=False, max_length=inputs.KEY_CHARS, label=_("Fact key"))
    source_id = forms.CharField(required=False, max_length=inputs.KEY_CHARS, label=_("Source id"))
    tags = forms.CharField(
        required=False,
        max_length=inputs.MAX_TAGS * (inputs.NAME_CHARS + 1),
        label=_("Tags"),
        help_text=_("comma-separated; all must match"),
    )
    min_confidence = forms.FloatField(required=False, min_value=0, max_value=1, label=_("Min confidence"))
    min_importance = forms.FloatField(required=False, min_value=0, max_value=1, label=_("Min importance"))
    latest_only = forms.BooleanField(required=False, label=_("Latest versions only"))
    why = forms.BooleanField(required=False, label=_("Why?"))  # explain: true (the signals that ranked)
    rerank = forms.BooleanField(required=False, label=_("Rerank"))  # rerank: true (the cross-encoder, English)
    status = forms.ChoiceField(
        required=False,
        choices=[("", _("any")), ("conflict", _("conflict")), ("stale", _("stale"))],
        label=_("Status"),
    )
    sort = forms.ChoiceField(
        required=False,
        choices=[
            ("", _("newest first")),
            ("oldest", _("oldest first")),
            ("importance", _("most important")),
            ("confidence", _("most confident")),
        ],
        label=_("Sort"),
        help_text=_("a search is ordered by relevance"),
    )

    def filters(self) -> dict[str, Any]:
        data = self.cleaned_data
        tags = [t.strip() for t in (data.get("tags") or "").split(",") if t.strip()]
        return {
            "scope": data.get("scope") or None,
            "fact_key": data.get("fact_key") or None,
            "source_id": data.get("source_id") or None,
            "tags": tags or None,
            "min_confidence": data.get("min_confidence"),
            "min_importance": data.get("min_importance"),
            "latest_only": bool(data.get("latest_only")),
        }


class ForgetSourceForm(forms.Form):
    source_id = forms.CharField(max_length=inputs.KEY_CHARS, label=_("Source id"))
    workspace = forms.CharField(max_length=inputs.NAME_CHARS, initial="default", label=_("Workspace"))


class InvitationForm(forms.Form):
    email = forms.EmailField(label=_("Email"))
    role = forms.ChoiceField(
        label=_("Role"),
        choices=[(r.value, r.label) for r in (Membership.Role.MEMBER, Membership.Role.ADMIN, Membership.Role.AUDITOR)],
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices, label=_("Role"))


class AuditFilterForm(forms.Form):
    """The audit log's filters (``orgs.selectors.AuditFilters``): who, what, which UTC days."""

    actor = forms.CharField(
        required=False,
        max_length=254,
        label=_("Who"),
        help_text=_("an e-mail, or system"),
        widget=forms.TextInput(attrs={"type": "search", "list": "audit-actors", "autocomplete": "off"}),
    )
    action = forms.ChoiceField(required=False, label=_("Action"), choices=[("", _("any"))])
    since = forms.DateField(required=False, label=_("From"), widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label=_("To"), widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args: Any, actions: list[str] = (), **kwargs: Any) -> None:  # type: ignore[assignment]
        """``actions``: the actions the log holds; each family (``api_key.``) is offered too."""
        super().__init__(*args, **kwargs)
        families = sorted({a.split(".")[0] + "." for a in actions if "." in a})
        field = self.fields["action"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            ("", _("any")),
            *((f, _("%(family)s (all)") % {"family": f"{f}*"}) for f in families),
            *((a, a) for a in actions),
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            raise forms.ValidationError(_("The first day must not be after the last."))
        return data

    def filters(self) -> AuditFilters:
        data = self.cleaned_data
        return AuditFilters(
            actor=(data.get("actor") or "").strip() or None,
            action=data.get("action") or None,
            since=data.get("since"),
            until=data.get("until"),
        )


class AccountRenameForm(forms.Form):
    name = forms.CharField(max_length=200, label=_("Name"))


class TransferForm(forms.Form):
    to = forms.TypedChoiceField(label=_("New owner"), coerce=int, choices=[])

    def __init__(self, *args: Any, members: list[Membership] = (), **kwargs: Any) -> None:  # type: ignore[assignment]
        super().__init__(*args, **kwargs)
        field = self.fields["to"]
        assert isinstance(field, forms.TypedChoiceField)
        field.choices = [(m.pk, f"{m.user.email} ({m.get_role_display()})") for m in members]
