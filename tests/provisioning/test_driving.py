"""The driver pipeline with an automated driver: allocation → prepare → deliver by the
driver, release at the end, a failing driver marks the rental failed — all from tasks
after commit, never inside a transaction."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import drivers, driving, node_health, selectors, services, tasks
from kernodeck.provisioning.drivers.base import DriverError, ProvisioningDriver
from kernodeck.provisioning.drivers.manual import ManualDriver
from kernodeck.provisioning.models import Node
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order, make_ssh_key, make_ssh_node
from tests.provisioning.fake_driver import FakeDriver

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


@pytest.fixture
def fake(settings):
    settings.KERNODECK_PROVISIONING_DRIVERS = {
        "manual": "kernodeck.provisioning.drivers.manual.ManualDriver",
        "ssh": "tests.provisioning.fake_driver.FakeDriver",
    }
    drivers._cache.clear()
    FakeDriver.calls = []
    FakeDriver.fail_prepare = None
    FakeDriver.socket = ""
    yield FakeDriver
    FakeDriver.socket = ""
    drivers._cache.clear()


def automated_offer():
    offer = make_offer(units_total=0)
    make_ssh_node(name="auto-1", offer=offer, gpu_count=4, host="10.1.0.1")
    return offer


def test_both_drivers_implement_the_protocol():
    assert isinstance(ManualDriver(), ProvisioningDriver)
    assert isinstance(FakeDriver(), ProvisioningDriver)


def test_an_automated_node_goes_from_settlement_to_active_by_itself(fake):
    clock.freeze(T0)
    offer = automated_offer()
    order = make_order(offer=offer, units=2, days=3)
    key = make_ssh_key(order.owner)

    settlement_orders.order_settle(order=order, cause={"test": 1})

    order.refresh_from_db()
    assert order.rental_state == RentalState.ACTIVE
    assert (order.starts_at, order.ends_at) == (T0, T0 + timedelta(days=3))
    prepare = fake.calls[0]
    assert prepare[0] == "prepare"
    assert [(a.node.name, a.slots) for a in prepare[2]] == [("auto-1", (0, 1))]
    assert prepare[3] == (key.public_key,)
    access = selectors.access_for_owner(order=order)
    assert (access.host, access.port, access.token) == ("10.1.0.1", 22, "drv-secret")

    clock.freeze(T0 + timedelta(days=3))
    tasks.rental_clock_tick.call_local()
    release = fake.calls[-1]
    assert release[0] == "release"
    assert [(a.node.name, a.slots) for a in release[2]] == [("auto-1", (0, 1))]
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.ENDED


def test_a_notebook_on_a_socket_is_delivered_with_a_tunnel_to_that_socket(fake):
    fake.socket = "/home/kd-x/.kernodeck/run/notebook.sock"
    offer = automated_offer()
    order = make_order(offer=offer, preparation="notebook")
    make_ssh_key(order.owner)

    settlement_orders.order_settle(order=order, cause={"test": 1})

    order.refresh_from_db()
    access = selectors.access_for_owner(order=order)
    assert access.url == "http://127.0.0.1:8888/lab?token=drv-secret"
    assert access.tunnel_command == (
        f"ssh -N -L 8888:/home/kd-x/.kernodeck/run/notebook.sock {access.user}@10.1.0.1"
    )


def test_a_permanent_driver_error_fails_the_rental_in_customer_words_detail_on_the_desk(fake):
    fake.fail_prepare = DriverError("GPU 1 fell off the bus", retryable=False)
    offer = automated_offer()
    order = make_order(offer=offer)
    make_ssh_key(order.owner)

    settlement_orders.order_settle(order=order, cause={"test": 1})

    order.refresh_from_db()
    assert (order.rental_state, order.rental_reason) == (
        RentalState.PROVISIONING_FAILED,
        str(services.MACHINE_FAILED),
    )
    assert selectors.allocation_of(order) == [{"node": "auto-1", "slots": [0]}]
    assert selectors.rental_overview_reason(order=order) == str(services.MACHINE_FAILED)
    from kernodeck.notifications.models import OutboxMessage

    failed = OutboxMessage.objects.get(account=order.owner, event="rental_failed")
    assert "GPU 1 fell off the bus" not in failed.body_text + failed.body_html
    assert "auto-1" not in failed.body_text + failed.body_html + str(failed.context)
    # The operator's detail is kept for the desk.
    [event] = AuditEvent.objects.filter(
        action="order.rental_state_changed", after__rental_state="provisioning_failed"
    )
    assert event.data["detail"] == "GPU 1 fell off the bus"
    assert node_health.rental_steps(order)[-1].data["detail"] == "GPU 1 fell off the bus"


def test_a_retryable_error_is_raised_for_the_queue_until_the_last_attempt(fake):
    fake.fail_prepare = DriverError("ssh: connection refused")
    offer = automated_offer()
    order = make_order(offer=offer)

    settlement_orders.order_settle(order=order, cause={"test": 1})
    order.refresh_from_db()
    # The first attempt failed; the queue keeps the retry for later: still preparing.
    assert (order.rental_state, order.rental_reason) == ("preparing", "Preparing the machine.")

    with pytest.raises(DriverError):
        driving.rental_prepare_run(order_id=order.pk, last_attempt=False)
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.PREPARING
    driving.rental_prepare_run(order_id=order.pk, last_attempt=True)
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.PROVISIONING_FAILED


def test_a_driver_that_delivers_to_a_customer_without_a_key_fails_the_rental(fake):
    offer = automated_offer()
    order = make_order(offer=offer)

    settlement_orders.order_settle(order=order, cause={"test": 1})

    order.refresh_from_db()
    assert order.rental_state == RentalState.PROVISIONING_FAILED
    assert "no SSH public key" in order.rental_reason


def test_drivers_are_never_called_inside_a_transaction(fake, monkeypatch):
    seen = []
    original = FakeDriver.prepare

    def watching(self, rental):
        seen.append(connection.in_atomic_block)
        return original(self, rental)

    monkeypatch.setattr(FakeDriver, "prepare", watching)
    offer = automated_offer()
    order = make_order(offer=offer)
    make_ssh_key(order.owner)

    settlement_orders.order_settle(order=order, cause={"test": 1})

    assert seen == [False]


def test_inspect_stores_each_nodes_health(fake):
    automated_offer()
    assert driving.nodes_inspect() == 1
    from kernodeck.provisioning.models import Node

    node = Node.objects.get(name="auto-1")
    assert node.health == {"ok": True, "detail": "8 GPUs", "gpus_seen": 4}


class BrokenNodes(FakeDriver):
    """Every node refuses with words that blame the machine (as the ssh driver's
    `blames_node` marks an agent's 'nvidia-smi failed')."""

    def prepare(self, rental):
        self.calls.append(("prepare", rental.reference, rental.allocation, ()))
        error = DriverError("nvidia-smi failed on this host", retryable=False)
        error.node, error.blames_node = rental.allocation[0].node.name, True
        raise error


@pytest.mark.parametrize("max_attempts", [3, 1])
def test_a_rental_refused_by_broken_nodes_moves_on_until_none_is_left(settings, max_attempts):
    """Item 6: each refusal that blames its node takes that node out at once and moves the
    rental to another node while one can hold it and attempts are left; then it stays
    failed on the desk, with its slots."""
    settings.KERNODECK_PROVISIONING_DRIVERS = {
        "manual": "kernodeck.provisioning.drivers.manual.ManualDriver",
        "ssh": "tests.provisioning.test_driving.BrokenNodes",
    }
    settings.KERNODECK_PROVISIONING_MAX_ATTEMPTS = max_attempts
    drivers._cache.clear()
    BrokenNodes.calls = []
    try:
        offer = automated_offer()
        make_ssh_node(name="auto-2", offer=offer, gpu_count=4, host="10.1.0.2")
        order = make_order(offer=offer)
        make_ssh_key(order.owner)
        settlement_orders.order_settle(order=order, cause={"test": 1})
    finally:
        drivers._cache.clear()

    order.refresh_from_db()
    tried = [call[2][0].node.name for call in BrokenNodes.calls if call[0] == "prepare"]
    assert tried == ["auto-1", "auto-2"][:max_attempts]
    assert order.rental_state == RentalState.PROVISIONING_FAILED
    assert selectors.allocation_of(order) == [{"node": tried[-1], "slots": [0]}]
    assert node_health.rental_failed_attempts(order) == len(tried)
    states = dict(Node.objects.values_list("name", "state"))
    assert [states[name] for name in tried] == ["maintenance"] * len(tried)
