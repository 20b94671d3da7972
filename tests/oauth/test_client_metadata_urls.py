"""A ``client_id`` that is a malformed URL, or names an IPv6 form of a non-public address, is
refused with its reason (``InvalidInput``, which ``/oauth/authorize`` answers 400 and
``/oauth/token``/``/oauth/revoke`` treat as an unknown client) — never an exception that becomes a
500, and never after a lookup: no name is resolved, no request leaves."""

from __future__ import annotations

import pytest

from mmw import outbound
from mmw.errors import InvalidInput
from oauth import client_metadata
from oauth.models import Client

pytestmark = pytest.mark.django_db

REFUSED = "client metadata document refused: "
NOT_PUBLIC = "a private, loopback or link-local address"
MALFORMED = [
    ("https://" + "a" * 64 + ".example.com/x", "a label of the URL's host name is longer than 63 characters"),
    ("https://a..example.com/x", "the URL's host name has an empty label"),
    ("https://[::1/x", "the URL is not well formed"),
    ("https://[::1]:99999/x", "the URL's port is not a number from 1 to 65535"),
    ("https://exa mple.com/x", "the URL may not contain spaces or control characters"),
    ("https://\u00ad.example.com/x", "the URL's host name is not a valid internationalised domain name"),
]
NOT_PUBLIC_FORMS = [
    ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
    ("64:ff9b::a00:1", "10.0.0.1"),
    ("2002:a9fe:a9fe::1", "169.254.169.254"),
    ("::127.0.0.1", "127.0.0.1"),
    ("fec0::1", None),
]


@pytest.fixture(autouse=True)
def no_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse_to_resolve(host: str, port: int) -> list[str]:
        raise AssertionError(f"{host} was looked up")

    monkeypatch.setattr(outbound, "resolve", refuse_to_resolve)


@pytest.mark.parametrize(("url", "reason"), MALFORMED)
def test_a_malformed_client_id_url_is_refused_naming_what_is_wrong(url: str, reason: str) -> None:
    assert client_metadata.url_refusal(url) == REFUSED + reason
    with pytest.raises(InvalidInput) as refused:
        client_metadata.resolve(url)
    assert refused.value.message == REFUSED + reason
    assert not Client.objects.exists()


@pytest.mark.parametrize(("address", "stands_for"), NOT_PUBLIC_FORMS)
def test_an_ipv6_form_of_a_non_public_address_is_refused_before_any_request(
    address: str, stands_for: str | None
) -> None:
    reason = f", which stands for {stands_for}," if stands_for else ","
    with pytest.raises(InvalidInput) as refused:
        client_metadata.resolve(f"https://[{address}]/client.json")
    assert refused.value.message == f"{REFUSED}{address} resolves to {address}{reason} {NOT_PUBLIC}"


def test_a_well_formed_client_id_url_passes_the_checks_that_need_no_lookup() -> None:
    assert client_metadata.url_refusal("https://app.example/oauth/client.json") is None
    assert client_metadata.url_refusal("https://bücher.example/client.json") is None
