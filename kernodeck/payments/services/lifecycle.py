"""What happens to instructions once given: the customer declares them paid (an early look
by the watchers) or abandons them; they close with their order.

Apart from their creation (`instructions`) because each of these moves one existing
intent under its lock and none takes an address or reads a rate.
"""

from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.accounts import throttle
from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.payments import locks, tasks
from kernodeck.payments.models import ClosedReason, IntentStatus, PaymentIntent


class IntentClosed(Conflict):
    """The instructions were closed because the order was settled otherwise or cancelled."""


def _refuse_closed(intent: PaymentIntent) -> None:
    if intent.closed_at is not None:
        raise IntentClosed(
            _(
                "These instructions are closed (%(why)s): do not send anything to them. If "
                "you already did, contact support with the order reference; nothing is lost."
            )
            % {"why": intent.get_closed_reason_display().lower()}
        )


def payment_intent_declare(*, intent: PaymentIntent, actor) -> PaymentIntent:
    """ "I have paid": note it and ask the watchers for an early look. Moves no money.

    Refused (409) on closed instructions, and throttled per account: each declaration
    asks the chain watchers for an early scan.
    """
    if intent.declared_at is None:
        throttle.check(
            "payment_declare",
            str(intent.owner_id),
            message=_("You declared many payments in a short time."),
        )
    intent, declared_now = _payment_intent_declare(intent=intent, actor=actor)
    if declared_now:
        throttle.hit("payment_declare", str(intent.owner_id))
    return intent


@retry_lost_races
def _payment_intent_declare(*, intent: PaymentIntent, actor) -> tuple[PaymentIntent, bool]:
    with transaction.atomic():
        intent = locks.lock_intent(intent.pk)  # account, order or top-up, then the intent
        _refuse_closed(intent)
        if intent.declared_at is not None:
            return intent, False
        now = clock.now()
        intent.declared_at = now
        intent.rescan_requested_at = now
        intent.save(update_fields=["declared_at", "rescan_requested_at"])
        audit_record(action="payment.declared", target=intent, actor=actor)
        network = intent.chain
        transaction.on_commit(lambda: _request_rescan(network))
        if intent.order_id:
            audit_record(
                action="order.payment_declared",
                target=intent.order,
                actor=actor,
                after={"payment": str(intent.pk)},
            )
    return intent, True


def _request_rescan(network: str) -> None:
    tasks.watch_network(network)


@retry_lost_races
def payment_intent_abandon(*, intent: PaymentIntent, actor) -> PaymentIntent:
    """The customer drops these instructions to pick another method.

    The address is still watched until `monitor_until`: money sent to it later is found
    and reviewed, never lost.
    """
    with transaction.atomic():
        intent = locks.lock_intent(intent.pk)
        if intent.abandoned_at is not None or intent.closed_at is not None:
            return intent
        if intent.status not in {IntentStatus.PENDING, IntentStatus.EXPIRED}:
            raise Conflict(
                _(
                    "A payment has already been seen for these instructions; "
                    "they cannot be abandoned."
                )
            )
        intent.abandoned_at = clock.now()
        intent.save(update_fields=["abandoned_at"])
        audit_record(action="payment.abandoned", target=intent, actor=actor)
        if intent.order_id:
            audit_record(
                action="order.payment_abandoned",
                target=intent.order,
                actor=actor,
                after={"payment": str(intent.pk)},
            )
    return intent


# Statuses closed with the order: nothing was received yet, or it is still unconfirmed.
CLOSABLE_STATUSES = (IntentStatus.PENDING, IntentStatus.DETECTED, IntentStatus.EXPIRED)


def payment_intents_close_for_order(
    *, order, reason: str, actor=None, except_intent_id=None
) -> list[PaymentIntent]:
    """Close the order's unpaid instructions because it was settled otherwise or cancelled.

    Called inside the order's transaction, with the order locked; `except_intent_id` is
    the payment settling it, which stays open. The payment page then
    says "do not send"; the address stays watched until `monitor_until`, and whatever
    still arrives is recorded and goes to review (watching treats closed as decided).
    """
    return _close(
        locks.lock_intents_of_order(
            order_id=order.pk,
            closed_at__isnull=True,
            resolution="",
            status__in=CLOSABLE_STATUSES,
        ),
        reason=reason,
        actor=actor,
        except_intent_id=except_intent_id,
    )


def payment_intents_close_for_extension(
    *, extension, actor=None, except_intent_id=None
) -> list[PaymentIntent]:
    """Close an extension offer's unpaid instructions once it is paid (from the balance, or
    by another payment: `except_intent_id`), as an order's are: the page says "do not
    send", and what still arrives is recorded and reviewed. Called with the offer locked."""
    return _close(
        locks.lock_intents(
            extension_id=extension.pk,
            closed_at__isnull=True,
            resolution="",
            status__in=CLOSABLE_STATUSES,
        ),
        reason=ClosedReason.OFFER_PAID,
        actor=actor,
        except_intent_id=except_intent_id,
    )


def _close(intents, *, reason: str, actor, except_intent_id) -> list[PaymentIntent]:
    if reason not in ClosedReason.values:
        raise ValueError(reason)
    now = clock.now()
    closed = []
    for intent in intents:
        if except_intent_id is not None and str(intent.pk) == str(except_intent_id):
            continue  # the payment that settles it
        intent.closed_at = now
        intent.closed_reason = reason
        intent.save(update_fields=["closed_at", "closed_reason"])
        audit_record(
            action="payment.closed",
            target=intent,
            actor=actor,
            before={"status": intent.status},
            after={"closed_reason": reason},
        )
        closed.append(intent)
    return closed
