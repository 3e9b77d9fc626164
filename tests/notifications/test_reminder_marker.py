"""The reminder marker (`orders.Order.next_reminder_at`) loses no reminder and sends none
twice, whatever the order of ticks, extensions, suspensions and the end: the reminders
stored are exactly those the marker-less rule (`reminder_due` at every tick, once per
dedupe key) stores."""

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernodeck.core import clock
from kernodeck.notifications import reminders
from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning.services import rental_extend
from kernodeck.provisioning.services.moves import _lock_order, _move
from tests.notifications.test_reminders import START, active_rental

pytestmark = pytest.mark.django_db

STEPS = st.lists(
    st.tuples(
        st.sampled_from(["tick", "tick", "tick", "extend", "suspend", "resume", "end"]),
        st.integers(min_value=0, max_value=60),  # hours since the step before
        st.integers(min_value=1, max_value=3),  # an extension's days
    ),
    min_size=1,
    max_size=10,
)


def _stored_keys(order) -> list[str]:
    return sorted(
        OutboxMessage.objects.filter(
            event="rental_reminder", context__reference=order.reference
        ).values_list("dedupe_key", flat=True)
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(days=st.sampled_from([3, 7]), steps=STEPS)
def test_any_order_of_ticks_extensions_and_the_end_stores_what_the_rule_says(days, steps):
    order = active_rental(days=days)
    state, ends, expected = RentalState.ACTIVE, order.ends_at, set()
    now = START
    for action, hours, extra_days in steps:
        now += timedelta(hours=hours)
        clock.freeze(now)
        if action == "tick":
            # Rentals of earlier examples share the database: count this rental's only.
            before = len(_stored_keys(order))
            reminders.rental_reminders_send()
            new = len(_stored_keys(order)) - before
            threshold = reminders.reminder_due(starts_at=START, ends_at=ends, now=now)
            key = f"rental_reminder:{order.reference}:{threshold}h:{ends.isoformat()}"
            owed = state == RentalState.ACTIVE and threshold is not None and key not in expected
            if owed:
                expected.add(key)
            assert new == int(owed), (action, now - START)
        elif action == "extend" and state != RentalState.ENDED:
            ends += timedelta(days=extra_days)
            rental_extend(order=order.pk, until=ends, reason="more days", actor=None)
        elif (action, state) in {
            ("suspend", RentalState.ACTIVE),
            ("resume", RentalState.SUSPENDED),
        } or (action == "end" and state != RentalState.ENDED):
            state = {
                "suspend": RentalState.SUSPENDED,
                "resume": RentalState.ACTIVE,
                "end": RentalState.ENDED,
            }[action]
            _move(_lock_order(order.pk), to=state, actor=None, reason="test")
        assert _stored_keys(order) == sorted(expected)
    if state == RentalState.ENDED:
        assert Order.objects.get(pk=order.pk).next_reminder_at is None


def test_an_ended_rental_is_never_read_again_by_the_tick():
    order = active_rental(days=7)
    clock.freeze(order.ends_at - 30 * timedelta(hours=1))
    _move(_lock_order(order.pk), to=RentalState.ENDED, actor=None, reason="refunded")

    assert Order.objects.get(pk=order.pk).next_reminder_at is None
    assert list(reminders.reminders_due(now=order.ends_at)) == []


def test_the_migration_plans_the_running_rentals_from_their_first_moment():
    from importlib import import_module

    from django.apps import apps

    migration = import_module("kernodeck.orders.migrations.0006_order_next_reminder_at")
    week, short = active_rental(days=7), active_rental(days=3, state=RentalState.SUSPENDED)
    ended = active_rental(days=7, state=RentalState.ENDED)
    Order.objects.update(next_reminder_at=None)

    migration.plan_reminders(apps, None)

    markers = dict(Order.objects.values_list("pk", "next_reminder_at"))
    assert markers[week.pk] == week.ends_at - 72 * timedelta(hours=1)
    assert markers[short.pk] == short.ends_at - 24 * timedelta(hours=1)  # 72 h: before the start
    assert markers[ended.pk] is None
