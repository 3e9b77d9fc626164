"""One intent's outcome: recomputed from its counted transfers and the clock, and applied.

The pure rules are in `payments.reconciliation`; here they meet the rows: what an intent
is due and has been seen paying it, whether applying the outcome would change the stored
intent (a pass applies only those), and `payment_intent_reconcile`, the one write of an
intent's received amount and status, which on a confirmed payment calls the allocator
named by KERNODECK_PAYMENT_ALLOCATOR (`allocator()`, cached: tests may clear it).
"""

import functools

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import ServiceError
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.payments import locks, reconciliation
from kernodeck.payments.models import (
    IntentException,
    IntentStatus,
    PaymentIntent,
    Resolution,
)
from kernodeck.payments.watching.storing import COUNTED_KINDS


def _due(intent: PaymentIntent) -> reconciliation.Due:
    return reconciliation.Due(
        amount_base=intent.amount_units,
        amount_usd=intent.amount_usd,
        usd_per_coin=intent.rate_usd_per_coin,
        decimals=intent.method.decimals,
        expires_at=intent.expires_at,
    )


_SEEN_FIELDS = ("amount_base", "confirmations", "block_time", "first_seen_at", "final")


def _counted(transfers):
    return transfers.filter(kind__in=COUNTED_KINDS, disappeared_at__isnull=True)


def _seen_of(amount_base, confirmations, block_time, first_seen_at, final) -> reconciliation.Seen:
    # Transfer.seen_at: the block time or the first sighting, whichever is earlier.
    seen_at = first_seen_at if block_time is None else min(block_time, first_seen_at)
    return reconciliation.Seen(
        amount_base=int(amount_base), confirmations=confirmations, seen_at=seen_at, final=final
    )


def _seen(intent: PaymentIntent) -> list[reconciliation.Seen]:
    return [_seen_of(*row) for row in _counted(intent.transfers.all()).values_list(*_SEEN_FIELDS)]


def _outcome(intent: PaymentIntent, seen, *, now) -> reconciliation.Outcome:
    policy = reconciliation.Policy(confirmations=intent.method.confirmations)
    return reconciliation.reconcile(_due(intent), seen, now=now, policy=policy)


def _stood_on_money(intent: PaymentIntent) -> bool:
    """Allocated, or decided with its money counted (settled, credited): what it received
    went somewhere, so losing it afterwards is a reversal, not a new status."""
    return intent.status == IntentStatus.ALLOCATED or intent.resolution in (
        Resolution.SETTLED,
        Resolution.CREDITED,
    )


def _reverses(intent: PaymentIntent, outcome: reconciliation.Outcome) -> bool:
    """Counted money the intent stood on has left the chain (and no reversal is open)."""
    return (
        _stood_on_money(intent)
        and not intent.exception
        and outcome.received_base < int(intent.received_base)
    )


def _outcome_changes(intent: PaymentIntent, outcome: reconciliation.Outcome) -> bool:
    """Whether applying `outcome` would change the stored intent. A confirmed outcome
    always counts: its allocation may have failed before and is tried again. A decided
    intent changes only by a reversal."""
    if intent.status == IntentStatus.ALLOCATED or intent.resolution:
        return _reverses(intent, outcome)
    if outcome.settles:
        return True
    stored = (
        intent.status,
        int(intent.received_base),
        int(intent.confirmed_base),
        intent.review_reason,
    )
    return stored != (
        outcome.status,
        outcome.received_base,
        outcome.confirmed_base,
        outcome.reason,
    )


@retry_lost_races
def payment_intent_reconcile(*, intent_id) -> PaymentIntent:
    """Recompute one intent's status from its transfers and apply it; settle on confirmed."""
    with transaction.atomic():
        intent = locks.lock_intent(intent_id)
        if intent.status == IntentStatus.ALLOCATED or intent.resolution:
            outcome = _outcome(intent, _seen(intent), now=clock.now())
            if _reverses(intent, outcome):
                _reverse(intent, outcome)
            return intent
        outcome = _outcome(intent, _seen(intent), now=clock.now())
        before = {"status": intent.status, "received_base": str(intent.received_base)}
        intent.status = outcome.status
        intent.received_base = outcome.received_base
        intent.confirmed_base = outcome.confirmed_base
        intent.review_reason = outcome.reason
        intent.reconciled_at = clock.now()
        if outcome.settles:
            _allocate(intent)
        after = {"status": intent.status, "received_base": str(intent.received_base)}
        intent.save(
            update_fields=[
                "status",
                "received_base",
                "confirmed_base",
                "review_reason",
                "reconciled_at",
            ]
        )
        if before != after:
            audit_record(
                action="payment.reconciled",
                target=intent,
                before=before,
                after={**after, "reason": intent.review_reason},
            )
    return intent


def _reverse(intent: PaymentIntent, outcome: reconciliation.Outcome) -> None:
    """Money the intent was allocated or decided on left the chain: the `reversed`
    exception beside its status (the status, the received amount and the decision stay
    as they were, for the record), then the settlement step flags what it paid for and
    alerts the operators (KERNODECK_PAYMENT_REVERSER). Only an operator closes the case."""
    intent.exception = IntentException.REVERSED
    intent.reversed_at = clock.now()
    intent.reversed_base = int(intent.received_base) - outcome.received_base
    intent.save(update_fields=["exception", "reversed_at", "reversed_base"])
    audit_record(
        action="payment.reversed",
        target=intent,
        before={"status": intent.status, "received_base": str(intent.received_base)},
        after={
            "exception": intent.exception,
            "received_base": str(outcome.received_base),
            "reversed_base": str(intent.reversed_base),
        },
    )
    reverser()(intent)


@functools.cache
def reverser():
    """What follows a reversal: the function named by KERNODECK_PAYMENT_REVERSER (the
    settlement step flags the order, top-up or extension and alerts the operators)."""
    return import_string(settings.KERNODECK_PAYMENT_REVERSER)


@functools.cache
def allocator():
    """What gives confirmed money to what it paid for: the function named by
    KERNODECK_PAYMENT_ALLOCATOR (the settlement step; payments know nothing of purposes)."""
    return import_string(settings.KERNODECK_PAYMENT_ALLOCATOR)


def _allocate(intent: PaymentIntent) -> None:
    """Confirmed: give the money to what it paid for. On failure it waits for review."""
    if intent.closed_at is not None:
        # The order was settled otherwise or cancelled: this money is extra, never absorbed.
        intent.review_reason = _(
            "Confirmed after its instructions were closed (%(why)s): not allocated."
        ) % {"why": intent.get_closed_reason_display().lower()}
        return
    try:
        with transaction.atomic():
            allocator()(intent)
    except ServiceError as exc:
        intent.review_reason = _("Confirmed but not allocated: %(why)s") % {"why": exc.message}
        return
    intent.status = IntentStatus.ALLOCATED
