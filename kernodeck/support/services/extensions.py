"""Rental extensions: staff offer or decline, the customer pays, the rental's end moves.

An offer is paid from the balance or in crypto (instructions from `payments`); either way
`_settle_locked` marks it paid and moves the rental's end in the same transaction. Apart
from tickets because it is money and rental state: it locks the extension (and the order),
and reaches into the ledger, payments and provisioning, which a plain message never does.
"""

from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.money import usd, usd_str
from kernodeck.core.services import audit_record
from kernodeck.ledger import services as ledger_services
from kernodeck.orders import locks as order_locks
from kernodeck.orders.models import Order, RentalState
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import Purpose
from kernodeck.provisioning.services import rental_extend
from kernodeck.support import locks as support_locks
from kernodeck.support import pricing
from kernodeck.support.models import (
    EXTENSION_TRANSITIONS,
    Extension,
    ExtensionStatus,
    Status,
    Ticket,
)
from kernodeck.support.services.intake import _positive_days, _text

OFFER_MAX_VALID_DAYS = 30
# Rentals whose end can move (what `rental_extend` accepts).
EXTENDABLE_STATES = {RentalState.ACTIVE, RentalState.SUSPENDED}


def _move(extension: Extension, status: str) -> None:
    if status not in EXTENSION_TRANSITIONS[extension.status]:
        raise Conflict(
            _("This extension is %(state)s; it cannot become %(new)s.")
            % {
                "state": extension.get_status_display().lower(),
                "new": ExtensionStatus(status).label.lower(),
            }
        )


def _price(value, *, field="price_usd") -> Decimal:
    message = _("Give a price in USD greater than zero, e.g. 150.00.")
    text = str(value).strip()
    if not text.isascii():
        raise InvalidInput(message, field=field)
    try:
        price = Decimal(text)
    except InvalidOperation:
        raise InvalidInput(message, field=field) from None
    if not price.is_finite() or price <= 0 or price >= Decimal("1000000"):
        raise InvalidInput(message, field=field)
    return usd(price)


def extension_default_price(*, order: Order, days: int) -> Decimal:
    """The price sheet's price for `days` more days of this order's units."""
    sheet = {p.days: p.unit_price_usd for p in order.offer.prices.all()}
    return pricing.extension_price(unit_prices=sheet, units=order.units, days=days)


def extension_offer(
    *, extension: Extension, days, valid_until: datetime, actor, price_usd=None
) -> Extension:
    """Staff answer a request with an offer: extra days, a price (the sheet's by default,
    or a custom one) and how long the offer stands. Nothing changes for the rental yet."""
    days = _positive_days(days, field="days", required=True)
    now = clock.now()
    if valid_until is None or valid_until <= now:
        raise InvalidInput(_("The offer must be valid until a future time."), field="valid_until")
    if valid_until > now + timedelta(days=OFFER_MAX_VALID_DAYS):
        raise InvalidInput(
            _("An offer stands for at most %(n)d days.") % {"n": OFFER_MAX_VALID_DAYS},
            field="valid_until",
        )
    custom = price_usd not in (None, "")
    with transaction.atomic():
        extension = support_locks.lock_extension(extension.pk)
        _move(extension, ExtensionStatus.OFFERED)
        if extension.order.rental_state not in EXTENDABLE_STATES:
            raise Conflict(_("Only a running rental can be extended; this one is not."))
        price = (
            _price(price_usd)
            if custom
            else extension_default_price(order=extension.order, days=days)
        )
        before = {"status": extension.status}
        extension.status = ExtensionStatus.OFFERED
        extension.days = days
        extension.price_usd = price
        extension.custom_price = custom
        extension.valid_until = valid_until
        extension.offered_by = actor
        extension.offered_at = now
        extension.save(
            update_fields=[
                "status",
                "days",
                "price_usd",
                "custom_price",
                "valid_until",
                "offered_by",
                "offered_at",
            ]
        )
        after = {
            "status": extension.status,
            "days": days,
            "price_usd": usd_str(price),
            "custom_price": custom,
            "valid_until": valid_until.isoformat(),
        }
        audit_record(
            action="support.extension_offered",
            target=extension,
            actor=actor,
            before=before,
            after=after,
        )
        audit_record(
            action="order.extension_offered",
            target=extension.order,
            actor=actor,
            after={"days": days, "price_usd": usd_str(price)},
        )
        _ticket_touch(extension.ticket_id, status=Status.ANSWERED)
    return extension


def extension_decline(*, extension: Extension, reason: str, actor) -> Extension:
    """Staff decline a request or withdraw an unpaid offer, with the reason the customer
    reads. Nothing about the rental changes."""
    reason = _text(reason, field="reason", limit=2000, required=True)
    with transaction.atomic():
        extension = support_locks.lock_extension(extension.pk)
        _move(extension, ExtensionStatus.DECLINED)
        before = {"status": extension.status}
        extension.status = ExtensionStatus.DECLINED
        extension.decline_reason = reason
        extension.save(update_fields=["status", "decline_reason"])
        audit_record(
            action="support.extension_declined",
            target=extension,
            actor=actor,
            before=before,
            after={"status": extension.status, "reason": reason},
        )
        audit_record(
            action="order.extension_declined",
            target=extension.order,
            actor=actor,
            after={"reason": reason},
        )
        _ticket_touch(extension.ticket_id, status=Status.ANSWERED)
    return extension


def _ticket_touch(ticket_id, *, status) -> None:
    Ticket.objects.filter(pk=ticket_id).update(status=status, updated_at=clock.now())


def _check_payable(extension: Extension) -> None:
    if extension.status != ExtensionStatus.OFFERED:
        raise Conflict(_("There is no offer waiting for payment in this ticket."))
    if extension.order.rental_state not in EXTENDABLE_STATES:
        raise Conflict(_("This rental is no longer running, so it cannot be extended."))
    if extension.valid_until <= clock.now():
        raise Conflict(
            _("This offer expired on %(at)s UTC; ask support for a new one.")
            % {"at": extension.valid_until.strftime("%Y-%m-%d %H:%M")}
        )


class DeclaredExtensionPaymentPending(Conflict):
    """The customer said they sent crypto for this offer ("I have paid"); paying from the
    balance too may pay it twice, so it needs an explicit confirmation (as an order's)."""

    def __init__(self, *, extension, declared):
        super().__init__(
            _(
                "You said you already sent a payment for this extension offer (%(methods)s). "
                "If that transfer arrives after you pay from your balance, you will have paid "
                "twice, and the second payment waits for an operator's review before it is "
                "credited to your balance. Confirm to pay from the balance anyway."
            )
            % {"methods": ", ".join(str(intent.method) for intent in declared)}
        )
        self.declared = declared


def extension_declared_warning(extension: Extension) -> str:
    """What paying an offer from the balance must say first while its crypto instructions
    are declared paid and still watched ("" otherwise)."""
    if extension.status != ExtensionStatus.OFFERED:
        return ""
    declared = payment_selectors.extension_declared_unverified(extension=extension)
    if not declared:
        return ""
    return DeclaredExtensionPaymentPending(extension=extension, declared=declared).message


def extension_pay_with_balance(*, extension: Extension, actor, confirm: bool = False) -> Extension:
    """Pay an offer from the available balance and apply it, in one transaction.

    The account, then the extension, are locked first: a second press (or a concurrent
    API call) waits, then finds the offer paid and charges nothing. The ledger also
    refuses a second charge for the same extension (unique constraint). Refused while a
    crypto payment for the offer has been seen; after "I have paid" on its instructions
    still watched, only with `confirm` (DeclaredExtensionPaymentPending otherwise). Paying
    closes the offer's other instructions.
    """

    with transaction.atomic():
        extension = support_locks.lock_extension(extension.pk)
        if extension.status in {ExtensionStatus.PAID, ExtensionStatus.APPLIED}:
            return extension
        _check_payable(extension)
        seen = payment_selectors.extension_money_seen(extension=extension)
        if seen:
            # Charging now would make the customer pay twice once that transfer confirms.
            raise payment_services.PaymentsSeen(seen, from_balance=True)
        declared = payment_selectors.extension_declared_unverified(extension=extension)
        if declared and not confirm:
            raise DeclaredExtensionPaymentPending(extension=extension, declared=declared)
        entry = ledger_services.extension_charge(extension=extension, actor=actor)
        return _settle_locked(extension, actor=actor, cause={"ledger_entry": entry.pk})


def extension_payment_create(
    *, extension: Extension, method_code: str, actor, different_payment: bool = False
):
    """Crypto instructions for an offer (a payment with purpose `extension`), under the
    same rules as an order's: refused while live ones exist, while money seen for the offer
    is not decided (unless `different_payment`), once the offer has as many still watched
    as the cap, or when the account asked for too many lately (429)."""
    owner_id = Extension.objects.values_list("order__owner_id", flat=True).get(pk=extension.pk)
    payment_services.instructions_throttle_check(owner_id)
    # Refusals and any rate fetch before the lock; read once.
    prepared = payment_services.instructions_prepare(method_code, purpose=Purpose.EXTENSION)
    with transaction.atomic():
        extension = support_locks.lock_extension(extension.pk)
        _check_payable(extension)
        intents = list(extension.intents.select_related("method"))
        live = payment_selectors.live_intent(intents)
        if live is not None:
            raise Conflict(
                _("This offer already has payment instructions valid until %(until)s UTC.")
                % {"until": live.expires_at.strftime("%Y-%m-%d %H:%M")}
            )
        payment_services.instructions_check_money_seen(
            intents, different_payment=different_payment
        )
        payment_services.instructions_check_watched_cap(intents)
        intent = payment_services.payment_intent_create(
            owner=extension.order.owner,
            method_code=method_code,
            amount_usd=extension.price_usd,
            purpose=Purpose.EXTENSION,
            extension=extension,
            actor=actor,
            prepared=prepared,
            order_event=("order.extension_payment_created", extension.order),
            different_payment=different_payment,
        )
    payment_services.instructions_throttle_hit(owner_id)
    return intent


def extension_settle(*, extension_id, intent_id, cause: dict, actor=None) -> Extension:
    """Called by payment reconciliation (and review) when an extension payment is
    confirmed: mark it paid and move the rental's end. Idempotent for the same payment;
    a second payment for an offer already paid (say, from the balance meanwhile) is
    refused, so it waits in review instead of being swallowed."""
    with transaction.atomic():
        extension = support_locks.lock_extension(extension_id)
        if extension.status in {ExtensionStatus.PAID, ExtensionStatus.APPLIED}:
            if extension.paid_by_payment_id == intent_id:
                return extension
            raise Conflict(_("This extension was already paid; this payment needs a decision."))
        if extension.status != ExtensionStatus.OFFERED:
            raise Conflict(_("The extension offer was withdrawn before this payment arrived."))
        return _settle_locked(extension, actor=actor, cause=cause, intent_id=intent_id)


def _settle_locked(extension: Extension, *, actor, cause: dict, intent_id=None) -> Extension:
    now = clock.now()
    # Its other instructions say "do not send" from now on (the paying one stays open).
    payment_services.payment_intents_close_for_extension(
        extension=extension, actor=actor, except_intent_id=intent_id
    )
    _move(extension, ExtensionStatus.PAID)
    extension.status = ExtensionStatus.PAID
    extension.paid_at = now
    extension.paid_by_payment_id = intent_id
    extension.save(update_fields=["status", "paid_at", "paid_by_payment"])
    audit_record(
        action="support.extension_paid",
        target=extension,
        actor=actor,
        after={"status": extension.status, **cause},
    )
    # The order's current end, read under its lock: the new end counts from it.
    order = order_locks.lock_order(extension.order_id)
    until = order.ends_at + timedelta(days=extension.days)
    rental_extend(
        order=order,
        until=until,
        reason=_("Extension of %(days)d days, paid (ticket %(ticket)s)")
        % {"days": extension.days, "ticket": str(extension.ticket_id)[:8]},
        actor=actor,
    )
    extension.status = ExtensionStatus.APPLIED
    extension.applied_at = now
    extension.new_ends_at = until
    extension.save(update_fields=["status", "applied_at", "new_ends_at"])
    audit_record(
        action="support.extension_applied",
        target=extension,
        actor=actor,
        after={"status": extension.status, "ends_at": until.isoformat()},
    )
    _ticket_touch(extension.ticket_id, status=Status.ANSWERED)
    return extension
