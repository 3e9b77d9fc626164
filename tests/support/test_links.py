"""Every "contact support" text links to the right ticket form, with the order filled in."""

import re

import pytest
from django.urls import reverse

from kernodeck.guides import faq
from kernodeck.payments import services as payment_services
from tests.factories import make_order, make_user

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def _form(kind, **params):
    query = "&amp;".join([f"kind={kind}"] + [f"{k}={v}" for k, v in params.items()])
    return reverse("support:new") + "?" + query


def test_declared_payment_warnings_link_to_a_payment_ticket(client, demo_mode):
    owner = make_user()
    order = make_order(owner=owner)
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=owner
    )
    payment_services.payment_intent_declare(intent=intent, actor=owner)
    client.force_login(owner)

    abandon = client.get(reverse("payments:abandon", args=[intent.pk]), **EN).content.decode()
    link = _form("payment", order=order.reference, payment=intent.pk, topic="double-payment")
    assert f'<a href="{link}">contact support</a>' in abandon

    warning = client.post(
        reverse("order_pay", args=[order.reference]), {"method": "eth-ethereum"}, **EN
    ).content.decode()
    link = _form("payment", order=order.reference, topic="double-payment")
    assert f'<a href="{link}">Contact support</a>' in warning


def test_the_linked_form_starts_with_the_order_payment_and_subject(client, demo_mode):
    owner = make_user()
    order = make_order(owner=owner)
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=owner
    )
    client.force_login(owner)
    page = client.get(
        reverse("support:new")
        + f"?kind=payment&order={order.reference}&payment={intent.pk}&topic=double-payment",
        **EN,
    ).content.decode()
    assert f'<option value="{order.reference}" selected>' in page
    assert f'<option value="{intent.pk}" selected>' in page
    assert 'value="I already sent a transfer"' in page


def test_order_file_offers_the_support_forms_for_its_order(client):
    from tests.support.helpers import settled_order

    owner = make_user()
    order = settled_order(owner=owner)
    client.force_login(owner)
    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()
    assert _form("problem", order=order.reference) in page
    assert _form("other", order=order.reference, topic="dates") in page
    # Extensions are offered for running rentals only.
    assert _form("extension", order=order.reference) not in page


def test_every_faq_answer_that_mentions_support_links_to_its_form(client):
    page = client.get(reverse("faq"), **EN).content.decode()
    entries = [entry for section in faq.SECTIONS for entry in section.entries]
    mentioning = [
        e for e in entries if re.search(r"\b(contact|ask) support\b", str(e.answer), re.I)
    ]
    assert {e.slug for e in mentioning} == {
        "reuse-address",
        "rental-dates",
        "extend",
        "shared-machine",
    }
    # Reporting a problem is writing to support too.
    mentioning += [e for e in entries if e.slug == "report-problem"]
    for entry in mentioning:
        assert entry.support is not None, entry.slug
        params = {"topic": entry.support.topic} if entry.support.topic else {}
        assert _form(entry.support.kind, **params) in page, entry.slug


def test_support_is_in_the_navigation_for_customers_and_the_inbox_for_agents(client):
    from tests.support.helpers import make_agent

    client.force_login(make_user())
    page = client.get(reverse("home"), **EN).content.decode()
    assert f'href="{reverse("support:list")}"' in page
    assert reverse("support_staff:inbox") not in page
    client.force_login(make_agent())
    assert reverse("support_staff:inbox") in client.get(reverse("home"), **EN).content.decode()
