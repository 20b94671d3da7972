"""``screen_text`` / ``screen_fields``: refuse poisoning, then redact secrets."""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Mapping

from memories.guard.phrasebook import REPORT_MARKERS
from memories.guard.rules import REDACT_RULES, REFUSE_RULES
from memories.guard.textviews import Views
from memories.guard.types import NO_DIGEST, GuardRejection, Redaction, Rule, ScreenResult, Span
from memories.guard.values import MARKER_RE

FieldValue = str | list[str] | None
_MODES = ("redact", "refuse")


def digest8(secret: str) -> str:
    """First 8 hex digits of the SHA-256 of exactly the removed substring."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:8]


_UNHASHED = frozenset(rule.id for rule in REDACT_RULES if not rule.hashed)


def marker_digest(rule_id: str, secret: str) -> str:
    """What the marker of ``secret`` carries: :func:`digest8`, or :data:`NO_DIGEST` for a rule
    whose secrets are too short to hash (a card security code)."""
    return NO_DIGEST if rule_id in _UNHASHED else digest8(secret)


def marker(rule_id: str, secret: str) -> str:
    return f"[REDACTED:{rule_id}:{marker_digest(rule_id, secret)}]"


def _views(text: str) -> Views:
    """Views over ``text`` with existing ``[REDACTED:…]`` markers blanked (same length), so a
    second pass neither re-redacts nor refuses them: screening is idempotent.  The blank is
    newlines, not spaces: no separator pattern crosses a newline, so a value can neither start
    inside a marker nor skip over it."""
    if "[REDACTED:" in text:
        text = MARKER_RE.sub(lambda m: "\n" * len(m.group()), text)
    return Views(text)


def _first_refusal(views: Views) -> Rule | None:
    for rule in REFUSE_RULES:
        for _ in rule.find(views):
            return rule
    return None


def screen_text(text: str, *, field: str = "content", secrets_mode: str = "redact") -> ScreenResult:
    """Screen one text field.

    Raises :class:`GuardRejection` for poisoning (instruction overrides, role tags, invisible
    characters, …) and, when ``secrets_mode == "refuse"``, for any secret.  Otherwise returns the
    text with each secret replaced by ``[REDACTED:<rule_id>:<digest8>]``.  Poisoning quoted inside
    a note that reports it (an incident write-up) is replaced the same way instead of refused.
    ``screen_text(screen_text(t).text)`` returns its input unchanged."""
    if secrets_mode not in _MODES:
        raise ValueError(f"secrets_mode must be one of {_MODES}, not {secrets_mode!r}")
    if not text:
        return ScreenResult(text, ())
    views = _views(text)
    reported: list[Redaction] = []
    refused = _first_refusal(views)
    if refused is not None:
        defanged = _defang_reported(text, views, field)
        if defanged is None:
            raise GuardRejection(refused.reason, rule_id=refused.id, field=field)
        text, reported = defanged
        views = _views(text)
    spans = _secret_spans(views)
    if spans and secrets_mode == "refuse":
        raise GuardRejection(f"secret detected ({spans[0][2]})", rule_id=spans[0][2], field=field)
    return _apply(text, spans, field, reported)


def _secret_spans(views: Views) -> list[tuple[int, int, str]]:
    """Non-overlapping secret spans, earlier rules winning, sorted by position.  Once a rule has
    found secrets, later rules see them blanked -- exactly what a second pass sees through the
    markers -- so a secret cannot be half-claimed by a later rule now and finished off by it on
    the next pass (idempotence)."""
    covered = bytearray(len(views.text))
    spans: list[tuple[int, int, str]] = []
    for rule in REDACT_RULES:
        found: list[Span] = []
        for start, end in rule.find(views):
            if end <= start or covered.find(1, start, end) != -1:
                continue
            covered[start:end] = b"\x01" * (end - start)
            spans.append((start, end, rule.id))
            found.append((start, end))
        if found:
            views = views.masked(found)
    spans.sort()
    return spans


def _apply(text: str, spans: list[tuple[int, int, str]], field: str, reported: list[Redaction]) -> ScreenResult:
    if not spans:
        return ScreenResult(text, tuple(reported))
    out, at, redactions = [], 0, list(reported)
    for start, end, rule_id in spans:
        secret = text[start:end]
        out += [text[at:start], marker(rule_id, secret)]
        redactions.append(Redaction(rule_id, marker_digest(rule_id, secret), field))
        at = end
    out.append(text[at:])
    return ScreenResult("".join(out), tuple(redactions))


# --- reported attacks ---------------------------------------------------------------------------

_INLINE_QUOTES = re.compile(
    r"\"(?P<a>[^\"\n]{1,2000})\"|\u201c(?P<b>[^\u201d\n]{1,2000})\u201d|\u00ab(?P<c>[^\u00bb\n]{1,2000})\u00bb"
    r"|\u201e(?P<d>[^\u201c\u201d\n]{1,2000})[\u201c\u201d]|`(?P<e>[^`\n]{1,2000})`"
    r"|\u2018(?P<f>[^\u2019\n]{1,2000})\u2019|'(?<!\w')(?P<g>[^'\n]{1,2000})'(?!\w)"
)
_BLOCKQUOTE = re.compile(r"^[ \t]*+>[ \t]?(?P<q>[^\n]+)", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*+(?:```|~~~)[^\n]*\n", re.MULTILINE)


def _quoted_regions(text: str) -> list[Span]:
    """Content spans of fenced blocks, ``>`` quote lines and inline quotations, outermost only."""
    found: list[Span] = []
    fences = list(_FENCE.finditer(text))
    for opening, closing in zip(fences[::2], fences[1::2], strict=False):
        found.append((opening.end(), closing.start()))
    found += [m.span("q") for m in _BLOCKQUOTE.finditer(text)]
    for match in _INLINE_QUOTES.finditer(text):
        group = next(g for g in "abcdefg" if match.group(g) is not None)
        found.append(match.span(group))
    found.sort(key=lambda span: (span[0], -span[1]))
    outer: list[Span] = []
    for start, end in found:
        if not outer or start >= outer[-1][1]:
            outer.append((start, end))
    return outer


def _defang_reported(text: str, views: Views, field: str) -> tuple[str, list[Redaction]] | None:
    """An incident note may *quote* an attack ("we saw a prompt injection saying 'ignore
    previous instructions' in ticket 42").  Such a note is kept, but each quotation holding a
    refused pattern is replaced by a marker, so the reading agent never sees the live payload.

    None (= refuse) unless every hit lies inside a quotation (inline quotes, a ``>`` line or a
    fenced block), none is an invisible character, the text was not obfuscated (NFKC-stable,
    no letter spacing) and the text outside the quotations reports the attack (injection,
    incident, attack, jailbreak, chat template…).  Cost: one more pass over the text."""
    if views.normalized is not views.text:
        return None
    hits: list[tuple[Rule, Span]] = []
    for rule in REFUSE_RULES:
        for span in rule.find(views):
            if rule.id == "invisible_chars" or span[0] < 0:
                return None
            hits.append((rule, span))
    regions = _quoted_regions(text)
    starts = [start for start, _ in regions]
    chosen: dict[int, Rule] = {}
    for rule, (start, end) in hits:
        i = bisect.bisect_right(starts, start) - 1
        if i < 0 or end > regions[i][1]:
            return None  # not inside a quotation: an order, not a report
        chosen.setdefault(i, rule)
    pieces, at, redactions = [], 0, []
    for i in sorted(chosen):
        start, end = regions[i]
        quoted = text[start:end]
        pieces += [text[at:start], marker(chosen[i].id, quoted)]
        redactions.append(Redaction(chosen[i].id, digest8(quoted), field))
        at = end
    pieces.append(text[at:])
    defanged = "".join(pieces)
    after = _views(defanged)
    if not redactions or not REPORT_MARKERS.present(after) or _first_refusal(after) is not None:
        return None
    return defanged, redactions


def screen_fields(
    fields: Mapping[str, FieldValue], *, secrets_mode: str = "redact"
) -> tuple[dict[str, FieldValue], tuple[Redaction, ...]]:
    """Screen every ``str`` value and every ``str`` inside a list value (``tags``); ``None`` passes
    through.  A refusal in any field raises :class:`GuardRejection` naming that field."""
    clean: dict[str, FieldValue] = {}
    redactions: list[Redaction] = []
    for name, value in fields.items():
        if value is None:
            clean[name] = None
        elif isinstance(value, str):
            result = screen_text(value, field=name, secrets_mode=secrets_mode)
            clean[name] = result.text
            redactions += result.redactions
        elif isinstance(value, list):
            items: list[str] = []
            for item in value:
                if not isinstance(item, str):
                    raise TypeError(f"{name}: list items must be str, not {type(item).__name__}")
                result = screen_text(item, field=name, secrets_mode=secrets_mode)
                items.append(result.text)
                redactions += result.redactions
            clean[name] = items
        else:
            raise TypeError(f"{name}: expected str, list[str] or None, not {type(value).__name__}")
    return clean, tuple(redactions)
