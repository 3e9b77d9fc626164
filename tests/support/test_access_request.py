"""The signed-out "I can't sign in" request: throttled per address, cleaned of secrets, its
own kind in the staff inbox, answered by e-mail — and never saying whether the address has
an account."""

import pytest
from django.urls import reverse

from kernodeck.core.models import AuditEvent
from kernodeck.notifications.models import OutboxMessage
from kernodeck.support.models import AccessReply, AccessRequest, AccessStatus
from tests.factories import PASSWORD, make_order, make_user
from tests.support.helpers import HF, make_agent

pytestmark = pytest.mark.django_db

URL = "/support/cant-sign-in/"


def ask(client, email="ada@example.org", **overrides):
    data = {
        "email": email,
        "name": "Ada Lovelace",
        "references": "KD-7Q2M-4XKD, paid 42 USDT on Tron in March",
        "body": "My password no longer works.",
    }
    data.update(overrides)
    return client.post(URL, data, follow=True)


def _page(response) -> str:
    """The page, without the CSRF token that differs between any two responses."""
    import re

    return re.sub(r"[A-Za-z0-9]{64}", "<csrf>", response.content.decode())


def test_the_sign_in_page_links_the_request_and_the_form_needs_no_account(client):
    assert reverse("support:access_request") == URL
    assert URL in client.get(reverse("accounts:signin")).content.decode()

    page = client.get(URL)

    assert page.status_code == 200
    assert "Orders and payments you remember" in page.content.decode()


def test_an_existing_and_a_new_address_get_the_same_answer_and_the_same_work(client):
    make_user(email="ada@example.org", password=PASSWORD)

    known = ask(client, email="ada@example.org")
    unknown = ask(client, email="nobody@example.org")

    assert known.status_code == unknown.status_code == 200
    assert known.redirect_chain == unknown.redirect_chain
    assert _page(known) == _page(unknown)
    assert "Your request is sent" in _page(known)
    # The same rows and the same e-mail, to the address typed, naming no account.
    assert AccessRequest.objects.count() == 2
    for address in ("ada@example.org", "nobody@example.org"):
        mails = OutboxMessage.objects.filter(to_email=address)
        assert mails.count() == 1
        assert mails.get().event == "access_request_received"
        assert mails.get().account is None
    known_mail, unknown_mail = (
        OutboxMessage.objects.get(to_email=a) for a in ("ada@example.org", "nobody@example.org")
    )
    assert known_mail.subject.split("#")[0] == unknown_mail.subject.split("#")[0]
    assert AuditEvent.objects.filter(action="support.access_requested").count() == 2


def test_the_request_is_throttled_per_address(client, settings):
    settings.KERNODECK_THROTTLE_ACCESS_EMAIL = (2, 86400)
    assert ask(client, email="ada@example.org").status_code == 200
    assert ask(client, email="ADA@example.org ").status_code == 200

    refused = ask(client, email="ada@example.org")

    assert refused.status_code == 429
    assert "sent recently" in refused.content.decode()
    assert AccessRequest.objects.filter(email="ada@example.org").count() == 2
    assert OutboxMessage.objects.filter(to_email="ada@example.org").count() == 2
    # Another address from the same network is still heard.
    assert ask(client, email="grace@example.org").status_code == 200


def test_the_throttle_answers_the_same_for_an_existing_and_a_new_address(client, settings):
    settings.KERNODECK_THROTTLE_ACCESS_EMAIL = (1, 86400)
    make_user(email="ada@example.org")
    ask(client, email="ada@example.org")
    ask(client, email="nobody@example.org")

    known = ask(client, email="ada@example.org")
    unknown = ask(client, email="nobody@example.org")

    assert known.status_code == unknown.status_code == 429
    assert _page(known).replace("ada@", "X@") == _page(unknown).replace("nobody@", "X@")


def test_secrets_are_removed_as_in_tickets(client):
    ask(client, body=f"my token is {HF} and my password is hunter2hunter2", references=HF)

    stored = AccessRequest.objects.get()
    assert HF not in stored.body
    assert HF not in stored.references
    assert "[removed]" in stored.body
    assert stored.redactions


def test_a_signed_in_customer_uses_tickets_instead(client):
    client.force_login(make_user())

    assert client.get(URL).status_code == 302


def test_invalid_input_is_refused_without_storing(client):
    response = client.post(URL, {"email": "not an address", "name": "", "body": ""})

    assert response.status_code == 422
    assert not AccessRequest.objects.exists()
    assert not OutboxMessage.objects.exists()


def test_the_request_is_its_own_kind_in_the_staff_inbox(client):
    ask(client, email="ada@example.org")
    owner = make_user(email="ada@example.org")
    order = make_order(owner=owner)
    agent = make_agent()
    client.force_login(agent)

    inbox = client.get(reverse("support_staff:inbox")).content.decode()
    only = client.get(reverse("support_staff:inbox") + "?kind=access").content.decode()
    request = AccessRequest.objects.get()
    case = client.get(reverse("support_staff:access", args=[request.pk])).content.decode()

    assert "ada@example.org" in inbox
    assert reverse("support_staff:access", args=[request.pk]) in only
    # Staff see the account's orders beside what the person remembers.
    assert order.reference in case
    assert "KD-7Q2M-4XKD" in case


@pytest.mark.parametrize(
    ("who", "expected"),
    [("anonymous", 302), ("customer", 403), ("staff_without_permission", 403), ("agent", 200)],
)
def test_only_support_staff_see_or_answer_a_request(client, who, expected):
    ask(client)
    request = AccessRequest.objects.get()
    user = {
        "anonymous": None,
        "customer": make_user(),
        "staff_without_permission": make_user(staff=True),
        "agent": make_agent(),
    }[who]
    if user is not None:
        client.force_login(user)
    url = reverse("support_staff:access", args=[request.pk])

    assert client.get(url).status_code == expected
    reply = client.post(url, {"form": "reply", "body": "Which orders?", "status": "answered"})
    assert reply.status_code == (302 if expected == 200 else expected)
    assert AccessReply.objects.count() == (1 if expected == 200 else 0)


def test_staff_answer_by_email_to_the_address_with_secrets_removed(client):
    ask(client, email="nobody@example.org")
    request = AccessRequest.objects.get()
    client.force_login(make_agent())

    client.post(
        reverse("support_staff:access", args=[request.pk]),
        {"form": "reply", "body": f"Which orders did you place? {HF}", "status": "answered"},
    )

    mail = OutboxMessage.objects.get(event="access_request_reply")
    assert mail.to_email == "nobody@example.org"
    assert mail.account is None
    assert "Which orders did you place?" in mail.body_text
    assert HF not in mail.body_text
    request.refresh_from_db()
    assert request.status == AccessStatus.ANSWERED
    assert AuditEvent.objects.filter(action="support.access_replied").exists()
