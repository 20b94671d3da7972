"""Issue #42: e-mails arrive in the recipient's language (their saved ``User.language``), never the
sender's; English stays the text as written."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core import mail

from accounts import services as account_services
from accounts.models import User
from billing import services as billing_services
from orgs import services as org_services
from orgs.models import Membership
from tests.conftest import Tenancy
from tests.factories import on_plan

pytestmark = pytest.mark.django_db

Capture = Callable[..., object]


def speaking(user: User, language: str) -> User:
    user.language = language
    user.save(update_fields=["language"])
    return user


def test_an_invitation_is_written_in_the_invited_person_s_language(
    tenancy: Tenancy, django_capture_on_commit_callbacks: Capture
) -> None:
    on_plan(tenancy.alice.account)
    speaking(account_services.user_get_or_create(email="olga@example.com")[0], "ru")
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        org_services.invitation_create(
            account=tenancy.alice.account, actor=tenancy.alice.user, email="olga@example.com"
        )
    message = mail.outbox[-1]
    assert message.subject == "Приглашение в Alice & Co в MMW"
    assert "приглашает вас в Alice & Co в MMW" in message.body
    assert "Примите приглашение" in message.body
    assert "invited" not in message.body


def test_a_stranger_s_invitation_is_in_the_inviter_s_language_and_english_stays_as_written(
    tenancy: Tenancy, django_capture_on_commit_callbacks: Capture
) -> None:
    on_plan(tenancy.alice.account)
    speaking(tenancy.alice.user, "fr")
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        org_services.invitation_create(account=tenancy.alice.account, actor=tenancy.alice.user, email="new@example.com")
    assert mail.outbox[-1].subject == "Invitation à rejoindre Alice & Co sur MMW"
    assert "Acceptez l’invitation" in mail.outbox[-1].body
    speaking(tenancy.alice.user, "")
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        org_services.invitation_create(
            account=tenancy.alice.account, actor=tenancy.alice.user, email="new2@example.com"
        )
    assert mail.outbox[-1].subject == "You are invited to Alice & Co on MMW"
    assert "for 7 days, signed in as new2@example.com" in mail.outbox[-1].body


def test_billing_e_mails_go_out_once_per_language_of_the_account_s_managers(
    tenancy: Tenancy, django_capture_on_commit_callbacks: Capture
) -> None:
    speaking(tenancy.alice.user, "fr")
    admin = speaking(account_services.user_get_or_create(email="adam@example.com")[0], "ru")
    Membership.objects.create(account=tenancy.alice.account, user=admin, role=Membership.Role.ADMIN)
    plain = account_services.user_get_or_create(email="amy@example.com")[0]
    Membership.objects.create(account=tenancy.alice.account, user=plain, role=Membership.Role.ADMIN)
    staff = User.objects.create_superuser("support@mmw.example", "pw")
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        billing_services.subscription_suspend(account=tenancy.alice.account, actor=staff, reason="test")
    by_recipient = {tuple(m.to): m for m in mail.outbox}
    assert set(by_recipient) == {("alice@example.com",), ("adam@example.com",), ("amy@example.com",)}
    french, russian, english = (
        by_recipient[(a,)] for a in ("alice@example.com", "adam@example.com", "amy@example.com")
    )
    assert french.subject == "[MMW] Compte MMW suspendu — Alice & Co"
    assert "ce compte a été suspendu par le support MMW" in french.body
    assert russian.subject == "[MMW] Аккаунт MMW приостановлен — Alice & Co"
    assert "этот аккаунт приостановлен поддержкой MMW" in russian.body
    # English is byte for byte the notice agents read.
    assert english.subject == "[MMW] MMW account suspended — Alice & Co"
    assert english.body.startswith(
        "[MMW Notice]: this account has been suspended by MMW support; search, recall_context"
    )


def test_an_account_deletion_notice_is_in_each_owner_s_language(
    tenancy: Tenancy, django_capture_on_commit_callbacks: Capture
) -> None:
    from datarights import deletion

    alice = speaking(tenancy.alice.user, "ru")
    alice.set_password("pw")
    alice.save()
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        deletion.account_deletion_request(
            account=tenancy.alice.account, actor=alice, confirmation=tenancy.alice.account.name, password="pw"
        )
    message = mail.outbox[-1]
    assert message.to == ["alice@example.com"]
    assert message.subject.startswith("[MMW] Alice & Co будет удалён ")
    assert "запросил удаление аккаунта MMW Alice & Co" in message.body
