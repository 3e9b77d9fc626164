from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import translation

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import EntryKind
from kernodeck.orders.models import PaymentState
from kernodeck.payments import review, services, watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, Resolution, Transfer
from kernodeck.settlement import allocation
from kernodeck.settlement import topups as settlement_topups
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import pay_topup

pytestmark = pytest.mark.django_db


def usdt_order_intent(total="210.00"):
    order = make_order(offer=make_offer(prices={3: "100.00", 7: total, 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )


def test_overpaid_order_accepted_settles_and_credits_the_excess(configured, fresh_rates):
    operator = make_user(staff=True)
    intent = usdt_order_intent()  # 209.96 USDT at 1.0002
    pay_topup(intent, amount_base=300_000_000)  # 300 USDT
    intent.refresh_from_db()
    assert intent.status == IntentStatus.OVERPAID

    allocation.review_accept_and_settle(
        intent_id=intent.pk, actor=operator, reason="customer sent 300"
    )

    intent.refresh_from_db()
    intent.order.refresh_from_db()
    assert intent.order.payment_state == PaymentState.SETTLED
    assert intent.resolution == Resolution.SETTLED
    # 300 USDT at 1.0002 = 300.06 USD; due 210.00 -> 90.06 USD credited.
    assert ledger_selectors.balance_available(account=intent.owner) == Decimal("90.06")
    event = AuditEvent.objects.get(action="order.payment_reviewed", target_id=str(intent.order.pk))
    assert event.actor == operator


def test_a_decision_needs_a_reason_and_happens_once(configured, fresh_rates):
    operator = make_user(staff=True)
    intent = usdt_order_intent()
    pay_topup(intent, amount_base=300_000_000)

    with pytest.raises(InvalidInput):
        review.review_mark_refunded(intent_id=intent.pk, actor=operator, reason="  ")
    review.review_mark_refunded(intent_id=intent.pk, actor=operator, reason="sent back by hand")
    with pytest.raises(Conflict, match="already decided"):
        allocation.review_accept_and_settle(intent_id=intent.pk, actor=operator, reason="again")

    intent.refresh_from_db()
    assert intent.order.payment_state == PaymentState.AWAITING_PAYMENT
    assert ledger_selectors.balance_available(account=intent.owner) == Decimal("0.00")


def test_a_case_without_an_exception_cannot_be_decided(configured, fresh_rates):
    intent = usdt_order_intent()

    with pytest.raises(Conflict, match="not waiting for a decision"):
        allocation.review_accept_and_settle(
            intent_id=intent.pk, actor=make_user(staff=True), reason="x"
        )


def test_late_payment_credited_to_the_balance(configured, fresh_rates):
    intent = usdt_order_intent()
    clock.freeze(intent.expires_at + timedelta(minutes=5))
    pay_topup(intent)
    intent.refresh_from_db()
    assert intent.status == IntentStatus.LATE

    allocation.review_credit_balance(
        intent_id=intent.pk, actor=make_user(staff=True), reason="late"
    )

    assert ledger_selectors.balance_available(account=intent.owner) == Decimal("210.00")
    intent.order.refresh_from_db()
    assert intent.order.payment_state == PaymentState.AWAITING_PAYMENT


def test_late_top_up_is_credited_at_the_lower_rate(configured, fresh_rates):
    account = make_user()
    _topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="btc-bitcoin"
    )
    clock.freeze(intent.expires_at + timedelta(minutes=5))
    pay_topup(intent)
    intent.refresh_from_db()
    assert intent.status == IntentStatus.LATE
    fresh_rates["BTC"].fetched_at = clock.now()
    fresh_rates["BTC"].save(update_fields=["fetched_at"])
    services.rate_record_manual(asset="BTC", usd_per_coin="90000")  # BTC fell since the quote

    allocation.review_accept_and_settle(
        intent_id=intent.pk, actor=make_user(staff=True), reason="late"
    )

    # 0.00103093 BTC quoted at 97 000 (= 100.00) is worth 92.78 at 90 000.
    assert ledger_selectors.balance_available(account=account) == Decimal("92.78")


def test_overpaid_top_up_is_credited_up_to_twice_its_amount(configured, fresh_rates):
    account = make_user()
    _topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    pay_topup(intent, amount_base=500_000_000)  # 500 USDT for a 100 USD top-up

    allocation.review_accept_and_settle(
        intent_id=intent.pk, actor=make_user(staff=True), reason="over"
    )

    assert ledger_selectors.balance_available(account=account) == Decimal("200.00")


def test_record_a_transfer_by_hand_goes_through_reconciliation(configured, fresh_rates):
    operator = make_user(staff=True)
    intent = usdt_order_intent()

    review.review_record_transfer(
        intent_id=intent.pk,
        txid="f00d" * 16,
        amount="209.96",
        actor=operator,
        reason="seen on tronscan",
    )

    intent.refresh_from_db()
    intent.order.refresh_from_db()
    transfer = Transfer.objects.get()
    assert transfer.recorded_by == operator
    assert intent.status == IntentStatus.ALLOCATED
    assert intent.order.payment_state == PaymentState.SETTLED
    with pytest.raises(Conflict, match="already recorded"):
        review.review_record_transfer(
            intent_id=intent.pk, txid="f00d" * 16, amount="1", actor=operator, reason="twice"
        )
    with pytest.raises(InvalidInput):
        review.review_record_transfer(
            intent_id=intent.pk, txid="beef", amount="0.0000001", actor=operator, reason="x"
        )


@pytest.mark.parametrize(
    ("txid", "amount", "field"),
    [
        ("ab-cd", "1", "txid"),
        ("ab cd", "1", "txid"),
        ("ab\x00cd", "1", "txid"),
        ("٣" * 64, "1", "txid"),
        ("f" * 101, "1", "txid"),
        ("", "1", "txid"),
        ("f00d" * 16, "9" * 45, "amount"),
        ("f00d" * 16, "1e60", "amount"),
    ],
)
def test_a_transfer_recorded_by_hand_with_impossible_values_is_refused(
    configured, fresh_rates, txid, amount, field
):
    operator = make_user(staff=True)
    intent = usdt_order_intent()

    with pytest.raises(InvalidInput) as refused:
        review.review_record_transfer(
            intent_id=intent.pk, txid=txid, amount=amount, actor=operator, reason="typed"
        )

    assert refused.value.field == field
    assert Transfer.objects.count() == 0
    intent.refresh_from_db()
    assert intent.status == IntentStatus.PENDING


def test_review_queue_is_for_staff_only_and_lists_cases(configured, fresh_rates):
    intent = usdt_order_intent()
    pay_topup(intent, amount_base=300_000_000)
    watching.transfer_record(
        ObservedTransfer(
            network="tron",
            txid="99" * 32,
            index=0,
            address="TNotOurs",
            asset="TRX",
            amount_base=1,
            confirmations=1,
        ),
        intent=None,
    )
    url = reverse("backoffice:review_queue")
    customer, staff = Client(), Client()
    customer.force_login(intent.owner)
    operator = make_user(staff=True)
    operator.user_permissions.add(
        Permission.objects.get(codename="review_payment", content_type__app_label="payments")
    )
    staff.force_login(operator)

    assert Client().get(url).status_code == 302
    assert customer.get(url).status_code == 403
    page = staff.get(url).content.decode()
    assert intent.order.reference in page
    assert "9999999999" in page

    case = reverse("backoffice:intent_case", args=[intent.pk])
    staff.post(case, {"form": "decision", "action": "settle", "reason": "ok"})
    intent.refresh_from_db()
    assert intent.resolution == Resolution.SETTLED


def test_overpaid_top_up_credited_to_the_balance_is_an_overpayment_and_no_longer_pending(
    configured, fresh_rates
):
    account = make_user()
    _topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    pay_topup(intent, amount_base=300_000_000)  # 300 USDT for a 100 USD top-up
    assert ledger_selectors.topups_pending_usd(account=account) == Decimal("100.00")

    allocation.review_credit_balance(
        intent_id=intent.pk, actor=make_user(staff=True), reason="three times the amount"
    )

    entry = ledger_selectors.statement(account=account).get()
    assert (entry.kind, entry.amount_usd) == ("overpayment_credit", Decimal("300.06"))
    assert ledger_selectors.topups_pending_usd(account=account) == Decimal("0.00")
    assert list(ledger_selectors.topups_pending(account=account)) == []


def test_late_top_up_credited_to_the_balance_stays_a_late_payment(configured, fresh_rates):
    account = make_user()
    _topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    clock.freeze(intent.expires_at + timedelta(minutes=5))
    try:
        pay_topup(intent)
        intent.refresh_from_db()
        assert intent.status == IntentStatus.LATE
        allocation.review_credit_balance(
            intent_id=intent.pk, actor=make_user(staff=True), reason="late"
        )
    finally:
        clock.freeze(None)

    assert ledger_selectors.statement(account=account).get().kind == "late_payment_credit"


def test_underpaid_order_credited_to_the_balance_is_labelled_an_underpayment(
    configured, fresh_rates
):
    intent = usdt_order_intent()
    pay_topup(intent, amount_base=100_000_000)  # 100 USDT of 209.96
    clock.freeze(intent.expires_at + timedelta(minutes=1))
    try:
        intent = watching.payment_intent_reconcile(intent_id=intent.pk)
        assert intent.status == IntentStatus.UNDERPAID
        allocation.review_credit_balance(
            intent_id=intent.pk, actor=make_user(staff=True), reason="short; credit it"
        )
    finally:
        clock.freeze(None)

    entry = ledger_selectors.statement(account=intent.owner).get()
    assert (entry.kind, entry.amount_usd) == ("underpayment_credit", Decimal("100.02"))
    with translation.override("en"):
        assert entry.get_kind_display() == "Underpayment credited"
    with translation.override("es"):
        assert entry.get_kind_display() == "Pago insuficiente abonado"


def test_every_review_credit_cause_has_its_own_label_in_both_languages():
    kinds = [
        EntryKind.OVERPAYMENT_CREDIT,
        EntryKind.LATE_PAYMENT_CREDIT,
        EntryKind.UNDERPAYMENT_CREDIT,
        EntryKind.REVIEW_CREDIT,
    ]
    assert set(allocation.REVIEW_CREDIT_KINDS.values()) | {EntryKind.REVIEW_CREDIT} == set(kinds)
    for language in ("en", "es"):
        with translation.override(language):
            labels = [str(kind.label) for kind in kinds]
        assert len(set(labels)) == len(kinds)
    with translation.override("es"):
        assert str(EntryKind.REVIEW_CREDIT.label) == "Pago abonado tras revisión"
