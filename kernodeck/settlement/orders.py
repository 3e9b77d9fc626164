"""An order's money events: settled (by a payment or the balance) and cancelled.

Settling closes the order's other instructions, marks it paid and queues its rental, in
the caller's transaction; the lock order is account, order, intents, then offer.
"""

from django.db import transaction

from kernodeck.core.money import usd_str
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.ledger import services as ledger_services
from kernodeck.ledger.services import DeclaredPaymentPending
from kernodeck.orders import locks as order_locks
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders import services as order_services
from kernodeck.orders.models import Order, PaymentState
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments import services as payment_services
from kernodeck.provisioning import services as provisioning_services


@retry_lost_races
def order_settle(*, order: Order, actor=None, cause: dict) -> Order:
    """Mark an unsettled order as paid and queue its rental. Idempotent.

    `cause` says what paid it (a payment id under "payment", a balance charge), for the
    audit trail. Every settlement path (balance, watcher, operator) comes through here: the
    order's other instructions are closed (a refusal below undoes that too), a lapsed hold
    is re-checked (UnitsReleased, 409), and the rental enters the queue; its slots are
    allocated by a task after commit.
    """
    with transaction.atomic():
        order = order_locks.lock_order(order.pk)  # account, then order
        if order.payment_state == PaymentState.SETTLED:
            return order
        # Intents before the offer (lock order). A cancelled order is refused by
        # order_mark_settled below, and the closing is undone with the transaction.
        payment_services.payment_intents_close_for_order(
            order=order,
            reason="order_settled",
            actor=actor,
            except_intent_id=cause.get("payment"),
        )
        order = order_services.order_mark_settled(order=order, actor=actor, cause=cause)
        provisioning_services.rental_queue(order=order, actor=None)
    return order


def order_repaid(*, intent) -> None:
    """A repayment paid what a reversed payment of a settled order stood on (the operator
    had asked the customer to pay again): audited on the order (the customer's timeline)
    and on the reversed payment; the order stays settled, its rental as it is. In the
    caller's transaction, the intent locked; once per repayment (its allocation is)."""
    amount = payment_selectors.reversed_usd(intent.repays)
    details = {
        "payment": str(intent.pk),
        "repays": str(intent.repays_id),
        "repaid_usd": usd_str(amount),
    }
    audit_record(action="order.repaid", target=intent.order, after=details)
    audit_record(action="payment.repaid", target=intent.repays, after=details)


@retry_lost_races
def order_cancel(*, order: Order, actor) -> Order:
    """Cancel an unsettled order; its units are released at once and its unpaid payment
    instructions are closed (their pages say "do not send")."""
    with transaction.atomic():
        order = order_locks.lock_order(order.pk)  # account, then order
        if order.payment_state == PaymentState.CANCELLED:
            return order
        order = order_services.order_mark_cancelled(order=order, actor=actor)
        payment_services.payment_intents_close_for_order(
            order=order, reason="order_cancelled", actor=actor
        )
    return order


@retry_lost_races
def order_pay_with_balance(*, order, actor, confirm: bool = False):
    """Charge the order's total to the available balance and settle it, in one transaction.

    Pressing twice, or two concurrent API calls, settle once and charge once. Refused while
    a crypto payment for the order has been seen and not decided; after "I have paid" on
    instructions still watched, only with `confirm` (DeclaredPaymentPending otherwise).
    Settling closes the order's instructions and re-checks a lapsed hold (order_settle).
    """
    with transaction.atomic():
        order = order_locks.lock_order(order.pk)  # account, then order
        existing = ledger_services.order_charge_existing(order=order)
        if existing is not None:
            return order, existing
        order_selectors.order_check_payable(order)
        # Under the order's lock, which the watcher's reconciliation also takes.
        seen = payment_selectors.order_money_seen(order=order)
        if seen:
            raise payment_services.PaymentsSeen(seen, from_balance=True)
        declared = payment_selectors.order_declared_unverified(order=order)
        if declared and not confirm:
            raise DeclaredPaymentPending(order=order, declared=declared)
        entry = ledger_services.order_charge(order=order, actor=actor)
        order = order_settle(
            order=order, actor=actor, cause={"ledger_entry": entry.pk, "paid_with": "balance"}
        )
    return order, entry
