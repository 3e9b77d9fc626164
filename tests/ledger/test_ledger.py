from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.ledger import selectors, services
from kernodeck.ledger.models import EntryKind, LedgerEntry, TopUp
from kernodeck.orders.models import PaymentState
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import IntentStatus
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account, pay_topup

pytestmark = pytest.mark.django_db

operations = st.lists(
    st.one_of(
        st.tuples(st.just("credit"), st.sampled_from(["100", "500", "2000", "0.01", "73.33"])),
        st.tuples(st.just("debit"), st.sampled_from(["-5", "-99.99", "-700", "-2500"])),
        st.tuples(st.just("order"), st.sampled_from(["32.40", "210.00", "936.00"])),
    ),
    max_size=12,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=operations)
def test_balance_is_the_sum_of_entries_and_never_negative(ops):
    operator = make_user(staff=True)
    account = make_user()
    expected = Decimal("0")
    for kind, amount in ops:
        amount = Decimal(amount)
        if kind == "order":
            offer = make_offer(prices={3: amount, 7: "1.00", 30: "1.00"})
            order = make_order(owner=account, offer=offer, days=3)
            try:
                settlement_orders.order_pay_with_balance(order=order, actor=account)
                expected -= amount
            except services.InsufficientBalance:
                order.refresh_from_db()
                assert order.payment_state == PaymentState.AWAITING_PAYMENT
            continue
        try:
            services.balance_adjust(account=account, amount_usd=amount, actor=operator, reason="x")
            expected += amount
        except services.InsufficientBalance:
            pass
        assert selectors.balance_available(account=account) >= 0

    entries = list(LedgerEntry.objects.filter(account=account).order_by("sequence"))
    assert selectors.balance_available(account=account) == expected
    assert [e.sequence for e in entries] == list(range(1, len(entries) + 1))
    running = Decimal("0")
    for entry in entries:
        running += entry.amount_usd
        assert entry.balance_after_usd == running >= 0


def test_entries_are_append_only():
    entry = funded_account(make_user(), "100", make_user(staff=True))

    with pytest.raises(TypeError):
        entry.save()
    with pytest.raises(TypeError):
        entry.delete()


def test_database_refuses_a_negative_balance_and_a_second_charge():
    account = make_user()
    order = make_order(owner=account)
    funded_account(account, "1000", make_user(staff=True))
    settlement_orders.order_pay_with_balance(order=order, actor=account)
    last = LedgerEntry.objects.filter(account=account).order_by("-sequence").first()

    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.create(
            account=account,
            sequence=last.sequence + 1,
            kind=EntryKind.ADJUSTMENT,
            amount_usd=Decimal("-5000"),
            balance_after_usd=Decimal("-4000"),
            created_at=last.created_at,
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.create(
            account=account,
            sequence=last.sequence + 1,
            kind=EntryKind.ORDER_CHARGE,
            order=order,
            amount_usd=-order.total_usd,
            balance_after_usd=Decimal("0"),
            created_at=last.created_at,
        )


@pytest.mark.parametrize("amount", ["99", "101", "100.5", "abc", "0", "-100", "1e2x"])
def test_only_the_four_top_up_amounts_are_accepted(configured, fresh_rates, amount):
    expected = r"Top-ups are exactly 100 USD, 500 USD, 2,000 USD, 10,000 USD\."
    with pytest.raises(InvalidInput, match=expected):
        settlement_topups.topup_create(
            account=make_user(), amount_usd=amount, method_code="usdt-tron"
        )
    assert not TopUp.objects.exists()


def test_top_up_is_credited_only_when_its_payment_is_confirmed(configured, fresh_rates):
    account = make_user()
    topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    assert selectors.topups_pending_usd(account=account) == Decimal("100.00")

    payment_services.payment_intent_declare(intent=intent, actor=account)
    assert selectors.balance_available(account=account) == Decimal("0.00")

    pay_topup(intent)
    pay_topup(intent)  # a replay

    topup.refresh_from_db()
    assert topup.status == "credited"
    assert selectors.balance_available(account=account) == Decimal("100.00")
    assert selectors.topups_pending_usd(account=account) == Decimal("0.00")
    assert LedgerEntry.objects.filter(account=account, kind=EntryKind.TOPUP_CREDIT).count() == 1


def test_a_pending_top_up_is_never_spendable(configured, fresh_rates):
    account = make_user()
    settlement_topups.topup_create(account=account, amount_usd="500", method_code="btc-bitcoin")
    order = make_order(owner=account)

    with pytest.raises(services.InsufficientBalance) as refused:
        settlement_orders.order_pay_with_balance(order=order, actor=account)

    assert (refused.value.available, refused.value.needed) == (Decimal("0.00"), order.total_usd)
    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT
    assert not LedgerEntry.objects.exists()


def test_paying_twice_charges_and_settles_once():
    account = make_user()
    funded_account(account, "1000", make_user(staff=True))
    order = make_order(owner=account)

    settlement_orders.order_pay_with_balance(order=order, actor=account)
    settlement_orders.order_pay_with_balance(order=order, actor=account)

    order.refresh_from_db()
    assert order.payment_state == PaymentState.SETTLED
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE).count() == 1
    assert selectors.balance_available(account=account) == Decimal("1000") - order.total_usd


def test_a_cancelled_order_cannot_be_paid_from_the_balance():

    account = make_user()
    funded_account(account, "1000", make_user(staff=True))
    order = make_order(owner=account)
    settlement_orders.order_cancel(order=order, actor=account)

    with pytest.raises(Conflict, match="cannot be paid"):
        settlement_orders.order_pay_with_balance(order=order, actor=account)
    assert selectors.balance_available(account=account) == Decimal("1000.00")


def test_expired_top_up_gets_new_instructions_at_a_new_address(configured, fresh_rates):
    from datetime import timedelta

    from kernodeck.core import clock
    from kernodeck.payments import watching

    account = make_user()
    topup, first = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    with pytest.raises(Conflict, match="already has payment instructions"):
        settlement_topups.topup_new_instructions(
            topup=topup, method_code="trx-tron", actor=account
        )

    clock.freeze(first.expires_at + timedelta(seconds=1))
    watching.payment_intents_expire()
    for rate in fresh_rates.values():
        rate.fetched_at = clock.now()
        rate.save(update_fields=["fetched_at"])
    second = settlement_topups.topup_new_instructions(
        topup=topup, method_code="usdt-tron", actor=account
    )

    assert second.address != first.address
    assert second.topup_id == topup.pk


def test_refund_of_a_settled_order_credits_its_total_once():
    operator = make_user(staff=True)
    account = make_user()
    funded_account(account, "1000", operator)
    order = make_order(owner=account)
    settlement_orders.order_pay_with_balance(order=order, actor=account)
    order.refresh_from_db()

    services.balance_refund_order(order=order, actor=operator, reason="provisioning failed")
    services.balance_refund_order(order=order, actor=operator, reason="pressed twice")

    assert selectors.balance_available(account=account) == Decimal("1000.00")
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND_CREDIT).count() == 1


def test_topup_status_follows_reconciliation(configured, fresh_rates):
    account = make_user()
    _topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )

    pay_topup(intent)

    intent.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
