"""Issue #42: the "how MMW works" guide and the ``remember`` and ``forget`` pages are served at
``/docs/`` in Russian and French to a person reading in that language; every other page stays
English and says so in the reader's language; agents (Markdown, ``/llms.txt``, MCP) read English.

A translation may never drift from what the server does: it keeps the English page's headings'
structure, every span of code the English page quotes (tool, parameter and field names, JSON, the
error texts the server answers in English) and exactly the server's parameters, in order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from django.utils import translation

from interfaces import reference

PAGES = Path(__file__).resolve().parents[2] / "docs" / "reference"
TRANSLATED = ("how_mmw_works", "remember", "forget")
HEADINGS = {
    "ru": {
        "how_mmw_works": [
            "Как устроен MMW",
            "Общая схема",
            "Записи",
            "Рабочие пространства, проекты и ключи",
            "Статусы",
            "Сводки и derived_from",
            "Что происходит после remember",
            "Локальный агент",
            "Что дальше",
        ],
        "remember": ["remember", "Параметры", "Ответ", "Ошибки"],
        "forget": ["forget", "Параметры", "Ответ", "Ошибки", "Что происходит с удалённой записью"],
    },
    "fr": {
        "how_mmw_works": [
            "Comment fonctionne MMW",
            "Vue d’ensemble",
            "Les enregistrements",
            "Espaces de travail, projets et clés",
            "Les statuts",
            "Les résumés et derived_from",
            "Ce qui se passe après remember",
            "L’agent local",
            "Pour aller plus loin",
        ],
        "remember": ["remember", "Paramètres", "Réponse", "Erreurs"],
        "forget": ["forget", "Paramètres", "Réponse", "Erreurs", "Ce que devient un enregistrement oublié"],
    },
}
ARTICLE = re.compile(r'<article class="docs-page" lang="(\w+)">(.*?)</article>', re.DOTALL)
HEADING = re.compile(r"<h[12]>(.*?)</h[12]>", re.DOTALL)
FENCE = re.compile(r"```.*?```", re.DOTALL)
CODE = re.compile(r"`([^`]+)`")
pytestmark = pytest.mark.django_db


def article(client: Client, path: str, language: str) -> tuple[str, str]:
    """(the article's language, its HTML) of ``path`` read with ``Accept-Language: language``."""
    response = client.get(path, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200, path
    match = ARTICLE.search(response.content.decode())
    assert match, path
    return match.group(1), match.group(2)


def headings(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).replace("&#x27;", "'").replace("&quot;", '"') for h in HEADING.findall(html)]


def spans(markdown: str) -> set[str]:
    """The code spans a page quotes (outside its diagram), whitespace folded."""
    return {" ".join(span.split()) for span in CODE.findall(FENCE.sub("", markdown))}


@pytest.mark.parametrize("language", ["ru", "fr"])
@pytest.mark.parametrize("name", TRANSLATED)
def test_a_reader_of_russian_or_french_gets_the_page_written_in_their_language(
    client: Client, language: str, name: str
) -> None:
    path = "/docs/" if name == "README" else f"/docs/{name}"
    written_in, html = article(client, path, language)
    assert written_in == language
    assert headings(html) == HEADINGS[language][name]
    page = client.get(path, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert 'data-testid="docs-in-english"' not in page
    assert f"<title>{HEADINGS[language][name][0]} · MMW</title>" in page


@pytest.mark.parametrize("name", TRANSLATED)
def test_an_english_reader_gets_the_english_page(client: Client, name: str) -> None:
    written_in, html = article(client, f"/docs/{name}", "en")
    assert written_in == "en"
    english = [h.lstrip("# ").replace("`", "") for h in re.findall(r"^#{1,2} .+$", reference.pages()[name], re.M)]
    assert headings(html) == english


@pytest.mark.parametrize("language", ["ru", "fr"])
def test_a_page_not_translated_is_english_and_says_so_in_the_readers_language(client: Client, language: str) -> None:
    with translation.override(language):
        notice = translation.gettext("This page is in English: it has not been translated yet.")
    assert notice != "This page is in English: it has not been translated yet."
    for path in ("/docs/", "/docs/search", "/docs/errors"):
        page = client.get(path, HTTP_ACCEPT_LANGUAGE=language).content.decode()
        assert notice.replace("'", "&#x27;") in page, path
        assert '<article class="docs-page" lang="en">' in page, path
    english = client.get("/docs/search", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert 'data-testid="docs-in-english"' not in english


@pytest.mark.parametrize("language", ["ru", "fr"])
def test_the_contents_name_translated_pages_in_the_readers_language(client: Client, language: str) -> None:
    page = client.get("/docs/search", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    title = HEADINGS[language]["how_mmw_works"][0].replace("'", "&#x27;")
    assert f'<a href="/docs/how_mmw_works" lang="{language}">{title}</a>' in page
    assert '<a href="/docs/search" lang="en">search</a>' in page


@pytest.mark.parametrize("language", ["ru", "fr"])
def test_agents_read_english_whatever_the_language(client: Client, language: str) -> None:
    for name in TRANSLATED:
        markdown = client.get(f"/docs/{name}.md", HTTP_ACCEPT_LANGUAGE=language)
        assert markdown.content.decode() == (PAGES / f"{name}.md").read_text()
    assert "Как устроен" not in client.get("/llms.txt", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert set(reference.pages()) == {p.stem for p in PAGES.glob("*.md")}  # MCP's mmw://docs/: English only


def test_exactly_the_three_pages_are_translated_in_both_languages() -> None:
    for language in ("ru", "fr"):
        assert sorted(reference.translated_pages(language)) == sorted(TRANSLATED)
        assert {p.stem for p in (PAGES / language).glob("*.md")} == set(TRANSLATED)  # none without an original
    assert reference.translated_pages("en") == {}


@pytest.mark.parametrize("language", ["ru", "fr"])
@pytest.mark.parametrize("name", TRANSLATED)
def test_a_translation_keeps_the_english_pages_structure_and_every_quoted_name(language: str, name: str) -> None:
    english, translated = reference.pages()[name], reference.translated_pages(language)[name]
    level = re.compile(r"^(#{1,3}) ", re.M)
    assert level.findall(translated) == level.findall(english)
    missing = spans(english) - spans(translated)
    assert not missing, f"{language}/{name}.md lost these verbatim spans: {sorted(missing)}"
    assert len(FENCE.findall(translated)) == len(FENCE.findall(english))  # the diagram kept


@pytest.mark.parametrize("language", ["ru", "fr"])
@pytest.mark.parametrize("tool", ["remember", "forget"])
def test_a_translated_parameter_table_lists_exactly_the_servers_parameters(language: str, tool: str) -> None:
    text = reference.translated_pages(language)[tool]
    rows = re.findall(r"^\| `(\w+)` \|", text.split("## ", 2)[1], re.M)
    assert rows == [p.name for p in reference.TOOLS[tool]]
    required = [p.name for p in reference.TOOLS[tool] if p.required]
    bold = re.findall(r"^\| `(\w+)` \| [^|]*\*\*[^|]*\*\*", text, re.M)
    assert bold == required


def test_the_header_links_the_reference_for_visitors_not_signed_in(client: Client) -> None:
    page = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    assert '<a href="/docs/">' in page
