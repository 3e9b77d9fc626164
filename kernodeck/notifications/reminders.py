"""Reminders before a rental ends: when they are due (pure) and sending them (the sweep).

A rental gets a reminder 72, 24 and 2 hours before `ends_at`, but only for the moments
still ahead when it started (a 3-day rental gets no 72-hour reminder). Each is sent once:
its dedupe key holds the threshold and `ends_at`, so moving `ends_at` (an extension)
plans a fresh set by itself. After a worker outage, only the most urgent reminder that is
due goes out: a customer with 2 hours left needs one e-mail, not three.
"""

from datetime import datetime, timedelta

from django.db import NotSupportedError, transaction
from django.db.models import (
    Case,
    CharField,
    DateTimeField,
    F,
    Func,
    IntegerField,
    Q,
    Value,
    When,
)
from django.db.models.functions import Cast, Concat
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from kernodeck.core import clock
from kernodeck.notifications import services
from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders.models import Order, RentalState

THRESHOLDS_HOURS = (72, 24, 2)
# Due reminders are stored this many to an INSERT: one transaction per e-mail made the first
# tick after a start (thousands due at once) take seconds.
STORE_CHUNK = 200


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


class UtcIsoformat(Func):
    """A timestamp written as `datetime.isoformat()` writes it in UTC
    (`2026-12-10T13:00:00+00:00`, `.ffffff` before the zone when there are microseconds),
    so that SQL can build the dedupe key `reminder_dedupe_key` builds."""

    output_field = CharField()

    def as_sql(self, compiler, connection, **extra):
        raise NotSupportedError(f"UtcIsoformat is not written for {connection.vendor}")

    def as_sqlite(self, compiler, connection, **extra):
        # Django stores an aware datetime as its UTC value's str(): "YYYY-MM-DD HH:MM:SS[.f]".
        sql, params = compiler.compile(self.source_expressions[0])
        return f"(REPLACE({sql}, ' ', 'T') || '+00:00')", params

    def as_postgresql(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        utc = f"(({sql}) AT TIME ZONE 'UTC')"
        return (
            f"(to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN to_char({utc}, 'US') "
            f"= '000000' THEN '' ELSE '.' || to_char({utc}, 'US') END || '+00:00')",
            (*params, *params, *params),
        )


def first_reminder_at(*, starts_at: datetime | None, ends_at: datetime | None):
    """The moment of a rental's first planned reminder (its `next_reminder_at` at the start
    and after an extension), or None when none is planned. It may lie in the past: after an
    extension the next tick sends the most urgent reminder due for the new end."""
    if starts_at is None or ends_at is None:
        return None
    planned = reminder_thresholds(starts_at=starts_at, ends_at=ends_at)
    return ends_at - timedelta(hours=max(planned)) if planned else None


def next_reminder_after(moment: datetime):
    """SQL: the first planned reminder moment of the row strictly after `moment`, or NULL.

    What a tick leaves on the rentals it served: strictly later than the tick's `now`, so a
    rental is read once per moment, and a moment passed while no worker ran is never
    owed again (only the most urgent one goes out)."""
    return Case(
        *[
            When(
                Q(ends_at__gt=moment + timedelta(hours=h))
                & Q(ends_at__gt=F("starts_at") + timedelta(hours=h)),
                then=F("ends_at") - timedelta(hours=h),
            )
            for h in sorted(THRESHOLDS_HOURS, reverse=True)
        ],
        default=None,
        output_field=DateTimeField(),
    )


def reminders_due(*, now: datetime):
    """The active rentals a reminder is owed to now (`next_reminder_at` has come), in one
    statement through the partial index on that marker: a tick with nothing due reads no
    rental, at any number of active ones.

    Each row carries `threshold`, the most urgent planned threshold whose moment has come
    (as `reminder_due` says, None once ended), and its dedupe key `reminder_key` built in
    SQL. The outbox is not read here: a tick looks up the keys of what this returned, so a
    probe with nothing due reads neither table, whatever the planner guesses."""
    threshold = Case(
        *[
            When(
                Q(ends_at__gt=now)
                & Q(ends_at__lte=now + timedelta(hours=h))
                & Q(ends_at__gt=F("starts_at") + timedelta(hours=h)),
                then=Value(h),
            )
            for h in sorted(THRESHOLDS_HOURS)
        ],
        default=None,
        output_field=IntegerField(),
    )
    key = Concat(
        Value("rental_reminder:"),
        F("reference"),
        Value(":"),
        Cast("threshold", CharField()),
        Value("h:"),
        UtcIsoformat("ends_at"),
        output_field=CharField(),
    )
    return (
        Order.objects.filter(
            rental_state=RentalState.ACTIVE,
            next_reminder_at__isnull=False,
            next_reminder_at__lte=now,
        )
        .annotate(threshold=threshold)
        .annotate(reminder_key=key)
        .select_related("owner")
        # By the marker, as its index holds them: ordered by pk, a LIMIT tempts the planner
        # to walk the primary key whenever its statistics of the marker are stale (they go
        # stale every tick: a tick moves the markers it serves). A tick locks with SKIP
        # LOCKED, so the order of its locks cannot deadlock.
        .order_by("next_reminder_at", "pk")
    )


def rental_reminders_send() -> int:
    """Enqueue the due reminder of every active rental (the periodic task). Returns how many
    new e-mails were stored; running it twice stores nothing more.

    A tick with nothing due is one statement at any number of rentals. What is due is read
    STORE_CHUNK rentals at a time, locked (a rental another tick or an extension holds is
    skipped: the next tick reads it), stored in one INSERT and the rentals' markers moved
    past `now` in one UPDATE, in one transaction: a reminder is stored exactly when its
    marker moves, and an extension, which sets the marker under the same lock, is never
    overwritten by a tick that read the old end."""
    now = clock.now()
    stored = 0
    while True:
        with transaction.atomic():
            due = list(
                reminders_due(now=now).select_for_update(skip_locked=True, of=("self",))[
                    :STORE_CHUNK
                ]
            )
            if not due:
                return stored
            # The outbox's unique key stays the guarantee against a second e-mail (a marker
            # set early, as the migration sets it, only costs this read).
            sent = set(
                OutboxMessage.objects.filter(
                    dedupe_key__in=[o.reminder_key for o in due if o.threshold is not None]
                ).values_list("dedupe_key", flat=True)
            )
            batch = []
            for order in due:
                if order.threshold is None or order.reminder_key in sent:
                    continue
                context = {
                    "reference": order.reference,
                    "hours_left": hours_left(ends_at=order.ends_at, now=now),
                    "minutes_left": minutes_left(ends_at=order.ends_at, now=now),
                    "threshold_hours": order.threshold,
                    "ends_at": order.ends_at,
                }
                batch.append(
                    (
                        order.owner,
                        context,
                        reminder_dedupe_key(order=order, threshold=order.threshold),
                    )
                )
            stored += services.emails_enqueue_many(event="rental_reminder", messages=batch)
            Order.objects.filter(pk__in=[order.pk for order in due]).update(
                next_reminder_at=next_reminder_after(now)
            )
