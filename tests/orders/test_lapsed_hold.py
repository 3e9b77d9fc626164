"""Defect 1 (issue 9): units sold twice once a hold lapses. Every settlement path counts
the units again under the offer's lock after `hold_until` and refuses with a 409."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import EntryKind, LedgerEntry
from kernodeck.orders import capacity
from kernodeck.orders import services as order_services
from kernodeck.orders.models import Order, PaymentState
from kernodeck.payments import services as payment_services
from kernodeck.payments import watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, Resolution
from kernodeck.settlement import allocation
from kernodeck.settlement import orders as settlement_orders
from tests.factories import api_post, make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = pytest.mark.django_db

START = clock.now().replace(microsecond=0)


def settled_units(offer) -> int:
    return sum(
        Order.objects.filter(offer=offer, payment_state=PaymentState.SETTLED).values_list(
            "units", flat=True
        )
    )


@pytest.fixture
def ten_second_hold(settings):
    settings.KERNODECK_ORDER_HOLD_SECONDS = 10
    clock.freeze(START)


def the_attack():
    """X orders the last 4 units; the hold lapses; Y orders and pays the same 4."""
    operator = make_user(staff=True)
    offer = make_offer(units_total=4, prices={3: "100.00", 7: "210.00", 30: "800.00"})
    x, y = make_user(), make_user()
    funded_account(x, "1000", operator)
    funded_account(y, "1000", operator)
    x_order = make_order(owner=x, offer=offer, units=4, days=3)
    clock.freeze(START + timedelta(seconds=11))
    y_order = make_order(owner=y, offer=offer, units=4, days=3)
    settlement_orders.order_pay_with_balance(order=y_order, actor=y)
    return offer, x, x_order


def test_paying_from_the_balance_after_the_hold_lapsed_refuses_taken_units(ten_second_hold):
    offer, x, x_order = the_attack()

    with pytest.raises(order_services.UnitsReleased) as refused:
        settlement_orders.order_pay_with_balance(order=x_order, actor=x)

    assert refused.value.status == 409
    assert str(refused.value) == (
        f"The units of order {x_order.reference} were released when its hold lapsed, and "
        "only 0 are free now (it needs 4), so it cannot be settled. Cancel it and order again."
    )
    x_order.refresh_from_db()
    assert x_order.payment_state == PaymentState.AWAITING_PAYMENT
    assert ledger_selectors.balance_available(account=x) == Decimal("1000.00")
    assert not LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE, order=x_order).exists()
    assert settled_units(offer) == 4


def test_the_api_answers_409_with_the_reason(ten_second_hold, api):
    the_attack()
    funded_account(api.user, "1000", make_user(staff=True))
    clock.freeze(START)
    mine = make_order(owner=api.user, offer=make_offer(units_total=4), units=1)
    # Lapse this order's hold and let someone take every unit of its offer.
    clock.freeze(START + timedelta(seconds=11))
    other = make_user()
    funded_account(other, "5000", make_user(staff=True))
    taken = make_order(owner=other, offer=mine.offer, units=4, days=3)
    settlement_orders.order_pay_with_balance(order=taken, actor=other)

    response = api_post(api, f"/orders/{mine.reference}/pay-with-balance")

    assert response.status_code == 409
    assert "were released when its hold lapsed" in response.json()["detail"]
    mine.refresh_from_db()
    assert mine.payment_state == PaymentState.AWAITING_PAYMENT


def test_paying_after_the_hold_lapsed_still_works_when_units_are_free(ten_second_hold):
    operator = make_user(staff=True)
    offer = make_offer(units_total=4)
    x = make_user()
    funded_account(x, "1000", operator)
    order = make_order(owner=x, offer=offer, units=4, days=3)
    clock.freeze(START + timedelta(hours=5))

    settlement_orders.order_pay_with_balance(order=order, actor=x)

    order.refresh_from_db()
    assert order.payment_state == PaymentState.SETTLED


def _observed(intent, *, confirmations, txid="cd" * 32):
    return ObservedTransfer(
        network=intent.chain,
        txid=txid,
        index=0,
        address=intent.address,
        asset=intent.method.asset,
        amount_base=intent.amount_units,
        confirmations=confirmations,
        reference=intent.solana_reference,
    )


def test_crypto_confirmed_after_the_hold_lapsed_goes_to_review(
    ten_second_hold, configured, fresh_rates
):
    operator = make_user(staff=True)
    offer = make_offer(units_total=4)
    x = make_user()
    x_order = make_order(owner=x, offer=offer, units=4, days=3)
    intent = payment_services.payment_intent_create_for_order(
        order=x_order, method_code="usdt-tron", actor=x
    )
    # Seen in time, but its confirmations come after the hold (= the expiry) lapsed.
    watching.transfer_record(_observed(intent, confirmations=0), intent=intent)
    watching.payment_intent_reconcile(intent_id=intent.pk)
    clock.freeze(intent.expires_at + timedelta(seconds=1))
    y = make_user()
    funded_account(y, "5000", operator)
    y_order = make_order(owner=y, offer=offer, units=4, days=3)
    settlement_orders.order_pay_with_balance(order=y_order, actor=y)

    watching.transfer_record(_observed(intent, confirmations=100), intent=intent)
    intent = watching.payment_intent_reconcile(intent_id=intent.pk)

    intent.refresh_from_db()
    x_order.refresh_from_db()
    assert intent.status == IntentStatus.CONFIRMED
    assert intent.review_reason.startswith("Confirmed but not allocated: The units of order")
    assert x_order.payment_state == PaymentState.AWAITING_PAYMENT
    assert settled_units(offer) == 4
    # The operator cannot settle it either; crediting the balance is what is left.
    with pytest.raises(order_services.UnitsReleased):
        allocation.review_accept_and_settle(intent_id=intent.pk, actor=operator, reason="paid")
    intent.refresh_from_db()
    assert intent.resolution == ""
    allocation.review_credit_balance(intent_id=intent.pk, actor=operator, reason="units gone")
    intent.refresh_from_db()
    assert intent.resolution == Resolution.CREDITED


def test_operator_accept_after_the_hold_lapsed_refuses_taken_units(
    ten_second_hold, configured, fresh_rates
):
    operator = make_user(staff=True)
    offer = make_offer(units_total=4)
    x = make_user()
    x_order = make_order(owner=x, offer=offer, units=4, days=3)
    intent = payment_services.payment_intent_create_for_order(
        order=x_order, method_code="usdt-tron", actor=x
    )
    clock.freeze(intent.expires_at + timedelta(minutes=5))
    y = make_user()
    funded_account(y, "5000", operator)
    settlement_orders.order_pay_with_balance(
        order=make_order(owner=y, offer=offer, units=4, days=3), actor=y
    )
    watching.transfer_record(_observed(intent, confirmations=100), intent=intent)  # late
    intent = watching.payment_intent_reconcile(intent_id=intent.pk)
    assert intent.status == IntentStatus.LATE

    with pytest.raises(Conflict, match="were released when its hold lapsed"):
        allocation.review_accept_and_settle(intent_id=intent.pk, actor=operator, reason="late ok")

    intent.refresh_from_db()
    x_order.refresh_from_db()
    assert intent.status == IntentStatus.LATE and intent.resolution == ""
    assert x_order.payment_state == PaymentState.AWAITING_PAYMENT
    assert settled_units(offer) == 4


# -- property: whatever the customers do and however time passes, nothing is oversold ----

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("order"), st.integers(0, 2), st.sampled_from([1, 2, 3, 4, 4])),
        st.tuples(st.just("pay"), st.integers(0, 7), st.just(0)),
        st.tuples(st.just("cancel"), st.integers(0, 7), st.just(0)),
        st.tuples(st.just("wait"), st.sampled_from([1, 5, 11, 11, 30]), st.just(0)),
    ),
    max_size=14,
)


@hsettings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
# The attack, always tried: order 4 of 4, let the hold lapse, another customer
# orders and pays the same 4, then the first pays.
@example(ops=[("order", 0, 4), ("wait", 11, 0), ("order", 1, 4), ("pay", 1, 0), ("pay", 0, 0)])
def test_no_sequence_of_orders_payments_cancels_and_waits_oversells(ten_second_hold, ops):
    clock.freeze(START)
    with transaction.atomic():
        operator = make_user(staff=True)
        offer = make_offer(units_total=4)
        customers = [make_user() for _ in range(3)]
        for customer in customers:
            funded_account(customer, "10000", operator)
        orders = []
        for op, a, b in ops:
            try:
                if op == "order":
                    orders.append(make_order(owner=customers[a], offer=offer, units=b, days=3))
                elif op == "pay" and orders:
                    order = orders[a % len(orders)]
                    settlement_orders.order_pay_with_balance(order=order, actor=order.owner)
                elif op == "cancel" and orders:
                    order = orders[a % len(orders)]
                    settlement_orders.order_cancel(order=order, actor=order.owner)
                elif op == "wait":
                    clock.freeze(clock.now() + timedelta(seconds=a))
            except Conflict:
                pass
            # The fleet holds 4 units (units_total=4 builds its nodes).
            assert settled_units(offer) <= 4
            on_hold = sum(
                capacity.orders_on_hold().filter(offer=offer).values_list("units", flat=True)
            )
            assert settled_units(offer) + on_hold <= 4
        transaction.set_rollback(True)
