"""Reminders before a rental ends: when they are due (pure) and sending them (the sweep).

A rental gets a reminder 72, 24 and 2 hours before `ends_at`, but only for the moments
still ahead when it started (a 3-day rental gets no 72-hour reminder). Each is sent once:
its dedupe key holds the threshold and `ends_at`, so moving `ends_at` (an extension)
plans a fresh set by itself. After a worker outage, only the most urgent reminder that is
due goes out: a customer with 2 hours left needs one e-mail, not three.
"""

from datetime import datetime, timedelta

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from kernodeck.core import clock
from kernodeck.notifications import services
from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders.models import Order, RentalState

THRESHOLDS_HOURS = (72, 24, 2)


def reminder_thresholds(*, starts_at: datetime, ends_at: datetime) -> list[int]:
    """The thresholds (hours) whose moment lies after the start, most distant first."""
    return [h for h in THRESHOLDS_HOURS if ends_at - timedelta(hours=h) > starts_at]


def reminder_due(*, starts_at: datetime, ends_at: datetime, now: datetime) -> int | None:
    """The most urgent planned threshold whose moment has come, or None (also once ended)."""
    if now >= ends_at:
        return None
    due = [
        h
        for h in reminder_thresholds(starts_at=starts_at, ends_at=ends_at)
        if ends_at - timedelta(hours=h) <= now
    ]
    return min(due) if due else None


def hours_left(*, ends_at: datetime, now: datetime) -> int:
    """Whole hours left, rounded down (1 h 59 min left reads "1")."""
    return max(0, int((ends_at - now).total_seconds() // 3600))


def minutes_left(*, ends_at: datetime, now: datetime) -> int:
    """Whole minutes left, rounded down: a reminder never promises time that is not there."""
    return max(0, int((ends_at - now).total_seconds() // 60))


def time_left_in_words(minutes: int) -> str:
    """ "1 hour and 49 minutes", "3 minutes", "72 hours", in the active language."""
    hours, rest = divmod(max(0, int(minutes)), 60)
    if not hours and not rest:
        return _("less than a minute")
    hours_text = ngettext("%(n)s hour", "%(n)s hours", hours) % {"n": hours}
    minutes_text = ngettext("%(n)s minute", "%(n)s minutes", rest) % {"n": rest}
    if not hours:
        return minutes_text
    if not rest:
        return hours_text
    return _("%(hours)s and %(minutes)s") % {"hours": hours_text, "minutes": minutes_text}


def reminder_dedupe_key(*, order: Order, threshold: int) -> str:
    return f"rental_reminder:{order.reference}:{threshold}h:{order.ends_at.isoformat()}"


def rental_reminders_send() -> int:
    """Enqueue the due reminder of every active rental (the periodic task). Returns how many
    new e-mails were stored; running it twice stores nothing more."""
    now = clock.now()
    horizon = now + timedelta(hours=max(THRESHOLDS_HOURS))
    candidates = (
        Order.objects.filter(
            rental_state=RentalState.ACTIVE,
            starts_at__isnull=False,
            ends_at__gt=now,
            ends_at__lte=horizon,
        )
        .select_related("owner")
        .order_by("ends_at", "pk")
    )
    stored = 0
    for order in candidates.iterator():
        threshold = reminder_due(starts_at=order.starts_at, ends_at=order.ends_at, now=now)
        if threshold is None:
            continue
        key = reminder_dedupe_key(order=order, threshold=threshold)
        if OutboxMessage.objects.filter(dedupe_key=key).exists():
            continue
        with transaction.atomic():
            services.email_enqueue(
                account=order.owner,
                event="rental_reminder",
                context={
                    "reference": order.reference,
                    "hours_left": hours_left(ends_at=order.ends_at, now=now),
                    "minutes_left": minutes_left(ends_at=order.ends_at, now=now),
                    "threshold_hours": threshold,
                    "ends_at": order.ends_at,
                },
                dedupe_key=key,
            )
        stored += 1
    return stored
