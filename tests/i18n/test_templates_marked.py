"""Issue #42: no visible text in the dashboard's templates outside {% translate %} /
{% blocktranslate %}. A heuristic: strip what is translated, template syntax, code (``<code>``,
``<pre>``, ``class="mono"``), scripts and styles, then tags; what is left of the text nodes and of
the attributes people read (title, placeholder, aria-label, alt, the confirmations) must hold no
word. String literals a filter shows (``default:"never"``) must be ``_("…")`` too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_DIRS = [ROOT / "dashboard" / "templates", ROOT / "datarights" / "templates"]
TEMPLATES = sorted(p for d in TEMPLATE_DIRS for p in d.rglob("*.html"))
# Words that are names, not language: the product, file formats, protocols.
ALLOWED = {"MMW", "PDF", "CSV", "OK", "MCP", "JSON", "UTC"}
SPOKEN_ATTRIBUTES = (
    "title",
    "placeholder",
    "aria-label",
    "alt",
    "data-confirm",
    "hx-confirm",
    "data-label",
    "data-copied",
)

DOTALL = re.DOTALL
TRANSLATED = [
    re.compile(r"{%\s*blocktranslate\b.*?{%\s*endblocktranslate\s*%}", DOTALL),
    re.compile(r"{%\s*translate\b.*?%}", DOTALL),
]
COMMENTS = [re.compile(r"{#.*?#}", DOTALL), re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", DOTALL)]
CODE = [
    re.compile(r"<(script|style|pre|code|svg)\b.*?</\1>", DOTALL),
    re.compile(r'<span class="[^"]*\bmono\b[^"]*"[^>]*>.*?</span>', DOTALL),
    re.compile(r'<(td|div) class="[^"]*\bmono\b[^"]*"[^>]*>.*?</\1>', DOTALL),
    re.compile(r"{%\s*block main_class\s*%}.*?{%\s*endblock\s*%}", DOTALL),  # CSS classes
]
TEMPLATE_SYNTAX = re.compile(r"{%.*?%}|{{.*?}}", DOTALL)
URL = re.compile(r"https?://\S+")  # an example address is not language
TAG = re.compile(r"<[^>]*>", DOTALL)
ENTITY = re.compile(r"&[#\w]+;")
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]")  # one letter alone is a symbol: v2, z-score, …T…Z
FILTER_LITERAL = re.compile(r'{{[^}]*\|default:"([^"]*[A-Za-z][^"]*)"[^}]*}}')  # shown, not a {% with %} code


def words(text: str) -> list[str]:
    return [w for w in WORD.findall(text) if w not in ALLOWED]


def untranslated(source: str) -> list[str]:
    """The words a person would read that no translation tag covers."""
    for pattern in COMMENTS + TRANSLATED:
        source = pattern.sub(" ", source)
    for pattern in CODE:
        source = pattern.sub(" ", source)
    found = [f"default:{m.group(1)!r}" for m in FILTER_LITERAL.finditer(source)]
    for attribute in SPOKEN_ATTRIBUTES:
        for value in re.findall(rf'\s{attribute}="([^"]*)"', source):
            left = words(URL.sub(" ", TEMPLATE_SYNTAX.sub(" ", value)))
            found += [f"{attribute}: {' '.join(left)}"] if left else []
    text = ENTITY.sub(" ", TAG.sub(" ", TEMPLATE_SYNTAX.sub(" ", source)))
    return found + [" ".join(words(line)) for line in text.splitlines() if words(line)]


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_visible_text_outside_translate_tags(template: Path) -> None:
    left = untranslated(template.read_text(encoding="utf-8"))
    assert not left, f"{template.relative_to(ROOT)}: untranslated text {left}"


def test_the_heuristic_finds_untranslated_text() -> None:
    assert untranslated('{% load i18n %}<p>{% translate "Hi" %}</p>') == []
    assert untranslated("<h1>Projects</h1>") == ["Projects"]
    assert untranslated('<a title="Open it" href="{% url "x" %}">{% translate "Go" %}</a>') == ["title: Open it"]
    assert untranslated('{{ key.name|default:"never" }}') == ["default:'never'"]
    assert untranslated('<span class="mono">mmw-agent sync</span> <code>GET /x</code>') == []
    assert untranslated("{% blocktranslate %}Hello {{ n }}{% endblocktranslate %}") == []
