"""The capacity figure is read in one snapshot (orders.capacity.units_available_by_offer).

A settlement moves an order's units from "held" to "waiting for slots" in one commit. A
figure read term by term, with that commit landing between two of its reads, counted the
units in neither term: a lapsed order re-checked under the offer's lock could then be
settled on units another customer had just paid for (the race of
tests/orders/test_money_races.py, made deterministic here by committing the settlement
from another connection right after the capacity read that first looks at the orders).
"""

import threading

import pytest
from django.db import connection, connections

from kernodeck.orders import capacity
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("a commit between two reads needs PostgreSQL's concurrent connections")


def _commit_between_reads(commit):
    """A connection wrapper that runs `commit` on another connection (and waits for it)
    just after the first statement reading the orders table has run."""
    done = []

    def wrapper(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not done and "orders_order" in sql:
            done.append(sql)
            thread = threading.Thread(target=_on_own_connection, args=(commit,))
            thread.start()
            thread.join(timeout=60)
        return result

    return wrapper, done


def _on_own_connection(call):
    try:
        call()
    finally:
        connections.close_all()


def test_a_settlement_committed_while_the_figure_is_read_keeps_its_units_counted():
    operator = make_user(staff=True)
    offer = make_offer(units_total=4)
    customer = make_user()
    funded_account(customer, "5000", operator)
    order = make_order(owner=customer, offer=offer, units=4, days=3)
    assert capacity.units_free(offer=offer.pk) == 0  # held

    def settle():
        settlement_orders.order_pay_with_balance(order=order, actor=customer)

    wrapper, done = _commit_between_reads(settle)
    with connection.execute_wrapper(wrapper):
        free = capacity.units_free(offer=offer.pk)

    assert done, "the settlement was never committed during the read"
    order.refresh_from_db()
    assert order.payment_state == "settled"
    # Held before the commit, waiting for slots (or allocated) after it: never free.
    assert free == 0
    assert capacity.units_free(offer=offer.pk) == 0


def test_the_figure_is_one_statement_for_any_number_of_offers():
    offers = [make_offer(units_total=2) for _ in range(3)]
    make_order(owner=make_user(), offer=offers[0], units=1, days=3)
    statements = []

    def wrapper(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        free = capacity.units_available_by_offer(offers=offers)

    assert len(statements) == 1
    assert free == {offers[0].pk: 1, offers[1].pk: 2, offers[2].pk: 2}
    # Whole numbers, as every page's plural forms need (PostgreSQL's SUM is a numeric).
    assert {type(units) for units in free.values()} == {int}
