"""The translation catalogues (docs/i18n.md), in pure Python: no system gettext, no hand step.

``locale/<lang>/LC_MESSAGES/django.po`` are written by people (Russian, French; English is the
text as written). ``extract`` gathers every marked string of the project's Python modules and
templates (Django's own ``templatize`` turns a template into the calls xgettext would read;
Babel's extractor reads them) and merges it into each ``.po``; ``compile`` writes the ``.mo``
files Django loads (git-ignored, rebuilt by ``make run`` and ``make test`` and at the start of a
pytest run when a ``.po`` is newer).
"""

from __future__ import annotations

import functools
import io
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
LOCALE_DIR = ROOT / "locale"
LANGUAGES = ("ru", "fr")  # the catalogues people write; English needs none
DOMAIN = "django"
# The project's own code: every app, not the tests, the benchmarks or the local agent.
SOURCE_DIRS = (
    "accounts",
    "billing",
    "dashboard",
    "interfaces",
    "datarights",
    "ledger",
    "memories",
    "mmw",
    "oauth",
    "orgs",
    "transcripts",
    "webhooks",
)
KEYWORDS = {
    **DEFAULT_KEYWORDS,
    "gettext_lazy": None,
    "gettext_noop": None,
    "ngettext_lazy": (1, 2),
    "pgettext_lazy": ((1, "c"), 2),
    "npgettext_lazy": ((1, "c"), 2, 3),
}
TEMPLATE_SUFFIXES = (".html", ".txt")
NAMES = {"ru": "Russian", "fr": "French"}
HEADER = (
    "# MMW's {name} catalogue. Write each msgstr; `manage.py i18n extract` adds the strings newly\n"
    "# marked in the code and drops the unused ones; tests/i18n fail on any left empty or fuzzy.\n"
    "# docs/i18n.md says how to add a string."
)


def po_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def _sources(root: Path) -> Iterator[Path]:
    for top in SOURCE_DIRS:
        for path in sorted((root / top).rglob("*")):
            if "migrations" in path.parts or "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix == ".py" or ("templates" in path.parts and path.suffix in TEMPLATE_SUFFIXES):
                yield path


def extracted(root: Path = ROOT) -> Catalog:
    """Every marked message of the project's code, as a template catalogue."""
    from django.utils.translation.template import templatize

    catalog = Catalog(project="MMW", charset="utf-8")
    for path in _sources(root):
        where = str(path.relative_to(root))
        if path.suffix == ".py":
            with path.open("rb") as source:
                found = list(extract("python", source, keywords=KEYWORDS, comment_tags=("Translators:",)))
        else:
            text = path.read_text(encoding="utf-8")
            if "i18n" not in text:  # a template without {% load i18n %} has nothing to translate
                continue
            code = io.BytesIO(templatize(text, origin=where).encode("utf-8"))
            found = list(extract("python", code, keywords=KEYWORDS, comment_tags=("Translators:",)))
        for line, message, comments, context in found:
            if message and (not isinstance(message, tuple) or message[0]):
                catalog.add(message, None, [(where, line)], auto_comments=comments, context=context)
    return catalog


def read(language: str) -> Catalog:
    path = po_path(language)
    if not path.exists():
        return Catalog(locale=language, project="MMW", version="1", charset="utf-8", fuzzy=False)
    with path.open("rb") as source:
        return read_po(source, locale=language, domain=DOMAIN)


def extract_into_catalogues(root: Path = ROOT) -> dict[str, tuple[int, int]]:
    """Merge the code's messages into each ``.po``: new ones arrive untranslated, gone ones leave.
    Returns, per language, (messages, untranslated)."""
    template = extracted(root)
    counts = {}
    for language in LANGUAGES:
        catalog = read(language)
        created = catalog.creation_date
        catalog.update(template, no_fuzzy_matching=True, update_header_comment=False)
        catalog.creation_date = created  # no churn in the file when nothing else changed
        catalog.fuzzy = False
        catalog.header_comment = HEADER.format(name=NAMES[language])
        save(language, catalog)
        untranslated = sum(1 for m in catalog if m.id and not _translated(m))
        counts[language] = (sum(1 for m in catalog if m.id), untranslated)
    return counts


def save(language: str, catalog: Catalog) -> None:
    """Write a ``.po`` the way ``extract`` does (sorted, no line numbers: small diffs)."""
    write = functools.partial(
        write_po, catalog=catalog, include_lineno=False, ignore_obsolete=True, sort_output=True, width=100
    )
    _write_atomically(po_path(language), write)


def _translated(message: object) -> bool:
    string = getattr(message, "string", "")
    if isinstance(string, tuple | list):
        return all(string)
    return bool(string)


def compile_catalogues(*, force: bool = False) -> list[Path]:
    """Write each ``.mo`` whose ``.po`` is newer (all with ``force``); returns those written.
    Safe when several processes race (each writes a temporary file and renames it)."""
    written = []
    for po in sorted(LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po")):
        mo = po.with_suffix(".mo")
        if not force and mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with po.open("rb") as source:
            catalog = read_po(source, locale=po.parent.parent.name, domain=DOMAIN)
        _write_atomically(mo, functools.partial(write_mo, catalog=catalog, use_fuzzy=False))
        written.append(mo)
    return written


def _write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            write(out)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
