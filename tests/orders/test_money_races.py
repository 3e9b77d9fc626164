"""Issue 9, defects 1, 4 and 6, raced in real concurrent PostgreSQL transactions.

Every racer either succeeds or gets a ServiceError (a 409 for a lost race); nothing else
(no OperationalError from a deadlock, no 500) may escape, and the books stay right.
"""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection, connections

from kernodeck.core import clock
from kernodeck.core.errors import ServiceError
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import EntryKind, LedgerEntry
from kernodeck.orders.models import Order, PaymentState
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments import services as payment_services
from kernodeck.payments import watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, PaymentIntent
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres(settings):
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")
    settings.KERNODECK_THROTTLE_PAYMENT_CREATE = (10_000, 3600)
    settings.KERNODECK_THROTTLE_PAYMENT_DECLARE = (10_000, 3600)
    settings.KERNODECK_MAX_OPEN_TOPUPS = 10_000


def race(*calls):
    """Start every call at once on its own connection; return (outcomes, escaped errors)."""
    start = threading.Barrier(len(calls))
    outcomes, escaped = [None] * len(calls), []

    def run(n, call):
        try:
            start.wait()
            call()
            outcomes[n] = "ok"
        except ServiceError as exc:
            outcomes[n] = f"{exc.status}"
        except Exception as exc:  # anything else escaping is what the test reports
            escaped.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n, c)) for n, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes, escaped


@pytest.mark.parametrize("round_", range(6))
def test_cancel_pay_declare_new_instructions_and_the_watcher_on_one_order(
    configured, fresh_rates, round_
):
    account = make_user()
    funded_account(account, "1000", make_user(staff=True))
    order = make_order(owner=account, offer=make_offer(units_total=10))
    crypto = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=account
    )
    payment_services.payment_intent_abandon(intent=crypto, actor=account)
    # Its transfer is already confirmed on chain; the watcher's reconcile is one racer.
    watching.transfer_record(
        ObservedTransfer(
            network="tron",
            txid=f"{round_:02d}" * 32,
            index=0,
            address=crypto.address,
            asset="USDT",
            amount_base=crypto.amount_units,
            confirmations=100,
        ),
        intent=crypto,
    )

    def pay():
        settlement_orders.order_pay_with_balance(order=order, actor=account, confirm=True)

    def cancel():
        settlement_orders.order_cancel(order=order, actor=account)

    def new_instructions():
        payment_services.payment_intent_create_for_order(
            order=order, method_code="trx-tron", actor=account
        )

    def declare():
        payment_services.payment_intent_declare(intent=crypto, actor=account)

    def watcher():
        watching.payment_intent_reconcile(intent_id=crypto.pk)

    def topup():
        settlement_topups.topup_create(account=account, amount_usd="100", method_code="usdt-tron")

    outcomes, escaped = race(pay, cancel, new_instructions, declare, watcher, topup, pay, cancel)

    assert escaped == []
    assert None not in outcomes
    order.refresh_from_db()
    crypto.refresh_from_db()
    charges = LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE, order=order).count()
    allocated = crypto.status == IntentStatus.ALLOCATED
    if order.payment_state == PaymentState.SETTLED:
        assert charges + allocated == 1  # paid exactly once
    else:
        assert order.payment_state == PaymentState.CANCELLED
        assert charges == 0 and not allocated
    assert ledger_selectors.balance_available(account=account) == (
        Decimal("1000.00") - charges * order.total_usd
    )
    # No instructions of a settled or cancelled order can still be paid.
    assert payment_selectors.live_intent(payment_selectors.intents_for_order(order=order)) is None
    for intent in PaymentIntent.objects.filter(order=order).exclude(pk=crypto.pk):
        assert intent.closed_at is not None


@pytest.mark.parametrize("round_", range(4))
def test_a_lapsed_order_paid_while_another_customer_takes_its_units(settings, round_):
    settings.KERNODECK_ORDER_HOLD_SECONDS = 10
    start = clock.now()
    clock.freeze(start)
    operator = make_user(staff=True)
    offer = make_offer(units_total=4)
    x, y = make_user(), make_user()
    funded_account(x, "5000", operator)
    funded_account(y, "5000", operator)
    x_order = make_order(owner=x, offer=offer, units=4, days=3)
    clock.freeze(start + timedelta(seconds=11))  # X's hold lapsed; clock shared by threads

    def x_pays():
        settlement_orders.order_pay_with_balance(order=x_order, actor=x)

    def y_orders_and_pays():
        y_order = make_order(owner=y, offer=offer, units=4, days=3)
        settlement_orders.order_pay_with_balance(order=y_order, actor=y)

    outcomes, escaped = race(x_pays, y_orders_and_pays)

    assert escaped == []
    assert sorted(outcomes) == ["409", "ok"]
    settled = Order.objects.filter(offer=offer, payment_state=PaymentState.SETTLED)
    assert sum(o.units for o in settled) == 4
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE).count() == 1


@pytest.mark.parametrize("round_", range(6))
def test_pay_with_balance_cancel_and_new_instructions_never_deadlock(
    configured, fresh_rates, round_
):
    """The issue's deadlock: paying locked the account then the order, while cancelling
    and creating instructions locked the order and then inserted rows whose foreign key
    takes a key-share lock on the account."""
    account = make_user()
    funded_account(account, "1000", make_user(staff=True))
    orders = [make_order(owner=account, offer=make_offer(units_total=10)) for _ in range(2)]

    def pay(order):
        return lambda: settlement_orders.order_pay_with_balance(order=order, actor=account)

    def cancel(order):
        return lambda: settlement_orders.order_cancel(order=order, actor=account)

    def new_instructions(order):
        return lambda: payment_services.payment_intent_create_for_order(
            order=order, method_code="usdt-tron", actor=account
        )

    calls = []
    for order in orders:
        calls += [cancel(order), pay(order), new_instructions(order), pay(order), cancel(order)]
    outcomes, escaped = race(*calls)

    assert escaped == []
    assert None not in outcomes
    for order in orders:
        order.refresh_from_db()
        charges = LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE, order=order).count()
        assert order.payment_state in (PaymentState.SETTLED, PaymentState.CANCELLED)
        assert charges == (order.payment_state == PaymentState.SETTLED)
    settled = sum(o.payment_state == PaymentState.SETTLED for o in orders)
    assert ledger_selectors.balance_available(account=account) == (
        Decimal("1000.00") - settled * orders[0].total_usd
    )
