"""Issue #42: the Russian and French catalogues are complete (no message empty or fuzzy, the same
placeholders as the English), in step with the code (every marked string is in them, none is
left over), compiled without system gettext, and never committed compiled."""

from __future__ import annotations

import re
import subprocess

import pytest
from babel.messages.catalog import Message
from django.utils import translation

from mmw import catalogues

PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]|%[sd]")


def forms(message: Message) -> list[str]:
    return (
        [str(s or "") for s in message.string] if isinstance(message.string, tuple | list) else [message.string or ""]
    )


def ids(message: Message) -> list[str]:
    return [str(i) for i in message.id] if isinstance(message.id, tuple | list) else [str(message.id)]


@pytest.mark.parametrize("language", catalogues.LANGUAGES)
def test_every_message_is_translated_and_none_is_fuzzy(language: str) -> None:
    catalog = catalogues.read(language)
    messages = [m for m in catalog if m.id]
    assert messages, f"{language}: empty catalogue"
    untranslated = [ids(m)[0] for m in messages if not all(forms(m))]
    fuzzy = [ids(m)[0] for m in messages if m.fuzzy]
    assert not untranslated, f"{language}: {len(untranslated)} untranslated: {untranslated[:20]}"
    assert not fuzzy, f"{language}: {len(fuzzy)} fuzzy: {fuzzy[:20]}"


@pytest.mark.parametrize("language", catalogues.LANGUAGES)
def test_translations_keep_the_placeholders(language: str) -> None:
    wrong = []
    for m in catalogues.read(language):
        if not m.id:
            continue
        expected = set(PLACEHOLDER.findall(ids(m)[-1]))
        wrong += [(ids(m)[0], s) for s in forms(m) if s and set(PLACEHOLDER.findall(s)) - expected]
        if not isinstance(m.id, tuple | list) and set(PLACEHOLDER.findall(forms(m)[0])) != expected:
            wrong.append((m.id, forms(m)[0]))
    assert not wrong, wrong[:10]


def test_the_catalogues_hold_exactly_the_code_s_marked_strings() -> None:
    """Run ``manage.py i18n extract`` (then translate) when this fails."""
    marked = {(m.context, ids(m)[0]) for m in catalogues.extracted() if m.id}
    for language in catalogues.LANGUAGES:
        held = {(m.context, ids(m)[0]) for m in catalogues.read(language) if m.id}
        assert not marked - held, f"{language}: not in the catalogue: {sorted(marked - held)[:20]}"
        assert not held - marked, f"{language}: no longer in the code: {sorted(held - marked)[:20]}"


def test_compiled_catalogues_are_loaded_and_never_committed() -> None:
    catalogues.compile_catalogues()
    for language in catalogues.LANGUAGES:
        mo = catalogues.po_path(language).with_suffix(".mo")
        assert mo.exists()
        ignored = subprocess.run(["git", "check-ignore", "-q", str(mo)], cwd=catalogues.ROOT, check=False)
        assert ignored.returncode == 0, f"{mo} is not git-ignored"
        with translation.override(language):
            assert translation.gettext("Language") != "Language"
