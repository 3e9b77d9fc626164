"""Defect 4 (issue 9): paying twice. Settling or cancelling an order closes its unpaid
instructions; their page says "do not send" and hides amount, address and QR; whatever
still arrives is recorded and goes to review; paying from the balance after "I have paid"
needs a confirmation."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import EntryKind, LedgerEntry
from kernodeck.orders.models import PaymentState
from kernodeck.payments import review_selectors, services, uris, watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, Rate, TransferKind
from kernodeck.settlement import allocation
from kernodeck.settlement import orders as settlement_orders
from tests.factories import api_post, make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def order_with_instructions(method="btc-bitcoin", funded="1000"):
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"}))
    if funded:
        funded_account(order.owner, funded, make_user(staff=True))
    intent = services.payment_intent_create_for_order(
        order=order, method_code=method, actor=order.owner
    )
    return order, intent


def sent(intent, *, confirmations=100, txid="ef" * 32):
    watching.transfer_record(
        ObservedTransfer(
            network=intent.chain,
            txid=txid,
            index=0,
            address=intent.address,
            asset=intent.method.asset,
            amount_base=intent.amount_units,
            confirmations=confirmations,
            reference=intent.solana_reference,
        ),
        intent=intent,
    )
    return watching.payment_intent_reconcile(intent_id=intent.pk)


def test_cancelling_closes_the_instructions_and_their_page_says_do_not_send(
    client, configured, fresh_rates
):
    order, intent = order_with_instructions()
    amount = uris.amount_text(intent.amount_units, intent.method.decimals)

    settlement_orders.order_cancel(order=order, actor=order.owner)

    intent.refresh_from_db()
    assert intent.closed_at is not None
    assert intent.closed_reason == "order_cancelled"
    assert intent.status == IntentStatus.PENDING  # the status stays the real one
    client.force_login(order.owner)
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    assert "Do not send anything for these instructions" in page
    assert "The order was cancelled, so these instructions were closed." in page
    assert intent.address not in page
    assert amount not in page
    assert "<svg" not in page  # no QR code
    assert "I have paid" not in page


def test_i_have_paid_on_closed_instructions_is_refused(api, configured, fresh_rates):
    order = make_order(owner=api.user)
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=api.user
    )
    api_post(api, f"/orders/{order.reference}/cancel")

    refused = api_post(api, f"/payments/{intent.pk}/declare")

    assert refused.status_code == 409
    assert refused.json()["detail"].startswith(
        "These instructions are closed (the order was cancelled): do not send anything"
    )
    intent.refresh_from_db()
    assert intent.declared_at is None
    shown = api.get(f"/api/v1/payments/{intent.pk}").json()
    assert shown["closed_reason"] == "order_cancelled" and shown["closed_at"]
    assert shown["outstanding_base_units"] == "0"


def test_paying_from_the_balance_closes_the_instructions(client, configured, fresh_rates):
    order, intent = order_with_instructions()

    settlement_orders.order_pay_with_balance(order=order, actor=order.owner)

    intent.refresh_from_db()
    assert intent.closed_reason == "order_settled"
    client.force_login(order.owner)
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    assert "The order is already paid, so these instructions were closed." in page
    assert intent.address not in page


def test_crypto_reaching_closed_instructions_is_recorded_and_goes_to_review(
    configured, fresh_rates
):
    order, intent = order_with_instructions()
    settlement_orders.order_pay_with_balance(order=order, actor=order.owner)
    balance = ledger_selectors.balance_available(account=order.owner)

    intent = sent(intent)

    assert intent.status != IntentStatus.ALLOCATED
    transfer = intent.transfers.get()
    assert transfer.kind == TransferKind.UNALLOCATED
    assert list(review_selectors.review_transfers()) == [transfer]
    assert ledger_selectors.balance_available(account=order.owner) == balance
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE, order=order).count() == 1


def test_a_payment_seen_before_cancelling_goes_to_review_not_to_the_order(configured, fresh_rates):
    order, intent = order_with_instructions(funded=None)
    sent(intent, confirmations=0)  # seen, unconfirmed
    settlement_orders.order_cancel(order=order, actor=order.owner)

    intent = sent(intent, confirmations=100)

    order.refresh_from_db()
    assert order.payment_state == PaymentState.CANCELLED
    assert intent.status == IntentStatus.CONFIRMED
    assert intent.review_reason.startswith("Confirmed after its instructions were closed")
    assert intent in review_selectors.review_intents()


def test_settling_by_crypto_closes_the_other_instructions_but_not_its_own(configured, fresh_rates):
    order, first = order_with_instructions(funded=None)
    services.payment_intent_abandon(intent=first, actor=order.owner)
    second = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )

    second = sent(second)

    first.refresh_from_db()
    assert second.status == IntentStatus.ALLOCATED and second.closed_at is None
    assert first.closed_reason == "order_settled"


def test_balance_after_i_have_paid_needs_a_confirmation_on_the_api(api, configured, fresh_rates):
    funded_account(api.user, "1000", make_user(staff=True))
    order = make_order(owner=api.user)
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=api.user
    )
    api_post(api, f"/payments/{intent.pk}/declare")

    refused = api_post(api, f"/orders/{order.reference}/pay-with-balance")
    also_refused = api_post(api, f"/orders/{order.reference}/pay-with-balance", {"confirm": False})

    assert refused.status_code == 409 and also_refused.status_code == 409
    assert refused.json()["detail"].startswith(
        f"You said you already sent a payment for order {order.reference} "
        "(USDT on Tron (TRC-20)). If that transfer arrives after you pay from your "
        "balance, you will have paid twice"
    )
    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT
    assert ledger_selectors.balance_available(account=api.user) == Decimal("1000.00")

    paid = api_post(api, f"/orders/{order.reference}/pay-with-balance", {"confirm": True})

    assert paid.status_code == 200 and paid.json()["payment_state"] == "settled"
    intent.refresh_from_db()
    assert intent.closed_reason == "order_settled"


def test_balance_after_i_have_paid_asks_for_a_confirm_step_on_the_web(
    client, configured, fresh_rates
):
    order, intent = order_with_instructions()
    services.payment_intent_declare(intent=intent, actor=order.owner)
    client.force_login(order.owner)

    step = client.post(reverse("pay_with_balance", args=[order.reference]), **EN)

    page = step.content.decode()
    assert step.status_code == 200
    assert "you will have paid twice" in page
    assert '<input type="hidden" name="confirm" value="yes">' in page
    assert '<input type="hidden" name="declared_seen" value="yes">' in page
    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT

    # A form that did not show the risk of paying twice cannot pay: the step comes again.
    again = client.post(reverse("pay_with_balance", args=[order.reference]), {"confirm": "yes"})
    assert again.status_code == 200
    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT

    client.post(
        reverse("pay_with_balance", args=[order.reference]),
        {"confirm": "yes", "declared_seen": "yes"},
    )

    order.refresh_from_db()
    assert order.payment_state == PaymentState.SETTLED


def test_balance_is_refused_while_a_crypto_payment_is_on_its_way(configured, fresh_rates):
    order, intent = order_with_instructions()
    sent(intent, confirmations=0)

    with pytest.raises(Conflict, match="We have already received a payment for this"):
        settlement_orders.order_pay_with_balance(order=order, actor=order.owner, confirm=True)

    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("1000.00")


def test_operator_cannot_settle_an_order_already_paid_otherwise(configured, fresh_rates):
    operator = make_user(staff=True)
    order, underpaid = order_with_instructions(method="usdt-tron", funded=None)
    watching.transfer_record(
        ObservedTransfer(
            network="tron",
            txid="bb" * 32,
            index=0,
            address=underpaid.address,
            asset="USDT",
            amount_base=underpaid.amount_units // 2,
            confirmations=100,
        ),
        intent=underpaid,
    )
    clock.freeze(underpaid.expires_at + timedelta(minutes=1))
    underpaid = watching.payment_intent_reconcile(intent_id=underpaid.pk)
    assert underpaid.status == IntentStatus.UNDERPAID
    Rate.objects.create(asset="USDT", usd_per_coin="1", source="kraken", fetched_at=clock.now())
    # The half under review holds new instructions back unless the customer says this is
    # a different payment (issue 23).
    full = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner, different_payment=True
    )
    assert sent(full, txid="cc" * 32).status == IntentStatus.ALLOCATED

    with pytest.raises(Conflict, match="is already settled by other means"):
        allocation.review_accept_and_settle(intent_id=underpaid.pk, actor=operator, reason="ok")

    underpaid.refresh_from_db()
    assert underpaid.resolution == ""
    allocation.review_credit_balance(intent_id=underpaid.pk, actor=operator, reason="extra")
    assert ledger_selectors.balance_available(account=order.owner) > 0


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"confirm": "yes"}, 422),
        ({"confirm": 1}, 422),
        ({"confirm": "\u0663"}, 422),
        ({"confirm": "a\u0000"}, 422),
        ({"confirm": None}, 422),
        ({}, 409),
    ],
)
def test_a_confirmation_must_be_json_true(api, configured, fresh_rates, body, status):
    funded_account(api.user, "1000", make_user(staff=True))
    order = make_order(owner=api.user)
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=api.user
    )
    api_post(api, f"/payments/{intent.pk}/declare")

    refused = api_post(api, f"/orders/{order.reference}/pay-with-balance", body)

    assert refused.status_code == status
    assert refused.json()["detail"]
    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT
    assert ledger_selectors.balance_available(account=api.user) == Decimal("1000.00")
