"""Time in a question's words: "last week", "in May", "два дня назад", "le mois dernier" → the
window of time the question is about, relative to when it is asked (``now``).

A search uses the window as a soft preference (``memories.search``: records and turns whose
``occurred_at`` falls in it are ranked up, nothing is filtered out) and says which window it
understood (``time_window``), so an agent can correct it with ``since`` / ``until``.

Contract of ``window(query, now)``: the expression that comes first in the question wins;
its window is ``[start, end)`` in UTC, each end aligned to whole days (or months, years) in UTC,
and never after ``now`` ends (a question about "Friday" asked on a Wednesday means the last one).
Numbers may be digits or words (one … twelve, "a couple of", "a few"; in Russian and French too).
No expression: None. "before" / "after" / "since" a time ("before today", "after last week",
"since May", "до прошлой недели", "avant la semaine dernière") open its window towards the past
or up to today; two months joined ("in January and March") give one window over both.
Expressions about another event ("before I moved") are not resolved: the words of such a phrase
still match by keywords and meaning.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class TimeWindow:
    """The time a question is about: ``[start, end)`` and the words that said so."""

    start: datetime
    end: datetime
    phrase: str

    def as_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "phrase": self.phrase}


_NUMBERS = {
    # English
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
    "a few": 3, "few": 3, "several": 3,
    # Russian
    "один": 1, "одну": 1, "одна": 1, "два": 2, "две": 2, "три": 3, "четыре": 4, "пять": 5,
    "шесть": 6, "семь": 7, "восемь": 8, "девять": 9, "десять": 10, "пару": 2, "несколько": 3,
    # French
    "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "sept": 7,
    "huit": 8, "neuf": 9, "dix": 10, "quelques": 3,
}  # fmt: skip
_NUMBER = "(" + "|".join(sorted(map(re.escape, _NUMBERS), key=len, reverse=True)) + r"|\d{1,3})"

_UNITS = {
    "day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month", "months": "month",
    "year": "year", "years": "year",
    "день": "day", "дня": "day", "дней": "day", "неделю": "week", "недели": "week", "недель": "week",
    "месяц": "month", "месяца": "month", "месяцев": "month", "год": "year", "года": "year", "лет": "year",
    "jour": "day", "jours": "day", "semaine": "week", "semaines": "week", "mois": "month", "an": "year",
    "ans": "year", "année": "year", "années": "year",
}  # fmt: skip
_UNIT = "(" + "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True)) + ")"

_MONTHS = {
    **{m.lower(): i for i, m in enumerate(calendar.month_name) if m},
    **{m.lower(): i for i, m in enumerate(calendar.month_abbr) if m and m.lower() != "may"},
    "январе": 1, "феврале": 2, "марте": 3, "апреле": 4, "мае": 5, "июне": 6, "июле": 7, "августе": 8,
    "сентябре": 9, "октябре": 10, "ноябре": 11, "декабре": 12,
    "janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "mai": 5, "juin": 6, "juillet": 7,
    "août": 8, "aout": 8, "septembre": 9, "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12,
}  # fmt: skip
_MONTH = "(" + "|".join(sorted(map(re.escape, _MONTHS), key=len, reverse=True)) + ")"

_WEEKDAYS = {
    **{d.lower(): i for i, d in enumerate(calendar.day_name)},
    "понедельник": 0, "вторник": 1, "среду": 2, "среда": 2, "четверг": 3, "пятницу": 4, "пятница": 4,
    "субботу": 5, "суббота": 5, "воскресенье": 6,
    "lundi": 0, "mardi": 1, "mercredi": 2, "jeudi": 3, "vendredi": 4, "samedi": 5, "dimanche": 6,
}  # fmt: skip
_WEEKDAY = "(" + "|".join(sorted(map(re.escape, _WEEKDAYS), key=len, reverse=True)) + ")"
_YEAR = r"(?:\s+((?:19|20)\d\d)\b)?"
# A second month joined to a first ("in January and May"): "may" only capitalised, so "in March
# and may" is the verb.
_SECOND_MONTH = (
    "(" + "|".join(sorted((re.escape(m) for m in _MONTHS if m != "may"), key=len, reverse=True)) + "|(?-i:May))"
)


def _day(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _add_months(t: datetime, months: int) -> datetime:
    index = t.year * 12 + (t.month - 1) + months
    year, month = divmod(index, 12)
    return _month_start(year, month + 1)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _span(unit: str, count: int, now: datetime) -> tuple[datetime, datetime]:
    """``count`` ``unit``s back from today, a unit wide: "3 days ago" is that day."""
    today = _day(now)
    if unit == "day":  # a day either side: "3 days ago" is often said of the day before or after
        start = today - timedelta(days=count)
        return start - timedelta(days=1), start + timedelta(days=2)
    if unit == "week":
        start = today - timedelta(weeks=count)
        return start - timedelta(days=3), start + timedelta(days=4)
    if unit == "month":
        start = _add_months(_month_start(today.year, today.month), -count)
        return start, _add_months(start, 1)
    start = _month_start(today.year - count, 1)
    return start, _month_start(today.year - count + 1, 1)


def _last(unit: str, count: int, now: datetime) -> tuple[datetime, datetime]:
    """The last ``count`` ``unit``s up to the end of today: "the past three months"."""
    end = _day(now) + timedelta(days=1)
    if unit == "day":
        return end - timedelta(days=count), end
    if unit == "week":
        return end - timedelta(weeks=count), end
    if unit == "month":
        return _add_months(_month_start(now.year, now.month), -count), end
    return _month_start(now.year - count, 1), end


def _previous(unit: str, now: datetime) -> tuple[datetime, datetime]:
    """ "last week", "в прошлом месяце": the calendar unit before the current one."""
    today = _day(now)
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        return monday - timedelta(weeks=1), monday
    if unit == "month":
        this = _month_start(today.year, today.month)
        return _add_months(this, -1), this
    if unit == "year":
        return _month_start(today.year - 1, 1), _month_start(today.year, 1)
    return today - timedelta(days=1), today


def _current(unit: str, now: datetime) -> tuple[datetime, datetime]:
    """ "this week", "ce mois-ci": the calendar unit so far."""
    today = _day(now)
    end = today + timedelta(days=1)
    if unit == "week":
        return today - timedelta(days=today.weekday()), end
    if unit == "month":
        return _month_start(today.year, today.month), end
    if unit == "year":
        return _month_start(today.year, 1), end
    return today, end


def _in_month(month: int, now: datetime) -> tuple[datetime, datetime]:
    """ "in May": this year's May if it has begun, else last year's."""
    year = now.year if month <= now.month else now.year - 1
    start = _month_start(year, month)
    return start, _add_months(start, 1)


def _weekday(day: int, now: datetime) -> tuple[datetime, datetime]:
    """ "last Tuesday", "в среду": the latest such day before today."""
    today = _day(now)
    back = (today.weekday() - day) % 7 or 7
    start = today - timedelta(days=back)
    return start, start + timedelta(days=1)


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], datetime], tuple[datetime, datetime]]]


def _rule(pattern: str, resolve: Callable[[re.Match[str], datetime], tuple[datetime, datetime]]) -> Rule:
    return re.compile(pattern, re.IGNORECASE), resolve


def _unit(m: re.Match[str], group: int) -> str:
    return _UNITS[m.group(group).lower()]


def _ago(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """ "N units ago" with the number in group 1 and the unit in group 2."""
    return _span(_unit(m, 2), _number(m.group(1).lower()), now)


def _past(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """ "the past N units" with the number in group 1 and the unit in group 2."""
    return _last(_unit(m, 2), _number(m.group(1).lower()), now)


def _on_weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _weekday(_WEEKDAYS[m.group(1).lower()], now)


def _in(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """ "in May" (this year's or last), "in May 2024" (that one); "in January and March": from
    the first's start to the last's end."""
    spans = [_one_month(m.group(g), m.group(g + 1), now) for g in (1, 3) if m.group(g)]
    return min(s for s, _ in spans), max(e for _, e in spans)


def _one_month(name: str, year: str | None, now: datetime) -> tuple[datetime, datetime]:
    month = _MONTHS[name.lower()]
    if year:
        start = _month_start(int(year), month)
        return start, _add_months(start, 1)
    return _in_month(month, now)


_RULES: tuple[Rule, ...] = (
    # "N units ago", "il y a N unités", "N единиц назад"
    _rule(rf"\b{_NUMBER}\s+{_UNIT}\s+ago\b", _ago),
    _rule(rf"\bil y a\s+{_NUMBER}\s+{_UNIT}\b", _ago),
    _rule(rf"(?<!\w){_NUMBER}\s+{_UNIT}\s+назад\b", _ago),
    _rule(rf"(?<!\w){_UNIT}\s+назад\b", lambda m, now: _span(_unit(m, 1), 1, now)),
    _rule(r"\b(a|one)\s+(day|week|month|year)\s+ago\b", lambda m, now: _span(m.group(2).lower(), 1, now)),
    # "the past / last N units", "за последние N", "ces N derniers"
    _rule(rf"\b(?:past|last|previous)\s+{_NUMBER}\s+{_UNIT}\b", _past),
    _rule(rf"(?<!\w)последние\s+{_NUMBER}\s+{_UNIT}", _past),
    _rule(rf"\b(?:ces|les)\s+{_NUMBER}\s+derni(?:ers|ères)\s+{_UNIT}\b", _past),
    # "last week / month / year", "на прошлой неделе", "le mois dernier"
    _rule(r"\b(?:last|previous)\s+(week|month|year)\b", lambda m, now: _previous(m.group(1).lower(), now)),
    _rule(r"(?<!\w)(?:на\s+)?прошл(?:ой|ую)\s+недел[еи]", lambda m, now: _previous("week", now)),
    _rule(r"(?<!\w)(?:в\s+)?прошлом\s+месяце", lambda m, now: _previous("month", now)),
    _rule(r"(?<!\w)(?:в\s+)?прошлом\s+году", lambda m, now: _previous("year", now)),
    _rule(r"\b(?:la\s+)?semaine\s+derni[eè]re\b", lambda m, now: _previous("week", now)),
    _rule(r"\b(?:le\s+)?mois\s+dernier\b", lambda m, now: _previous("month", now)),
    _rule(r"\b(?:l'|l’)?(?:année|an)\s+derni(?:ère|er)\b", lambda m, now: _previous("year", now)),
    # "this week / month / year", "на этой неделе", "ce mois-ci"
    _rule(r"\bthis\s+(week|month|year)\b", lambda m, now: _current(m.group(1).lower(), now)),
    _rule(r"(?<!\w)на\s+этой\s+неделе", lambda m, now: _current("week", now)),
    _rule(r"(?<!\w)в\s+этом\s+месяце", lambda m, now: _current("month", now)),
    _rule(r"\bcette\s+semaine\b", lambda m, now: _current("week", now)),
    _rule(r"\bce\s+mois(?:-ci)?\b", lambda m, now: _current("month", now)),
    # days
    _rule(r"\b(?:the\s+day\s+before\s+yesterday|avant[- ]hier)\b|(?<!\w)позавчера",
          lambda m, now: _span("day", 2, now)),
    _rule(r"\byesterday\b|\bhier\b|(?<!\w)вчера", lambda m, now: _span("day", 1, now)),
    _rule(r"\btoday\b|\baujourd'hui\b|(?<!\w)сегодня", lambda m, now: _span("day", 0, now)),
    # weekdays: "last Tuesday", "on Friday", "lundi dernier", "в прошлый вторник"
    _rule(rf"\b(?:last|on|this\s+past)\s+{_WEEKDAY}\b", _on_weekday),
    _rule(rf"\b{_WEEKDAY}\s+derni(?:er|ère)\b", _on_weekday),
    _rule(rf"(?<!\w)в\s+(?:прошл(?:ый|ую|ое)\s+)?{_WEEKDAY}(?!\w)", _on_weekday),
    # months: "in May", "в мае", "en mai"; "in January and March", "в январе и марте"
    _rule(rf"\b(?:in|during|since|en|au mois de)\s+{_MONTH}(?!\w){_YEAR}"
          rf"(?:\s*(?:,|and|or|et|ou)\s+(?:in\s+|en\s+)?{_SECOND_MONTH}(?!\w){_YEAR})?", _in),
    _rule(rf"(?<!\w)в\s+{_MONTH}(?!\w){_YEAR}(?:\s*(?:,|и|или)\s+(?:в\s+)?{_MONTH}(?!\w){_YEAR})?", _in),
)  # fmt: skip

# Before the phrase: the window is everything before it ("before today") or from it to today
# ("after last week"); "since" inside a month's phrase ("since May") opens it up to today.
_BEFORE = re.compile(r"(?:\b(?:before|until|till|prior\s+to|avant|jusqu'à)|(?<!\w)до)\s+$", re.IGNORECASE)
_AFTER = re.compile(r"(?:\b(?:after|since|après|depuis)|(?<!\w)(?:после|с))\s+$", re.IGNORECASE)
_OPEN_SINCE = re.compile(r"since\b", re.IGNORECASE)
# The start of a window open towards the past.
BEGINNING = datetime(1970, 1, 1, tzinfo=UTC)


def window(query: str, now: datetime) -> TimeWindow | None:
    """The time ``query`` is about, asked at ``now`` (module docstring); None when it says none."""
    best: tuple[int, TimeWindow] | None = None
    for pattern, resolve in _RULES:
        match = pattern.search(query)
        if match is None:
            continue
        start, end = resolve(match, now)
        today_ends = _day(now) + timedelta(days=1)
        if start >= min(end, today_ends):
            continue  # a time after the question: no window, open or not
        begins, phrase = match.start(), match.group(0).strip()
        before, after = _BEFORE.search(query, 0, begins), _AFTER.search(query, 0, begins)
        if before is not None:
            start, end, begins = BEGINNING, start, before.start()
        elif after is not None:
            start, end, begins = end, today_ends, after.start()
        elif _OPEN_SINCE.match(phrase):
            end = today_ends
        end = min(end, today_ends)
        if start >= end:
            continue
        found = TimeWindow(start, end, query[begins : match.end()].strip())
        if best is None or begins < best[0]:
            best = (begins, found)
    return best[1] if best is not None else None
