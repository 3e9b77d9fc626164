"""Money that leaves the chain after settlement: a case, flagged, alerted and decided.

The watcher marks a counted transfer disappeared (a double spend in a reorg) and, on an
intent already allocated or decided on that money, puts the `reversed` exception beside
its status (payments.watching.reconciling) and calls `payment_reversed` here
(KERNODECK_PAYMENT_REVERSER), in its transaction, the intent locked. That flags what the
money paid for (the order's timeline, or the top-up's audit), and raises an operator alert
(provisioning.alerts: e-mail, webhook, the desk); the review queue lists the case first.
Nothing moves by itself: the rental keeps running and a top-up's credit stays until an
operator decides (`reversal_decide`):

- suspend: an order's (or an extension's) rental is suspended; a top-up's credit is taken
  back by a debit the operator confirms here, never more than the available balance (the
  balance never goes negative: what was spent already is named in the audit as not
  recovered, for the operator to ask for or accept);
- repay: the customer is asked to pay again: an order's page gives new instructions for
  what left the chain (payments.selectors.repayment_due; the order stays settled), and a
  repayment that is allocated is audited on the order (`settlement.orders.order_repaid`);
  for a top-up or an extension the timeline (or audit) says how much was reversed;
- accept the loss: nothing moves.

Each decision is audited on the intent and, for an order or an extension, on the order
(the customer's timeline, in their words: orders.timeline); the alert is closed.
"""

from decimal import Decimal

from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.money import usd_str
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger import services as ledger_services
from kernodeck.orders.models import RentalState
from kernodeck.payments import locks as payment_locks
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments.models import (
    IntentException,
    PaymentIntent,
    Purpose,
    ReversalDecision,
)
from kernodeck.provisioning import alerts
from kernodeck.provisioning import services as provisioning_services
from kernodeck.provisioning.models import AlertKind

SUSPENDABLE = {RentalState.ACTIVE, RentalState.SUSPENDED}


def alert_key(intent: PaymentIntent) -> str:
    return f"payment_reversed:{intent.pk}"


def reversed_usd(intent: PaymentIntent) -> Decimal:
    """What left the chain, in USD at the intent's quoted rate."""
    return payment_selectors.reversed_usd(intent)


def _order_of(intent: PaymentIntent):
    if intent.order_id:
        return intent.order
    if intent.extension_id:
        return intent.extension.order
    return None


def _what(intent: PaymentIntent) -> str:
    order = _order_of(intent)
    if intent.purpose == Purpose.TOPUP:
        return f"top-up {intent.topup_id}"
    if intent.purpose == Purpose.EXTENSION:
        return f"extension {intent.extension_id} of order {order.reference}"
    return f"order {order.reference}"


def payment_reversed(intent: PaymentIntent) -> None:
    """The reverser the watcher calls: flag what the money paid for, alert the operators."""
    amount = reversed_usd(intent)
    order = _order_of(intent)
    details = {
        "payment": str(intent.pk),
        "purpose": intent.purpose,
        "reversed_usd": usd_str(amount),
        "reversed_base": str(intent.reversed_base),
    }
    if order is not None:
        audit_record(action="order.payment_reversed", target=order, after=details)
    else:
        audit_record(action="ledger.topup_reversed", target=intent.topup, after=details)
    alerts.alert_raise(
        kind=AlertKind.PAYMENT_REVERSED,
        key=alert_key(intent),
        order=order,
        message=(
            f"Payment {intent.pk} for {_what(intent)}: {intent.reversed_base} base units "
            f"({usd_str(amount)} USD) left the {intent.chain} chain after settlement."
        ),
        action=(
            "Open the payment review queue (the case is listed first) and decide: suspend "
            "the rental (or take back the credit), ask for payment again, or accept the loss."
        ),
    )


def _topup_take_back(intent: PaymentIntent, *, actor, reason: str, details: dict) -> None:
    """Debit what the reversed payment credited, up to the available balance."""
    owner = intent.owner
    wanted = reversed_usd(intent)
    available = ledger_selectors.balance_available(account=owner)
    debit = min(wanted, max(available, Decimal(0)))
    if debit > 0:
        entry = ledger_services.balance_adjust(
            account=owner, amount_usd=-debit, actor=actor, reason=reason
        )
        details["ledger_entry"] = entry.pk
    details["debited_usd"] = usd_str(debit)
    details["not_recovered_usd"] = usd_str(wanted - debit)


def _suspend(intent: PaymentIntent, *, actor, reason: str, details: dict) -> None:
    if intent.purpose == Purpose.TOPUP:
        _topup_take_back(intent, actor=actor, reason=reason, details=details)
        return
    order = _order_of(intent)
    if order.rental_state not in SUSPENDABLE:
        raise Conflict(
            _(
                "The rental of order %(reference)s is %(state)s, not running: end or refund "
                "it from its page, or choose another decision."
            )
            % {"reference": order.reference, "state": order.get_rental_state_display().lower()}
        )
    provisioning_services.rental_suspend(order=order, reason=reason, actor=actor)


@retry_lost_races
def reversal_decide(*, intent_id, decision: str, actor, reason: str) -> PaymentIntent:
    """An operator's decision on a reversed payment (see the module): once per case."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput(_("Give the reason for this decision."), field="reason")
    if decision not in ReversalDecision.values:
        raise InvalidInput(_("Choose a decision."), field="decision")
    with transaction.atomic():
        intent = payment_locks.lock_intent(intent_id)
        if intent.exception != IntentException.REVERSED:
            raise Conflict(_("This payment was not reversed."))
        if intent.reversal_decision:
            raise Conflict(
                _("This reversal was already decided: %(how)s.")
                % {"how": intent.get_reversal_decision_display()}
            )
        details = {"reversed_usd": usd_str(reversed_usd(intent))}
        if decision == ReversalDecision.SUSPENDED:
            _suspend(intent, actor=actor, reason=reason, details=details)
        intent.reversal_decision = decision
        intent.reversal_reason = reason
        intent.reversal_decided_by = actor
        intent.reversal_decided_at = clock.now()
        intent.save(
            update_fields=[
                "reversal_decision",
                "reversal_reason",
                "reversal_decided_by",
                "reversal_decided_at",
            ]
        )
        audit_record(
            action=f"payment.reversal_{decision}",
            target=intent,
            actor=actor,
            after={"decision": decision, "reason": reason, **details},
        )
        order = _order_of(intent)
        if order is not None:
            audit_record(
                action="order.payment_reversal_decided",
                target=order,
                actor=actor,
                after={
                    "payment": str(intent.pk),
                    "purpose": intent.purpose,
                    "decision": decision,
                    "reason": reason,
                    **details,
                },
            )
        else:
            audit_record(
                action="ledger.topup_reversal_decided",
                target=intent.topup,
                actor=actor,
                after={
                    "payment": str(intent.pk),
                    "decision": decision,
                    "reason": reason,
                    **details,
                },
            )
        alerts.alert_resolve(key=alert_key(intent))
    return intent
