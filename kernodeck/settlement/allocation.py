"""Confirmed money goes to what it paid for: the watcher's allocation and the operators'
decisions on payments that reconciliation would not settle by itself.

`payment_allocate` is the allocator the watcher calls (KERNODECK_PAYMENT_ALLOCATOR) inside
its reconciliation transaction, with the intent locked; the review decisions run in their
own transaction and close the case (payments.review).
"""

from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.core.errors import Conflict
from kernodeck.core.money import usd_str
from kernodeck.core.races import retry_lost_races
from kernodeck.ledger import services as ledger_services
from kernodeck.ledger.models import EntryKind
from kernodeck.orders.models import PaymentState
from kernodeck.payments import review, review_selectors, selectors
from kernodeck.payments.models import IntentStatus, PaymentIntent, Purpose, Resolution
from kernodeck.settlement import orders
from kernodeck.support import services as support_services

TOPUP_OVERPAY_CAP = 2  # an overpaid top-up credits at most twice its nominal amount


def payment_allocate(intent: PaymentIntent) -> None:
    """A confirmed, matched payment: settle its order, apply its extension or credit its
    top-up. A ServiceError leaves the payment confirmed and waiting for review."""
    if intent.purpose == Purpose.ORDER and intent.repays_id is not None:
        orders.order_repaid(intent=intent)
    elif intent.purpose == Purpose.ORDER:
        orders.order_settle(order=intent.order, cause={"payment": str(intent.pk)})
    elif intent.purpose == Purpose.EXTENSION:
        support_services.extension_settle(
            extension_id=intent.extension_id,
            intent_id=intent.pk,
            cause={"payment": str(intent.pk)},
        )
    elif intent.purpose == Purpose.TOPUP:
        ledger_services.topup_credit(intent=intent, amount_usd=intent.topup.amount_usd)
    else:  # a purpose with no allocation here yet: never credit it as a top-up
        raise ValueError(f"no allocation for the purpose {intent.purpose!r}")


def _credit_excess(intent, value, *, actor, reason, details) -> None:
    excess = value - intent.amount_usd
    if intent.status == IntentStatus.OVERPAID and excess > 0:
        ledger_services.balance_credit_payment(
            intent=intent,
            amount_usd=excess,
            kind=EntryKind.OVERPAYMENT_CREDIT,
            actor=actor,
            memo=reason,
        )
        details["excess_credited_usd"] = usd_str(excess)


def topup_settle_credit(intent: PaymentIntent, *, value=None):
    """What accepting a top-up's payment credits: what was received at the quoted rate; a
    late one at the lower of the quoted and the current rate; an overpaid one up to twice
    its nominal amount."""
    value = review.received_usd(intent) if value is None else value
    credit = value
    if intent.status == IntentStatus.LATE:
        current = selectors.rate_current(intent.method.asset)
        if current is None:
            raise Conflict(
                _("No fresh %(asset)s rate to compare with; record or fetch one first.")
                % {"asset": intent.method.asset}
            )
        credit = min(value, review.received_usd(intent, usd_per_coin=current.usd_per_coin))
    if intent.status == IntentStatus.OVERPAID:
        credit = min(value, intent.topup.amount_usd * TOPUP_OVERPAY_CAP)
    return credit


def review_settle_credits_beyond_due(intent: PaymentIntent) -> bool:
    """Whether accepting this top-up's payment credits more than the top-up's amount: that
    part mints balance, as the "credit" decision does, and needs the same permission."""
    if intent.purpose != Purpose.TOPUP:
        return False
    try:
        return topup_settle_credit(intent) > intent.topup.amount_usd
    except Conflict:
        return False  # no rate to compare with: the decision itself is refused


def _confirmations_check(intent: PaymentIntent, *, accepted: bool, details: dict) -> None:
    """Refuse to count money short of its network's confirmations (it may still be
    reversed) unless the operator said so explicitly; the audit keeps that they did."""
    short = review_selectors.intent_unconfirmed(intent)
    if short is None:
        return
    if not accepted:
        raise Conflict(
            _(
                "Only %(seen)s of the %(needed)s confirmations this network needs: the "
                "transfer could still be reversed. Confirm that you decide before it is final."
            )
            % {"seen": short.fewest, "needed": short.needed},
            field="accept_unconfirmed",
        )
    details["unconfirmed_accepted"] = f"{short.fewest}/{short.needed}"


def review_settle_offered(intent: PaymentIntent) -> bool:
    """Whether "accept and settle" can apply: not to an order settled by other means (the
    payment is extra; crediting the balance is what is left). A repayment (instructions
    that pay a reversed payment again) is meant for a settled order: it can."""
    return not (
        intent.purpose == Purpose.ORDER
        and intent.repays_id is None
        and intent.order.payment_state == PaymentState.SETTLED
    )


@retry_lost_races
def review_accept_and_settle(
    *, intent_id, actor, reason: str, unconfirmed_accepted: bool = False
) -> PaymentIntent:
    """Accept what was received as payment: settle the order (or credit the top-up).

    Refused when the order is already settled by other means or cancelled, or when its
    hold lapsed and its units are taken (then credit the balance instead).
    An overpaid order credits the excess, at the quoted rate, to the customer's balance.
    A late top-up is credited at the lower of the quoted and the current rate; an overpaid
    one at the quoted rate, up to twice its nominal amount.
    Money short of its confirmations counts only with `unconfirmed_accepted`.
    """
    reason = review.review_reason_clean(reason)
    with transaction.atomic():
        intent = review.review_case_lock(intent_id)
        value = review.received_usd(intent)
        details = {"received_usd": usd_str(value)}
        _confirmations_check(intent, accepted=unconfirmed_accepted, details=details)
        if intent.purpose == Purpose.EXTENSION:
            support_services.extension_settle(
                extension_id=intent.extension_id,
                intent_id=intent.pk,
                actor=actor,
                cause={"payment": str(intent.pk), "review": reason},
            )
            _credit_excess(intent, value, actor=actor, reason=reason, details=details)
        elif intent.purpose == Purpose.ORDER:
            if not review_settle_offered(intent):
                # Settled by other means (balance, another payment): this one is extra.
                raise Conflict(
                    _(
                        "Order %(reference)s is already settled by other means; credit this "
                        "payment to the customer's balance instead."
                    )
                    % {"reference": intent.order.reference}
                )
            if intent.repays_id is not None:
                orders.order_repaid(intent=intent)
            else:
                # order_settle re-checks the units if the hold lapsed (409 UnitsReleased).
                orders.order_settle(
                    order=intent.order,
                    actor=actor,
                    cause={"payment": str(intent.pk), "review": reason},
                )
            _credit_excess(intent, value, actor=actor, reason=reason, details=details)
        else:
            credit = topup_settle_credit(intent, value=value)
            ledger_services.topup_credit(
                intent=intent, amount_usd=credit, actor=actor, memo=reason
            )
            details["credited_usd"] = usd_str(credit)
        intent.status = IntentStatus.ALLOCATED
        review.review_resolve(
            intent, resolution=Resolution.SETTLED, actor=actor, reason=reason, details=details
        )
    return intent


REVIEW_CREDIT_KINDS = {
    IntentStatus.OVERPAID: EntryKind.OVERPAYMENT_CREDIT,
    IntentStatus.UNDERPAID: EntryKind.UNDERPAYMENT_CREDIT,
    IntentStatus.LATE: EntryKind.LATE_PAYMENT_CREDIT,
}


@retry_lost_races
def review_credit_balance(
    *, intent_id, actor, reason: str, unconfirmed_accepted: bool = False
) -> PaymentIntent:
    """Credit the received value (quoted rate) to the customer's balance, order unsettled;
    money short of its confirmations counts only with `unconfirmed_accepted`."""
    reason = review.review_reason_clean(reason)
    with transaction.atomic():
        intent = review.review_case_lock(intent_id)
        value = review.received_usd(intent)
        if value <= 0:
            raise Conflict(_("Nothing was received, so there is nothing to credit."))
        details = {"credited_usd": usd_str(value)}
        _confirmations_check(intent, accepted=unconfirmed_accepted, details=details)
        # The statement names the real cause of the credit, one label per kind of case.
        kind = REVIEW_CREDIT_KINDS.get(intent.status, EntryKind.REVIEW_CREDIT)
        ledger_services.balance_credit_payment(
            intent=intent,
            amount_usd=value,
            kind=kind,
            actor=actor,
            memo=reason,
        )
        review.review_resolve(
            intent,
            resolution=Resolution.CREDITED,
            actor=actor,
            reason=reason,
            details=details,
        )
    return intent
