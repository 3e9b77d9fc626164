"""Reminders before the end, driven by the clock: 72 h, 24 h and 2 h, each once, only
those ahead at the start, the most urgent one after an outage, re-planned by an extension."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.utils import translation
from hypothesis import given, settings
from hypothesis import strategies as st

from kernodeck.core import clock
from kernodeck.notifications import reminders
from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning.services import rental_extend
from tests.factories import make_order, make_user

pytestmark = pytest.mark.django_db

START = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)


def active_rental(*, days=7, owner=None, state=RentalState.ACTIVE):
    """An order whose access was delivered at START (rentals' lifecycle is not under test),
    its reminder marker where the start leaves it (`provisioning.services.moves`)."""
    order = make_order(owner=owner or make_user(preferred_language="en"), days=days)
    ends_at = START + timedelta(days=days)
    running = state in {RentalState.ACTIVE, RentalState.SUSPENDED}
    Order.objects.filter(pk=order.pk).update(
        payment_state="settled",
        settled_at=START - timedelta(hours=5),
        rental_state=state,
        starts_at=START,
        ends_at=ends_at,
        next_reminder_at=(
            reminders.first_reminder_at(starts_at=START, ends_at=ends_at) if running else None
        ),
    )
    order.refresh_from_db()
    return order


def sweep_at(moment, send_after_commit):
    clock.freeze(moment)
    with send_after_commit():
        return reminders.rental_reminders_send()


def reminder_rows(order):
    return list(
        OutboxMessage.objects.filter(event="rental_reminder", context__reference=order.reference)
        .order_by("created_at")
        .values_list("context__threshold_hours", "context__hours_left", "created_at")
    )


def test_a_week_gets_three_reminders_each_once(send_after_commit):
    order = active_rental(days=7)
    ends = order.ends_at
    mail.outbox.clear()

    assert sweep_at(ends - 72 * H - timedelta(minutes=1), send_after_commit) == 0
    assert sweep_at(ends - 72 * H, send_after_commit) == 1
    assert sweep_at(ends - 72 * H + timedelta(minutes=1), send_after_commit) == 0
    assert sweep_at(ends - 30 * H, send_after_commit) == 0
    assert sweep_at(ends - 24 * H, send_after_commit) == 1
    assert sweep_at(ends - 2 * H - timedelta(seconds=1), send_after_commit) == 0
    assert sweep_at(ends - 2 * H, send_after_commit) == 1
    assert sweep_at(ends - timedelta(minutes=1), send_after_commit) == 0
    assert sweep_at(ends, send_after_commit) == 0

    assert reminder_rows(order) == [
        (72, 72, ends - 72 * H),
        (24, 24, ends - 24 * H),
        (2, 2, ends - 2 * H),
    ]
    assert [m.subject for m in mail.outbox] == [
        f"Order {order.reference} ends in 72 hours: export your results",
        f"Order {order.reference} ends in 24 hours: export your results",
        f"Order {order.reference} ends in 2 hours: export your results",
    ]
    assert all(m.to == [order.owner.email] for m in mail.outbox)


def test_a_three_day_rental_gets_no_reminder_at_its_start(send_after_commit):
    order = active_rental(days=3)

    for moment in (START, START + 1 * H, order.ends_at - 24 * H, order.ends_at - 2 * H):
        sweep_at(moment, send_after_commit)

    assert [row[0] for row in reminder_rows(order)] == [24, 2]


def test_after_a_worker_outage_only_the_most_urgent_reminder_is_sent(send_after_commit):
    order = active_rental(days=7)
    ends = order.ends_at
    sweep_at(ends - 80 * H, send_after_commit)  # the last sweep before the outage
    mail.outbox.clear()

    # The worker comes back with 1 h 30 min left: 72 h, 24 h and 2 h have all passed.
    assert sweep_at(ends - timedelta(minutes=90), send_after_commit) == 1
    assert sweep_at(ends - timedelta(minutes=60), send_after_commit) == 0

    assert reminder_rows(order) == [(2, 1, ends - timedelta(minutes=90))]
    assert len(mail.outbox) == 1
    assert "ends in 1 hour and 30 minutes, at" in mail.outbox[0].body
    assert mail.outbox[0].subject.endswith("ends in 1 hour and 30 minutes: export your results")


def test_moving_the_end_plans_new_reminders(send_after_commit):
    order = active_rental(days=7)
    old_end = order.ends_at
    sweep_at(old_end - 72 * H, send_after_commit)
    sweep_at(old_end - 24 * H, send_after_commit)
    # Support extends the rental by 3 days.
    new_end = old_end + timedelta(days=3)
    clock.freeze(old_end - 23 * H)
    rental_extend(order=order, until=new_end, reason="three more days", actor=None)

    assert sweep_at(old_end - 23 * H, send_after_commit) == 0  # 96 h left: nothing due
    assert sweep_at(old_end - 2 * H, send_after_commit) == 0  # the old 2 h moment is gone
    assert sweep_at(new_end - 72 * H, send_after_commit) == 1
    assert sweep_at(new_end - 24 * H, send_after_commit) == 1
    assert sweep_at(new_end - 2 * H, send_after_commit) == 1

    assert [row[0] for row in reminder_rows(order)] == [72, 24, 72, 24, 2]
    keys = set(
        OutboxMessage.objects.filter(event="rental_reminder").values_list("dedupe_key", flat=True)
    )
    assert f"rental_reminder:{order.reference}:72h:{old_end.isoformat()}" in keys
    assert f"rental_reminder:{order.reference}:72h:{new_end.isoformat()}" in keys


@pytest.mark.parametrize(
    "state", [RentalState.SUSPENDED, RentalState.ENDED, RentalState.PREPARING]
)
def test_only_active_rentals_are_reminded(state, send_after_commit):
    order = active_rental(days=7, state=state)

    assert sweep_at(order.ends_at - 2 * H, send_after_commit) == 0
    assert reminder_rows(order) == []


def test_the_reminder_follows_the_owners_language(send_after_commit):
    order = active_rental(days=7, owner=make_user(preferred_language="es"))
    mail.outbox.clear()

    sweep_at(order.ends_at - 24 * H, send_after_commit)

    assert mail.outbox[0].subject == (
        f"El pedido {order.reference} vence en 24 horas: exporta tus resultados"
    )


@settings(max_examples=200, deadline=None)
@given(
    days=st.sampled_from([3, 7, 30]),
    offsets=st.lists(st.integers(min_value=0, max_value=30 * 24 * 60), max_size=40),
)
def test_any_sweep_schedule_sends_each_threshold_at_most_once_most_urgent_last(days, offsets):
    """Whatever the sweep times (outages included), the reminders sent are planned ones,
    each at most once, ever more urgent, and the last sweep's due reminder was sent."""
    ends = START + timedelta(days=days)
    planned = reminders.reminder_thresholds(starts_at=START, ends_at=ends)
    sent = []
    for offset in sorted(offsets):
        now = START + timedelta(minutes=offset)
        due = reminders.reminder_due(starts_at=START, ends_at=ends, now=now)
        if due is not None and due not in sent:
            sent.append(due)

    assert set(sent) <= set(planned)
    assert sent == sorted(sent, reverse=True)
    assert planned == [h for h in (72, 24, 2) if h < days * 24]
    if offsets:
        last = START + timedelta(minutes=max(offsets))
        due = reminders.reminder_due(starts_at=START, ends_at=ends, now=last)
        assert due is None or sent[-1] == due


@pytest.mark.parametrize(
    ("minutes", "en", "es"),
    [
        (0, "less than a minute", "menos de un minuto"),
        (1, "1 minute", "1 minuto"),
        (3, "3 minutes", "3 minutos"),
        (60, "1 hour", "1 hora"),
        (61, "1 hour and 1 minute", "1 hora y 1 minuto"),
        (109, "1 hour and 49 minutes", "1 hora y 49 minutos"),
        (72 * 60, "72 hours", "72 horas"),
    ],
)
def test_the_time_left_is_said_in_hours_and_minutes(minutes, en, es):
    with translation.override("en"):
        assert reminders.time_left_in_words(minutes) == en
    with translation.override("es"):
        assert reminders.time_left_in_words(minutes) == es


def test_the_minutes_left_are_rounded_down():
    ends = START + 3 * H
    almost = timedelta(minutes=109, seconds=59)
    assert reminders.minutes_left(ends_at=ends, now=ends - almost) == 109
    assert reminders.minutes_left(ends_at=ends, now=ends - timedelta(seconds=59)) == 0
    assert reminders.minutes_left(ends_at=ends, now=ends + H) == 0
