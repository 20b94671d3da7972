"""Client ID metadata documents (issue #18): a client identified by the https URL of its metadata,
fetched through the SSRF guard, checked, cached. The documents are served by a real HTTPS server
on 127.0.0.1 with a certificate of a throw-away CA, reached through the test allowances
(``MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS``, ``_CA_FILE``, ``_ALLOW_HTTP``), which are off by
default — the refusals below are what a deployment gets."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.core.cache import cache

from mmw import outbound
from mmw.errors import InvalidInput
from mmw.text import sha256_hex
from oauth import client_metadata
from oauth.models import Client
from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer
from tests.oauth.test_flows import REDIRECT, authorize, consent, mcp_post, pkce

live_server = live.live_server
pytestmark = pytest.mark.slow  # serves client metadata documents (HTTP and HTTPS servers)


class DocServer:
    """A small HTTP(S) server on ``host``: ``routes`` maps a path to (status, body, headers);
    ``hits`` counts the requests per path."""

    def __init__(self, host: str, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        self.hits: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits[self.path] = server.hits.get(self.path, 0) + 1
                status, body, headers = server.routes.get(self.path, (404, b"not found", {}))
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.base = f"{scheme}://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def document(self, path: str, document: dict[str, Any] | bytes, status: int = 200, **headers: str) -> str:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.routes[path] = (status, body, headers)
        return self.base + path

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for 127.0.0.1, written to ``folder``."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "MMW test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return ca_path, cert_path, key_path


@pytest.fixture
def https_docs(tmp_path: Path) -> Iterator[tuple[DocServer, Path]]:
    ca, cert, key = _certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = DocServer("127.0.0.1", context)
    yield server, ca
    server.close()


@pytest.fixture
def allowed(settings: Any, https_docs: tuple[DocServer, Path]) -> DocServer:
    """The test allowances that let MMW reach the local HTTPS server."""
    settings.MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MMW_OAUTH_CLIENT_METADATA_CA_FILE = str(https_docs[1])
    return https_docs[0]


def doc(url: str, **extra: Any) -> dict[str, Any]:
    return {"client_id": url, "client_name": "Doc Assistant", "redirect_uris": [REDIRECT], **extra}


def test_the_allowances_are_off_by_default() -> None:
    from mmw.settings import base

    assert base.MMW_OAUTH_CLIENT_METADATA_ALLOW_HTTP is False
    assert base.MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS == []
    assert base.MMW_OAUTH_CLIENT_METADATA_CA_FILE == ""
    assert base.MMW_OAUTH_CLIENT_METADATA_CACHE_SECONDS == 300


def test_a_metadata_document_client_connects_and_its_document_is_cached(
    live_server: LiveServer, tenancy: Tenancy, allowed: DocServer, settings: Any
) -> None:
    settings.PUBLIC_URL = live_server.url
    server_metadata = httpx.get(f"{live_server}/.well-known/oauth-authorization-server").json()
    assert server_metadata["client_id_metadata_document_supported"] is True
    url = allowed.document("/oauth/client.json", doc(allowed.base + "/oauth/client.json"))
    verifier, challenge = pkce()
    code = consent(live_server, tenancy, url, challenge, ["memory:read"])
    client = Client.objects.get(client_id=url)
    assert client.metadata_document
    assert client.client_name == "Doc Assistant"
    tokens = httpx.post(
        f"{live_server}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "client_id": url,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": REDIRECT,
        },
    )
    assert tokens.status_code == 200, tokens.text
    assert mcp_post(live_server, tokens.json()["access_token"], "tools/list", {}).status_code == 200
    assert allowed.hits["/oauth/client.json"] == 1  # authorize, consent and token: one fetch (cached)
    # After the cache time the document is fetched again, and a changed one is checked again.
    settings.MMW_OAUTH_CLIENT_METADATA_CACHE_SECONDS = 0
    allowed.document("/oauth/client.json", doc("https://elsewhere.example/client.json"))
    refused = authorize(live_server, url, challenge)
    assert refused.status_code == 400  # never redirected: the redirect URIs are not trusted
    assert refused.json()["error_description"] == "client metadata document's client_id is not its URL"
    assert allowed.hits["/oauth/client.json"] == 2


def test_a_redirect_uri_outside_the_document_is_refused_without_redirect(
    live_server: LiveServer, tenancy: Tenancy, allowed: DocServer, settings: Any
) -> None:
    settings.PUBLIC_URL = live_server.url
    url = allowed.document("/c.json", doc(allowed.base + "/c.json"))
    _, challenge = pkce()
    wrong = authorize(live_server, url, challenge, redirect_uri="http://127.0.0.1:9/elsewhere")
    assert wrong.status_code == 400
    assert "location" not in wrong.headers


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"client_id": "X"}, "client_id is not its URL"),
        ({"redirect_uris": ["http://example.com/cb"]}, "redirect URI must be https, or http on a loopback address"),
        ({"redirect_uris": "https://app.example/cb"}, "must list redirect_uris"),
        ({"client_secret": "s3cret"}, "must not carry a client secret"),
        ({"token_endpoint_auth_method": "client_secret_post"}, "token_endpoint_auth_method must be none"),
        ({"scope": "admin"}, "unknown scope(s): admin"),
    ],
)
def test_a_document_that_does_not_pass_is_refused(
    db: None, allowed: DocServer, document: dict[str, Any], message: str
) -> None:
    url = allowed.base + "/client.json"
    allowed.document("/client.json", {**doc(url), **document})
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        client_metadata.resolve(url)
    assert not Client.objects.exists()


def test_the_fetch_is_bounded(db: None, allowed: DocServer) -> None:
    url = allowed.base + "/big.json"
    allowed.document("/big.json", doc(url, client_uri="https://app.example/" + "x" * 6000))
    with pytest.raises(InvalidInput, match="larger than 5120 bytes"):
        client_metadata.resolve(url)
    allowed.document("/gone.json", {}, status=404)
    with pytest.raises(InvalidInput, match="answered HTTP 404"):
        client_metadata.resolve(allowed.base + "/gone.json")
    allowed.document("/text.json", b"<html>")
    with pytest.raises(InvalidInput, match="not a JSON object"):
        client_metadata.resolve(allowed.base + "/text.json")
    for bad in (allowed.base + "/", allowed.base + "/a/../c.json", allowed.base + "/c.json#x"):
        with pytest.raises(InvalidInput, match="client ID URL"):
            client_metadata.resolve(bad)


def test_loopback_and_private_addresses_are_refused_without_the_allowance(
    db: None, https_docs: tuple[DocServer, Path], settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, ca = https_docs
    settings.MMW_OAUTH_CLIENT_METADATA_CA_FILE = str(ca)
    url = server.document("/client.json", doc(server.base + "/client.json"))
    with pytest.raises(InvalidInput, match=r"refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1, a private"):
        client_metadata.resolve(url)
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["93.184.216.34", "10.0.0.7"])
    with pytest.raises(InvalidInput, match=r"clients\.example resolves to 10\.0\.0\.7"):
        client_metadata.resolve("https://clients.example/client.json")
    with pytest.raises(InvalidInput, match="must start with https"):  # http only with the allowance
        client_metadata.resolve("http://clients.example/client.json")
    assert server.hits == {}


def test_a_redirect_to_loopback_is_refused(db: None, settings: Any) -> None:
    settings.MMW_OAUTH_CLIENT_METADATA_ALLOW_HTTP = True
    settings.MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    inner, outer = DocServer("127.0.0.1"), DocServer("127.0.0.2")
    try:
        url = outer.base + "/client.json"
        target = inner.document("/client.json", doc(url))
        outer.document("/client.json", b"", status=302, Location=target)
        with pytest.raises(InvalidInput, match=r"refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1"):
            client_metadata.resolve(url)
        assert outer.hits == {"/client.json": 1}
        assert inner.hits == {}
        # Allowed, the same redirect is followed and the document is the one at the end of it
        # (once the refusal, remembered for a minute, has expired).
        settings.MMW_OAUTH_CLIENT_METADATA_ALLOWED_NETWORKS = ["127.0.0.0/8"]
        cache.delete("oauth-cimd-failed:" + sha256_hex(url))
        assert client_metadata.resolve(url).client_id == url
        assert inner.hits == {"/client.json": 1}
    finally:
        inner.close()
        outer.close()


def test_a_failing_document_is_not_fetched_again_for_a_minute(
    db: None, allowed: DocServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unauthenticated caller chooses the URL: repeating a bad one must not make MMW fetch it
    again and again (the refusal is remembered for ``FAILURE_CACHE_SECONDS``)."""
    url = allowed.base + "/broken.json"
    allowed.document("/broken.json", {}, status=404)
    fetches: list[str] = []
    real_fetch = client_metadata.fetch

    def counted(u: str) -> dict[str, Any]:
        fetches.append(u)
        return real_fetch(u)

    monkeypatch.setattr(client_metadata, "fetch", counted)
    for _ in range(3):
        with pytest.raises(InvalidInput, match="answered HTTP 404"):
            client_metadata.resolve(url)
    assert fetches == [url]
    allowed.document("/broken.json", doc(url))  # fixed, but the refusal stands for the minute
    with pytest.raises(InvalidInput, match="answered HTTP 404"):
        client_metadata.resolve(url)
    cache.delete("oauth-cimd-failed:" + sha256_hex(url))  # the minute has passed
    assert client_metadata.resolve(url).client_id == url
    assert fetches == [url, url]


def test_a_redirect_loop_stops_at_the_redirect_bound(db: None, allowed: DocServer) -> None:
    url = allowed.base + "/loop.json"
    allowed.document("/loop.json", b"", status=302, Location=url)
    with pytest.raises(InvalidInput, match="more than 3 redirects"):
        client_metadata.resolve(url)
    assert allowed.hits == {"/loop.json": 4}  # the URL and three redirects, no more
