"""What the order file reads: the order row alone (its owner is the viewer), and the payment
methods and the available balance only where the page offers a way to pay."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from kernodeck.core.errors import NotFound
from kernodeck.ledger.models import LedgerEntry
from kernodeck.orders import selectors
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_order, make_settled_order, make_user

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
# The session (with the cached engine, a query only until it is cached: a first request), the
# user, the order, its instructions and its audit events.
READS_WITHOUT_A_WAY_TO_PAY = 5
# The methods' own query (the instructions' query joins the table too) and the balance's.
METHODS_TABLE = 'FROM "payments_paymentmethod"'
LEDGER_TABLE = f'FROM "{LedgerEntry._meta.db_table}"'


def _order_file(client, order, **headers):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("orders:detail", args=[order.reference]), **headers)
    return response, [q["sql"] for q in queries.captured_queries]


def test_order_file_get_reads_the_order_row_alone_and_its_owner_costs_nothing(
    django_assert_num_queries,
):
    order = make_order()
    owner = order.owner

    with django_assert_num_queries(1):
        found = selectors.order_file_get(owner=owner, reference=order.reference.lower())
    with django_assert_num_queries(0):
        assert found.owner is owner
        assert found.owner_id == owner.pk

    assert found.pk == order.pk


def test_order_file_get_refuses_another_customers_reference():
    order = make_order()

    with pytest.raises(NotFound):
        selectors.order_file_get(owner=make_user(), reference=order.reference)


def test_another_customers_order_file_and_its_state_are_not_found(client):
    order = make_order()
    client.force_login(make_user())

    detail = client.get(reverse("orders:detail", args=[order.reference]))
    state = client.get(reverse("orders:state", args=[order.reference]))

    assert (detail.status_code, state.status_code) == (404, 404)


def test_a_cancelled_order_file_reads_no_payment_methods_and_no_balance(
    client, demo_mode, fresh_rates
):
    order = make_order()
    settlement_orders.order_cancel(order=order, actor=order.owner)
    client.force_login(order.owner)

    response, queries = _order_file(client, order, **EN)

    page = response.content.decode()
    assert response.status_code == 200
    assert "Do not send any payment for this order" in page
    assert 'name="method"' not in page
    assert "Order cancelled" in page and "(by you)" in page
    assert len(queries) == READS_WITHOUT_A_WAY_TO_PAY, queries
    assert not any(METHODS_TABLE in q or LEDGER_TABLE in q for q in queries)


def test_a_settled_order_file_reads_no_payment_methods_and_no_balance(client):
    order = make_settled_order()
    client.force_login(order.owner)

    response, queries = _order_file(client, order, **EN)

    assert response.status_code == 200
    assert "Payment settled on" in response.content.decode()
    assert not any(METHODS_TABLE in q for q in queries)
    assert not any(LEDGER_TABLE in q and "SUM(" in q for q in queries)  # the balance


def test_an_order_awaiting_payment_still_offers_every_method_and_the_balance(
    client, demo_mode, fresh_rates
):
    order = make_order()
    client.force_login(order.owner)

    response, queries = _order_file(client, order, **EN)

    page = response.content.decode()
    assert response.status_code == 200
    assert 'name="method" value="btc-bitcoin"' in page
    assert "Your available balance (0.00 USD) does not cover the total" in page
    assert page.count('name="csrfmiddlewaretoken"') >= 2  # pay form (and the layout's)
    assert any(METHODS_TABLE in q for q in queries)
    assert any(LEDGER_TABLE in q for q in queries)


def test_the_order_file_speaks_the_customers_language(client, demo_mode, fresh_rates):
    order = make_order()
    client.force_login(order.owner)

    response, _queries = _order_file(client, order, HTTP_ACCEPT_LANGUAGE="es")

    page = response.content.decode()
    assert '<html lang="es">' in page
    assert "Elige cómo pagar" in page


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_hand_written_reads_load_what_the_orm_loads():
    """order_file_get and the timeline's audit_trail_of write their statements by hand:
    every column comes back as the ORM gives it (moments, decimals, JSON), in its order."""
    from kernodeck.core.models import AuditEvent
    from kernodeck.core.selectors import audit_trail_of
    from kernodeck.orders.models import Order

    order = make_settled_order()

    found = selectors.order_file_get(owner=order.owner, reference=order.reference)
    assert _fields(found) == _fields(Order.objects.get(pk=order.pk))
    assert found.settled_at is not None and found.settled_at.utcoffset() is not None

    events = audit_trail_of(target_type="orders.order", target_id=order.pk)
    expected = AuditEvent.objects.filter(
        target_type="orders.order", target_id=str(order.pk)
    ).order_by("created_at", "id")
    assert [_fields(e) for e in events] == [_fields(e) for e in expected]
    assert len(events) >= 2 and any(e.after or e.data for e in events)
