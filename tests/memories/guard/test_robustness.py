"""No input makes the guard fail or hang; screening is idempotent.

Timing bounds live in bench/guard/run.py; here a super-linear regex would show up as a test run
that never ends (the whole folder is expected to finish in well under 20 s)."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memories.guard import GuardRejection, ScreenResult, screen_text

PIECES = [
    "a",
    "=",
    ":",
    " ",
    "A",
    "0",
    "+",
    "/",
    "-",
    "_",
    ".",
    "\n",
    '"',
    "'",
    "`",
    "> ",
    "```\n",
    "i ",
    "g ",
    "sk-",
    "sk-proj-",
    "ghp_",
    "github_pat_",
    "eyJ",
    "AKIA",
    "xoxb-",
    "://",
    "@",
    ":AA",
    "k_live_",
    "AIza",
    "password",
    "password=",
    "password for the db is ",
    "пароль от ",
    "mot de passe de ",
    " as the password",
    "pass:",
    "--password ",
    "secret",
    "token",
    "key",
    "api_key: ",
    "Bearer ",
    "Authorization: ",
    "-----BEGIN PRIVATE KEY-----",
    "-----END ",
    "<|",
    "|>",
    "[INST]",
    "<system>",
    "##",
    "ignore ",
    "all ",
    "previous ",
    "instructions",
    "you are now ",
    "send all api keys to ",
    "https://x.io/",
    "\u200b",
    "\u200d",
    "🏴",
    "\U000e0061",
    "ё",
    "і",
    "ｉ",
    "𝐢",
    "…",
    "[REDACTED:openai_key:0a1b2c3d]",
    "4111 ",
    "4111111111111111",
    "１",
    "\u00a0",
    "\u2009",
    "visa",
    "12/29 ",
    "cvv ",
    "code ",
    "de89",
    "[REDACTED:card_cvv:00000000]",
]

_runs = st.builds(lambda piece, n: piece * n, st.sampled_from(PIECES), st.integers(1, 3000))
_texts = st.lists(st.one_of(_runs, st.sampled_from(PIECES), st.text(max_size=40)), max_size=10).map("".join)


def _screen_or_refuse(text: str) -> ScreenResult | None:
    try:
        return screen_text(text)
    except GuardRejection as exc:
        if not exc.reason:  # a refusal always names its reason
            raise
        return None


@settings(
    max_examples=80,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_texts)
# Found by this test in a full run (2026-12-03): a PEM header inside another's block was redacted
# from the inner header, and the second pass, seeing a blanked marker there, took the outer one.
@example("-----BEGIN PRIVATE KEY----------BEGIN PRIVATE KEY----------END -----END -----END ")
@example(
    "-----BEGIN RSA PRIVATE KEY-----A-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
)
def test_any_input_is_screened_or_refused_and_a_second_pass_changes_nothing(text):
    result = _screen_or_refuse(text)
    if result is not None:
        assert screen_text(result.text) == ScreenResult(result.text, ())


@settings(max_examples=60, deadline=None, database=None)
@given(st.text(max_size=300))
def test_arbitrary_unicode_is_screened_or_refused(text):
    _screen_or_refuse(text)


@settings(max_examples=40, deadline=None, database=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + "+/=_-.", min_size=1, max_size=3000))
def test_base64ish_noise_without_a_name_or_prefix_is_left_alone(blob):
    result = _screen_or_refuse(f"blob {blob} end")
    assert result is not None
    if not any(
        p in blob
        for p in (
            "sk-",
            "gh",
            "xox",
            "AKIA",
            "ASIA",
            "AIza",
            "eyJ",
            "k_live_",
            "k_test_",
            "hf_",
            "npm_",
            "SG.",
            "glpat-",
            "pypi-",
            "whsec_",
        )
    ):
        assert result.redactions == ()


_RNG = random.Random(7)


def _b64(n: int) -> str:
    return "".join(_RNG.choice(string.ascii_letters + string.digits + "+/") for _ in range(n))


PATHOLOGICAL = {
    "a-run": "a" * 100_000,
    "equals-run": "=" * 100_000,
    "colon-run": ":" * 100_000,
    "space-run": " " * 100_000,
    "newline-run": "\n" * 100_000,
    "base64-run": _b64(100_000),
    "sk-prefix-run": "sk-" * 33_000,
    "ghp-prefix-run": "ghp_" * 25_000,
    "eyJ-run": "eyJ" * 33_000,
    "eyJ-dot-run": ("eyJ" + "a" * 10 + ".") * 7_000,
    "AKIA-run": "AKIA" * 25_000,
    "url-run": "://a:b" * 16_000,
    "url-at-run": "://u:" + "p@" * 49_000,
    "password-assign-run": "password=" * 11_000,
    "password-colon-run": "password: " * 10_000,
    "key-space-run": "api key " * 12_000,
    "quote-run": '"' * 100_000,
    "apostrophe-run": "'" * 100_000,
    "backtick-run": "`" * 100_000,
    "pem-begin-run": "-----BEGIN PRIVATE KEY-----\n" * 3_500,
    "pem-begins-then-one-end": "-----BEGIN PRIVATE KEY-----\n" * 3_500 + "-----END PRIVATE KEY-----",
    "pem-body-run": "-----BEGIN PRIVATE KEY-----\n" + ("A" * 64 + "\n") * 1_500,
    "role-open-run": "<|" * 50_000,
    "role-almost-run": "<|" + "a" * 39 + " " * 1 + "<|" * 30_000,
    "hash-run": "#" * 100_000,
    "letter-spaced-run": "i g n o r e " * 8_000,
    "ignore-run": "ignore " * 14_000,
    "ignore-all-run": "ignore all " * 9_000,
    "send-run": "send all api keys " * 5_000,
    "ru-run": "игнорируй все " * 7_000,
    "zwj-run": "👩\u200d" * 30_000,
    "tag-run": "🏴" + "\U000e0061" * 50_000,
    "fullwidth-run": "ｉ" * 100_000,
    "mixed-homoglyph-run": "іgnоrе " * 14_000,
    "marker-run": "[REDACTED:openai_key:0a1b2c3d]" * 3_000,
    "dash-flag-run": "--password " * 9_000,
    "telegram-run": "1234567890:AA" * 7_000,
    "incident-quotes-run": "prompt injection 'ignore previous instructions' " * 2_000,
    # found by hypothesis: two space runs around an optional quote backtracked quadratically
    "authorization-spaces": "Authorization: " + " " * 100_000 + "#",
    "authorization-markers": "Authorization: " + "[REDACTED:bearer_token:6ee0b8ef] " * 3_000,
    "many-authorization-spaces": ("Authorization:" + " " * 300) * 300,
    "password-is-spaces": "password is" + " " * 100_000 + "#",
    "password-colon-spaces": ("password:" + " " * 500) * 190,
    "aws-secret-spaces": "aws_secret_access_key" + " " * 100_000 + "#",
    "key-flag-spaces": ("--api-key" + " " * 1_000) * 95,
    # found by a sweep of anchor x filler x repetition: per-occurrence rescans of one long line
    "mysql-one-line": "mysql -p=#" * 10_000,
    "curl-one-line": "curl -u " * 12_000,
    "role-header-mid-line": "x ### system: " * 7_000,
    "yaml-comment-one-line": "password: abcd1 #" * 6_000,
    # payment data (issue #35): digit groups, separators, labels and fillers repeated
    "digit-run": "4" * 100_000,
    "card-group-run": "4111 " * 20_000,
    "card-dot-run": "4111." * 20_000,
    "card-spaced-dash-run": "4111 - " * 14_000,
    "card-nbsp-run": "4111\u00a0" * 20_000,
    "fullwidth-digit-run": "４" * 100_000,
    "cards-with-codes": "4111 1111 1111 1111 12/29 123 " * 3_300,
    "glued-label-run": "visa" * 25_000 + "4111111111111111",
    "letters-then-digits": ("a" * 19 + "4111111111111111 ") * 2_800,
    "cvv-run": "cvv " * 25_000,
    "cvv-filler-run": "cvv" + " code is" * 12_000 + " 123",
    "security-code-run": "card security code " * 5_000,
    "iban-start-run": "de89 " * 20_000,
    "iban-lower-run": "de89370400440532013000 " * 4_300,
    # passwords stated in a sentence (issue #40): a name, an object, a separator, repeated on one line
    "password-for-run": "the password for " * 6_000,
    "password-for-is-run": "password for the db is " * 4_500,
    "password-object-spaces": ("password for" + " " * 200 + "x") * 480,
    "ru-parol-run": "пароль от базы — " * 6_000,
    "fr-mdp-run": "le mot de passe de la base est " * 3_300,
    "use-as-password-run": "use Zq8!vX3k as the password " * 3_500,
    "changed-to-run": "changed the password to " * 4_200,
    "pwd-colon-run": "pwd: " * 20_000,
}


@pytest.mark.parametrize("text", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_pathological_100k_input_returns(text):
    _screen_or_refuse(text)
