"""No step lost to a dead worker (issue 20, item 3): a step in flight holds a lease; an
expired lease lets the sweep take the step up again; "start preparing" on a rental whose
step is in flight says so instead of silently doing nothing."""

from datetime import timedelta

import pytest

from kernodeck.core import clock
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import drivers, driving, services
from kernodeck.provisioning.drivers.base import DriverError
from kernodeck.provisioning.models import StepLease
from kernodeck.settlement import orders as settlement_orders
from tests.factories import (
    PASSWORD,
    make_offer,
    make_operator,
    make_order,
    make_ssh_key,
    make_ssh_node,
)
from tests.provisioning.fake_driver import FakeDriver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fake(settings):
    from huey.contrib.djhuey import HUEY

    settings.KERNODECK_PROVISIONING_DRIVERS = {
        "manual": "kernodeck.provisioning.drivers.manual.ManualDriver",
        "ssh": "tests.provisioning.fake_driver.FakeDriver",
    }
    drivers._cache.clear()
    FakeDriver.calls = []
    FakeDriver.fail_prepare = DriverError("ssh: connection reset")  # a worker's bad day
    FakeDriver.fail_release = None
    yield FakeDriver
    FakeDriver.fail_prepare = None
    HUEY.flush()
    drivers._cache.clear()


def stuck_preparing():
    """A rental whose preparing worker died: it stays `preparing`, its retry is gone."""
    from huey.contrib.djhuey import HUEY

    offer = make_offer(units_total=0)
    make_ssh_node(name="auto-1", offer=offer, gpu_count=2, host="10.1.0.1")
    order = make_order(offer=offer, units=1)
    make_ssh_key(order.owner)
    settlement_orders.order_settle(order=order, cause={"test": 1})
    HUEY.flush()  # the worker died with its scheduled retry
    order.refresh_from_db()
    assert order.rental_state == RentalState.PREPARING
    assert not StepLease.objects.filter(order=order).exists()  # dropped when it raised
    return order


def test_an_expired_lease_lets_the_sweep_take_the_step_up_and_the_rental_becomes_active(fake):
    order = stuck_preparing()
    now = clock.now()
    StepLease.objects.create(
        order=order,
        step="prepare",
        holder="dead-worker:1:1",
        since=now,
        until=now + timedelta(seconds=5),
    )
    fake.fail_prepare = None
    assert services.rentals_with_lost_steps() == []  # the dead worker's lease still holds
    clock.freeze(now + timedelta(seconds=6))
    assert services.rentals_with_lost_steps() == [order.pk]
    assert driving.steps_lost_sweep() == 1
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.ACTIVE
    assert not StepLease.objects.filter(order=order).exists()


def test_a_step_without_any_lease_is_taken_up_after_a_lease_would_have_ended(fake, settings):
    order = stuck_preparing()
    fake.fail_prepare = DriverError("The node auto-1 is unreachable.")
    assert services.rentals_with_lost_steps() == []
    later = services.step_lease_seconds(nodes=1) + 1
    clock.freeze(clock.now() + timedelta(seconds=later))
    driving.steps_lost_sweep()  # the final attempt: a reasoned failure, no operator
    order.refresh_from_db()
    assert order.rental_state == RentalState.PROVISIONING_FAILED
    assert order.rental_reason == str(services.MACHINE_FAILED)


def test_a_live_lease_keeps_a_second_worker_off_the_step(fake):
    order = stuck_preparing()
    calls = len(fake.calls)
    now = clock.now()
    StepLease.objects.create(
        order=order, step="prepare", holder="busy:2:2", since=now, until=now + timedelta(hours=1)
    )
    fake.fail_prepare = None
    driving.rental_prepare_run(order_id=order.pk)
    assert len(fake.calls) == calls  # the driver was not called twice at once
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.PREPARING


def test_start_preparing_on_a_rental_in_flight_says_so(fake, client):
    order = stuck_preparing()
    operator = make_operator()
    assert client.login(email=operator.email, password=PASSWORD)
    url = f"/backoffice/rentals/{order.reference}/prepare/"
    response = client.post(url, {"confirm": "on"}, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 409
    assert "is already preparing: its step waits in the queue" in response.content.decode()
    now = clock.now()
    StepLease.objects.create(
        order=order, step="prepare", holder="w1:3:3", since=now, until=now + timedelta(hours=1)
    )
    response = client.post(url, {"confirm": "on"}, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 409
    assert "its prepare step is held by w1:3:3" in response.content.decode()
