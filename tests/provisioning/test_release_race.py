"""Release confirmations racing each other in real concurrent PostgreSQL transactions; a
failed release kept for the sweep; the signed alert webhook on a loopback server."""

import hashlib
import hmac
import threading

import pytest
from django.db import connection, connections

from kernodeck.core.models import AuditEvent
from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders.models import RentalState
from kernodeck.provisioning import alerts, drivers, driving, services
from kernodeck.provisioning.drivers.base import DriverError
from kernodeck.provisioning.models import AlertKind, Allocation
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_operator, make_order, make_ssh_key, make_ssh_node
from tests.loopback import LoopbackServer
from tests.provisioning.fake_driver import FakeDriver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fake(settings):
    settings.KERNODECK_PROVISIONING_DRIVERS = {
        "manual": "kernodeck.provisioning.drivers.manual.ManualDriver",
        "ssh": "tests.provisioning.fake_driver.FakeDriver",
    }
    drivers._cache.clear()
    FakeDriver.calls = []
    FakeDriver.fail_prepare = None
    FakeDriver.fail_release = DriverError("The node auto-1 is unreachable.")
    yield FakeDriver
    FakeDriver.fail_release = None
    drivers._cache.clear()


def ended_with_release_pending():
    offer = make_offer(units_total=0)
    node = make_ssh_node(name="auto-1", offer=offer, gpu_count=1, host="10.1.0.1")
    order = make_order(offer=offer, units=1)
    make_ssh_key(order.owner)
    settlement_orders.order_settle(order=order, cause={"test": 1})
    order.refresh_from_db()
    assert order.rental_state == RentalState.ACTIVE
    services.rental_end(order=order, reason="ticket", actor=make_operator())
    assert Allocation.objects.filter(order=order, released_at__isnull=True).count() == 1
    return offer, node, order


@pytest.mark.postgres
@pytest.mark.parametrize("racers", [2, 6])
def test_confirmations_racing_free_the_slot_once_and_send_one_ended_mail(fake, racers):
    if connection.vendor != "postgresql":
        pytest.skip(
            "race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://… "
            "(SQLite serialises writers, so there is no race to test)"
        )
    _offer, node, order = ended_with_release_pending()
    fake.fail_release = None
    start = threading.Barrier(racers)
    freed, errors = [], []

    def confirm():
        try:
            start.wait()
            freed.append(services.rental_release_confirm(order=order.pk, node_id=node.pk))
        except Exception as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=confirm) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert sorted(freed) == [0] * (racers - 1) + [1]
    assert AuditEvent.objects.filter(action="provisioning.release_confirmed").count() == 1
    assert OutboxMessage.objects.filter(account=order.owner, event="rental_ended").count() == 1
    assert not Allocation.objects.filter(order=order, released_at__isnull=True).exists()


def test_a_failed_release_is_kept_and_the_next_sweep_confirms_it(fake):
    _offer, _node, order = ended_with_release_pending()
    row = Allocation.objects.get(order=order)
    assert (row.release_attempts, row.release_error) == (1, "The node auto-1 is unreachable.")
    assert driving.rentals_release_sweep() == 0
    assert Allocation.objects.get(order=order).release_attempts == 2
    assert not OutboxMessage.objects.filter(account=order.owner, event="rental_ended").exists()
    fake.fail_release = None
    assert driving.rentals_release_sweep() == 1
    assert Allocation.objects.get(order=order).released_at is not None
    assert OutboxMessage.objects.filter(account=order.owner, event="rental_ended").count() == 1


def test_alerts_are_posted_to_the_webhook_signed_with_the_secret(settings):
    offer = make_offer(units_total=1)
    node = offer.nodes.get()
    with LoopbackServer() as server:
        server.route("POST", "/hooks/ops", json_body={"ok": True})
        settings.KERNODECK_ALERT_WEBHOOK_URL = server.url + "/hooks/ops"
        settings.KERNODECK_ALERT_WEBHOOK_SECRET = "s3cret"
        alerts.alert_raise(
            kind=AlertKind.STEP_FAILED,
            key=f"step_failed:{node.name}",
            node=node,
            message="Prepare failed 3 times.",
            action="Look at the step log.",
        )
        [request] = server.requests
    expected = "sha256=" + hmac.new(b"s3cret", request.body, hashlib.sha256).hexdigest()
    assert request.headers["x-kernodeck-signature"] == expected
    body = request.json()
    assert (body["kind"], body["node"], body["message"]) == (
        "step_failed",
        node.name,
        "Prepare failed 3 times.",
    )


@pytest.mark.postgres
def test_workers_racing_for_a_step_lease_give_it_to_exactly_one(fake):
    if connection.vendor != "postgresql":
        pytest.skip(
            "race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://… "
            "(SQLite serialises writers, so there is no race to test)"
        )
    from kernodeck.provisioning.models import StepLease

    _offer, _node, order = ended_with_release_pending()
    racers = 6
    start = threading.Barrier(racers)
    taken, errors = [], []

    def take(n):
        try:
            start.wait()
            got = services.step_lease_take(
                order_id=order.pk, step="prepare", seconds=600, holder=f"worker-{n}"
            )
            taken.append((n, got))
        except Exception as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=take, args=(n,)) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    winners = [n for n, got in taken if got]
    assert len(winners) == 1
    assert StepLease.objects.get(order=order).holder == f"worker-{winners[0]}"
