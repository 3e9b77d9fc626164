"""The end of the period, driven by a controllable clock: the periodic task ends due
rentals, frees their slots and erases their secrets — also after a worker outage."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.orders import capacity
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import selectors, services, tasks
from kernodeck.provisioning.models import Allocation, Delivery
from tests.factories import make_offer, make_operator, make_settled_order, make_ssh_key

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def active_rental(offer, *, days=3, token="tok-7f3a9c", at=T0):
    clock.freeze(at)
    order = make_settled_order(offer=offer, days=days)
    operator = make_operator()
    make_ssh_key(order.owner)
    services.rental_prepare(order=order, actor=operator)
    return services.rental_deliver(
        order=order,
        host="node.example.org",
        port=22,
        user="kd-user",
        url="http://127.0.0.1:8888/",
        token=token,
        actor=operator,
    )


def test_nothing_ends_before_its_time():
    offer = make_offer(units_total=2)
    order = active_rental(offer)
    clock.freeze(order.ends_at - timedelta(seconds=1))

    tasks.rental_clock_tick.call_local()

    order.refresh_from_db()
    assert order.rental_state == RentalState.ACTIVE
    assert capacity.units_free(offer=offer) == 1


def test_the_tick_ends_a_due_rental_frees_its_slots_and_erases_the_secret():
    offer = make_offer(units_total=1)
    order = active_rental(offer)
    assert order.ends_at == T0 + timedelta(days=3)
    clock.freeze(order.ends_at)

    tasks.rental_clock_tick.call_local()

    order.refresh_from_db()
    assert order.rental_state == RentalState.ENDED
    assert order.rental_reason == "The rental period is over."
    assert order.rental_state_changed_at == T0 + timedelta(days=3)
    assert not Allocation.objects.filter(order=order, released_at__isnull=True).exists()
    assert capacity.units_free(offer=offer) == 1
    delivery = Delivery.objects.get(order=order)
    assert (delivery.secret_ciphertext, delivery.revoked_at) == ("", order.ends_at)
    assert selectors.access_for_owner(order=order) is None
    event = AuditEvent.objects.filter(action="order.rental_state_changed").order_by("id").last()
    assert (event.actor, event.after) == (None, {"rental_state": "ended"})


def test_after_a_worker_outage_the_first_tick_catches_up_on_every_missed_end():
    offer = make_offer(units_total=3)
    early = active_rental(offer, days=3)
    later = active_rental(offer, days=7, at=T0 + timedelta(hours=5))
    running = active_rental(offer, days=30)
    # The worker was down for nine days: no tick ran while both periods ended.
    clock.freeze(T0 + timedelta(days=9))

    tasks.rental_clock_tick.call_local()

    states = dict(Order.objects.values_list("pk", "rental_state"))
    assert states == {early.pk: "ended", later.pk: "ended", running.pk: "active"}
    assert capacity.units_free(offer=offer) == 2
    ends = AuditEvent.objects.filter(after__rental_state="ended").count()

    tasks.rental_clock_tick.call_local()  # a second run changes nothing

    assert AuditEvent.objects.filter(after__rental_state="ended").count() == ends == 2


def test_a_suspended_rental_still_ends_on_time():
    offer = make_offer(units_total=1)
    order = active_rental(offer)
    services.rental_suspend(order=order, reason="abuse report", actor=make_operator())
    clock.freeze(order.ends_at + timedelta(minutes=1))

    tasks.rental_clock_tick.call_local()

    order.refresh_from_db()
    assert order.rental_state == RentalState.ENDED


def test_the_secret_is_absent_from_the_raw_database_row():
    order = active_rental(make_offer(units_total=1), token="notebook-token-SECRET-4242")
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM provisioning_delivery WHERE order_id = %s", [order.pk])
        row = cursor.fetchone()
    raw = " ".join(str(value) for value in row)
    assert "notebook-token-SECRET-4242" not in raw
    assert "SECRET" not in raw
    assert selectors.access_for_owner(order=order).token == "notebook-token-SECRET-4242"
    audit = " ".join(str(e.before) + str(e.after) + str(e.data) for e in AuditEvent.objects.all())
    assert "notebook-token-SECRET-4242" not in audit


def test_each_rental_step_queues_its_e_mail_once_and_none_carries_the_secret():
    from django.core import mail

    from kernodeck.notifications.models import OutboxMessage

    order = active_rental(make_offer(units_total=1), token="very-secret-nb-token")
    clock.freeze(order.ends_at)
    tasks.rental_clock_tick.call_local()
    tasks.rental_clock_tick.call_local()

    events = list(
        OutboxMessage.objects.filter(account=order.owner)
        .order_by("id")
        .values_list("event", flat=True)
    )
    assert events == [
        "order_registered",
        "payment_confirmed",
        "rental_preparing",
        "rental_access_ready",
        "rental_ended",
    ]
    for message in OutboxMessage.objects.all():
        assert "very-secret-nb-token" not in message.body_text + message.body_html
        assert "very-secret-nb-token" not in str(message.context)
    assert all("very-secret-nb-token" not in m.body for m in mail.outbox)
