"""A refunded rental reads as refunded on the customer's order (issue 23, item 3): the
amount and reason from the ledger, a link to the statement, never "ended"."""

from decimal import Decimal

import pytest
from django.test import Client

from kernodeck.orders.models import RentalState
from kernodeck.provisioning import selectors as provisioning_selectors
from kernodeck.provisioning import services
from kernodeck.settlement import orders as settlement_orders
from tests.factories import (
    make_offer,
    make_operator,
    make_order,
    make_settled_order,
    make_ssh_key,
)

pytestmark = pytest.mark.django_db(transaction=True)


def refunded_order(reason="No GPU of this model is coming back this week."):
    offer = make_offer(units_total=1, prices={3: "10.80", 7: "32.40", 30: "100.00"})
    order = make_settled_order(offer=offer, days=7)
    operator = make_operator()
    services.rental_prepare(order=order, actor=operator)
    services.rental_fail(order=order, reason="the machine did not boot", actor=operator)
    return services.rental_refund(order=order, reason=reason, actor=operator)


def page(order, language):
    client = Client()
    client.force_login(order.owner)
    return client.get(f"/orders/{order.reference}/", HTTP_ACCEPT_LANGUAGE=language)


def rental_section(html):
    return html[html.index('id="rental"') : html.index('id="timeline"')]


def test_the_refund_is_read_from_the_ledger():
    order = refunded_order()

    refund = provisioning_selectors.rental_overview(order=order).refund

    assert refund.amount_usd == Decimal("32.40")
    assert refund.reason == "No GPU of this model is coming back this week."


@pytest.mark.parametrize(
    ("language", "refunded", "amount", "ended", "statement"),
    [
        ("es", "Reembolsado", "Reembolsado a tu saldo: 32,40 USD", "Finalizado", "movimientos"),
        ("en", "Refunded", "Refunded to your balance: 32.40 USD", "Ended", "balance statement"),
    ],
)
def test_a_refunded_order_says_refunded_with_amount_reason_and_statement_link(
    language, refunded, amount, ended, statement
):
    order = refunded_order()

    html = page(order, language).content.decode()

    rental = rental_section(html)
    assert amount in rental
    assert "No GPU of this model is coming back this week." in rental
    assert 'href="/balance/#statement"' in rental
    assert statement in rental
    assert f'<span class="badge info">{refunded}</span>' in html
    assert f">{ended}<" not in html
    assert "the machine and its data are released" not in rental
    assert "la máquina y sus datos" not in rental
    # The stages: paid, then refunded; the "end" stage never lights up green.
    assert 'class="stage refunded"' in rental
    assert 'class="stage done"' in rental  # the payment only
    assert rental.count('class="stage done"') == 1
    assert "topic=dates" not in rental  # no "ask support" for dates it will never have


def test_the_order_list_says_refunded():
    order = refunded_order()
    client = Client()
    client.force_login(order.owner)

    html = client.get("/orders/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert '<span class="badge info">Refunded</span>' in html
    assert ">Ended<" not in html


def test_a_queued_rental_refunded_before_any_machine_also_reads_refunded():
    offer = make_offer(units_total=1)
    operator = make_operator()
    order = make_order(offer=offer)
    services.node_state_set(
        node=offer.nodes.get(), state="maintenance", reason="fan", actor=operator
    )
    settlement_orders.order_settle(order=order, cause={"test": 1})
    order.refresh_from_db()
    assert order.rental_state == RentalState.QUEUED

    services.rental_refund(order=order, reason="no free GPU", actor=operator)

    html = page(order, "en").content.decode()
    assert "Refunded to your balance: 210.00 USD" in html
    assert "no free GPU" in html


def test_a_rental_that_ran_and_ended_still_reads_ended():
    order = make_settled_order(offer=make_offer(units_total=1))
    operator = make_operator()
    make_ssh_key(order.owner)
    services.rental_prepare(order=order, actor=operator)
    services.rental_deliver(
        order=order, actor=operator, host="gpu1.example.org", port=22, user="kd-x"
    )
    services.rental_end(order=order, reason="its time is up", actor=operator)

    html = page(order, "en").content.decode()

    assert '<span class="badge muted">Ended</span>' in html
    assert 'id="refund"' not in html
    assert "Refunded" not in rental_section(html)
