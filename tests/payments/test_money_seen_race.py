"""Issue 23, item 1, raced in real concurrent PostgreSQL transactions: a transfer recorded
and reconciled by the watcher while the customer asks for new instructions and pays from
the balance. The guard runs under the order's lock, which the reconciliation takes too, so
once the chain's money is written no new payment is invited: new instructions or a charge
either came first (their audit event is older than the reconciliation's) or were refused
with `payments_seen`."""

import threading

import pytest
from django.db import connection, connections

from kernodeck.core.errors import ServiceError
from kernodeck.core.models import AuditEvent
from kernodeck.ledger.models import EntryKind, LedgerEntry
from kernodeck.orders.models import PaymentState
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments import services as payment_services
from kernodeck.payments import watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, PaymentIntent
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres(settings):
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")
    settings.KERNODECK_THROTTLE_PAYMENT_CREATE = (10_000, 3600)


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
            outcomes[n] = f"{exc.status} {exc.code}".strip()
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


def _first_id(action, **filters):
    event = AuditEvent.objects.filter(action=action, **filters).order_by("pk").first()
    return event.pk if event else None


@pytest.mark.parametrize("recorded_before", [False, True], ids=["in-race", "stored-first"])
@pytest.mark.parametrize("round_", range(6))
def test_money_seen_while_the_customer_asks_again_never_invites_a_second_payment(
    configured, fresh_rates, round_, recorded_before
):
    """`stored-first`: the transfer is stored, its reconciliation is one of the racers."""
    account = make_user()
    funded_account(account, "1000", make_user(staff=True))
    order = make_order(owner=account, offer=make_offer(units_total=10))
    first = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=account
    )
    # Not live any more (so new instructions are not refused for that), money not seen yet.
    payment_services.payment_intent_abandon(intent=first, actor=account)
    overpayment = ObservedTransfer(
        network="tron",
        txid=f"{round_:02d}" * 32,
        index=0,
        address=first.address,
        asset="USDT",
        amount_base=first.amount_units * 2,
        confirmations=100,
    )

    if recorded_before:
        watching.transfer_record(overpayment, intent=first)

    def watcher():
        if not recorded_before:
            watching.transfer_record(overpayment, intent=first)
        watching.payment_intent_reconcile(intent_id=first.pk)

    def new_instructions():
        payment_services.payment_intent_create_for_order(
            order=order, method_code="trx-tron", actor=account
        )

    def pay_from_balance():
        settlement_orders.order_pay_with_balance(order=order, actor=account, confirm=True)

    calls = [watcher, new_instructions, pay_from_balance, new_instructions, pay_from_balance]
    # Half the rounds let the watcher start a moment later, so both orders are tried.
    if round_ % 2:
        calls = calls[1:] + calls[:1]
    outcomes, escaped = race(*calls)

    assert escaped == []
    assert None not in outcomes
    assert set(outcomes) <= {"ok", "409", "409 payments_seen"}
    order.refresh_from_db()
    first.refresh_from_db()
    reconciled = _first_id("payment.reconciled", target_id=str(first.pk))
    others = PaymentIntent.objects.filter(order=order).exclude(pk=first.pk)
    charges = LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE, order=order).count()

    if recorded_before:
        # The money was stored before anyone asked: nothing else was invited.
        assert others.count() == 0 and charges == 0
        assert first.status == IntentStatus.OVERPAID
    if first.status == IntentStatus.OVERPAID:
        # The money was written: whatever invited another payment came before it.
        for other in others:
            assert _first_id("payment.intent_created", target_id=str(other.pk)) < reconciled
        if charges:
            assert _first_id("order.settled", target_id=str(order.pk)) < reconciled
    else:
        # The balance paid first and closed the abandoned instructions: the overpayment
        # came to closed instructions and waits for an operator, uncounted.
        assert order.payment_state == PaymentState.SETTLED
        assert first.closed_at is not None
    assert charges <= 1
    # Never two payments invited at once: at most one set of instructions is live, and none
    # once the order is paid.
    intents = payment_selectors.intents_for_order(order=order)
    live = [i for i in intents if payment_selectors.intent_is_live(i)]
    assert len(live) <= 1
    if order.payment_state == PaymentState.SETTLED:
        assert live == []
    # Once the money is written, asking again is refused, and so is the balance.
    if first.status == IntentStatus.OVERPAID and order.payment_state != PaymentState.SETTLED:
        with pytest.raises(payment_services.PaymentsSeen):
            settlement_orders.order_pay_with_balance(order=order, actor=account, confirm=True)
