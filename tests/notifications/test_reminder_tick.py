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
from tests.factories import make_offer, make_user, order_row
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
    Order.objects.filter(pk=order.pk).update(ends_at=ends_at, next_reminder_at=ends_at - 72 * H)
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
        Order.objects.filter(pk=order.pk).update(
            ends_at=order.ends_at + H, next_reminder_at=order.ends_at + H - 72 * H
        )
    moment = rentals[0].ends_at - 24 * H + timedelta(minutes=30)
    clock.freeze(moment)
    with send_after_commit():
        assert reminders.rental_reminders_send() == 12

    with CaptureQueriesContext(connection) as queries:
        assert reminders.rental_reminders_send() == 0
    assert len(statements(queries)) == 1
    assert OutboxMessage.objects.filter(event="rental_reminder").count() == 12


def statements(queries) -> list[str]:
    """The statements a tick sent, less the savepoints a test's transaction turns its
    `atomic()` into (outside a test it opens a transaction without a statement of its own)."""
    return [
        q["sql"]
        for q in queries.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    ]


def _rentals(count: int, *, first: int, now) -> None:
    """`count` active rentals ending 1 to 60 hours from `now`, every one already reminded
    for its moment (their markers on their next one): what a steady tick sees."""
    offer = make_offer(units_total=0)
    owner = make_user(preferred_language="en")
    rows = []
    for i in range(first, first + count):
        ends_at = now + timedelta(hours=1 + (i % 60))
        rows.append(
            order_row(
                offer=offer,
                reference=f"KD-T{i:07d}",
                owner=owner,
                days=7,
                created_at=now - timedelta(days=6),
                hold_until=now - timedelta(days=6),
                payment_state="settled",
                settled_at=now - timedelta(days=6),
                rental_state="active",
                starts_at=now - timedelta(days=6),
                ends_at=ends_at,
            )
        )
    Order.objects.bulk_create(rows, batch_size=500)
    Order.objects.filter(reference__startswith="KD-T").update(
        next_reminder_at=reminders.next_reminder_after(now)
    )


@pytest.mark.parametrize("count", [10, 1000])
def test_a_steady_tick_is_one_statement_reading_no_rental_at_10_and_1000(count):
    now = START + timedelta(days=2)
    clock.freeze(now)
    _rentals(count, first=0, now=now)
    assert Order.objects.filter(next_reminder_at__lte=now).count() == 0

    with CaptureQueriesContext(connection) as queries:
        assert reminders.rental_reminders_send() == 0

    [probe] = statements(queries)
    assert 'FROM "orders_order"' in probe
    assert "notifications_outboxmessage" not in probe  # the outbox only for what is due


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
