"""Issue 23, item 1: the protection against paying twice follows the money the chain saw,
not the customer's "I have paid". While money seen at any instructions of an order (top-up,
extension offer) is not decided, new instructions need an explicit "this is a different
payment", and the balance is not charged — in the services, under the order's lock."""

from datetime import timedelta
from decimal import Decimal

import pytest

from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.orders.models import PaymentState
from kernodeck.payments import review, selectors, services, watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, Rate, TransferKind
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups
from tests.factories import api_post, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = pytest.mark.django_db


def observed(intent, *, amount=None, asset=None, txid="ab" * 32, confirmations=100):
    return ObservedTransfer(
        network=intent.chain,
        txid=txid,
        index=0,
        address=intent.address,
        asset=asset or intent.method.asset,
        amount_base=intent.amount_units if amount is None else amount,
        confirmations=confirmations,
        reference=intent.solana_reference,
    )


def overpaid_usdc(owner=None):
    """The issue's case: USDC instructions, "I have paid" not pressed, twice the amount sent."""
    order = make_order(owner=owner)
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdc-ethereum", actor=order.owner
    )
    watching.transfer_record(observed(intent, amount=intent.amount_units * 2), intent=intent)
    intent = watching.payment_intent_reconcile(intent_id=intent.pk)
    assert intent.status == IntentStatus.OVERPAID
    assert intent.declared_at is None
    return order, intent


def test_an_overpayment_under_review_refuses_new_instructions_without_a_click(
    configured, fresh_rates
):
    order, intent = overpaid_usdc()

    with pytest.raises(services.PaymentsSeen) as refused:
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )

    assert refused.value.status == 409
    assert refused.value.code == "payments_seen"
    amount = Decimal(intent.amount_units * 2).scaleb(-6).normalize()
    assert f"{amount} USDC on Ethereum" in refused.value.message
    assert order.intents.count() == 1


def test_a_different_payment_said_so_gets_its_instructions_and_the_audit_notes_it(
    configured, fresh_rates
):
    order, _intent = overpaid_usdc()

    second = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner, different_payment=True
    )

    assert second.method_id == "btc-bitcoin"
    created = AuditEvent.objects.get(action="payment.intent_created", target_id=str(second.pk))
    assert created.after["different_payment"] is True


def test_a_transfer_stored_before_its_reconciliation_already_counts_as_seen(
    configured, fresh_rates
):
    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    services.payment_intent_abandon(intent=intent, actor=order.owner)
    watching.transfer_record(observed(intent, confirmations=0), intent=intent)
    intent.refresh_from_db()
    assert intent.status == IntentStatus.PENDING  # the watcher has not reconciled it yet

    [seen] = selectors.order_money_seen(order=order)
    assert seen.intent == intent
    with pytest.raises(services.PaymentsSeen):
        services.payment_intent_create_for_order(
            order=order, method_code="trx-tron", actor=order.owner
        )


def test_money_of_another_asset_sent_to_the_address_counts_until_reviewed(configured, fresh_rates):
    operator = make_user(staff=True)
    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    services.payment_intent_abandon(intent=intent, actor=order.owner)
    transfer = watching.transfer_record(observed(intent, asset="TRX"), intent=intent)
    assert transfer.kind == TransferKind.WRONG_ASSET

    [seen] = selectors.order_money_seen(order=order)
    assert seen.amounts == ("TRX",)
    with pytest.raises(services.PaymentsSeen):
        services.payment_intent_create_for_order(
            order=order, method_code="trx-tron", actor=order.owner
        )

    review.review_transfer_resolve(transfer_id=transfer.pk, actor=operator, note="sent back")
    assert selectors.order_money_seen(order=order) == []
    services.payment_intent_create_for_order(
        order=order, method_code="trx-tron", actor=order.owner
    )


def test_a_decided_case_no_longer_holds_the_order(configured, fresh_rates):
    operator = make_user(staff=True)
    order, intent = overpaid_usdc()

    review.review_mark_refunded(intent_id=intent.pk, actor=operator, reason="sent back by hand")

    assert selectors.order_money_seen(order=order) == []
    services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )


def test_expired_or_abandoned_instructions_without_money_hold_nothing(configured, fresh_rates):
    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    services.payment_intent_abandon(intent=intent, actor=order.owner)

    assert selectors.order_money_seen(order=order) == []
    services.payment_intent_create_for_order(
        order=order, method_code="trx-tron", actor=order.owner
    )


def test_the_balance_is_not_charged_while_the_overpayment_is_checked(configured, fresh_rates):
    order, _intent = overpaid_usdc()
    funded_account(order.owner, "1000", make_user(staff=True))

    with pytest.raises(services.PaymentsSeen) as refused:
        settlement_orders.order_pay_with_balance(order=order, actor=order.owner, confirm=True)

    assert refused.value.code == "payments_seen"
    assert "the balance is not charged" in refused.value.message
    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("1000.00")


def test_api_answers_409_payments_seen_unless_the_request_says_different_payment(
    api, configured, fresh_rates
):
    order, _intent = overpaid_usdc(owner=api.user)
    path = f"/orders/{order.reference}/payments"

    refused = api_post(api, path, {"method": "btc-bitcoin"})
    assert refused.status_code == 409
    assert refused.json()["code"] == "payments_seen"
    assert "being checked" in refused.json()["detail"]

    # Only JSON true says so: a string is not a confirmation.
    not_json_true = api_post(api, path, {"method": "btc-bitcoin", "different_payment": "yes"})
    assert not_json_true.status_code == 422

    created = api_post(api, path, {"method": "btc-bitcoin", "different_payment": True})
    assert created.status_code == 201
    assert created.json()["method"] == "btc-bitcoin"


def test_api_pay_with_balance_answers_payments_seen(api, configured, fresh_rates):
    order, _intent = overpaid_usdc(owner=api.user)
    funded_account(api.user, "1000", make_user(staff=True))

    refused = api_post(api, f"/orders/{order.reference}/pay-with-balance", {"confirm": True})

    assert refused.status_code == 409
    assert refused.json()["code"] == "payments_seen"


def test_a_top_up_with_money_under_review_refuses_new_instructions(configured, fresh_rates):
    account = make_user()
    topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    # Half the amount before the expiry, then the expiry: underpaid, under review.
    watching.transfer_record(observed(intent, amount=intent.amount_units // 2), intent=intent)
    clock.freeze(intent.expires_at + timedelta(seconds=1))  # the conftest unfreezes
    intent = watching.payment_intent_reconcile(intent_id=intent.pk)
    assert intent.status == IntentStatus.UNDERPAID
    Rate.objects.create(asset="TRX", usd_per_coin="0.24", source="kraken", fetched_at=clock.now())

    with pytest.raises(services.PaymentsSeen):
        settlement_topups.topup_new_instructions(
            topup=topup, method_code="trx-tron", actor=account
        )
    second = settlement_topups.topup_new_instructions(
        topup=topup, method_code="trx-tron", actor=account, different_payment=True
    )
    assert second.topup_id == topup.pk
