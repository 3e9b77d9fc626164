"""The audit trail's admin page finds an order's events by its reference and names what
each event is about ("Order KD-…", not `orders.order 7`), in a fixed number of queries."""

import pytest
from django.test import Client

from kernodeck.core.models import AuditEvent
from kernodeck.core.services import audit_record
from kernodeck.payments import services as payment_services
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import pay_topup

pytestmark = pytest.mark.django_db

AUDIT = "/backoffice/core/auditevent/"


def _operator(language="en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(make_user(staff=True, is_superuser=True))
    return client


def _rows(html: str) -> str:
    """The result table, empty when the page lists no event."""
    if 'id="result_list"' not in html:
        return ""
    return html.split('id="result_list"', 1)[1].split("</table>", 1)[0]


def test_searching_an_order_reference_finds_its_events_its_payments_and_transfers(
    configured, fresh_rates
):
    offer = make_offer()
    order = make_order(offer=offer)
    other = make_order(offer=offer)
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    audit_record(action="test.order_event", target=order)
    audit_record(action="test.other_order_event", target=other)
    pay_topup(intent)  # the watcher's events on the transfer and on the payment

    for term in (order.reference, order.reference.lower(), f"  {order.reference} "):
        rows = _rows(_operator().get(AUDIT, {"q": term}).content.decode())
        assert "test.order_event" in rows, term
        assert "test.other_order_event" not in rows
        # The payment's own events come with the order's.
        assert AuditEvent.objects.filter(target_id=str(intent.pk)).exists()
        assert f"Payment for order {order.reference}" in rows
        assert "payment.transfer_seen" in rows


@pytest.mark.parametrize(("language", "words"), [("en", "Order {}"), ("es", "Pedido {}")])
def test_events_name_their_order_by_its_reference(language, words):
    order = make_order()
    audit_record(action="test.order_event", target=order)

    rows = _rows(_operator(language).get(AUDIT).content.decode())

    assert words.format(order.reference) in rows
    assert f"orders.order {order.pk}" not in rows


def test_the_event_page_names_its_order_too():
    order = make_order()
    event = audit_record(action="test.order_event", target=order)

    html = _operator().get(f"{AUDIT}{event.pk}/change/").content.decode()

    assert f"Order {order.reference}" in html


def test_an_unknown_reference_finds_nothing_and_other_targets_keep_their_name():
    user = make_user()
    audit_record(action="account.test", target=user)
    assert "test" not in _rows(_operator().get(AUDIT, {"q": "KD-0000-0000"}).content.decode())
    rows = _rows(_operator().get(AUDIT).content.decode())
    assert f">Account {user.pk}</td>" in rows


@pytest.mark.parametrize("orders", [1, 6])
def test_the_page_names_its_targets_in_fixed_queries(
    django_assert_num_queries, configured, fresh_rates, orders
):
    offer = make_offer(units_total=10)
    for _ in range(orders):
        order = make_order(offer=offer)
        payment_services.payment_intent_create_for_order(
            order=order, method_code="usdt-tron", actor=order.owner
        )
        audit_record(action="test.order_event", target=order)
    client = _operator()
    with django_assert_num_queries(AUDIT_PAGE_QUERIES):
        client.get(AUDIT)


# The session and the user; the whole trail's count read with the date hierarchy's first
# and last moments (its days are known from them: all on one day), both filters' values
# in one statement, the page with its actors; and the targets' words: one query for the
# orders, one for the payments.
AUDIT_PAGE_QUERIES = 7
