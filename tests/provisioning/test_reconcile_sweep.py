"""The reconcile's minute sweep reads a node's rentals as a set (issue 27): the same specs
`rental_spec` builds one rental at a time, in a constant number of queries at any number of
rentals on the node, and the driver is called only where the node's report differs. No
SSH host: a driver that reports what the test says."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernodeck.core import clock
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import drivers, driving, selectors
from kernodeck.provisioning.drivers.base import StepResult
from kernodeck.provisioning.models import Allocation, GpuSlot
from tests.factories import make_offer, make_order, make_ssh_key, make_ssh_node
from tests.provisioning.fake_driver import FakeDriver

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


class ReportingDriver(FakeDriver):
    """Reports `report` (reference → entry) for every node; records the steps asked."""

    report: dict = {}

    def node_report(self, node):
        return {"rentals": list(self.report.values()), "gpus": []}

    def keys(self, rental):
        self.calls.append(("keys", rental.reference, rental.ssh_public_keys))
        return StepResult(done=True)


@pytest.fixture
def reporting(settings):
    settings.KERNODECK_PROVISIONING_DRIVERS = {
        "manual": "kernodeck.provisioning.drivers.manual.ManualDriver",
        "ssh": "tests.provisioning.test_reconcile_sweep.ReportingDriver",
    }
    drivers._cache.clear()
    ReportingDriver.calls, ReportingDriver.report = [], {}
    yield ReportingDriver
    drivers._cache.clear()


def _node_with_rentals(count: int):
    clock.freeze(T0)
    offer = make_offer(units_total=0)
    node = make_ssh_node(name="sweep-1", offer=offer, gpu_count=8, host="10.9.0.1")
    slots = list(GpuSlot.objects.filter(node=node).order_by("index"))
    rentals = []
    for i in range(count):
        order = make_order(offer=offer, days=7)
        make_ssh_key(order.owner, name=f"key-{i}")
        Order.objects.filter(pk=order.pk).update(
            payment_state="settled",
            settled_at=T0,
            rental_state=RentalState.ACTIVE,
            starts_at=T0,
            ends_at=T0 + timedelta(days=7),
        )
        Allocation.objects.create(order=order, slot=slots[i], unit=0, allocated_at=T0)
        order.refresh_from_db()
        rentals.append(order)
    return node, rentals


def _converged(spec) -> dict:
    return {
        "reference": spec.reference,
        "status": "active",
        "suspended": False,
        "keys_sha256": driving.keys_sha256(spec.ssh_public_keys),
        "until": spec.ends_at.isoformat(),
        "gpus": list(spec.allocation[0].slots),
    }


def test_the_node_specs_are_the_ones_rental_spec_builds_rental_by_rental():
    node, rentals = _node_with_rentals(3)

    batched = selectors.node_rental_specs(node)

    assert [order.pk for order, _spec in batched] == [order.pk for order in rentals]
    assert [spec for _order, spec in batched] == [
        selectors.rental_spec(order=order, node_ids=[node.pk]) for order in rentals
    ]


@pytest.mark.parametrize("count", [2, 8])
def test_a_converged_node_costs_the_same_queries_at_2_and_8_rentals(reporting, count):
    node, _rentals = _node_with_rentals(count)
    specs = dict((order.reference, spec) for order, spec in selectors.node_rental_specs(node))
    reporting.report = {ref: _converged(spec) for ref, spec in specs.items()}

    with CaptureQueriesContext(connection) as queries:
        assert driving.node_reconcile(node_id=node.pk) == []

    assert reporting.calls == []
    # The node, the samples kept, the live allocations with their orders, their keys (it
    # was 4 + 2 a rental: the ids, the orders, then an allocation and a key query each).
    assert len(queries.captured_queries) == 4


def test_only_the_rental_whose_keys_drifted_gets_a_step(reporting):
    node, rentals = _node_with_rentals(3)
    specs = dict((order.reference, spec) for order, spec in selectors.node_rental_specs(node))
    reporting.report = {ref: _converged(spec) for ref, spec in specs.items()}
    reporting.report[rentals[1].reference]["keys_sha256"] = "stale"

    applied = driving.node_reconcile(node_id=node.pk)

    assert applied == [(rentals[1].reference, "keys")]
    assert reporting.calls == [
        ("keys", rentals[1].reference, specs[rentals[1].reference].ssh_public_keys)
    ]
