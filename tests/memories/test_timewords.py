"""Time in a question's words, resolved against when it is asked (``memories.timewords``)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memories.timewords import window

NOW = datetime(2023, 6, 20, 16, 30, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("I mentioned cooking something a couple of days ago. What?", "a couple of days ago", date(2023, 6, 17), date(2023, 6, 20)),
        ("How did the rafting go 3 days ago?", "3 days ago", date(2023, 6, 16), date(2023, 6, 19)),
        ("Who did I meet during the lunch last Tuesday?", "last Tuesday", date(2023, 6, 13), date(2023, 6, 14)),
        ("the art event two weeks ago", "two weeks ago", date(2023, 6, 3), date(2023, 6, 10)),
        ("Which did I take care of first in February?", "in February", date(2023, 2, 1), date(2023, 3, 1)),
        ("what happened in December", "in December", date(2022, 12, 1), date(2023, 1, 1)),
        ("trips I took in the past three months", "past three months", date(2023, 3, 1), date(2023, 6, 21)),
        ("what did I buy last month", "last month", date(2023, 5, 1), date(2023, 6, 1)),
        ("what did I fix last week", "last week", date(2023, 6, 12), date(2023, 6, 19)),
        ("notes from this week", "this week", date(2023, 6, 19), date(2023, 6, 21)),
        ("yesterday's standup", "yesterday", date(2023, 6, 18), date(2023, 6, 21)),
        ("что я купил два дня назад", "два дня назад", date(2023, 6, 17), date(2023, 6, 20)),
        ("на прошлой неделе я был в Москве", "на прошлой неделе", date(2023, 6, 12), date(2023, 6, 19)),
        ("в прошлом месяце", "в прошлом месяце", date(2023, 5, 1), date(2023, 6, 1)),
        ("в мае мы переехали", "в мае", date(2023, 5, 1), date(2023, 6, 1)),
        ("в прошлый вторник", "в прошлый вторник", date(2023, 6, 13), date(2023, 6, 14)),
        ("qu'ai-je acheté le mois dernier", "le mois dernier", date(2023, 5, 1), date(2023, 6, 1)),
        ("il y a trois semaines", "il y a trois semaines", date(2023, 5, 27), date(2023, 6, 3)),
        ("lundi dernier", "lundi dernier", date(2023, 6, 19), date(2023, 6, 20)),
        ("en mai", "en mai", date(2023, 5, 1), date(2023, 6, 1)),
        # open windows: before / after / since a time; two months joined
        ("the airlines I flew with before today", "before today", date(1970, 1, 1), date(2023, 6, 19)),
        ("what did I change after last week", "after last week", date(2023, 6, 19), date(2023, 6, 21)),
        ("what changed since May", "since May", date(2023, 5, 1), date(2023, 6, 21)),
        ("до прошлой недели", "до прошлой недели", date(1970, 1, 1), date(2023, 6, 12)),
        ("avant la semaine dernière", "avant la semaine dernière", date(1970, 1, 1), date(2023, 6, 12)),
        ("avant hier", "avant hier", date(2023, 6, 17), date(2023, 6, 20)),
        ("the novels I finished in January and March", "in January and March", date(2023, 1, 1), date(2023, 4, 1)),
        ("в январе и марте", "в январе и марте", date(2023, 1, 1), date(2023, 4, 1)),
        ("what I planned in March and may still do", "in March", date(2023, 3, 1), date(2023, 4, 1)),
    ],
)  # fmt: skip
def test_a_relative_time_resolves_to_its_window(question: str, phrase: str, start: date, end: date) -> None:
    found = window(question, NOW)
    assert found is not None
    assert found.phrase == phrase
    assert (found.start.date(), found.end.date()) == (start, end)


@pytest.mark.parametrize(
    "question",
    ["how long are production backups kept", "I may come later", "How many days ago did I go rafting?", "mars rover"],
)
def test_a_question_without_a_time_has_no_window(question: str) -> None:
    assert window(question, NOW) is None


def test_a_window_never_ends_after_today() -> None:
    found = window("notes from this month", NOW)
    assert found is not None
    assert found.end == datetime(2023, 6, 21, tzinfo=UTC)


def test_the_first_time_in_the_question_wins() -> None:
    found = window("what I bought last month, not what I returned yesterday", NOW)
    assert found is not None
    assert found.phrase == "last month"


def test_a_month_with_its_year_is_that_month() -> None:
    later = datetime(2026, 6, 20, tzinfo=UTC)
    found = window("Qu'est-ce qui a saturé le CPU en mai 2024 ?", later)
    assert found is not None
    assert (found.start.date(), found.end.date()) == (date(2024, 5, 1), date(2024, 6, 1))
    russian = window("Кто был релиз-менеджером в сентябре 2024?", later)
    assert russian is not None
    assert russian.start.date() == date(2024, 9, 1)


def test_a_month_name_inside_another_word_is_no_month() -> None:
    assert window("Можно ли пушить напрямую в main?", NOW) is None
    assert window("deploys happen in marshalling order", NOW) is None


def test_a_time_after_the_question_is_no_window() -> None:
    assert window("what happened in May 2024", NOW) is None  # asked in June 2023
