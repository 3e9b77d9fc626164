"""Reads for e-mail and reminders: the order file's reminder banner, the outbox list."""

from django.db.models import Count

from kernodeck.core import clock
from kernodeck.notifications import reminders
from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from kernodeck.orders.models import RentalState


def rental_reminder_banner(*, order, viewer) -> dict | None:
    """What the owner's reminder banner shows, or None when there is nothing to show.

    Shown to the order's owner only, while the rental is active and one of its reminder
    thresholds has passed: the same moments the e-mails go out.
    """
    if viewer is None or not viewer.is_authenticated or viewer.pk != order.owner_id:
        return None
    if order.rental_state != RentalState.ACTIVE or not order.starts_at or not order.ends_at:
        return None
    now = clock.now()
    threshold = reminders.reminder_due(starts_at=order.starts_at, ends_at=order.ends_at, now=now)
    if threshold is None:
        return None
    return {
        "threshold_hours": threshold,
        "hours_left": reminders.hours_left(ends_at=order.ends_at, now=now),
        "minutes_left": reminders.minutes_left(ends_at=order.ends_at, now=now),
        "ends_at": order.ends_at,
    }


def rental_first_reminder_at(*, starts_at, ends_at):
    """When a rental starting at `starts_at` and ending at `ends_at` is first owed a
    reminder (its `next_reminder_at` at the start and after an extension), or None."""
    return reminders.first_reminder_at(starts_at=starts_at, ends_at=ends_at)


def outbox_messages(*, status: str = ""):
    """The outbox, newest first, optionally of one status (an unknown status: all)."""
    messages = OutboxMessage.objects.select_related("account").order_by("-created_at", "-id")
    if status in OutboxStatus.values:
        messages = messages.filter(status=status)
    return messages


# The columns the outbox page shows, in the order `outbox_rows` gives them.
OUTBOX_COLUMNS = (
    "pk",
    "created_at",
    "event",
    "to_email",
    "language",
    "subject",
    "status",
    "attempts",
    "sent_at",
    "next_attempt_at",
    "last_error",
)


def outbox_rows(*, status: str = ""):
    """`outbox_messages` as tuples of OUTBOX_COLUMNS: the page shows these and no more
    (not the bodies, the context's JSON nor the account)."""
    messages = OutboxMessage.objects.order_by("-created_at", "-id")
    if status in OutboxStatus.values:
        messages = messages.filter(status=status)
    return messages.values_list(*OUTBOX_COLUMNS)


def outbox_counts() -> dict[str, int]:
    """How many messages each status holds, for the filter links."""
    counts = dict.fromkeys(OutboxStatus.values, 0)
    for row in OutboxMessage.objects.values("status").order_by().annotate(n=Count("id")):
        counts[row["status"]] = row["n"]
    return counts
