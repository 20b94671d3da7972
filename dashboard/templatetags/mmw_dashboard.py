"""Template filters of the dashboard: times people read, relations in words."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation

from babel.dates import format_date, format_datetime
from babel.numbers import format_decimal
from django import template
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import get_language, gettext, ngettext, pgettext_lazy, to_locale

register = template.Library()

RECENT = dt.timedelta(days=7)

# An edge ``A —relation→ B`` read from A ("out") and from B ("in").
_OUT = {
    "related": pgettext_lazy("relation", "related to"),
    "refines": pgettext_lazy("relation", "refines"),
    "supersedes": pgettext_lazy("relation", "supersedes"),
    "contradicts": pgettext_lazy("relation", "contradicts"),
    "derived_from": pgettext_lazy("relation", "is derived from"),
}
_IN = {
    "related": pgettext_lazy("relation", "related to"),
    "refines": pgettext_lazy("relation", "is refined by"),
    "supersedes": pgettext_lazy("relation", "is superseded by"),
    "contradicts": pgettext_lazy("relation", "is contradicted by"),
    "derived_from": pgettext_lazy("relation", "is a source of"),
}


# Codes the pages show as words: a record's visibility, a subscription's state, an audit row's
# target type (English: the code as it always read), the seeded plans' names (a plan an operator
# adds keeps its own name).
_VISIBILITY = {
    "author": pgettext_lazy("visibility", "author only"),
    "department": pgettext_lazy("visibility", "departments"),
    "project": pgettext_lazy("visibility", "project"),
    "org": pgettext_lazy("visibility", "organisation"),
}
_STATE = {
    "active": pgettext_lazy("subscription", "active"),
    "grace": pgettext_lazy("subscription", "grace period"),
    "suspended": pgettext_lazy("subscription", "suspended"),
    "none": pgettext_lazy("subscription", "no subscription"),
}
_TARGET = {
    "account": pgettext_lazy("audit target", "account"),
    "api_key": pgettext_lazy("audit target", "api key"),
    "department": pgettext_lazy("audit target", "department"),
    "import": pgettext_lazy("audit target", "import"),
    "invitation": pgettext_lazy("audit target", "invitation"),
    "ledger_entry": pgettext_lazy("audit target", "ledger entry"),
    "membership": pgettext_lazy("audit target", "membership"),
    "memory": pgettext_lazy("audit target", "memory"),
    "oauth_grant": pgettext_lazy("audit target", "oauth grant"),
    "project": pgettext_lazy("audit target", "project"),
    "subscription": pgettext_lazy("audit target", "subscription"),
    "user": pgettext_lazy("audit target", "user"),
    "webhook": pgettext_lazy("audit target", "webhook"),
    "workspace": pgettext_lazy("audit target", "workspace"),
}
_PLAN = {
    "Free": pgettext_lazy("plan", "Free"),
    "Pro": pgettext_lazy("plan", "Pro"),
    "Team": pgettext_lazy("plan", "Team"),
}
_STATUS = {
    "conflict": pgettext_lazy("status", "conflict"),
    "stale": pgettext_lazy("status", "stale"),
    "new": pgettext_lazy("status", "new"),
}


@register.filter
def status_words(code: object) -> str:
    return str(_STATUS.get(str(code), code))


@register.filter
def status_reason_words(reason: object) -> str:
    """``memories.statuses``' reasons (the API's English) in the page's language; another as it is."""
    text = str(reason or "")
    if m := re.fullmatch(r"summarises (.+), which is (\w+)", text):
        return gettext("summarises %(source)s, which is %(status)s") % {"source": m[1], "status": status_words(m[2])}
    if m := re.fullmatch(r"a newer record of this source \((.+)\) has another source_hash", text):
        return gettext("a newer record of this source (%(record)s) has another source_hash") % {"record": m[1]}
    if m := re.fullmatch(r"another current version of (.+) says something else", text):
        return gettext("another current version of %(fact_key)s says something else") % {"fact_key": m[1]}
    if m := re.fullmatch(r"another current record \((.+)\) says otherwise", text):
        return gettext("another current record (%(record)s) says otherwise") % {"record": m[1]}
    return text


@register.filter
def visibility_words(code: object) -> str:
    return str(_VISIBILITY.get(str(code), code))


@register.filter
def state_words(code: object) -> str:
    return str(_STATE.get(str(code), code))


@register.filter
def plan_label(plan: object) -> str:
    """A plan's name; the seeded ones (Free, Pro, Team) in the page's language."""
    name = str(getattr(plan, "name", plan) or "")
    return str(_PLAN.get(name, name))


@register.filter
def money(amount: object) -> str:
    """A ledger amount (the exact decimal string the ledger stores and the API answers) written
    the page's language's way — ``-1 240,18`` in Russian, ``-1 240,18`` in French — with every
    digit it has: never rounded, never padded (the digits after the point are the amount's own).
    English shows it as the API does (``-1240.18``). Anything not a number is shown as it is."""
    text = str(amount if amount is not None else "")
    language = get_language() or "en"
    if language.startswith("en"):
        return text
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    if not value.is_finite():
        return text
    digits = max(0, -int(value.as_tuple().exponent))
    pattern = "#,##0" + ("." + "0" * digits if digits else "")
    return format_decimal(value, format=pattern, locale=to_locale(language), decimal_quantization=True)


@register.filter
def exact_time(value: object) -> SafeString | str:
    """A moment as a date and time in the page's language (``12 Mar 2026, 14:05``, ``12 мар.
    2026 г., 14:05``), UTC, the exact time on hover and in ``datetime`` for machines."""
    when = _as_datetime(value)
    if when is None:
        return str(value or "")
    utc = when.astimezone(dt.UTC)
    exact = utc.strftime("%Y-%m-%d %H:%M:%S UTC")
    return format_html('<time datetime="{}" title="{}">{}</time>', when.isoformat(), exact, _date(utc))


@register.filter
def exact_date(value: object) -> str:
    """A day (``2027-05-07`` or a moment's UTC day) in the page's language: ``7 May 2027``, ``7 мая 2027 г.``."""
    text = str(value or "")
    when = _as_datetime(value)
    if when is not None:
        day = when.astimezone(dt.UTC).date()
    else:
        try:
            day = dt.date.fromisoformat(text[:10])
        except ValueError:
            return text
    language = get_language() or "en"
    if language.startswith("en"):
        return day.strftime("%-d %b %Y")
    return format_date(day, "d MMM y", locale=to_locale(language))


def _as_datetime(value: object) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, str) and value:
        return parse_datetime(value)
    return None


@register.filter
def human_time(value: object) -> SafeString | str:
    """``3 hours ago`` / ``in 6 days`` (within a week either way) or ``12 Mar 2026, 14:05``, the
    exact UTC time on hover and in ``datetime`` for machines. Anything unparsable is shown as it is."""
    when = _as_datetime(value)
    if when is None:
        return str(value or "")
    now = timezone.now()
    exact = when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    ahead = when - now
    if ahead > RECENT + HALF_DAY or -ahead >= RECENT:  # far ahead (an expiry) or long ago: the date
        words = _date(when.astimezone(dt.UTC))
    elif abs(ahead) < dt.timedelta(minutes=1):
        words = gettext("just now")
    elif ahead > dt.timedelta(0):
        words = gettext("in %(span)s") % {"span": _rounded(ahead)}
    else:
        words = gettext("%(span)s ago") % {"span": _rounded(-ahead)}
    return format_html('<time datetime="{}" title="{}">{}</time>', when.isoformat(), exact, words)


def _date(when: dt.datetime) -> str:
    """``12 Mar 2026, 14:05`` in English; the locale's month names otherwise (``12 мар. 2026 г., 14:05``)."""
    language = get_language() or "en"
    if language.startswith("en"):
        return when.strftime("%-d %b %Y, %H:%M")
    return format_datetime(when, "d MMM y, HH:mm", locale=to_locale(language))


HALF_DAY = dt.timedelta(hours=12)
DAY, HOUR, MINUTE = dt.timedelta(days=1), dt.timedelta(hours=1), dt.timedelta(minutes=1)


def _rounded(span: dt.timedelta) -> str:
    """``7 days`` for 6 days 23 hours (an invitation sent for seven days, read a second later),
    ``3 hours`` for 2 h 50 min: the largest unit that fits, rounded to the nearest (Django's
    ``timesince`` truncates, so a fresh seven-day link read "6 days")."""
    if span >= DAY:
        count = round(span / DAY)
        return ngettext("%(count)d day", "%(count)d days", count) % {"count": count}
    if span >= HOUR:
        count = round(span / HOUR)
        return ngettext("%(count)d hour", "%(count)d hours", count) % {"count": count}
    count = max(1, round(span / MINUTE))
    return ngettext("%(count)d minute", "%(count)d minutes", count) % {"count": count}


@register.filter
def relation_words(relation: object) -> str:
    """The words of an edge from this record's side: ``refines`` / ``is refined by``, …"""
    if not isinstance(relation, dict):
        return ""
    kind = str(relation.get("relation", ""))
    words = _IN if relation.get("direction") == "in" else _OUT
    return str(words.get(kind, kind.replace("_", " ")))


@register.filter
def preview(previews: object, memory_id: object) -> str:
    """``previews[memory_id]`` (``memories.selectors.memory_previews``), or "" when unreadable."""
    return str(previews.get(str(memory_id), "")) if isinstance(previews, dict) else ""


@register.filter
def audit_target(event: object) -> str:
    """An audit row's target in words, from what the row recorded (``data``): the person's e-mail,
    the key's prefix, the name, or how many records — the bare ``type id`` only as a last resort."""
    kind = str(getattr(event, "target_type", "") or "")
    data = getattr(event, "data", None)
    data = data if isinstance(data, dict) else {}
    label = str(_TARGET.get(kind, kind.replace("_", " ")))
    for field in ("user", "to", "email"):
        if isinstance(data.get(field), str) and data[field]:
            return f"{label} · {data[field]}"
    if isinstance(data.get("prefix"), str):
        return f"{label} · mmw_{data['prefix']}…"
    if isinstance(data.get("ids"), list):
        count = len(data["ids"])
        return ngettext("%(count)d record", "%(count)d records", count) % {"count": count}
    if isinstance(data.get("name"), str) and data["name"]:
        return f"{label} · {data['name']}"
    target_id = str(getattr(event, "target_id", "") or "")
    return f"{label} {target_id[:14]}".strip()


@register.filter
def item(mapping: object, key: object) -> object:
    """``mapping[key]`` in a template (None when absent or not a mapping)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def account_label(account: object) -> str:
    """How the dashboard names an account: a personal account is "Personal" (its stored name is
    its owner's e-mail, which read like someone else's in a breadcrumb), others by their name."""
    kind = getattr(account, "kind", "")
    return gettext("Personal") if kind == "personal" else str(getattr(account, "name", account or ""))
