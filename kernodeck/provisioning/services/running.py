"""A delivered rental: suspend, resume, extend, end (now or at its term), the access reveal.

The moves after access is delivered. Each one reconciles the nodes after commit (or, at the
end, asks them to release their slots: `services.releases`).
"""

from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput, NotFound
from kernodeck.core.services import audit_record
from kernodeck.notifications import selectors as notification_selectors
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import selectors
from kernodeck.provisioning.models import Delivery
from kernodeck.provisioning.services.moves import _lock_order, _move, _reason_required, _refuse
from kernodeck.provisioning.services.queueing import (
    _enqueue,
    _enqueue_allocate_waiting,
    _enqueue_reconcile,
)
from kernodeck.provisioning.services.releases import _request_release

PERIOD_OVER = gettext_lazy("The rental period is over.")


def rental_suspend(*, order, reason: str, actor) -> Order:
    """Suspend an active rental (abuse, a hardware fault). The clock keeps running."""
    reason = _reason_required(reason)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.SUSPENDED:
            return order
        order = _move(order, to=RentalState.SUSPENDED, actor=actor, reason=reason)
        _enqueue_reconcile(order)
        return order


def rental_resume(*, order, reason: str, actor) -> Order:
    """Give a suspended rental back to its customer, with the dates it had."""
    reason = _reason_required(reason)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.ACTIVE:
            return order
        if order.rental_state != RentalState.SUSPENDED:
            _refuse(order, RentalState.ACTIVE)
        order = _move(order, to=RentalState.ACTIVE, actor=actor, reason=reason)
        _enqueue_reconcile(order)
        return order


def rental_end(*, order, reason: str, actor) -> Order:
    """End a rental now: its access goes at once (secrets erased), its slots on automated
    nodes stay held until the node confirms the release (`rental_release_confirm`), those on
    manual nodes are freed now. The end task calls this at `ends_at`; operators with a
    reason. The "ended" e-mail goes once every node confirmed."""
    reason = _reason_required(reason)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.ENDED:
            return order
        if order.rental_state not in {RentalState.ACTIVE, RentalState.SUSPENDED}:
            _refuse(order, RentalState.ENDED)
        now = clock.now()
        released, pending = _request_release(order)
        revoked = Delivery.objects.filter(order=order, revoked_at__isnull=True).update(
            secret_ciphertext="", revoked_at=now
        )
        order = _move(
            order,
            to=RentalState.ENDED,
            actor=actor,
            reason=reason,
            data={
                "slots_released": released,
                "release_pending": pending,
                "deliveries_revoked": revoked,
            },
            notice="" if pending else "rental_ended",
        )
        if pending:
            _enqueue("rental_release_task", order.pk)
        if released:
            transaction.on_commit(_enqueue_allocate_waiting)
    return order


def rentals_end_due() -> list[str]:
    """End every rental whose `ends_at` has passed — also those missed while no worker ran.

    Returns the references ended. Each runs in its own transaction, so one failure does
    not hold up the others.
    """
    due = list(
        Order.objects.filter(
            rental_state__in=[RentalState.ACTIVE, RentalState.SUSPENDED],
            ends_at__lte=clock.now(),
        )
        .order_by("ends_at", "pk")
        .values_list("pk", flat=True)
    )
    ended = []
    for order_id in due:
        order = rental_end(order=order_id, reason=PERIOD_OVER, actor=None)
        ended.append(order.reference)
    return ended


def rental_extend(*, order, until, reason: str, actor) -> Order:
    """Move an active (or suspended) rental's end to `until` — support's confirmed extension.

    Audited; the driver's extend() runs after commit from the task queue.
    """
    reason = _reason_required(reason)
    if not isinstance(until, datetime) or timezone.is_naive(until):
        raise InvalidInput(_("Give the new end as a date and time with its zone."), field="until")
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state not in {RentalState.ACTIVE, RentalState.SUSPENDED}:
            raise Conflict(
                _("Rental %(reference)s is %(state)s: only a running rental is extended.")
                % {
                    "reference": order.reference,
                    "state": order.get_rental_state_display().lower(),
                }
            )
        if order.ends_at and until <= order.ends_at:
            if until == order.ends_at:
                return order
            raise InvalidInput(
                _("The new end must be later than the current one (%(end)s UTC).")
                % {"end": order.ends_at.strftime("%Y-%m-%d %H:%M")},
                field="until",
            )
        before = order.ends_at
        order.ends_at = until
        # Under the order's lock, which the reminder tick takes too: the new end's reminders
        # are owed from its first planned moment (already passed: the next tick sends the
        # most urgent one due), whatever a tick did for the old end.
        order.next_reminder_at = notification_selectors.rental_first_reminder_at(
            starts_at=order.starts_at, ends_at=until
        )
        order.save(update_fields=["ends_at", "next_reminder_at"])
        audit_record(
            action="order.rental_extended",
            target=order,
            actor=actor,
            before={"ends_at": before.isoformat() if before else None},
            after={"ends_at": until.isoformat()},
            data={"reason": reason},
        )
        _enqueue("rental_extend_task", order.pk)
    return order


def access_reveal_to_staff(*, order: Order, actor, ip: str | None = None):
    """An operator reads a rental's access details (with its secret): audited, each time.

    The caller checks `provisioning.view_access`; this records who looked, and when.
    """
    delivery = selectors.latest_delivery(order)
    if delivery is None:
        raise NotFound(
            _("No access has been delivered for %(reference)s.") % {"reference": order.reference}
        )
    audit_record(
        action="provisioning.access_viewed",
        target=delivery,
        actor=actor,
        data={"order": order.reference},
        ip_address=ip,
    )
    return selectors.access_view(delivery)
