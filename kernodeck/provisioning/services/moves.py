"""The one move of the rental state machine every lifecycle service goes through.

`_move` applies a step of `orders.models.RENTAL_TRANSITIONS` to a locked order, audits it
and queues the customer's notice; `_refuse` words the moves the table does not allow;
`_reason_required` cleans an operator's reason. Apart so that the fleet, allocation,
preparation, running and release modules share one definition of a state change without
importing each other.
"""

from django.utils.translation import gettext as _

from kernodeck.catalog import services as catalog_services
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.services import audit_record
from kernodeck.notifications import selectors as notification_selectors
from kernodeck.orders import locks as order_locks
from kernodeck.orders.models import RENTAL_TRANSITIONS, Order, RentalState
from kernodeck.provisioning import notices

RUNNING = frozenset({RentalState.ACTIVE, RentalState.SUSPENDED})


def _reason_required(reason) -> str:
    reason = str(reason or "").replace("\x00", "").strip()
    if not reason:
        raise InvalidInput(_("Give the reason."), field="reason")
    return reason[:300]


def _refuse(order: Order, to: str):
    raise Conflict(
        _("Rental %(reference)s is %(state)s; it cannot become %(to)s.")
        % {
            "reference": order.reference,
            "state": order.get_rental_state_display().lower(),
            "to": str(RentalState(to).label).lower(),
        }
    )


def _move(
    order: Order, *, to: str, actor, reason: str = "", fields=(), data=None, notice: str = ""
) -> Order:
    """Apply one move of RENTAL_TRANSITIONS to a locked order, audit it, notify on commit."""
    if to not in RENTAL_TRANSITIONS[order.rental_state]:
        _refuse(order, to)
    before = order.rental_state
    order.rental_state = to
    order.rental_state_changed_at = clock.now()
    order.rental_reason = reason
    order.next_reminder_at = _next_reminder_at(order, before=before)
    order.save(
        update_fields=[
            "rental_state",
            "rental_state_changed_at",
            "rental_reason",
            "next_reminder_at",
            *fields,
        ]
    )
    catalog_services.catalog_changed()  # a settled rental's units wait, or end, by state
    after = {"rental_state": to}
    for name in fields:
        value = getattr(order, name)
        after[name] = value.isoformat() if hasattr(value, "isoformat") else value
    audit_record(
        action="order.rental_state_changed",
        target=order,
        actor=actor,
        before={"rental_state": before},
        after=after,
        data={**({"reason": reason} if reason else {}), **(data or {})},
    )
    if notice:
        notices.rental_notice(order=order, event=notice)
    return order


def _next_reminder_at(order: Order, *, before: str):
    """The reminder marker after a move: planned from the period when the rental starts
    running, kept while it runs (a suspension holds what is owed until it resumes),
    cleared once it stops (ended, refunded), so the reminder tick never reads it again."""
    if order.rental_state not in RUNNING:
        return None
    if before not in RUNNING:
        return notification_selectors.rental_first_reminder_at(
            starts_at=order.starts_at, ends_at=order.ends_at
        )
    return order.next_reminder_at


def _lock_order(order) -> Order:
    return order_locks.lock_order(getattr(order, "pk", order))
