"""Order actions: the only code that writes orders."""

from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from kernodeck.catalog import selectors as catalog_selectors
from kernodeck.catalog import services as catalog_services
from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.core.money import usd_str
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.notifications.services import email_enqueue
from kernodeck.orders import capacity, locks, selectors
from kernodeck.orders.models import PAYMENT_TRANSITIONS, Order, PaymentState
from kernodeck.orders.references import new_reference

REFERENCE_ATTEMPTS = 5


def _snapshot(order: Order) -> dict:
    return {
        "offer": order.offer_slug,
        "gpu_model": order.gpu_model,
        "days": order.days,
        "units": order.units,
        "gpus": order.gpus,
        "preparation": order.preparation,
        "unit_price_usd": usd_str(order.unit_price_usd),
        "total_usd": usd_str(order.total_usd),
    }


class UnitsReleased(Conflict):
    """The order's hold lapsed and its units went to other orders meanwhile."""

    def __init__(self, *, order: Order, free: int, settling: bool):
        values = {"reference": order.reference, "free": free, "units": order.units}
        if settling:
            message = _(
                "The units of order %(reference)s were released when its hold lapsed, and "
                "only %(free)d are free now (it needs %(units)d), so it cannot be settled. "
                "Cancel it and order again."
            )
        else:
            message = _(
                "The units of order %(reference)s were released when its hold lapsed, and "
                "only %(free)d are free now (it needs %(units)d). Cancel it and order again."
            )
        super().__init__(message % values)
        self.free = free


def _recheck_units_if_lapsed(order: Order, *, settling: bool) -> None:
    """Once the hold has lapsed, count the units again under the offer's lock.

    A lapsed order holds nothing, so other orders may have taken its units. Called with the
    order locked; the offer comes after it in the lock order.
    """
    if order.hold_until > clock.now():
        return
    offer = locks.lock_offer(order.offer_id)
    free = capacity.units_free(offer=offer)
    if order.units > free:
        raise UnitsReleased(order=order, free=free, settling=settling)


@retry_lost_races
def order_register(*, owner, offer, days, units, preparation) -> Order:
    """Register an order from a configuration, holding its units for the hold window.

    The price comes from the same quote the configurator shows. The offer row is locked
    while capacity is counted, so two customers racing for the last unit cannot both win.
    """
    offer_obj = catalog_selectors.offer_get_active(slug=offer)
    now = clock.now()
    with transaction.atomic():
        # Count capacity only once the offer row is locked: the check and the insert below
        # are one step for every other order of this offer.
        offer_row = locks.lock_offer(offer_obj.pk)
        quote = selectors.offer_quote(
            offer_obj=offer_row, days=days, units=units, preparation=preparation
        )
        order = Order(
            owner=owner,
            offer=offer_row,
            offer_slug=offer_row.slug,
            gpu_model=offer_row.gpu_model,
            backend=offer_row.backend,
            memory_gib=offer_row.memory_gib,
            gpus_per_unit=quote.gpus_per_unit,
            days=quote.days,
            units=quote.units,
            gpus=quote.gpus,
            preparation=quote.preparation,
            unit_price_usd=quote.unit_price_usd,
            total_usd=quote.total_usd,
            created_at=now,
            hold_until=now + timedelta(seconds=settings.KERNODECK_ORDER_HOLD_SECONDS),
        )
        for attempt in range(REFERENCE_ATTEMPTS):
            order.reference = new_reference()
            try:
                with transaction.atomic():
                    order.save(force_insert=True)
                break
            except IntegrityError:
                if attempt == REFERENCE_ATTEMPTS - 1:
                    raise
        catalog_services.catalog_changed()  # its units are held from now on
        audit_record(
            action="order.registered",
            target=order,
            actor=owner,
            after={**_snapshot(order), "hold_until": order.hold_until.isoformat()},
        )
        email_enqueue(
            account=owner,
            event="order_registered",
            context={
                **_snapshot(order),
                "reference": order.reference,
                "hold_until": order.hold_until,
            },
            dedupe_key=f"order_registered:{order.reference}",
        )
    return order


@retry_lost_races
def order_mark_cancelled(*, order: Order, actor) -> Order:
    """Cancel an unsettled order; its units are released at once. Its unpaid payment
    instructions are closed by the caller (settlement.orders.order_cancel)."""
    with transaction.atomic():
        order = locks.lock_order(order.pk)  # account, then order
        if order.payment_state == PaymentState.CANCELLED:
            return order
        if PaymentState.CANCELLED not in PAYMENT_TRANSITIONS[order.payment_state]:
            raise Conflict(
                _(
                    "A settled order cannot be cancelled here. Contact support with the "
                    "reference %(reference)s."
                )
                % {"reference": order.reference}
            )
        before = order.payment_state
        order.payment_state = PaymentState.CANCELLED
        order.cancelled_at = clock.now()
        order.save(update_fields=["payment_state", "cancelled_at"])
        catalog_services.catalog_changed()  # its held units are free again
        audit_record(
            action="order.cancelled",
            target=order,
            actor=actor,
            before={"payment_state": before},
            after={"payment_state": order.payment_state},
        )
    return order


@retry_lost_races
def order_hold_extend(*, order: Order, until, actor=None) -> Order:
    """Keep an unsettled order's units held until `until` (while a payment is pending).

    If the hold had already lapsed, the units may have gone to someone else: they are
    counted again under the offer's lock, and the extension is refused if they are gone.
    """
    if order.payment_state != PaymentState.AWAITING_PAYMENT or order.hold_until >= until:
        # Nothing to do, even if `order` was read before a change: an order never returns
        # to awaiting payment and its hold only grows, so the locked row says the same.
        return order
    with transaction.atomic():
        order = locks.lock_order(order.pk)
        if order.payment_state != PaymentState.AWAITING_PAYMENT or order.hold_until >= until:
            return order
        _recheck_units_if_lapsed(order, settling=False)
        before = order.hold_until
        order.hold_until = until
        order.save(update_fields=["hold_until"])
        if before <= clock.now():
            catalog_services.catalog_changed()  # a lapsed hold takes its units again
        audit_record(
            action="order.hold_extended",
            target=order,
            actor=actor,
            before={"hold_until": before.isoformat()},
            after={"hold_until": until.isoformat()},
        )
    return order


def _check_settleable(order: Order) -> None:
    """Refuse to settle an order whose state does not allow it (cancelled)."""
    if PaymentState.SETTLED not in PAYMENT_TRANSITIONS[order.payment_state]:
        raise Conflict(
            _("Order %(reference)s is %(state)s and cannot be settled.")
            % {
                "reference": order.reference,
                "state": order.get_payment_state_display().lower(),
            }
        )


@retry_lost_races
def order_mark_settled(*, order: Order, actor=None, cause: dict) -> Order:
    """Mark an unsettled order as paid. Idempotent: settling a settled order changes nothing.

    The order's own move, called by settlement.orders.order_settle (which closes its other
    instructions first and queues its rental after) inside its transaction. `cause` says
    what paid it, for the audit trail. A lapsed hold is re-checked here (UnitsReleased,
    409: the caller's whole transaction is undone).
    """
    with transaction.atomic():
        order = locks.lock_order(order.pk)  # account, then order
        if order.payment_state == PaymentState.SETTLED:
            return order
        _check_settleable(order)
        _recheck_units_if_lapsed(order, settling=True)
        before = order.payment_state
        order.payment_state = PaymentState.SETTLED
        order.settled_at = clock.now()
        order.save(update_fields=["payment_state", "settled_at"])
        catalog_services.catalog_changed()  # held units become a rental's
        audit_record(
            action="order.settled",
            target=order,
            actor=actor,
            before={"payment_state": before},
            after={"payment_state": order.payment_state},
            data=cause,
        )
        email_enqueue(
            account=order.owner,
            event="payment_confirmed",
            context={**_snapshot(order), "reference": order.reference},
            dedupe_key=f"payment_confirmed:{order.reference}",
        )
    return order
