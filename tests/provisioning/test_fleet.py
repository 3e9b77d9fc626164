"""The fleet: nodes and slots, the catalog figure derived from them, the demo fleet."""

import pytest

from kernodeck.catalog import selectors as catalog_selectors
from kernodeck.core.errors import InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.demo.catalog import demo_offers
from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders import capacity
from kernodeck.provisioning import selectors, services
from kernodeck.provisioning.models import GpuSlot, Node
from tests.factories import make_offer, make_operator, make_order, make_settled_order

pytestmark = pytest.mark.django_db


def test_the_demo_fleet_holds_exactly_the_demo_catalogs_units():
    demo_seed_catalog()
    demo_seed_catalog()  # idempotent: no second fleet

    expected = {row["slug"]: row["fleet_units"] for row in demo_offers()}
    listed = {item.offer.slug: item.units_available for item in catalog_selectors.offer_listings()}
    assert listed == expected
    b200 = Node.objects.filter(offer__slug="b200-180gb")
    assert all(node.gpu_count % 2 == 0 for node in b200)


def test_a_node_adds_its_slots_to_the_catalog_and_is_audited():
    offer = make_offer(units_total=0, gpus_per_unit=2)
    operator = make_operator()
    assert capacity.units_free(offer=offer) == 0

    node = services.node_create(
        name="b200-a", offer=offer, gpu_count=8, host="10.0.0.5", port=2200, actor=operator
    )

    assert list(GpuSlot.objects.filter(node=node).values_list("index", flat=True)) == list(
        range(8)
    )
    assert capacity.units_free(offer=offer) == 4
    event = AuditEvent.objects.get(action="provisioning.node_created")
    assert (event.actor, event.after["gpus"]) == (operator, 8)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"gpu_count": 3}, "gpu_count"),  # not whole 2-GPU units
        ({"gpu_count": 0}, "gpu_count"),
        ({"gpu_count": 65}, "gpu_count"),
        ({"port": 0}, "port"),
        ({"port": 70000}, "port"),
        ({"driver": "telnet"}, "driver"),
    ],
)
def test_bad_nodes_are_refused_and_nothing_is_created(fields, field):
    offer = make_offer(units_total=0, gpus_per_unit=2)
    values = {"name": "n1", "offer": offer, "gpu_count": 2, "host": "h"} | fields
    with pytest.raises(InvalidInput) as refused:
        services.node_create(**values)
    assert refused.value.field == field
    assert not Node.objects.exists()


def test_draining_a_node_removes_its_free_slots_from_the_catalog_but_keeps_rentals():
    offer = make_offer(units_total=8)
    node = offer.nodes.get()
    operator = make_operator()
    make_order(offer=offer, units=3)  # held, unsettled
    assert capacity.units_free(offer=offer) == 5

    services.node_state_set(node=node, state="draining", reason="swap PSU", actor=operator)

    assert capacity.units_free(offer=offer) == 0
    with pytest.raises(InvalidInput):
        services.node_state_set(node=node, state="available", reason=" ", actor=operator)
    node.refresh_from_db()
    assert (node.state, node.state_reason) == ("draining", "swap PSU")


def test_the_fleet_counts_only_slots_held_by_a_live_allocation_as_busy():
    offer = make_offer(units_total=0)
    services.node_create(name="count-a", offer=offer, gpu_count=4, host="10.0.0.9")

    def busy():
        return next(n.slots_busy for n in selectors.nodes_with_slots() if n.name == "count-a")

    assert busy() == 0  # free slots have no allocation: not busy
    order = make_settled_order(offer=offer, units=2)
    services.rental_allocate(order=order)
    assert busy() == 2
    services.rental_refund(order=order, reason="test", actor=make_operator())
    assert busy() == 0
