"""The reference pages (``pages``) and their generated parts: each operation's parameter table,
from ``memories.inputs``.

``docs/reference/<tool>.md`` is written in our own words; between the markers
``<!-- generated: parameters <tool> -->`` and ``<!-- /generated -->`` it holds the table this
module renders from the one parameter table, so a page can never drift from what the server
parses. ``manage.py reference`` rewrites those blocks; a test fails when one is out of date.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from django.conf import settings

from ledger import inputs as ledger_inputs
from memories import inputs
from transcripts import inputs as session_inputs


@functools.cache
def pages() -> dict[str, str]:
    """Page name → Markdown text, from docs/reference/ (``README`` is the index), read once per
    process: served at ``/docs/`` and as the MCP resources ``mmw://docs/<page>``."""
    folder: Path = settings.BASE_DIR / "docs" / "reference"
    return {path.stem: path.read_text() for path in sorted(folder.glob("*.md"))}


TRANSLATED = ("ru", "fr")  # docs/reference/<language>/<page>.md: written for people, served at /docs/


@functools.cache
def translated_pages(language: str) -> dict[str, str]:
    """Page name → Markdown text of the pages written in ``language`` (``docs/reference/ru/``,
    ``…/fr/``), for people reading ``/docs/`` in that language; each has its English original in
    ``pages()``. Agents read the English ones only (``/docs/<page>.md``, ``mmw://docs/<page>``)."""
    if language not in TRANSLATED:
        return {}
    folder: Path = settings.BASE_DIR / "docs" / "reference" / language
    return {path.stem: path.read_text() for path in sorted(folder.glob("*.md")) if path.stem in pages()}


# Every MCP tool's parameter table: the memory operations, the session ones and the ledger's.
TOOLS = {**inputs.OPERATIONS, **session_inputs.OPERATIONS, **ledger_inputs.OPERATIONS}
_BLOCK = re.compile(r"(<!-- generated: parameters (\w+) -->\n)(.*?)(<!-- /generated -->)", re.DOTALL)


def parameter_table(params: tuple[inputs.Param, ...]) -> str:
    """A Markdown table of ``params``: name, type, default, bounds, meaning."""
    if not params:
        return "No parameters.\n"
    rows = ["| parameter | type | default | bounds | meaning |", "|---|---|---|---|---|"]
    for p in params:
        meaning = p.meaning.replace("|", "\\|")
        rows.append(f"| `{p.name}` | {_type(p)} | {_default(p)} | {_bounds(p)} | {meaning} |")
    return "\n".join(rows) + "\n"


def _type(p: inputs.Param) -> str:
    kind = {"string[]": "list of strings"}.get(p.kind, p.kind)
    return f"{kind}, **required**" if p.required else kind


def _default(p: inputs.Param) -> str:
    if p.required:
        return "—"
    if p.default is None:
        return "null"
    if isinstance(p.default, bool):
        return f"`{str(p.default).lower()}`"
    return f'`"{p.default}"`' if isinstance(p.default, str) else f"`{p.default}`"


def _bounds(p: inputs.Param) -> str:
    parts = []
    if p.min_length is not None:
        parts.append("not empty")
    if p.max_length is not None:
        parts.append(f"≤ {p.max_length:,} characters" + (" each" if p.kind == "string[]" else ""))
    if p.max_items is not None:
        parts.append(f"≤ {p.max_items} items")
    if p.minimum is not None or p.maximum is not None:
        parts.append(f"{_number(p.minimum)} … {_number(p.maximum)}")
    if p.enum is not None:
        parts.append(" / ".join(f"`{v}`" for v in p.enum))
    if p.new_name:
        parts.append("printable, no `*`, control or bidi characters")
    if p.kind in ("string", "string[]"):
        parts.append("no NUL or unpaired surrogates")
    if p.kind == "number":
        parts.append("finite")
    return "; ".join(parts) or "—"


def _number(value: float | None) -> str:
    if value is None:
        return "…"
    return f"{value:g}" if isinstance(value, float) else f"{value:,}"


def refreshed(text: str) -> str:
    """``text`` with every generated block rendered anew."""

    def render(match: re.Match[str]) -> str:
        tool = match.group(2)
        if tool not in TOOLS:
            raise ValueError(f"no operation named {tool!r} (known: {', '.join(TOOLS)})")
        return f"{match.group(1)}{parameter_table(TOOLS[tool])}{match.group(4)}"

    return _BLOCK.sub(render, text)


def stale_pages(folder: Path, *, write: bool = False) -> list[Path]:
    """The pages of ``folder`` whose generated blocks are out of date (rewritten when ``write``)."""
    stale = []
    for page in sorted(folder.glob("*.md")):
        text = page.read_text()
        fresh = refreshed(text)
        if fresh != text:
            stale.append(page)
            if write:
                page.write_text(fresh)
    return stale
