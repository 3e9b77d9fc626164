"""The order's timeline in its customer's words: one entry per audit event of the order.

`ACTION_WORDS` names every audit action the code writes on an order (target
"orders.order"): tests/orders/test_timeline.py collects them from the source and fails on
one without words here, so no raw event code ever reaches a customer page. An event gets a
label (what happened) and, where the customer is meant to read it, a detail: an operator's
reason for a decision, a refund or a suspension, the new end of an extension.

The payments domain sits above this one: its words (decisions by purpose and resolution)
are spelled here from the event's own data, never by importing it.
"""

from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernodeck.core.models import AuditEvent
from kernodeck.core.money import money
from kernodeck.orders.models import Order, PaymentState, RentalState

ACTION_WORDS = {
    "order.registered": gettext_lazy("Order registered"),
    "order.cancelled": gettext_lazy("Order cancelled"),
    "order.settled": gettext_lazy("Payment settled"),
    "order.hold_extended": gettext_lazy("Unit hold extended"),
    "order.rental_state_changed": gettext_lazy("Rental state changed"),
    "order.rental_allocated": gettext_lazy("GPUs allocated"),
    "order.rental_extended": gettext_lazy("Rental extended"),
    "order.payment_instructions_created": gettext_lazy("Payment instructions created"),
    "order.payment_declared": gettext_lazy("Payment declared (“I have paid”)"),
    "order.payment_abandoned": gettext_lazy("Payment instructions abandoned"),
    "order.payment_reviewed": gettext_lazy("Payment decided by an operator"),
    "order.payment_reversed": gettext_lazy(
        "A payment for this order was reversed on the chain: under review"
    ),
    "order.payment_reversal_decided": gettext_lazy("Reversed payment decided by an operator"),
    "order.repayment_instructions_created": gettext_lazy("Payment instructions to pay again"),
    "order.repaid": gettext_lazy("Paid again: the amount of the reversed payment is paid"),
    # Support (tickets and extensions about the order).
    "order.ticket_opened": gettext_lazy("Support ticket opened"),
    "order.extension_offered": gettext_lazy("Extension offered by support"),
    "order.extension_declined": gettext_lazy("Extension declined by support"),
    "order.extension_payment_created": gettext_lazy("Payment instructions for the extension"),
    # Provisioning writes these on the order: a machine confirmed its release; a worker
    # took over a preparation step whose lease had expired (staff only).
    "provisioning.release_confirmed": gettext_lazy(
        "The machine confirmed the end: its GPUs are released"
    ),
    "provisioning.step_lease_expired": gettext_lazy(
        "A preparation step was taken over by another worker"
    ),
}
# Operators' bookkeeping: on the staff pages' timeline, never on the customer's.
STAFF_ONLY = {"provisioning.step_lease_expired"}

# For an action a later change adds without words here: plain words, never the code.
UNKNOWN_EVENT = gettext_lazy("Update on your order")

REFUNDED = gettext_lazy("Refunded")

# An operator's decision on a payment, by the payment's purpose and the decision.
DECISIONS = {
    ("order", "settled"): gettext_lazy("Payment accepted after review: the order is settled"),
    ("order", "credited"): gettext_lazy(
        "Payment credited to your balance after review (the order is not paid by it)"
    ),
    ("order", "refunded"): gettext_lazy("Payment refunded to you outside Kernodeck after review"),
    ("extension", "settled"): gettext_lazy(
        "Extension payment accepted after review: the rental is extended"
    ),
    ("extension", "credited"): gettext_lazy(
        "Extension payment credited to your balance after review (the extension is not paid by it)"
    ),
    ("extension", "refunded"): gettext_lazy(
        "Extension payment refunded to you outside Kernodeck after review"
    ),
}

# An operator's decision on a payment reversed after settlement (settlement.reversal).
REVERSAL_DECISIONS = {
    "suspended": gettext_lazy("Reversed payment: the rental is suspended"),
    "repay": gettext_lazy("Reversed payment: please pay this order again"),
    "loss_accepted": gettext_lazy("Reversed payment: nothing is asked of you"),
}

# Rental moves whose reason the customer reads (a failure, a suspension, a refund).
REASON_STATES = {RentalState.PROVISIONING_FAILED, RentalState.SUSPENDED}

INTENT_TARGET = "payments.paymentintent"


def rental_refunded(order: Order) -> bool:
    """The rental ended without ever starting: only a refund ends a rental that way
    (queued or failed, `provisioning.rental_refund`), so it reads "refunded", never "ended"."""
    return (
        order.payment_state == PaymentState.SETTLED
        and order.rental_state == RentalState.ENDED
        and order.starts_at is None
    )


# The states' lazy words by value: `get_rental_state_display` rebuilds (and hashes) the
# choices on every call, which a list of rentals pays once per row.
_RENTAL_STATE_WORDS = dict(RentalState.choices)


def rental_state_label(order: Order) -> str:
    """The rental's state in words: "Refunded" for a rental that ended without starting."""
    if rental_refunded(order):
        return str(REFUNDED)
    return str(_RENTAL_STATE_WORDS.get(order.rental_state, order.rental_state))


def _moment(value) -> str:
    moment = parse_datetime(value) if isinstance(value, str) else None
    return f"{moment:%Y-%m-%d %H:%M} UTC" if moment else ""


def _amount(value) -> str:
    try:
        return money(value)
    except (ArithmeticError, TypeError, ValueError):
        return ""


def _decision_reason(event: AuditEvent) -> str:
    """The reason of a decision; events written before the order's copy kept it are read
    from the payment's own decision event."""
    reason = (event.after or {}).get("reason")
    if reason:
        return str(reason)
    payment = (event.after or {}).get("payment")
    if not payment:
        return ""
    decision = (
        AuditEvent.objects.filter(
            target_type=INTENT_TARGET, target_id=str(payment), action__startswith="payment.review_"
        )
        .order_by("-created_at", "-pk")
        .first()
    )
    return str((decision.after or {}).get("reason") or "") if decision else ""


def _paid_from_balance(event: AuditEvent) -> bool:
    return event.action == "order.settled" and (event.data or {}).get("paid_with") == "balance"


def _words(event: AuditEvent) -> tuple[str, str]:
    """(label, detail) of one event, in the active language."""
    after, data = event.after or {}, event.data or {}
    action = event.action
    if _paid_from_balance(event):
        return _("Paid from your balance"), ""
    if action == "order.rental_state_changed":
        state = after.get("rental_state", "")
        reason = str(data.get("reason") or "")
        if state == RentalState.ENDED and "refund_entry" in data:
            return str(REFUNDED), reason
        if state in RentalState.values:
            label = _("Rental: %(state)s") % {"state": RentalState(state).label}
            return label, reason if state in REASON_STATES else ""
        return str(ACTION_WORDS[action]), ""
    if action == "order.payment_reviewed":
        key = (after.get("purpose") or "order", after.get("resolution", ""))
        label = str(DECISIONS.get(key, ACTION_WORDS[action]))
        extra = []
        if after.get("credited_usd") and key[1] == "credited":
            extra.append(
                _("%(amount)s credited to your balance.")
                % {"amount": _amount(after["credited_usd"])}
            )
        if after.get("excess_credited_usd"):
            extra.append(
                _("The excess, %(amount)s, is credited to your balance.")
                % {"amount": _amount(after["excess_credited_usd"])}
            )
        if extra:
            label = f"{label}. {' '.join(extra)}"
        return label, _decision_reason(event)
    if action == "order.payment_reversed" and after.get("reversed_usd"):
        return (
            _(
                "A payment for this order (%(amount)s) was reversed on the chain after it "
                "was settled: under review"
            )
            % {"amount": _amount(after["reversed_usd"])},
            "",
        )
    if action == "order.payment_reversal_decided":
        label = str(REVERSAL_DECISIONS.get(after.get("decision", ""), ACTION_WORDS[action]))
        return label, str(after.get("reason") or "")
    if action == "order.rental_extended":
        end = _moment(after.get("ends_at"))
        label = str(ACTION_WORDS[action])
        if end:
            label = _("Rental extended: it now ends on %(end)s") % {"end": end}
        return label, ""
    if action == "order.hold_extended":
        until = _moment(after.get("hold_until"))
        if until:
            return _("Unit hold extended until %(until)s") % {"until": until}, ""
    if action == "order.extension_offered" and after.get("days") and after.get("price_usd"):
        return (
            _("Extension offered by support: %(days)s days for %(price)s")
            % {"days": after["days"], "price": _amount(after["price_usd"])},
            "",
        )
    if action == "order.extension_declined":
        return str(ACTION_WORDS[action]), str(after.get("reason") or "")
    return str(ACTION_WORDS.get(action, UNKNOWN_EVENT)), ""


def timeline_entries(*, order: Order, events, staff: bool = False) -> list[dict]:
    """The events' entries, in their order: when, the action, the label and detail a
    customer reads, whether the customer did it, and the event's data (for the staff).
    Operators' bookkeeping (`STAFF_ONLY`) only when `staff`."""
    entries = []
    for event in events:
        if event.action in STAFF_ONLY and not staff:
            continue
        label, detail = _words(event)
        entries.append(
            {
                "at": event.created_at,
                "action": event.action,
                "label": label,
                "detail": detail,
                # "Paid from your balance" says who already; "(by you)" would say it twice.
                "by_customer": event.actor_id is not None
                and event.actor_id == order.owner_id
                and not _paid_from_balance(event),
                "data": event.after or event.data,
            }
        )
    return entries
