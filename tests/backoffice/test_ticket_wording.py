"""Staff pages say a ticket's status in one staff wording ("waiting for the customer"
where the customer reads "waiting for you"), and the ticket page's forms each have their
own field ids."""

import re
from collections import Counter

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.support import services
from tests.factories import make_user
from tests.support.helpers import make_agent, problem_ticket

pytestmark = pytest.mark.django_db

WORDS = {
    "en": ("Waiting for the customer", "Waiting for you"),
    "es": ("Esperando al cliente", "Esperando tu respuesta"),
}


def _waiting_ticket():
    owner = make_user()
    ticket = problem_ticket(owner=owner)
    agent = make_agent()
    services.ticket_status_set(ticket=ticket, status="waiting", actor=agent)
    return ticket, agent


def _client(user, language) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    return client


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_ticket_page_says_one_staff_wording_everywhere(language):
    staff_words, customer_words = WORDS[language]
    ticket, agent = _waiting_ticket()

    html = _client(agent, language).get(reverse("support_staff:ticket", args=[ticket.pk]))
    html = html.content.decode().split("<main", 1)[1]

    assert f'<span class="badge">{staff_words}</span>' in html  # the header
    assert re.search(rf'<option value="waiting"[^>]*>{staff_words}</option>', html)
    assert html.count(f">{staff_words}</option>") == 2  # the reply form and the status form
    assert customer_words not in html


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_inbox_says_the_staff_wording(language):
    staff_words, customer_words = WORDS[language]
    _ticket, agent = _waiting_ticket()

    html = _client(agent, language).get(reverse("support_staff:inbox")).content.decode()

    assert f'<span class="badge">{staff_words}</span>' in html
    assert f"{staff_words} (1)" in html
    assert customer_words not in html


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_customer_still_reads_waiting_for_you(language):
    _staff_words, customer_words = WORDS[language]
    ticket, _agent = _waiting_ticket()

    html = _client(ticket.owner, language).get(reverse("support:detail", args=[ticket.pk]))

    assert customer_words in html.content.decode()


def test_every_field_id_of_the_ticket_page_is_unique():
    ticket, agent = _waiting_ticket()

    html = _client(agent, "en").get(reverse("support_staff:ticket", args=[ticket.pk]))
    ids = Counter(re.findall(r'\bid="([^"]+)"', html.content.decode()))

    assert [name for name, n in ids.items() if n > 1] == []
    assert "id_reply-status" in ids and "id_status-status" in ids
    assert "id_reply-body" in ids


def test_the_canned_answer_replaces_the_prefixed_reply_box():
    ticket, agent = _waiting_ticket()
    client = _client(agent, "en")
    page = client.get(reverse("support_staff:ticket", args=[ticket.pk])).content.decode()
    key = re.search(r"/canned/([\w-]+)/", page).group(1)

    body = client.get(reverse("support_staff:canned", args=[ticket.pk, key])).content.decode()

    assert 'hx-target="#id_reply-body"' in page
    assert 'id="id_reply-body"' in body and 'name="reply-body"' in body
