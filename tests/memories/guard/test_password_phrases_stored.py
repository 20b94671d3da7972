"""A password stated in a sentence never reaches storage (issue #40, item 6): "the password for
the db is hunter2secretpass" was stored verbatim in an uploaded session, and in records, while the
consent screen promises passwords are redacted. Only the value goes; the sentence stays."""

from __future__ import annotations

import pytest

from memories.models import Memory
from tests.conftest import Tenancy
from tests.memories.rest import Api
from transcripts.models import Turn

pytestmark = pytest.mark.django_db

SAID = {
    "en": ("the password for the db is hunter2secretpass", "hunter2secretpass"),
    "ru": ("пароль от базы — Kot2020murka!", "Kot2020murka!"),
    "fr": ("le mot de passe de la base est Chaton2021#", "Chaton2021#"),
    "pwd": ("pwd: Xk9#mQ2z for the vpn", "Xk9#mQ2z"),
}


@pytest.mark.parametrize("lang", list(SAID))
def test_a_record_keeps_the_sentence_and_loses_the_password(tenancy: Tenancy, lang: str) -> None:
    text, password = SAID[lang]
    status, answer = Api(tenancy.alice.key).call("POST", "/memories", {"content": text})
    assert status == 201, answer
    assert [r["rule"] for r in answer["redactions"]] == ["password_phrase"]
    stored = Memory.objects.get(pk=answer["id"]).content
    assert password not in stored
    before, after = text.split(password)
    assert stored.startswith(before + "[REDACTED:password_phrase:")
    assert stored.endswith("]" + after)


def test_an_uploaded_turn_loses_the_password(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    status, _ = api.call("PUT", "/sessions/claude-code/s-pw", {"title": "db chat"})
    assert status in (200, 201)
    turns = [{"position": i, "role": "user", "content": text} for i, (text, _) in enumerate(SAID.values())]
    status, answer = api.call("POST", "/sessions/claude-code/s-pw/turns", {"turns": turns})
    assert status == 200, answer
    assert all(result["redactions"] for result in answer["results"])
    stored = " ".join(Turn.objects.values_list("content", flat=True))
    for _, password in SAID.values():
        assert password not in stored
