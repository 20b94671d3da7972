"""The SSRF guard and the overall deadline of ``mmw.outbound``.

The address table lists every form an address can take to reach a non-public host — IPv4 special
ranges, and IPv6 ones, including those that stand for an IPv4 address (mapped, compatible,
translated, NAT64, 6to4) — and the public forms that must still pass. The URL table lists
malformed URLs that used to escape as exceptions (500s) and must be refused. The deadline tests
run a local receiver that drips its answer a byte at a time (``tests.webhooks.drip``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from mmw import outbound
from tests.webhooks.drip import DripServer

POLICY = outbound.Policy()
NOT_PUBLIC = "a private, loopback or link-local address"

# (address, the IPv4 address it stands for, when it stands for one)
REFUSED: list[tuple[str, str | None]] = [
    ("127.0.0.1", None),
    ("10.0.0.1", None),
    ("172.16.0.1", None),
    ("192.168.1.1", None),
    ("169.254.169.254", None),  # cloud metadata
    ("100.64.0.1", None),  # shared address space (carrier-grade NAT)
    ("0.0.0.0", None),  # noqa: S104 - an address the guard must refuse
    ("192.0.0.1", None),  # IETF protocol assignments
    ("192.0.2.1", None),  # documentation
    ("198.51.100.1", None),
    ("203.0.113.1", None),
    ("198.18.0.1", None),  # benchmarking
    ("192.88.99.1", None),  # 6to4 relay anycast
    ("224.0.0.1", None),  # multicast
    ("240.0.0.1", None),  # reserved
    ("255.255.255.255", None),
    ("::1", None),
    ("::", None),
    ("::ffff:127.0.0.1", "127.0.0.1"),  # IPv4-mapped
    ("::ffff:169.254.169.254", "169.254.169.254"),
    ("::127.0.0.1", "127.0.0.1"),  # IPv4-compatible
    ("::a9fe:a9fe", "169.254.169.254"),
    ("::ffff:0:a00:1", "10.0.0.1"),  # IPv4-translated (SIIT)
    ("64:ff9b::a9fe:a9fe", "169.254.169.254"),  # NAT64, well-known prefix
    ("64:ff9b::a00:1", "10.0.0.1"),
    ("64:ff9b::7f00:1", "127.0.0.1"),
    ("64:ff9b:1::a9fe:a9fe", None),  # NAT64, local-use prefix: a network of its own
    ("2002:a9fe:a9fe::1", "169.254.169.254"),  # 6to4
    ("2002:7f00:1::1", "127.0.0.1"),
    ("2002:a00:1::", "10.0.0.1"),
    ("2001::1", None),  # Teredo
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", None),  # Teredo through a public server
    ("fec0::1", None),  # site-local
    ("fc00::1", None),  # unique local
    ("fd12:3456::1", None),
    ("fe80::1", None),  # link-local
    ("ff02::1", None),  # multicast
    ("ff0e::1", None),  # global-scope multicast
    ("2001:db8::1", None),  # documentation
    ("3fff::1", None),
    ("100::1", None),  # discard-only
    ("2001:10::1", None),  # ORCHID
    ("5f00::1", None),  # outside global unicast
]
ALLOWED = [
    "93.184.216.34",
    "8.8.8.8",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:93.184.216.34",  # a public IPv4 address, mapped
    "64:ff9b::5db8:d822",  # NAT64 of a public IPv4 address (what DNS64 answers on an IPv6-only host)
    "2002:5db8:d822::1",  # 6to4 of a public IPv4 address
]


@pytest.mark.parametrize(("address", "stands_for"), REFUSED)
def test_every_address_that_is_not_public_or_stands_for_one_is_refused(address: str, stands_for: str | None) -> None:
    with pytest.raises(outbound.Refused) as refused:
        outbound.checked_addresses(address, 443, POLICY)
    reason = f", which stands for {stands_for}," if stands_for else ","
    assert str(refused.value) == f"{address} resolves to {address}{reason} {NOT_PUBLIC}"


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_and_translations_of_public_ones_pass(address: str) -> None:
    assert outbound.checked_addresses(address, 443, POLICY) == [address]


@pytest.mark.parametrize("address", ["::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1", "::127.0.0.1"])
def test_an_allowed_ipv4_network_also_allows_the_ipv6_forms_of_its_addresses(address: str) -> None:
    policy = outbound.Policy(allowed_networks=("127.0.0.1/32",))
    assert outbound.checked_addresses(address, 443, policy) == [address]


def test_a_name_resolving_to_a_nat64_form_of_the_metadata_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["2606:4700:4700::1111", "64:ff9b::a9fe:a9fe"])
    with pytest.raises(outbound.Refused, match=r"stands for 169\.254\.169\.254"):
        outbound.checked_addresses("hooks.example.com", 443, POLICY)


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "017700000001"])
def test_a_host_the_system_resolver_reads_as_a_numeric_loopback_address_is_refused(host: str) -> None:
    with pytest.raises(outbound.Refused, match=rf"^{host} resolves to 127\.0\.0\.1, {NOT_PUBLIC}$"):
        outbound.checked_addresses(host, 443, POLICY)


LONG_HOST = ".".join(["a" * 63] * 4)  # 255 characters
MALFORMED = [
    ("https://" + "a" * 64 + ".example.com/x", "a label of the URL's host name is longer than 63 characters"),
    ("https://a..example.com/x", "the URL's host name has an empty label"),
    ("https://.example.com/x", "the URL's host name has an empty label"),
    ("https://example.com./x", "the URL's host name has an empty label"),
    (f"https://{LONG_HOST}/x", "the URL's host name is longer than 253 characters"),
    ("https://[::1/x", "the URL is not well formed"),
    ("https://[zzz]/x", "the URL is not well formed"),
    ("https://[fe80::1%25eth0]/x", "the URL's host may not name an IPv6 zone"),
    ("https://exa%6dple.com/x", "the URL's host name may hold only letters, digits, '-' and '_'"),
    ("https://exa$mple.com/x", "the URL's host name may hold only letters, digits, '-' and '_'"),
    ("https://\u00ad.example.com/x", "the URL's host name is not a valid internationalised domain name"),
    ("https://example.com:99999/x", "the URL's port is not a number from 1 to 65535"),
    ("https://example.com:0/x", "the URL's port is not a number from 1 to 65535"),
    ("https://example.com:x/x", "the URL's port is not a number from 1 to 65535"),
    ("https://exa mple.com/x", "the URL may not contain spaces or control characters"),
    ("https://example.com/\x00", "the URL may not contain spaces or control characters"),
    ("ftp://example.com/x", "the URL must start with https://"),
    ("https:///x", "the URL must name a host, without user or password"),
    ("https://user:pw@example.com/x", "the URL must name a host, without user or password"),
    ("https://:@example.com/x", "the URL must name a host, without user or password"),
    ("https://@example.com/x", "the URL must name a host, without user or password"),
]


@pytest.mark.parametrize(("url", "reason"), MALFORMED)
def test_a_malformed_url_is_refused_with_its_reason(url: str, reason: str) -> None:
    with pytest.raises(outbound.Refused) as refused:
        outbound.check_url(url, POLICY)
    assert str(refused.value) == reason


def test_an_internationalised_host_name_is_checked_and_sent_in_its_ascii_form() -> None:
    assert outbound.check_url("https://Bücher.example:8443/x", POLICY) == ("https", "xn--bcher-kva.example", 8443)


def test_a_resolver_that_does_not_answer_counts_against_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller gets ``TimedOut`` while the resolver is still stalled: it is never waited for
    (behaviour, not wall time; the resolver gives up after 30 s so a regression fails, not hangs)."""
    release, answered = threading.Event(), threading.Event()

    def stalled(host: str, port: int) -> list[str]:
        release.wait(30)
        answered.set()
        return ["93.184.216.34"]

    monkeypatch.setattr(outbound, "resolve", stalled)
    try:
        with pytest.raises(outbound.TimedOut, match=r"hooks\.example\.com did not resolve within 0\.3 s"):
            outbound.post("https://hooks.example.com/x", body=b"{}", headers={}, policy=outbound.Policy(timeout=0.3))
        assert not answered.is_set(), "the request waited for the resolver's answer"
    finally:
        release.set()


@pytest.fixture
def drip() -> Iterator[DripServer]:
    server = DripServer(interval=0.1)
    yield server
    server.close()


LOCAL = outbound.Policy(allow_http=True, allowed_networks=("127.0.0.1/32",), timeout=0.6)


@pytest.mark.slow
def test_an_answer_dripped_a_byte_at_a_time_is_cut_at_the_overall_deadline(drip: DripServer) -> None:
    # the overall deadline's text, not a read's: each byte came within 0.1 s, no read ever timed out
    with pytest.raises(outbound.TimedOut, match=r"^the answer took longer than 0\.6 s$"):
        outbound.post(drip.url, body=b"{}", headers={}, policy=LOCAL)
    assert drip.finished == 0  # cut off mid-answer, not read to its end


@pytest.mark.slow
def test_a_body_dripped_after_quick_headers_is_cut_at_the_overall_deadline(drip: DripServer) -> None:
    drip.head_at_once = True
    with pytest.raises(outbound.TimedOut):
        outbound.post(drip.url, body=b"{}", headers={}, policy=LOCAL)
    assert drip.finished == 0  # cut off mid-body, not read to its end
    with pytest.raises(outbound.TimedOut):
        outbound.get(drip.url, headers={}, policy=LOCAL)


@pytest.mark.slow
def test_a_quick_answer_is_read_and_timed() -> None:
    quick = DripServer(interval=0.0)
    try:
        answer = outbound.post(quick.url, body=b"{}", headers={}, policy=LOCAL)
    finally:
        quick.close()
    assert answer.status == 200
    assert answer.ms < 600
