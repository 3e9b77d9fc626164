"""Concurrent pay-with-balance calls on PostgreSQL: exactly the affordable ones settle."""

import threading
from decimal import Decimal

import pytest
from django.db import connection, connections

from kernodeck.core.errors import Conflict
from kernodeck.ledger import selectors
from kernodeck.ledger.models import EntryKind, LedgerEntry
from kernodeck.orders.models import PaymentState
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")


def test_twenty_concurrent_calls_for_two_orders_the_balance_cannot_both_cover():
    account = make_user()
    funded_account(account, "300", make_user(staff=True))
    offer = make_offer(prices={3: "200.00", 7: "210.00", 30: "800.00"}, units_total=10)
    orders = [make_order(owner=account, offer=offer, days=3) for _ in range(2)]  # 2 x 200 > 300
    start = threading.Barrier(20)
    outcomes = []

    def pay(order):
        try:
            start.wait()
            settlement_orders.order_pay_with_balance(order=order, actor=account)
            outcomes.append("paid")
        except Conflict:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=pay, args=(orders[n % 2],)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    states = sorted(
        o.payment_state for o in (type(orders[0]).objects.filter(pk__in=[o.pk for o in orders]))
    )
    assert states == [PaymentState.AWAITING_PAYMENT, PaymentState.SETTLED]
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE).count() == 1
    assert selectors.balance_available(account=account) == Decimal("100.00")
    assert len(outcomes) == 20
