"""A reminder tick and an extension racing on the same rentals, in real concurrent
PostgreSQL transactions: the tick locks what it serves (skipping what an extension holds)
and the extension sets the marker under the order's lock, so the new end's reminder is
never lost and no reminder is stored twice."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections

from kernodeck.core import clock
from kernodeck.notifications import reminders
from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders.models import Order
from kernodeck.provisioning.services import rental_extend
from tests.notifications.test_reminders import active_rental

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

H = timedelta(hours=1)


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip(
            "race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://… "
            "(SQLite serialises writers, so there is no race to test)"
        )


def test_two_ticks_and_an_extension_at_once_lose_and_repeat_no_reminder():
    rentals = [active_rental(days=7) for _ in range(6)]
    ends = rentals[0].ends_at
    # The 72- and 24-hour reminders went out; the 2-hour one is due at the race.
    Order.objects.filter(pk__in=[o.pk for o in rentals]).update(next_reminder_at=ends - 2 * H)
    clock.freeze(ends - H)
    start = threading.Barrier(3)
    errors = []

    def tick():
        try:
            start.wait()
            reminders.rental_reminders_send()
        except Exception as error:
            errors.append(error)
        finally:
            connections.close_all()

    def extend():
        try:
            start.wait()
            for order in rentals:
                rental_extend(order=order.pk, until=ends + 24 * H, reason="a day", actor=None)
        except Exception as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=f) for f in (tick, tick, extend)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    reminders.rental_reminders_send()  # the next minute's tick

    new_end = (ends + 24 * H).isoformat()
    for order in rentals:
        keys = list(
            OutboxMessage.objects.filter(
                event="rental_reminder", context__reference=order.reference
            ).values_list("dedupe_key", flat=True)
        )
        # The old end's 2-hour reminder went out once if the tick came first; the new
        # end's 24-hour one (25 hours left) always, once.
        assert sorted(keys) in (
            [f"rental_reminder:{order.reference}:72h:{new_end}"],
            sorted(
                [
                    f"rental_reminder:{order.reference}:72h:{new_end}",
                    f"rental_reminder:{order.reference}:2h:{ends.isoformat()}",
                ]
            ),
        )
        marker = Order.objects.get(pk=order.pk).next_reminder_at
        assert marker == ends  # the new end's 24-hour moment, next
