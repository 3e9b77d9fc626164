"""Operators' decisions on payments the reconciliation would not settle by itself.

Every decision needs a reason, runs in one transaction with the intent locked, writes an
audit event (on the intent, and on the order so the customer sees it in the timeline),
and ends automatic status changes for that intent (`resolution` is set).
"""

import re
from decimal import Decimal

from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.money import usd, usd_str
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.ledger import services as ledger_services
from kernodeck.ledger.models import EntryKind
from kernodeck.orders import services as order_services
from kernodeck.orders.models import PaymentState
from kernodeck.payments import locks, selectors, watching
from kernodeck.payments.amounts import units_to_decimal
from kernodeck.payments.chains.base import ChainError, ObservedTransfer
from kernodeck.payments.models import (
    EXCEPTION_STATUSES,
    IntentStatus,
    PaymentIntent,
    Purpose,
    Resolution,
    Transfer,
    TransferKind,
)

# A transaction id typed by an operator: what every chain's explorer shows, nothing else.
HAND_TXID = re.compile(r"[0-9A-Za-z]{1,100}")
TOPUP_OVERPAY_CAP = 2  # an overpaid top-up credits at most twice its nominal amount


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput(_("Give the reason for this decision."), field="reason")
    return reason


def received_usd(intent: PaymentIntent, *, usd_per_coin: Decimal | None = None) -> Decimal:
    """What the intent received, in USD at the quoted rate (or at `usd_per_coin`)."""
    coins = units_to_decimal(int(intent.received_base), intent.method.decimals)
    return usd(coins * (usd_per_coin or intent.rate_usd_per_coin))


def _resolve(intent, *, resolution, actor, reason, details: dict):
    intent.resolution = resolution
    intent.resolution_reason = reason
    intent.resolved_by = actor
    intent.resolved_at = clock.now()
    intent.save(
        update_fields=["resolution", "resolution_reason", "resolved_by", "resolved_at", "status"]
    )
    audit_record(
        action=f"payment.review_{resolution}",
        target=intent,
        actor=actor,
        after={"resolution": resolution, "reason": reason, **details},
    )
    if intent.order_id:
        audit_record(
            action="order.payment_reviewed",
            target=intent.order,
            actor=actor,
            after={"payment": str(intent.pk), "resolution": resolution, **details},
        )


def _locked_open_case(intent_id):
    intent = locks.lock_intent(intent_id)
    if intent.resolution:
        raise Conflict(
            _("This payment was already decided: %(how)s.")
            % {"how": intent.get_resolution_display()}
        )
    if intent.status not in EXCEPTION_STATUSES and not intent.review_reason:
        raise Conflict(_("This payment is not waiting for a decision."))
    return intent


@retry_lost_races
def review_accept_and_settle(*, intent_id, actor, reason: str) -> PaymentIntent:
    """Accept what was received as payment: settle the order (or credit the top-up).

    Refused when the order is already settled by other means or cancelled, or when its
    hold lapsed and its units are taken (then credit the balance instead).
    An overpaid order credits the excess, at the quoted rate, to the customer's balance.
    A late top-up is credited at the lower of the quoted and the current rate; an overpaid
    one at the quoted rate, up to twice its nominal amount.
    """
    reason = _reason(reason)
    with transaction.atomic():
        intent = _locked_open_case(intent_id)
        value = received_usd(intent)
        details = {"received_usd": usd_str(value)}
        if intent.purpose == Purpose.EXTENSION:
            from kernodeck.support import services as support_services

            support_services.extension_settle(
                extension_id=intent.extension_id,
                intent_id=intent.pk,
                actor=actor,
                cause={"payment": str(intent.pk), "review": reason},
            )
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
        elif intent.purpose == Purpose.ORDER:
            if intent.order.payment_state == PaymentState.SETTLED:
                # Settled by other means (balance, another payment): this one is extra.
                raise Conflict(
                    _(
                        "Order %(reference)s is already settled by other means; credit this "
                        "payment to the customer's balance instead."
                    )
                    % {"reference": intent.order.reference}
                )
            # order_settle re-checks the units if the hold lapsed (409 UnitsReleased).
            order_services.order_settle(
                order=intent.order,
                actor=actor,
                cause={"payment": str(intent.pk), "review": reason},
            )
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
        else:
            credit = value
            if intent.status == IntentStatus.LATE:
                current = selectors.rate_current(intent.method.asset)
                if current is None:
                    raise Conflict(
                        _("No fresh %(asset)s rate to compare with; record or fetch one first.")
                        % {"asset": intent.method.asset}
                    )
                credit = min(value, received_usd(intent, usd_per_coin=current.usd_per_coin))
            if intent.status == IntentStatus.OVERPAID:
                credit = min(value, intent.topup.amount_usd * TOPUP_OVERPAY_CAP)
            ledger_services.topup_credit(
                intent=intent, amount_usd=credit, actor=actor, memo=reason
            )
            details["credited_usd"] = usd_str(credit)
        intent.status = IntentStatus.ALLOCATED
        _resolve(
            intent, resolution=Resolution.SETTLED, actor=actor, reason=reason, details=details
        )
    return intent


REVIEW_CREDIT_KINDS = {
    IntentStatus.OVERPAID: EntryKind.OVERPAYMENT_CREDIT,
    IntentStatus.UNDERPAID: EntryKind.UNDERPAYMENT_CREDIT,
    IntentStatus.LATE: EntryKind.LATE_PAYMENT_CREDIT,
}


@retry_lost_races
def review_credit_balance(*, intent_id, actor, reason: str) -> PaymentIntent:
    """Credit the received value (quoted rate) to the customer's balance, order unsettled."""
    reason = _reason(reason)
    with transaction.atomic():
        intent = _locked_open_case(intent_id)
        value = received_usd(intent)
        if value <= 0:
            raise Conflict(_("Nothing was received, so there is nothing to credit."))
        # The statement names the real cause of the credit, one label per kind of case.
        kind = REVIEW_CREDIT_KINDS.get(intent.status, EntryKind.REVIEW_CREDIT)
        ledger_services.balance_credit_payment(
            intent=intent,
            amount_usd=value,
            kind=kind,
            actor=actor,
            memo=reason,
        )
        _resolve(
            intent,
            resolution=Resolution.CREDITED,
            actor=actor,
            reason=reason,
            details={"credited_usd": usd_str(value)},
        )
    return intent


@retry_lost_races
def review_mark_refunded(*, intent_id, actor, reason: str) -> PaymentIntent:
    """The money was sent back outside Kernodeck; nothing moves here."""
    reason = _reason(reason)
    with transaction.atomic():
        intent = _locked_open_case(intent_id)
        _resolve(intent, resolution=Resolution.REFUNDED, actor=actor, reason=reason, details={})
    return intent


def review_record_transfer(*, intent_id, txid: str, amount: str, actor, reason: str) -> Transfer:
    """Record by hand a transfer a watcher cannot see; it then goes through reconciliation."""
    reason = _reason(reason)
    txid = (txid or "").strip()
    if not HAND_TXID.fullmatch(txid):
        raise InvalidInput(
            _("Give the transaction id: letters and digits, as the explorer shows it."),
            field="txid",
        )
    intent = PaymentIntent.objects.select_related("method").get(pk=intent_id)
    try:
        coins = Decimal(str(amount).strip())
    except ArithmeticError:
        coins = Decimal(-1)
    base = coins.scaleb(intent.method.decimals) if coins.is_finite() else Decimal(-1)
    if base <= 0 or base != base.to_integral_value():
        raise InvalidInput(
            _("Give the amount received in %(asset)s, with at most %(d)d decimals.")
            % {"asset": intent.method.asset, "d": intent.method.decimals},
            field="amount",
        )
    if Transfer.objects.filter(network=intent.chain, txid=txid).exists():
        raise Conflict(_("This transaction is already recorded."), field="txid")
    try:
        # The same checks as every chain answer: an amount no chain could carry is refused.
        observed = ObservedTransfer(
            network=intent.chain,
            txid=txid,
            index=0,
            address=intent.address,
            asset=intent.method.asset,
            amount_base=int(base),
            confirmations=intent.method.confirmations,
            block_time=clock.now(),
            final=True,
            reference=intent.solana_reference,
        )
    except ChainError:
        raise InvalidInput(
            _("That amount of %(asset)s cannot have been received; check it.")
            % {"asset": intent.method.asset},
            field="amount",
        ) from None
    with transaction.atomic():
        transfer = watching.transfer_record(observed, intent=intent, recorded_by=actor)
        audit_record(
            action="payment.transfer_recorded_by_hand",
            target=intent,
            actor=actor,
            after={"txid": txid, "amount_base": str(int(base)), "reason": reason},
        )
    watching.payment_intent_reconcile(intent_id=intent.pk)
    return transfer


def review_transfer_resolve(*, transfer_id, actor, note: str, intent_id=None) -> Transfer:
    """Close a reviewed transfer: attach it to an intent (then reconcile) or note why not."""
    note = _reason(note)
    with transaction.atomic():
        transfer = Transfer.objects.select_for_update().get(pk=transfer_id)
        if transfer.review_resolved_at:
            raise Conflict(_("This transfer was already reviewed."))
        if intent_id:
            intent = PaymentIntent.objects.filter(pk=intent_id, chain=transfer.network).first()
            if intent is None:
                raise InvalidInput(_("No payment on this network with that id."), field="intent")
            if transfer.asset != intent.method.asset:
                raise Conflict(
                    _("The transfer's asset is not the payment's asset."), field="intent"
                )
            transfer.intent = intent
            transfer.kind = (
                TransferKind.LATE if transfer.seen_at > intent.expires_at else TransferKind.MATCHED
            )
        transfer.review_resolved_at = clock.now()
        transfer.review_note = note
        transfer.save(update_fields=["intent", "kind", "review_resolved_at", "review_note"])
        audit_record(
            action="payment.transfer_reviewed",
            target=transfer,
            actor=actor,
            after={"note": note, "intent": str(intent_id) if intent_id else None},
        )
    if intent_id:
        watching.payment_intent_reconcile(intent_id=transfer.intent_id)
    return transfer
