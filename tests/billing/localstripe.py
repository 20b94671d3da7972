"""A real localstripe server (PyPI ``localstripe``: a stateful fake of Stripe's API) for the tests,
and the Stripe-side steps a customer or Stripe itself would take.

The server runs as a subprocess on a free 127.0.0.1 port, from scratch. Its store is kept in
memory only: localstripe pickles every change to the fixed path /tmp/localstripe.pickle, which
several test runs on one machine would fight over, so that one method is replaced at start-up.

localstripe has no Checkout Sessions, no customer portal and no Price objects (legacy Plans,
whose ids Stripe also accepts as price ids, stand in). So a test "pays at Checkout" by creating
the subscription directly, as Checkout would, and then delivers the ``checkout.session.completed``
event Stripe would send (signed like Stripe, see ``sign``); every other event the tests deliver
is the very event localstripe recorded.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import stripe

SECRET_KEY = "sk_test_mmw_localstripe"
WEBHOOK_SECRET = "whsec_test_mmw"
DECLINING_3DS_CARD = "4000008260003178"  # authenticates, then the charge is declined

_BOOT = (
    "import sys, localstripe.resources as r\n"
    "r.Store.dump_to_disk = lambda self: None\n"
    "from localstripe import server\n"
    "sys.argv = ['localstripe', '--port', sys.argv[1], '--from-scratch']\n"
    "server.start()\n"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running() -> Iterator[str]:
    """Start localstripe; yield its base URL; stop it."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", _BOOT, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/v1/balance", headers=_auth(), timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("localstripe did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {SECRET_KEY}"}


def sign(payload: str, secret: str = WEBHOOK_SECRET, timestamp: int | None = None) -> str:
    """The ``Stripe-Signature`` header: ``t=<time>,v1=HMAC-SHA256(secret, "<time>.<payload>")``."""
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.{payload}".encode(), hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


@dataclass
class LocalStripe:
    """Stripe-side actions against the running server."""

    url: str

    @property
    def client(self) -> stripe.StripeClient:
        return stripe.StripeClient(SECRET_KEY, base_addresses={"api": self.url}, max_network_retries=0)

    def price(self, price_id: str, amount: int = 1900) -> str:
        """A monthly price with this id (a legacy Plan: Stripe accepts its id as a price id)."""
        try:
            self.client.v1.plans.retrieve(price_id)
        except stripe.InvalidRequestError:
            self.client.v1.plans.create(
                params={
                    "id": price_id,
                    "amount": amount,
                    "currency": "usd",
                    "interval": "month",
                    "product": {"name": price_id},
                }
            )
        return price_id

    def customer(self, email: str, tenant_id: str) -> str:
        customer = self.client.v1.customers.create(
            params={
                "email": email,
                "payment_method": "pm_card_visa",
                "invoice_settings": {"default_payment_method": "pm_card_visa"},
                "metadata": {"tenant_id": tenant_id},
            }
        )
        return customer.id

    def subscribe(self, customer: str, price_id: str, tenant_id: str) -> str:
        """What Checkout does when the customer pays: a subscription, paid at once."""
        sub = self.client.v1.subscriptions.create(
            params={"customer": customer, "items": [{"plan": price_id}], "metadata": {"tenant_id": tenant_id}}
        )
        assert sub.status == "active"
        return sub.id

    def status(self, subscription: str) -> str:
        return str(self.client.v1.subscriptions.retrieve(subscription).status)

    def fail_renewal(self, customer: str, subscription: str) -> str:
        """The renewal invoice's payment fails (card declined): the subscription goes
        ``past_due`` and Stripe records ``invoice.payment_failed``. Returns the invoice id."""
        client = self.client
        card = client.v1.payment_methods.create(
            params={
                "type": "card",
                "card": {"number": DECLINING_3DS_CARD, "exp_month": 12, "exp_year": 2030, "cvc": "123"},
            }
        )
        client.v1.payment_methods.attach(card.id, params={"customer": customer})
        client.v1.customers.update(customer, params={"invoice_settings": {"default_payment_method": card.id}})
        client.v1.invoice_items.create(
            params={"customer": customer, "amount": 1900, "currency": "usd", "subscription": subscription}
        )
        invoice = client.v1.invoices.create(params={"customer": customer, "subscription": subscription})
        invoice = client.v1.invoices.pay(invoice.id)
        intent = client.v1.payment_intents.retrieve(str(invoice.payment_intent))  # type: ignore[attr-defined]
        declined = httpx.post(
            f"{self.url}/v1/payment_intents/{intent.id}/_authenticate",
            data={"client_secret": intent.client_secret, "success": "true"},
            headers=_auth(),
        )
        assert declined.status_code == 402, declined.text
        assert self.status(subscription) == "past_due"
        return invoice.id

    def pay(self, customer: str, invoice: str) -> None:
        """The customer puts a working card back and the open invoice is paid."""
        self.client.v1.customers.update(
            customer, params={"invoice_settings": {"default_payment_method": "pm_card_visa"}}
        )
        assert self.client.v1.invoices.pay(invoice).status == "paid"

    def cancel(self, subscription: str) -> None:
        self.client.v1.subscriptions.cancel(subscription)

    def events(self, event_type: str, customer: str) -> list[dict[str, Any]]:
        """The events of this type localstripe recorded for this customer, oldest first."""
        page = self.client.v1.events.list(params={"type": event_type, "limit": 100})
        found = [e.to_dict() for e in page.data]
        return [e for e in found if _customer_of(e["data"]["object"]) == customer]

    def event(self, event_type: str, customer: str) -> dict[str, Any]:
        found = self.events(event_type, customer)
        assert found, f"localstripe recorded no {event_type} for {customer}"
        return found[-1]

    def register_webhook(self, url: str, events: list[str] | None = None) -> None:
        """Have localstripe itself POST its events, signed, to ``url``."""
        body: dict[str, Any] = {"url": url, "secret": WEBHOOK_SECRET}
        if events is not None:
            body["events"] = events
        answer = httpx.post(f"{self.url}/_config/webhooks/mmw", json=body)
        assert answer.status_code == 200, answer.text


def _customer_of(obj: dict[str, Any]) -> str | None:
    customer = obj.get("customer")
    return customer.get("id") if isinstance(customer, dict) else customer


def checkout_completed(customer: str, subscription: str, tenant_id: str) -> dict[str, Any]:
    """The ``checkout.session.completed`` event Stripe sends once a subscription Checkout is paid."""
    return {
        "id": f"evt_{uuid.uuid4().hex[:24]}",
        "object": "event",
        "type": "checkout.session.completed",
        "created": int(time.time()),
        "livemode": False,
        "data": {
            "object": {
                "id": f"cs_test_{uuid.uuid4().hex[:24]}",
                "object": "checkout.session",
                "mode": "subscription",
                "status": "complete",
                "payment_status": "paid",
                "customer": customer,
                "subscription": subscription,
                "client_reference_id": tenant_id,
            }
        },
    }


def as_payload(event: dict[str, Any]) -> str:
    return json.dumps(event, sort_keys=True)
