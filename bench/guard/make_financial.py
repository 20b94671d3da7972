"""Regenerate the Guard's labelled payment corpus, ``financial.jsonl`` (seeded, reproducible).

    .venv/bin/python bench/guard/make_financial.py

Every card number is *fake*: random digits behind a network's issuer prefix, made Luhn-valid;
every IBAN is random digits behind a registry country code, made mod-97-valid. Each line is a
JSON object:

- ``label``: ``card`` / ``cvv`` / ``iban`` (a positive: the guard must remove ``secrets``) or
  ``negative`` (a hard negative: nothing may be redacted);
- ``kind``: the shape (``card_dots``, ``cvv_ru``, ``iban_lower``, ``neg_phone``, …);
- ``secrets``: the substrings, as written, that must not survive screening (positives only);
- ``set``: ``dev`` (the shapes the rules were written for), ``heldout`` (the same shapes in other
  contexts, with values from another seed, never looked at while writing the rules) or
  ``handwritten`` (real-looking lines written after the rules: chat, CSV, JSON, query strings,
  other networks and labels; never used to tune them).

Measured by ``bench/guard/financial.py``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
DIGITS = "0123456789"

# --- numbers ----------------------------------------------------------------------------------

NETWORKS: dict[str, tuple[tuple[str, ...], int]] = {  # name: (issuer prefixes, length)
    "visa": (("4",), 16),
    "visa19": (("4",), 19),
    "mastercard": (("51", "52", "53", "54", "55", "2221", "2500", "2720"), 16),
    "amex": (("34", "37"), 15),
    "discover": (("6011", "644", "65"), 16),
    "jcb": (("3528", "3566", "3589"), 16),
    "diners": (("36", "38"), 14),
    "unionpay": (("62",), 16),
    "maestro": (("6759", "5018", "6304"), 16),
}


def luhn_digit(body: str) -> str:
    """The check digit that makes ``body + digit`` Luhn-valid."""
    total = 0
    for position, char in enumerate(reversed(body)):
        value = int(char)
        if position % 2 == 0:  # doubled: the check digit will take position 0
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return str((10 - total % 10) % 10)


def luhn_ok(digits: str) -> bool:
    return luhn_digit(digits[:-1]) == digits[-1]


class Maker:
    """Random fake payment data from one seed."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def digits(self, n: int) -> str:
        return "".join(self.r.choice(DIGITS) for _ in range(n))

    def pan(self, network: str | None = None) -> tuple[str, str]:
        network = network or self.r.choice(list(NETWORKS))
        prefixes, length = NETWORKS[network]
        prefix = self.r.choice(prefixes)
        body = prefix + self.digits(length - len(prefix) - 1)
        return network, body + luhn_digit(body)

    def bad_pan(self, network: str | None = None) -> tuple[str, str]:
        """Shaped like a card (issuer prefix, length) but the Luhn digit is wrong."""
        network, pan = self.pan(network)
        wrong = str((int(pan[-1]) + self.r.randint(1, 9)) % 10)
        return network, pan[:-1] + wrong

    def expiry(self) -> str:
        month = f"{self.r.randint(1, 12):02d}"
        year = str(self.r.randint(26, 33))
        return self.r.choice([f"{month}/{year}", f"{month}/20{year}", f"{month}-{year}", f"{month} / {year}"])

    def cvv(self, network: str) -> str:
        while True:
            code = self.digits(4 if network == "amex" else 3)
            if len(set(code)) > 1:
                return code

    def iban(self, country: str | None = None) -> str:
        country = country or self.r.choice(list(IBAN_SHAPES))
        bban = "".join(
            self.r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") if c == "a" else self.r.choice(DIGITS)
            for c in IBAN_SHAPES[country]
        )
        rotated = bban + country + "00"
        number = int("".join(str(int(c, 36)) for c in rotated))
        return f"{country}{98 - number % 97:02d}{bban}"


IBAN_SHAPES = {  # the BBAN of each country: "a" a capital, "n" a digit
    "DE": "n" * 18,
    "FR": "n" * 23,
    "GB": "aaaa" + "n" * 14,
    "NL": "aaaa" + "n" * 10,
    "ES": "n" * 20,
    "IT": "a" + "n" * 22,
    "BE": "n" * 12,
    "CH": "n" * 17,
    "AT": "n" * 16,
    "PL": "n" * 24,
    "NO": "n" * 11,
    "IE": "aaaa" + "n" * 14,
}


def group(number: str, sizes: tuple[int, ...], sep: str) -> str:
    parts, at = [], 0
    for size in sizes:
        parts.append(number[at : at + size])
        at += size
    if at < len(number):
        parts.append(number[at:])
    return sep.join(parts)


def grouped(network: str, pan: str, sep: str) -> str:
    """The grouping printed on the card: Amex 4-6-5, Diners 4-6-4, others fours."""
    if network in ("amex", "diners"):
        return group(pan, (4, 6), sep)
    return group(pan, (4, 4, 4, 4), sep)


def fullwidth(text: str) -> str:
    """Digits and ASCII punctuation as their full-width forms (U+FF01-FF5E), spaces as U+3000."""
    return "".join(
        "\u3000" if c == " " else chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and not c.isalpha() else c for c in text
    )


def iban_grouped(iban: str, sep: str = " ") -> str:
    return sep.join(iban[i : i + 4] for i in range(0, len(iban), 4))


# --- positives --------------------------------------------------------------------------------

SEPARATORS = {  # kind: separator between groups
    "card_spaces": " ",
    "card_dashes": "-",
    "card_dots": ".",
    "card_nbsp": "\u00a0",
    "card_thin_space": "\u2009",
    "card_narrow_nbsp": "\u202f",
    "card_figure_space": "\u2007",
    "card_double_space": "  ",
    "card_spaced_dash": " - ",
    "card_en_dash": "\u2013",
}

CARD_CONTEXTS = (
    "paid with {card} today",
    "card: {card}",
    "Customer card {card}, charged twice",
    "Carte bancaire : {card}",
    "Оплатил картой {card} вчера",
    "номер карты {card}",
    "Kreditkarte {card} wurde belastet",
    "tarjeta {card}",
    "| {card} | refunded |",
    "{card}",
    "PAN={card};",
    "(card {card})",
)
GLUED = ("visa", "VISA", "mc", "MC", "amex", "card", "карта", "carte", "pan", "cc")
CVV_CONTEXTS = {  # language: templates with {code}
    "en": (
        "cvv {code}",
        "CVV: {code}",
        "CVV2={code}",
        "cvc {code}",
        "CVC2: {code}",
        "card security code {code}",
        "CVV code is {code}",
        "security code on the card: {code}",
        "Amex CID {code}",
        "cvv:{code}",
    ),
    "fr": (
        "cryptogramme visuel : {code}",
        "cryptogramme {code}",
        "code CVV\u00a0: {code}",
        "le code de sécurité de la carte est {code}",
    ),
    "ru": ("код CVV {code}", "CVV-код: {code}", "CVC2 код {code}", "код безопасности карты: {code}"),
    "de": ("Kartenprüfnummer: {code}", "Prüfnummer {code}", "Sicherheitscode der Karte {code}"),
    "es": ("código de seguridad de la tarjeta: {code}", "CVV {code}"),
}
IBAN_CONTEXTS = (
    "IBAN {iban}",
    "pay to {iban} by Friday",
    "virement sur {iban}",
    "счёт {iban}",
    "iban: {iban}.",
    "Bankverbindung {iban}",
    "({iban})",
)


def card_rows(m: Maker, contexts: tuple[str, ...], repeat: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []

    def add(kind: str, text: str, *secrets: str) -> None:
        rows.append({"label": "card", "kind": kind, "text": text, "secrets": list(secrets)})

    for _ in range(repeat):
        network, pan = m.pan()
        add("card_compact", m.r.choice(contexts).format(card=pan), pan)
        for kind, sep in SEPARATORS.items():
            network, pan = m.pan()
            card = grouped(network, pan, sep)
            add(kind, m.r.choice(contexts).format(card=card), card)
        network, pan = m.pan()
        card = grouped(network, pan, m.r.choice(["", " ", "-"]))
        written = fullwidth(card)
        add("card_fullwidth", m.r.choice(contexts).format(card=written), written)
        network, pan = m.pan()
        add("card_glued_prefix", f"{m.r.choice(('paid ', 'card ', ''))}{m.r.choice(GLUED)}{pan}", pan)
        network, pan = m.pan()
        card = grouped(network, pan, m.r.choice([" ", "-", ""]))
        add("card_then_expiry", f"{card} {m.expiry()}", card)
        network, pan = m.pan()
        card, code = grouped(network, pan, m.r.choice([" ", ""])), m.cvv(network)
        add("card_expiry_cvv", f"{m.r.choice(('card ', ''))}{card} {m.expiry()} {code}", card, code)
        network, pan = m.pan()
        card, code = grouped(network, pan, m.r.choice([" ", "", "-"])), m.cvv(network)
        add("card_then_cvv", f"{m.r.choice(('paid ', network + ' '))}{card} {code}", card, code)
        network, pan = m.pan()
        card, code = grouped(network, pan, " "), m.cvv(network)
        add("card_labelled_all", f"card {card} exp {m.expiry()} cvv {code}", card, code)
        network, pan = m.pan()
        add("card_then_two_digits", f"paid {pan} {m.digits(2)}", pan)
    return rows


def cvv_rows(m: Maker, contexts: dict[str, tuple[str, ...]]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for lang, templates in contexts.items():
        for template in templates:
            code = m.cvv("amex" if "CID" in template else "visa")
            text = template.format(code=code)
            rows.append({"label": "cvv", "kind": f"cvv_{lang}", "text": text, "secrets": [code]})
    code = fullwidth(m.cvv("visa"))
    rows.append({"label": "cvv", "kind": "cvv_fullwidth", "text": f"CVV {code}", "secrets": [code]})
    return rows


def iban_rows(m: Maker, contexts: tuple[str, ...], repeat: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    shapes: dict[str, Callable[[str], str]] = {
        "iban_upper_compact": lambda i: i,
        "iban_upper_grouped": iban_grouped,
        "iban_lower_compact": str.lower,
        "iban_lower_grouped": lambda i: iban_grouped(i).lower(),
        "iban_mixed_case": lambda i: i[0] + i[1:].lower() if m.r.random() < 0.5 else i[:2].lower() + i[2:],
        "iban_title_groups": lambda i: iban_grouped(i[:2] + i[2:].lower()),
        "iban_nbsp_grouped": lambda i: iban_grouped(i, "\u00a0"),
    }
    for _ in range(repeat):
        for kind, shape in shapes.items():
            written = shape(m.iban())
            rows.append({"label": "iban", "kind": kind, "text": m.r.choice(contexts).format(iban=written),
                         "secrets": [written]})  # fmt: skip
    return rows


# --- hard negatives -----------------------------------------------------------------------------


def negative_rows(m: Maker) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []

    def add(kind: str, text: str) -> None:
        rows.append({"label": "negative", "kind": kind, "text": text, "secrets": []})

    for _ in range(3):
        network, bad = m.bad_pan()
        add("neg_luhn_invalid", f"card {grouped(network, bad, m.r.choice([' ', '-', '.', chr(0xA0), '']))}")
        network, bad = m.bad_pan()
        add("neg_luhn_invalid", f"visa{bad}")
        network, bad = m.bad_pan()
        add("neg_luhn_invalid", fullwidth(grouped(network, bad, " ")))
    for text in (
        "order #1234567890123452 shipped",
        "Order 9999 1234 5678 9016 is ready",
        "invoice INV-2024-000123456789 paid",
        "ticket 8123456789012345 closed",
        "Bestellnummer 1002003004005006",
        "номер заказа 7700123456789012",
    ):
        add("neg_order_number", text)
    for text in (
        "call +44 20 7946 0958 or 0612345678",
        "+1 (415) 555-2671 ext. 1234",
        "+7 916 123-45-67, 8 800 555 35 35",
        "tél. 06 12 34 56 78",
        "+49 30 1234 5678 9",
        "phone: +33 6 12 34 56 78",
        "0049 30 12345678",
    ):
        add("neg_phone", text)
    for text in (
        "ts 1709283600123",
        "epoch_us=1709283600123456",
        "2024-03-15T10:00:00.123456Z",
        "run 20240315100000 finished",
        "at 2024-03-15 10:00:00, then 2024-03-16",
        "nanos 1709283600123456789",
        "15.03.2024 14:30",
    ):
        add("neg_timestamp", text)
    for text in (
        "ISBN 978-3-16-148410-0",
        "isbn: 9783161484100",
        "ISBN 0-306-40615-2",
        "EAN 4006381333931 on the box",
        "ISSN 0317-8471",
    ):
        add("neg_isbn_ean", text)
    for text in (
        "tracking 1Z999AA10123456784",
        "USPS 9400 1000 0000 0000 0000 00",
        "FedEx 7489 5632 1045",
        "DHL JD014600006281940385",
        "La Poste 6A12345678901",
    ):
        add("neg_tracking", text)
    for text in (
        "version 4.111111111111111",
        "Chrome 122.0.6261.94",
        "kernel 5.4.0-150-generic",
        "build 4.1111.1111.1111",
        "ip 192.168.100.200 and 10.0.0.1",
        "release 2024.03.15",
        "v5.5.5.4444",
    ):
        add("neg_version", text)
    for text in (
        "paid 1234 EUR",
        "total 4 111 111,00 RUB",
        "budget 5.555.555.555 EUR",
        "1 234 567 890 123 $ of volume",
        "amount 4111.11",
        "cvv checks cost 0.05 EUR each",
    ):
        add("neg_amount", text)
    for text in (
        "id 4111-1111-1111-1111-1111-1111",
        "4111 1111 1111 1111 1111",
        "0000 0000 0000 0000",
        "4111 **** **** 1111",
        "411111******1111",
        "card ending in 4444",
        "uuid 4f1d2c3b-5a6e-4f7a-8b9c-0d1e2f3a4b5c",
        "sha 4111111111111111a9f3c2",
        "IMEI 356938035643809",
        "x4111111111111111y",
        "user_4111111111111111",
        "0x4111111111111111",
    ):
        add("neg_lookalike", text)
    for text in (
        "The CVV has 3 digits on Visa and 4 on Amex.",
        "cvv field is optional in the sandbox",
        "Enter the CVC2 printed on the back",
        "CVV2 validation failed 3 times",
        "CID 1234 assigned to the new caller",
        "door security code 4521 changed",
        "Le cryptogramme est demandé à chaque paiement",
        "код CVV не храним",
        "CVC 2.0 migration done",
        "cvv length is 3-4",
    ):
        add("neg_cvv_talk", text)
    for text in (
        "IBAN DE89370400440532013001",
        "de89370400440532013001",
        "DE89 3704 0044 0532 0130 01",
        "GB82 WEST 1234 5698 7654",
        "at10 am we meet in room 12",
        "be12 and be13 are the test boxes",
        "de12a3f5c9d0e1f2aa3b4c",
        "no12 is closed, see no13",
        "ES2024 spec, RFC 9110",
        "AB12 CD34 EF56 GH78 IJ90",
        "fr76 isn't a thing",
    ):
        add("neg_iban_like", text)
    return rows


def heldout_rows() -> list[dict[str, object]]:
    """Other contexts and values, another seed: written with the corpus, never looked at while
    writing the rules."""
    m = Maker(20261205)
    contexts = (
        "Refund went to {card} per the customer",
        "Saved card {card} removed from the profile",
        "La carte {card} a été refusée",
        "Клиент продиктовал {card}",
        "Die Karte {card} ist gesperrt",
    )
    rows = card_rows(m, contexts, 1)
    rows += cvv_rows(
        m,
        {
            "en": ("the cvv is {code}", "CVC {code} (back of card)"),
            "fr": ("cryptogramme: {code}",),
            "ru": ("CVV {code}, срок 12/29",),
        },
    )
    rows += iban_rows(m, ("Payout account {iban}", "IBAN : {iban}", "реквизиты: {iban}"), 1)
    for row in rows:
        row["set"] = "heldout"
    return rows


def luhn(body: str) -> str:
    """``body`` completed with its Luhn check digit."""
    return body + luhn_digit(body)


def fours(number: str) -> str:
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4))


MIR = luhn("220070012345678")  # Mir (Russia): 2200-2204
SBERBANK = luhn("427638001234567")
UNIONPAY19 = luhn("621234567890123456")

# Hand-written after the rules (real-looking notes, chat lines, CSV and JSON), never used to tune
# them: (text, secrets that must go).  Published test card numbers and example IBANs.
HANDWRITTEN_POSITIVES: list[tuple[str, str, list[str]]] = [  # (label, text, secrets)
    ("card", '{"pan": "4111111111111111", "exp": "12/29"}', ["4111111111111111"]),
    ("card", "row: 4111111111111111,12,2029,123", ["4111111111111111", "123"]),
    ("card", "Card number: 4111-1111-1111-1111, expiry 12/29, CVC 123", ["4111-1111-1111-1111", "123"]),
    ("card", "my card is 5555 5555 5555 4444 can you pay the invoice", ["5555 5555 5555 4444"]),
    ("card", f"карта МИР {fours(MIR)}", [fours(MIR)]),
    ("card", "Paid via Amex 3714 496353 98431.", ["3714 496353 98431"]),
    ("card", "VISA: 4012 8888 8888 1881 / 07-27 / 321", ["4012 8888 8888 1881", "321"]),
    ("card", "4111 1111 1111 1111\n12/29\n123", ["4111 1111 1111 1111", "123"]),
    ("card", "cc: 6011000990139424 exp0929 cvv 374", ["6011000990139424", "374"]),
    ("card", f"номер {fours(SBERBANK)}, срок 09/27, CVC 555", [fours(SBERBANK), "555"]),
    ("card", "Kartennummer 5105-1051-0510-5100 gültig bis 11/28 Prüfziffer 737", ["5105-1051-0510-5100", "737"]),
    ("card", "tarjeta 4000 0566 5566 5556 vence 05/30 código 123", ["4000 0566 5566 5556", "123"]),
    ("card", "ｃａｒｄ：４１１１１１１１１１１１１１１１", ["４１１１１１１１１１１１１１１１"]),
    ("card", "pan=4111111111111111&cvv=123&exp=1229", ["4111111111111111", "123"]),
    ("card", "4111 1111 1111 1111 (exp 12/29, cvv 123)", ["4111 1111 1111 1111", "123"]),
    ("card", "Visa ending 1111, full number 4111111111111111", ["4111111111111111"]),
    ("card", "  4111\u00a01111\u00a01111\u00a01111\u00a0\u00a012/29", ["4111\u00a01111\u00a01111\u00a01111"]),
    ("card", "Card: 3530111333300000", ["3530111333300000"]),
    ("card", "dinersclub 3056 9309 0259 04", ["3056 9309 0259 04"]),
    ("card", f"UnionPay {fours(UNIONPAY19)}", [fours(UNIONPAY19)]),
    ("iban", "IBAN: FR76 3000 6000 0112 3456 7890 189", ["FR76 3000 6000 0112 3456 7890 189"]),
    ("iban", "iban gb33bukb20201555555555", ["gb33bukb20201555555555"]),
    ("iban", "Please wire to ch93 0076 2011 6238 5295 7", ["ch93 0076 2011 6238 5295 7"]),
    ("iban", "ES91 2100 0418 4502 0005 1332", ["ES91 2100 0418 4502 0005 1332"]),
    ("iban", "IBAN DE89-3704-0044-0532-0130-00", ["DE89-3704-0044-0532-0130-00"]),
    ("iban", "IT60X0542811101000000123456", ["IT60X0542811101000000123456"]),
    ("cvv", "CVV2/CVC2: 987", ["987"]),
    ("cvv", "sec code 123 on the back of the card", ["123"]),
    ("cvv", "the three digits on the back are 456", ["456"]),
    ("cvv", "CVC: ７８９", ["７８９"]),
]  # fmt: skip
HANDWRITTEN_NEGATIVES = [
    "Call 1-800-555-0199 or +1 415 555 2671",
    "Invoice 2024-0001234-5678",
    "Ticket JIRA-4111, build 1111, PR #1111",
    "Coordinates 48.8566, 2.3522; altitude 35 m",
    "SSN 123-45-6789",
    "Room 404, floor 5, code 1234 for the door",
    "version 1.2.3-rc.4, build 20240315.1",
    "the cvc library version 4.2.0",
    "CVV fraud rate was 0.12% in Q3",
    "cid: 4521",
    "DE is 49, FR is 33, GB is 44",
    "ab12 cd34 ef56",
    "sha1 4111111111111111111111111111111111111111",
    "Error code 5000 at 12:30:45.123",
    "SIRET 362 521 879 00034",
    "Facture n° 2024-12-0042, montant 1 234,56 €",
    "Pay 4 x 1111 EUR",
    "de 12 à 14 h",
    "Bank code (BLZ) 370 400 44, account 0532 0130 00",
    "Заказ № 4111 отправлен 12/29",
]


def handwritten_rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {"label": label, "kind": f"{label}_handwritten", "text": text, "secrets": secrets}
        for label, text, secrets in HANDWRITTEN_POSITIVES
    ]
    rows += [{"label": "negative", "kind": "neg_handwritten", "text": t, "secrets": []} for t in HANDWRITTEN_NEGATIVES]
    for row in rows:
        row["set"] = "handwritten"
    return rows


def corpus() -> list[dict[str, object]]:
    m = Maker(20261204)
    rows = card_rows(m, CARD_CONTEXTS, 3) + cvv_rows(m, CVV_CONTEXTS) + iban_rows(m, IBAN_CONTEXTS, 3)
    rows += negative_rows(m)
    for row in rows:
        row["set"] = "dev"
    return rows + heldout_rows() + handwritten_rows()


def check(rows: list[dict[str, object]]) -> None:
    """Each positive holds its secrets as written; each Luhn-invalid negative really fails Luhn."""
    for row in rows:
        text = str(row["text"])
        secrets = row["secrets"]
        assert isinstance(secrets, list)
        assert all(s in text for s in secrets), row
        if row["kind"] == "neg_luhn_invalid":
            digits = "".join(str(int(c)) for c in text if c.isdecimal())
            assert not luhn_ok(digits), row


if __name__ == "__main__":
    rows = corpus()
    check(rows)
    with (HERE / "financial.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"financial.jsonl: {len(rows)} lines")
