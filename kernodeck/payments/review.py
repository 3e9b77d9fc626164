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
from kernodeck.core.money import usd
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.payments import locks, watching
from kernodeck.payments.amounts import units_to_decimal
from kernodeck.payments.chains.base import ChainError, ObservedTransfer
from kernodeck.payments.models import (
    EXCEPTION_STATUSES,
    PaymentIntent,
    Resolution,
    Transfer,
    TransferKind,
)

# A transaction id typed by an operator: what every chain's explorer shows, nothing else.
HAND_TXID = re.compile(r"[0-9A-Za-z]{1,100}")


def review_reason_clean(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput(_("Give the reason for this decision."), field="reason")
    return reason


def received_usd(intent: PaymentIntent, *, usd_per_coin: Decimal | None = None) -> Decimal:
    """What the intent received, in USD at the quoted rate (or at `usd_per_coin`)."""
    coins = units_to_decimal(int(intent.received_base), intent.method.decimals)
    return usd(coins * (usd_per_coin or intent.rate_usd_per_coin))


def review_resolve(intent, *, resolution, actor, reason, details: dict):
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
    # The order's timeline shows the decision and its reason (the review form says so);
    # an extension's payment is decided on its rental's order.
    order = intent.order if intent.order_id else None
    if order is None and intent.extension_id:
        order = intent.extension.order
    if order is not None:
        audit_record(
            action="order.payment_reviewed",
            target=order,
            actor=actor,
            after={
                "payment": str(intent.pk),
                "purpose": intent.purpose,
                "resolution": resolution,
                "reason": reason,
                **details,
            },
        )


def review_case_lock(intent_id):
    """Lock an intent waiting for a decision (Conflict when decided or not a case)."""
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
def review_mark_refunded(*, intent_id, actor, reason: str) -> PaymentIntent:
    """The money was sent back outside Kernodeck; nothing moves here."""
    reason = review_reason_clean(reason)
    with transaction.atomic():
        intent = review_case_lock(intent_id)
        review_resolve(
            intent, resolution=Resolution.REFUNDED, actor=actor, reason=reason, details={}
        )
    return intent


def review_record_transfer(*, intent_id, txid: str, amount: str, actor, reason: str) -> Transfer:
    """Record by hand a transfer a watcher cannot see; it then goes through reconciliation."""
    reason = review_reason_clean(reason)
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
        # A concurrent record of the same transaction loses on the unique key: a 409.
        transfer = watching.transfer_record(
            observed, intent=intent, recorded_by=actor, new_only=True
        )
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
    note = review_reason_clean(note)
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
