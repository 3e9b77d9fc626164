"""The reminder tick scales with what is due (issue 27): one statement finds the due
reminders not stored yet, whatever the number of active rentals, and its SQL dedupe key is
exactly the one the outbox stores."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernodeck.core import clock
from kernodeck.notifications import reminders
from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders.models import Order
from tests.factories import make_user
from tests.notifications.test_reminders import START, active_rental

pytestmark = pytest.mark.django_db

H = timedelta(hours=1)


@pytest.mark.parametrize(
    "ends_at",
    [
        START + timedelta(days=7),
        START + timedelta(days=7, microseconds=120_000),
        datetime(2027, 1, 3, 4, 5, 6, 7, tzinfo=UTC),
    ],
    ids=["whole-seconds", "milliseconds", "microseconds"],
)
def test_the_sql_dedupe_key_is_the_one_the_outbox_stores(ends_at):
    order = active_rental(days=7)
    Order.objects.filter(pk=order.pk).update(ends_at=ends_at)
    order.refresh_from_db()

    due = list(reminders.reminders_due(now=ends_at - 2 * H))

    assert [(row.pk, row.threshold) for row in due] == [(order.pk, 2)]
    assert due[0].reminder_key == reminders.reminder_dedupe_key(order=order, threshold=2)


def test_a_tick_with_nothing_new_due_is_one_statement_at_any_number_of_rentals(
    send_after_commit,
):
    owner = make_user(preferred_language="en")
    rentals = [active_rental(days=7, owner=owner) for _ in range(12)]
    # At the tick half of them are 23.5 hours from their end (the 24-hour reminder is
    # due), the other half, ending an hour later, 24.5 hours (the 72-hour one).
    for order in rentals[::2]:
        Order.objects.filter(pk=order.pk).update(ends_at=order.ends_at + H)
    moment = rentals[0].ends_at - 24 * H + timedelta(minutes=30)
    clock.freeze(moment)
    with send_after_commit():
        assert reminders.rental_reminders_send() == 12

    with CaptureQueriesContext(connection) as queries:
        assert reminders.rental_reminders_send() == 0
    assert len(queries.captured_queries) == 1
    assert OutboxMessage.objects.filter(event="rental_reminder").count() == 12


def test_many_e_mails_at_once_skip_a_key_already_stored_and_send_the_others(
    send_after_commit,
):
    from django.core import mail

    from kernodeck.notifications import services

    first, second = make_user(preferred_language="en"), make_user(preferred_language="es")
    context = {
        "reference": "KD-TICK",
        "hours_left": 2,
        "minutes_left": 120,
        "threshold_hours": 2,
        "ends_at": START,
    }
    with send_after_commit():
        services.email_enqueue(
            account=first, event="rental_reminder", context=context, dedupe_key="tick:1"
        )
    mail.outbox.clear()
    clock.freeze(START - 2 * H)  # another instant than the first row's

    with send_after_commit():
        new = services.emails_enqueue_many(
            event="rental_reminder",
            messages=[(first, context, "tick:1"), (second, context, "tick:2")],
        )

    assert new == 1
    assert [m.to for m in mail.outbox] == [[second.email]]
    assert OutboxMessage.objects.get(dedupe_key="tick:2").language == "es"
    assert OutboxMessage.objects.filter(dedupe_key__startswith="tick:").count() == 2
