"""The reference, served: ``/docs/`` (HTML in the dashboard's style), ``/docs/<page>.md`` (the
Markdown itself, for agents and scripts) and ``/llms.txt`` (an index of them, llmstxt.org).

The pages are ``docs/reference/*.md`` from the repository, read once per process; only names of
existing pages are served (no path ever reaches the file system from the URL). A person reading in
Russian or French gets the page written in their language where there is one
(``docs/reference/<language>/<page>.md``: the "how MMW works" guide, ``remember``, ``forget``),
else the English page, which then says so in their language. The Markdown and ``/llms.txt`` are
for agents: English always.
"""

from __future__ import annotations

import functools
import re

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from markdown_it import MarkdownIt

from interfaces.reference import pages, translated_pages

_PAGE_LINK = re.compile(r'href="([A-Za-z_]+)\.md"')
_TITLE = re.compile(r"^# (.+)$", re.MULTILINE)
INDEX = "README"


def _markdown(name: str, language: str = "en") -> str:
    text = translated_pages(language).get(name) or pages().get(name)
    if text is None:
        raise Http404("no such page")
    return text


def _language() -> str:
    """The reader's language (``PersonLocale`` chose it): ``en``, ``ru`` or ``fr``."""
    return (translation.get_language() or "en").split("-")[0]


def _written_in(name: str, language: str) -> str:
    return language if name in translated_pages(language) else "en"


@functools.cache
def _html(name: str, language: str = "en") -> str:
    # Our own pages, but raw HTML stays off anyway: the CSP-friendly renderer output is all we serve.
    rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(_markdown(name, language))
    return _PAGE_LINK.sub(lambda m: f'href="/docs/{m.group(1) if m.group(1) != INDEX else ""}"', rendered)


def _title(name: str, language: str = "en") -> str:
    match = _TITLE.search(_markdown(name, language))
    return match.group(1) if match else name


@require_GET
def docs_page(request: HttpRequest, name: str = INDEX) -> HttpResponse:
    language = _language()
    written_in = _written_in(name, language)
    body = mark_safe(_html(name, written_in))  # noqa: S308 - rendered from our repository's Markdown with raw HTML off
    return render(
        request,
        "dashboard/docs.html",
        {
            "title": _title(name, written_in),
            "body": body,
            "source": f"/docs/{name}.md",
            "pages": _contents(language),
            "written_in": written_in,
            "in_english_only": written_in != language,
        },
    )


@require_GET
def docs_markdown(request: HttpRequest, name: str) -> HttpResponse:
    return HttpResponse(_markdown(name), content_type="text/markdown; charset=utf-8")


@require_GET
def llms_txt(request: HttpRequest) -> HttpResponse:
    base = settings.PUBLIC_URL
    lines = [
        "# MMW",
        "",
        "> A hosted memory service for AI agents: remember facts, decisions and conventions with their"
        " source, find them by meaning in any language, see when they went stale or conflict.",
        "",
        f"MCP endpoint: {base}/mcp (streamable HTTP, `Authorization: Bearer mmw_…`). REST: {base}/api/v1/"
        f" (OpenAPI schema at {base}/api/v1/schema/).",
        "",
        "## Reference",
        "",
    ]
    lines += [f"- [{title}]({base}/docs/{name}.md)" for name, title, _ in _contents()]
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")


def _contents(language: str = "en") -> list[tuple[str, str, str]]:
    """(name, title, language of the page) of every page but the index, for the reader's language."""
    return [
        (name, _title(name, _written_in(name, language)), _written_in(name, language))
        for name in pages()
        if name != INDEX
    ]
