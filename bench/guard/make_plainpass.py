"""Regenerate the Guard's labelled corpus of passwords stated in plain language, ``plainpass.jsonl``
(seeded, reproducible).

    .venv/bin/python bench/guard/make_plainpass.py

Every password is *fake* (random letters, digits and symbols in the shapes people choose: a word
and a year, leetspeak, a random string). Each line is a JSON object:

- ``label``: ``password`` (a positive: the guard must remove ``secrets``) or ``negative`` (a hard
  negative: a sentence about a password that states none; nothing may be redacted);
- ``lang``: ``en`` / ``ru`` / ``fr``; ``kind``: the shape (``for_is``, ``ru_ot_dash``, …);
- ``secrets``: the substrings, as written, that must not survive screening (positives only);
- ``set``: ``dev`` (the shapes the rule ``password_phrase`` was written for), ``heldout`` (other
  sentences and contexts with values from another seed, written with the rule's first version and
  never used to tune it).

Measured by ``bench/guard/plainpass.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
WORDS = ("kot", "murka", "summer", "dragon", "tigre", "soleil", "berlin", "orange", "falcon", "zebra", "lapin")
SYMBOLS = "!#$%&*+?@^~"


def password(rng: random.Random) -> str:
    """One fake password in a common human shape."""
    shape = rng.randrange(4)
    word = rng.choice(WORDS)
    if shape == 0:  # a word and a year, sometimes a symbol
        ending: str = rng.choice(["", *SYMBOLS])
        return word.capitalize() + str(rng.randrange(1970, 2030)) + ending
    if shape == 1:  # leetspeak
        leet = word.translate(str.maketrans("aeios", "4310$")) + rng.choice(SYMBOLS) + str(rng.randrange(10, 99))
        return leet[0].upper() + leet[1:]
    if shape == 2:  # a random string
        alphabet = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789" + SYMBOLS
        while True:
            value = "".join(rng.choice(alphabet) for _ in range(rng.randrange(10, 16)))
            if any(c.isdigit() for c in value):
                return value
    return word + rng.choice(WORDS) + str(rng.randrange(2, 99))  # two words and a number


EN_OBJECTS = ("the db", "the staging server", "prod db", "grafana", "the router", "db-01", "the jenkins user")
RU_OBJECTS = ("базы", "сервера", "почты", "вайфая", "админки", "роутера")
FR_OBJECTS = ("la base", "serveur", "la box", "l'ERP", "wifi")

DEV: dict[str, tuple[str, str]] = {  # kind: (lang, template)
    "for_is": ("en", "the password for {obj} is {pw}"),
    "for_is_prose": ("en", "The password for {obj} is {pw}, don't share it outside the team"),
    "for_colon": ("en", "password for {obj}: {pw}"),
    "on_is": ("en", "the root password on {obj} is {pw}"),
    "pwd_colon_prose": ("en", "pwd: {pw} for the vpn"),
    "name_pwd_colon": ("en", "{obj} pwd: {pw} then restart"),
    "changed_to": ("en", "I changed the password for {obj} to {pw}"),
    "use_as": ("en", "use {pw} as the password for {obj}"),
    "ru_ot_dash": ("ru", "пароль от {obj} — {pw}"),
    "ru_dlya_colon": ("ru", "пароль для {obj}: {pw}"),
    "ru_genitive_colon": ("ru", "Пароль {obj}: {pw}"),
    "ru_k_hyphen": ("ru", "пароль к {obj} - {pw}"),
    "fr_de_est": ("fr", "le mot de passe de {obj} est {pw}"),
    "fr_du_colon": ("fr", "Le mot de passe du {obj} : {pw}"),
    "fr_mdp_colon": ("fr", "mdp : {pw}"),
    "fr_mdp_du": ("fr", "mdp du {obj}: {pw}"),
    "fr_pour_equals": ("fr", "mot de passe pour {obj} = {pw}"),
}
HELDOUT: dict[str, tuple[str, str]] = {
    "chat_fyi": ("en", "fyi the wifi password for the guest network is {pw} - ask before sharing it"),
    "slack_quote": ("en", "Sam on Slack: password to the staging box is {pw}"),
    "bullet_user": ("en", "- jenkins: password for user deploy is {pw}"),
    "passphrase": ("en", "Remember: the passphrase for the backup key is {pw}."),
    "pw_is": ("en", "the vpn pw is {pw}"),
    "passcode_colon": ("en", "New router passcode: {pw} (changed Monday)"),
    "reset_to": ("en", "reset the root password to {pw} yesterday"),
    "was_until": ("en", "password for the old NAS was {pw} until the rotation"),
    "ru_reminder": ("ru", "Напоминаю, пароль от роутера: {pw}"),
    "ru_login_pair": ("ru", "логин admin, пароль {pw}"),
    "ru_vhod": ("ru", "пароль для входа в админку — {pw}"),
    "ru_new": ("ru", "Новый пароль от почты: {pw}"),
    "ru_archive": ("ru", "пароль на архив: {pw}"),
    "fr_info": ("fr", "Pour info, le mot de passe du wifi invité est {pw}"),
    "fr_pair": ("fr", "identifiant : admin / mot de passe : {pw}"),
    "fr_mdp_est": ("fr", "Le mdp de la box est {pw}"),
    "fr_acces": ("fr", "mot de passe d'accès au NAS : {pw}"),
}
NEGATIVES: list[tuple[str, str, str]] = [  # (lang, kind, text)
    ("en", "neg_where", "the password for prod is in the second message"),
    ("en", "neg_where", "the password for the db is stored in Vault"),
    ("en", "neg_where", "the password for the guest wifi is on the fridge"),
    ("en", "neg_where", "The passcode for the door is on the Confluence page"),
    ("en", "neg_policy", "password for v2 is rotated every 90 days"),
    ("en", "neg_policy", "the password for the API is 12 characters long"),
    ("en", "neg_policy", "The password policy for 2024 is stricter: 16 chars"),
    ("en", "neg_policy", "changed the password policy to require 2FA"),
    ("en", "neg_policy", "set the password for the kiosk to expire in 30 days"),
    ("en", "neg_state", "the password for admin@example.com is reset via the portal"),
    ("en", "neg_state", "the password for build-7 is expired"),
    ("en", "neg_state", "password reset for user42 is done"),
    ("en", "neg_state", "the password on the sticky note is outdated"),
    ("en", "neg_same", "The password for SSO is your AD password"),
    ("en", "neg_same", "password for the staging db is the same as for prod"),
    ("en", "neg_same", "password for Q3-report.pdf is the usual one"),
    ("en", "neg_ask", "Password for staging: ask Dana"),
    ("en", "neg_ref", "the password for the db is <your-password>"),
    ("en", "neg_ref", "password for the DB is ${DB_PASSWORD}"),
    ("en", "neg_ref", "password for the service account: see vault://secret/data/db"),
    ("en", "neg_ref", "the password for the db is https://vault.internal/ui/db"),
    ("en", "neg_shell", "pwd: /home/dana/projects"),
    ("en", "neg_shell", "run pwd: it prints /srv/app"),
    ("en", "neg_shell", "pwd: ~/src/mmw"),
    ("en", "neg_shell", "pw: n/a"),
    ("en", "neg_product", "use 1Password as the password manager"),
    ("en", "neg_product", "the password for Outlook is managed by Entra ID"),
    ("en", "neg_docs", "The password for the superuser is set with createsuperuser."),
    ("en", "neg_docs", "the password for the user is stored hashed with PBKDF2-SHA256"),
    ("en", "neg_docs", "password for postgres: set POSTGRES_PASSWORD in the compose file"),
    ("ru", "neg_where", "пароль от базы лежит в Vault"),
    ("ru", "neg_same", "пароль от почты — тот же, что и от VPN"),
    ("ru", "neg_ask", "пароль для сервера: спроси у Даны"),
    ("ru", "neg_ref", "пароль к архиву: см. 1Password"),
    ("ru", "neg_state", "пароль от админки сменили вчера"),
    ("ru", "neg_ref", "пароль: ********"),
    ("ru", "neg_where", "пароль для Wi-Fi — на стикере у принтера"),
    ("ru", "neg_policy", "пароль от учётки должен быть не короче 12 символов"),
    ("fr", "neg_where", "le mot de passe de la base est dans le coffre"),
    ("fr", "neg_ref", "mot de passe : voir 1Password"),
    ("fr", "neg_where", "le mot de passe du wifi est affiché à l'accueil"),
    ("fr", "neg_ask", "mdp : demander à Julie"),
    ("fr", "neg_state", "le mot de passe pour le VPN a expiré"),
    ("fr", "neg_policy", "mot de passe de 12 caractères minimum"),
    ("fr", "neg_same", "le mot de passe de la box est le même que celui du wifi"),
]


def lines(templates: dict[str, tuple[str, str]], seed: int, per_kind: int, set_name: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects = {"en": EN_OBJECTS, "ru": RU_OBJECTS, "fr": FR_OBJECTS}
    found = []
    for kind, (lang, template) in templates.items():
        for _ in range(per_kind):
            pw = password(rng)
            text = template.format(obj=rng.choice(objects[lang]), pw=pw)
            found.append(
                {"label": "password", "lang": lang, "kind": kind, "text": text, "secrets": [pw], "set": set_name}
            )
    return found


def main() -> None:
    rows = lines(DEV, 1, 6, "dev") + lines(HELDOUT, 2, 4, "heldout")
    rows += [
        {"label": "negative", "lang": lang, "kind": kind, "text": text, "set": "negative"}
        for lang, kind, text in NEGATIVES
    ]
    with (HERE / "plainpass.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} lines")


if __name__ == "__main__":
    main()
