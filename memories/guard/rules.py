"""THE rule table.  Refusals come first (a poisoning attempt is refused even if it also carries a
secret); redaction rules are listed most specific first, because when two rules flag overlapping
text the earlier one wins and names the marker (``sk-proj-…`` inside ``api_key: "…"`` is an
``openai_key``, not a ``secret_assignment``)."""

from __future__ import annotations

from collections.abc import Callable

from memories.guard import payments as pay
from memories.guard import poisoning as p
from memories.guard import prose
from memories.guard import secrets as s
from memories.guard.lexicon import LEXICON
from memories.guard.textviews import Views
from memories.guard.types import Rule
from memories.guard.values import is_placeholder

OVERRIDE = "instruction override aimed at the agent"


def _not_placeholder(value: str) -> bool:
    return not is_placeholder(value)


def _word(*words: bytes) -> Callable[[Views], bool]:
    """Gate: one of these words occurs (the fold view splits tokens at ``_ - . /``)."""
    wanted = LEXICON.words(*words)
    return lambda views: not wanted.isdisjoint(views.words)


def _word_start(*starts: bytes) -> Callable[[Views], bool]:
    """Gate: some word starts with one of these."""
    needles = LEXICON.parts(*(b" " + s for s in starts))
    return lambda views: any(n in views.vocab for n in needles)


RULES: tuple[Rule, ...] = (
    # --- refuse ---------------------------------------------------------------------------------
    Rule("invisible_chars", "refuse", "invisible or bidi control characters", func=p.invisible_chars),
    Rule("role_tag", "refuse", "LLM role/control tag", func=p.role_tags),
    Rule("override_en", "refuse", OVERRIDE, func=p.override_en),
    Rule("override_fr", "refuse", OVERRIDE, func=p.override_fr),
    Rule("override_de", "refuse", OVERRIDE, func=p.override_de),
    Rule("override_es", "refuse", OVERRIDE, func=p.override_es),
    Rule("override_ru", "refuse", OVERRIDE, func=p.override_ru),
    Rule("persona_override", "refuse", "role reassignment aimed at the agent", func=p.persona_override),
    Rule("exfiltration_order", "refuse", "exfiltration order aimed at the agent", func=p.exfiltration_order),
    # --- redact ---------------------------------------------------------------------------------
    Rule("pem_private_key", "redact", "PEM private key block", func=s.pem_private_keys, gate=_word(b"private")),
    Rule("jwt", "redact", "JSON Web Token", pattern=s.JWT, gate=_word_start(b"eyj")),
    Rule(
        "anthropic_key",
        "redact",
        "Anthropic API key",
        pattern=s.ANTHROPIC_KEY,
        accept=s.provider_token_ok,
        gate=_word(b"sk"),
    ),
    Rule(
        "openai_key",
        "redact",
        "OpenAI API key (sk-, sk-proj-)",
        pattern=s.OPENAI_KEY,
        accept=s.provider_token_ok,
        gate=_word(b"sk"),
    ),
    Rule("github_token", "redact", "GitHub token (ghp_/gho_/ghu_/ghs_/ghr_/github_pat_)", func=s.github_tokens),
    Rule(
        "slack_token",
        "redact",
        "Slack token (xoxb-, xoxp-, …)",
        pattern=s.SLACK_TOKEN,
        accept=s.provider_token_ok,
        gate=_word_start(b"xox"),
    ),
    Rule(
        "slack_webhook",
        "redact",
        "Slack incoming-webhook path",
        pattern=s.SLACK_WEBHOOK,
        accept=_not_placeholder,
        gate=_word(b"hooks"),
    ),
    Rule(
        "stripe_key",
        "redact",
        "Stripe secret/restricted key or webhook secret",
        func=s.stripe_keys,
        gate=_word(b"live", b"test", b"whsec"),
    ),
    Rule(
        "google_api_key",
        "redact",
        "Google API key (AIza…)",
        pattern=s.GOOGLE_API_KEY,
        accept=_not_placeholder,
        gate=_word_start(b"aiza"),
    ),
    Rule(
        "aws_access_key_id",
        "redact",
        "AWS access key id (AKIA…/ASIA…)",
        func=s.aws_access_key_ids,
        gate=_word_start(b"akia", b"asia"),
    ),
    Rule("aws_secret_key", "redact", "AWS secret access key next to its name or key id", func=s.aws_secret_keys),
    Rule("vendor_token", "redact", "GitLab/Hugging Face/npm/SendGrid/PyPI/Telegram token", func=s.vendor_tokens),
    Rule(
        "url_credentials",
        "redact",
        "password inside a URL or connection string",
        func=s.url_credentials,
        gate=lambda v: b"@" in v.fold,
    ),
    Rule("bearer_token", "redact", "Bearer token or Authorization header value", func=s.bearer_tokens),
    Rule("cli_credentials", "redact", "curl -u user:pass, mysql -pPASS, sshpass -p PASS", func=s.cli_credentials),
    Rule("password_assignment", "redact", "value of a password-named key", func=s.password_assignments),
    # after password_assignment, so what it finds keeps its marker
    Rule(
        "password_phrase",
        "redact",
        "password stated in a sentence (EN/RU/FR)",
        func=prose.password_phrases,
        gate=_word_start(*prose.GATE_STARTS),
    ),
    Rule("secret_assignment", "redact", "high-entropy value of a secret-named key", func=s.secret_assignments),
    # an IBAN before the card rules: the digits after its country code may pass for a card
    Rule("iban", "redact", "IBAN (registry length, mod-97 checksum)", func=pay.ibans, gate=pay.has_digits),
    Rule(
        "card_cvv",
        "redact",
        "card security code (CVV/CVC) after its label or a card number",
        func=pay.card_codes,
        gate=pay.has_digits,
        hashed=False,
    ),
    Rule("card_number", "redact", "payment card number (Luhn-valid PAN)", func=pay.card_numbers, gate=pay.has_digits),
)

REFUSE_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.kind == "refuse")
REDACT_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.kind == "redact")
