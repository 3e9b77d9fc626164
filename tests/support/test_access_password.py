"""Staff, after checking who wrote "I can't sign in", end every way into the account and
e-mail it a single-use link where the person chooses a new password."""

import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from kernodeck.accounts import services as account_services
from kernodeck.accounts.models import ApiToken, Session, User
from kernodeck.core.models import AuditEvent
from kernodeck.notifications.models import OutboxMessage
from kernodeck.support import services
from kernodeck.support.models import AccessRequest
from tests.factories import PASSWORD, make_user
from tests.support.helpers import make_agent

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a brand new sentence for the account 7"


def make_password_agent():
    agent = make_agent()
    agent.user_permissions.add(Permission.objects.get(codename="set_account_password"))
    return User.objects.get(pk=agent.pk)


def _request(email="ada@example.org") -> AccessRequest:
    return services.access_request_create(
        email=email,
        name="Ada Lovelace",
        references="KD-7Q2M-4XKD",
        body="My password no longer works.",
        ip_address="10.0.0.5",
        language="en",
    )


def _signed_in_browser(email) -> Client:
    browser = Client()
    response = browser.post(reverse("accounts:signin"), {"email": email, "password": PASSWORD})
    assert response.status_code == 302
    assert browser.get(reverse("accounts:account")).status_code == 200
    return browser


def _link(message: OutboxMessage) -> str:
    match = re.search(
        r"http://127\.0\.0\.1:8000(/account/new-password/[^\s]+/)", message.body_text
    )
    assert match, message.body_text
    return match.group(1)


def _send_link(client, access_request):
    return client.post(
        reverse("support_staff:access", args=[access_request.pk]), {"form": "password"}
    )


@pytest.fixture
def owner():
    user = make_user(email="ada@example.org", password=PASSWORD, preferred_language="en")
    account_services.api_token_create(user=user, name="laptop")
    return user


def test_staff_end_every_way_in_and_email_a_link_that_works_once(client, owner):
    browser = _signed_in_browser("ada@example.org")
    access_request = _request()
    client.force_login(make_password_agent())

    response = _send_link(client, access_request)

    assert response.status_code == 302
    # The old password fails, every session is ended, every token revoked.
    owner.refresh_from_db()
    assert not owner.check_password(PASSWORD)
    assert not owner.has_usable_password()
    assert not Session.objects.filter(user=owner).exists()
    assert browser.get(reverse("accounts:account")).status_code == 302
    assert not ApiToken.objects.filter(user=owner, revoked_at__isnull=True).exists()
    refused = Client().post(
        reverse("accounts:signin"), {"email": "ada@example.org", "password": PASSWORD}
    )
    assert refused.status_code == 200 and "_auth_user_id" not in refused.client.session
    # Audited, with who did it.
    event = AuditEvent.objects.get(action="account.password_reset_by_staff")
    assert event.target_id == str(owner.pk)
    assert event.data == {"sessions_ended": 1, "api_tokens_revoked": 1}
    assert AuditEvent.objects.filter(action="support.access_password_link_sent").exists()
    # The customer is told, at the account's own address, with the link.
    mail = OutboxMessage.objects.get(event="access_password_link")
    assert (mail.account, mail.to_email) == (owner, "ada@example.org")
    assert "every API token is revoked" in mail.body_text
    link = _link(mail)

    person = Client()
    assert person.get(link).status_code == 200
    chosen = person.post(link, {"new_password": NEW_PASSWORD})

    assert chosen["Location"] == reverse("accounts:signin")
    owner.refresh_from_db()
    assert owner.check_password(NEW_PASSWORD)
    assert AuditEvent.objects.filter(action="account.password_set_from_link").exists()
    signed_in = Client().post(
        reverse("accounts:signin"), {"email": "ada@example.org", "password": NEW_PASSWORD}
    )
    assert signed_in.status_code == 302
    # Single use: the link is dead once the password is chosen.
    assert person.get(link).status_code == 404
    again = person.post(link, {"new_password": "someone else's password here 99"})
    assert again.status_code == 404
    owner.refresh_from_db()
    assert owner.check_password(NEW_PASSWORD)


def test_a_weak_password_on_the_link_page_is_refused_and_the_link_still_works(client, owner):
    client.force_login(make_password_agent())
    _send_link(client, _request())
    link = _link(OutboxMessage.objects.get(event="access_password_link"))

    weak = Client().post(link, {"new_password": "short"})

    assert weak.status_code == 422
    assert not User.objects.get(pk=owner.pk).has_usable_password()
    assert Client().post(link, {"new_password": NEW_PASSWORD}).status_code == 302


def test_a_forged_or_mangled_link_is_refused(client, owner):
    for path in (
        reverse("accounts:password_new", args=["MQ", "abc-def"]),
        reverse("accounts:password_new", args=["!!", "x"]),
        reverse("accounts:password_new", args=["OTk5OTk", "abc-def"]),
    ):
        assert client.get(path).status_code == 404
        assert client.post(path, {"new_password": NEW_PASSWORD}).status_code == 404
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)


def test_a_second_link_kills_the_first(client, owner):
    client.force_login(make_password_agent())
    access_request = _request()
    _send_link(client, access_request)
    first = _link(OutboxMessage.objects.filter(event="access_password_link").get())
    _send_link(client, access_request)

    assert OutboxMessage.objects.filter(event="access_password_link").count() == 2
    assert Client().get(first).status_code == 404


def test_a_request_for_an_address_without_account_sets_nothing(client):
    client.force_login(make_password_agent())

    response = _send_link(client, _request(email="nobody@example.org"))

    assert response.status_code == 422
    assert "No account has this address" in response.content.decode()
    assert not OutboxMessage.objects.filter(event="access_password_link").exists()


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("anonymous", 302),
        ("customer", 403),
        ("the_account_itself", 403),
        ("staff_without_permission", 403),
        ("support_agent_without_set_password", 403),
        ("password_agent", 302),
        ("superuser", 302),
    ],
)
def test_only_staff_holding_the_permission_can_set_a_password(client, owner, who, expected):
    access_request = _request()
    user = {
        "anonymous": None,
        "customer": make_user(),
        "the_account_itself": owner,
        "staff_without_permission": make_user(staff=True),
        "support_agent_without_set_password": make_agent(),
        "password_agent": make_password_agent(),
        "superuser": make_user(staff=True, is_superuser=True),
    }[who]
    if user is not None:
        client.force_login(user)

    response = _send_link(client, access_request)

    assert response.status_code == expected
    owner.refresh_from_db()
    allowed = who in {"password_agent", "superuser"}
    assert owner.check_password(PASSWORD) is not allowed
    assert OutboxMessage.objects.filter(event="access_password_link").exists() is allowed
    if who == "anonymous":
        assert response["Location"].startswith(reverse("accounts:signin"))


def test_the_case_page_offers_the_action_only_to_holders(client, owner):
    access_request = _request()
    url = reverse("support_staff:access", args=[access_request.pk])

    client.force_login(make_agent())
    without = client.get(url).content.decode()
    client.force_login(make_password_agent())
    with_permission = client.get(url).content.decode()

    assert 'value="password"' not in without
    assert 'value="password"' in with_permission
