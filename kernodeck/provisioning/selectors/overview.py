"""The rental as its customer reads it: stages, the reason shown, the calendar file.

The customer's words live here: which reasons a customer sees (`CUSTOMER_REASON_STATES`),
what an end not yet confirmed by its machine says (`END_BEING_APPLIED`).
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernodeck.accounts.models import SshKey
from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.orders.models import Order, RentalState
from kernodeck.orders.timeline import REFUNDED, rental_refunded
from kernodeck.provisioning.models import Allocation
from kernodeck.provisioning.selectors.access import AccessView, access_for_owner, period_over

END_BEING_APPLIED = gettext_lazy(
    "The rental is over and your access has been withdrawn; the end is being applied on "
    "the machine."
)


# States whose reason the customer sees (a failure or a suspension says why).
CUSTOMER_REASON_STATES = {RentalState.PROVISIONING_FAILED, RentalState.SUSPENDED}


def release_pending(order: Order) -> bool:
    """The rental ended, and a node has not confirmed its release yet."""
    return (
        order.rental_state == RentalState.ENDED
        and Allocation.objects.filter(order=order, released_at__isnull=True).exists()
    )


def _ics_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def rental_calendar(*, order: Order) -> str:
    """An iCalendar file with the rental period and a reminder a day before the end.

    Conflict when the dates are not known yet (before access is delivered).
    """
    if not (order.starts_at and order.ends_at):
        raise Conflict(
            _(
                "The rental of %(reference)s has no dates yet: they are set when access is "
                "delivered. If access was delivered, ask support with the reference."
            )
            % {"reference": order.reference}
        )
    summary = _("GPU rental %(reference)s (%(gpus)d GPU, %(gpu)s)") % {
        "reference": order.reference,
        "gpus": order.gpus,
        "gpu": order.gpu_model,
    }
    reminder = _("Export your results, checkpoints and environment before the end.")
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//Kernodeck//Rental clock//EN",
        "CALSCALE:GREGORIAN",
        "BEGIN:VEVENT",
        f"UID:{order.reference.lower()}@kernodeck",
        f"DTSTAMP:{_ics_time(clock.now())}",
        f"DTSTART:{_ics_time(order.starts_at)}",
        f"DTEND:{_ics_time(order.ends_at)}",
        f"SUMMARY:{_ics_escape(summary)}",
        f"DESCRIPTION:{_ics_escape(reminder)}",
        "BEGIN:VALARM",
        "ACTION:DISPLAY",
        f"DESCRIPTION:{_ics_escape(reminder)}",
        "TRIGGER;RELATED=END:-PT24H",
        "END:VALARM",
        "END:VEVENT",
        "END:VCALENDAR",
    ]
    return "\r\n".join(lines) + "\r\n"


def _ics_escape(text: str) -> str:
    return (
        str(text)
        .replace("\\", "\\\\")
        .replace(";", "\\;")
        .replace(",", "\\,")
        .replace("\n", "\\n")
    )


@dataclass(frozen=True)
class Stage:
    key: str
    label: str
    status: str  # done | current | todo | problem | skipped | refunded
    at: datetime | None = None


@dataclass(frozen=True)
class Refund:
    """A rental refunded to the balance, as the ledger holds it: how much, why, when."""

    amount_usd: Decimal
    reason: str
    at: datetime


@dataclass(frozen=True)
class RentalOverview:
    """What the order file shows about the rental: stages, dates, access, what is missing."""

    stages: list[Stage]
    access: AccessView | None
    needs_ssh_key: bool
    seconds_left: int | None
    reason: str
    refund: Refund | None = None
    # The period is past while the state still says active or suspended (the end is
    # being applied): access is withdrawn from the page already.
    period_over: bool = False


def rental_refund_of(order: Order) -> Refund | None:
    """The rental's refund, read from the ledger; only an ended rental has one."""
    if order.rental_state != RentalState.ENDED:
        return None
    entry = ledger_selectors.order_refund(order=order)
    if entry is None:
        return None
    return Refund(amount_usd=entry.amount_usd, reason=entry.memo, at=entry.created_at)


def _refunded_stages(order: Order, refund: Refund | None) -> list[Stage]:
    """A rental refunded before it started: paid, never prepared nor delivered, refunded."""
    return [
        Stage("payment", _("Payment"), "done", order.settled_at),
        Stage("preparation", _("Preparation"), "skipped"),
        Stage("access", _("Access"), "skipped"),
        Stage(
            "refund",
            str(REFUNDED),
            "refunded",
            refund.at if refund else order.rental_state_changed_at,
        ),
    ]


def _stages(order: Order, refund: Refund | None = None) -> list[Stage]:
    if refund is not None or rental_refunded(order):
        return _refunded_stages(order, refund)
    state = order.rental_state
    settled = order.payment_state == "settled"
    delivered = order.starts_at is not None
    preparing_status = "todo"
    if state in {RentalState.QUEUED, RentalState.PREPARING}:
        preparing_status = "current"
    elif state == RentalState.PROVISIONING_FAILED:
        preparing_status = "problem"
    elif delivered:
        preparing_status = "done"
    access_status = "todo"
    if state == RentalState.ACTIVE:
        access_status = "current"
    elif state == RentalState.SUSPENDED:
        access_status = "problem"
    elif delivered:
        access_status = "done"
    return [
        Stage(
            "payment",
            _("Payment"),
            "done" if settled else ("todo" if order.payment_state == "cancelled" else "current"),
            order.settled_at,
        ),
        Stage("preparation", _("Preparation"), preparing_status),
        Stage("access", _("Access"), access_status, order.starts_at),
        Stage(
            "end",
            _("End"),
            ("current" if release_pending(order) else "done")
            if state == RentalState.ENDED
            else "todo",
            order.ends_at,
        ),
    ]


def rental_overview(*, order: Order) -> RentalOverview:
    """The rental block of the owner's order file."""
    seconds_left = None
    if order.ends_at and order.rental_state in {RentalState.ACTIVE, RentalState.SUSPENDED}:
        seconds_left = max(0, int((order.ends_at - clock.now()).total_seconds()))
    settled = order.payment_state == "settled"
    refund = rental_refund_of(order)
    return RentalOverview(
        stages=_stages(order, refund),
        access=access_for_owner(order=order),
        needs_ssh_key=settled
        and order.rental_state != RentalState.ENDED
        and not SshKey.objects.filter(user_id=order.owner_id).exists(),
        seconds_left=seconds_left,
        reason=rental_overview_reason(order=order),
        refund=refund,
        period_over=order.rental_state in {RentalState.ACTIVE, RentalState.SUSPENDED}
        and period_over(order),
    )


def rental_overview_reason(*, order: Order) -> str:
    """The reason a customer sees: only for a failure, a suspension, an end that its
    machine has not confirmed yet; for a refund, its reason."""
    if rental_refunded(order):
        return order.rental_reason
    if order.rental_state == RentalState.ENDED and release_pending(order):
        return str(END_BEING_APPLIED)
    return order.rental_reason if order.rental_state in CUSTOMER_REASON_STATES else ""


def rental_overview_reasons_by_order(orders) -> dict[int, str]:
    """`rental_overview_reason` of each order of a list, by order id: one query for the
    ended orders' unconfirmed releases (none when no order on the list has ended), not one
    per order. The orders may be any rows with the order's `pk`, states, `starts_at` and
    `rental_reason` (`orders.selectors.OrderRow`)."""
    ended = [
        order.pk
        for order in orders
        if order.rental_state == RentalState.ENDED and not rental_refunded(order)
    ]
    pending = set()
    if ended:
        pending = set(
            Allocation.objects.filter(order_id__in=ended, released_at__isnull=True)
            .values_list("order_id", flat=True)
            .distinct()
        )
    reasons = {}
    for order in orders:
        if rental_refunded(order):
            reasons[order.pk] = order.rental_reason
        elif order.pk in pending:
            reasons[order.pk] = str(END_BEING_APPLIED)
        elif order.rental_state in CUSTOMER_REASON_STATES:
            reasons[order.pk] = order.rental_reason
        else:
            reasons[order.pk] = ""
    return reasons
