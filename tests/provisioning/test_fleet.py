"""The fleet: nodes and slots, the catalog figure derived from them, the demo fleet."""

import pytest

from kernodeck.catalog import selectors as catalog_selectors
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.demo.catalog import demo_offers
from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders import capacity
from kernodeck.provisioning import node_health, selectors, services
from kernodeck.provisioning.drivers.base import NodeHealth
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


HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFleetTestHostKeyOfANewNodeWaitingForItsTurn0"


def test_a_new_ssh_node_is_sold_only_after_its_key_is_accepted_and_an_inspection_succeeds():
    """Issue 20, item 6: no order meets a node whose host key nobody accepted."""

    offer = make_offer(units_total=0)
    operator = make_operator()
    node = services.node_create(
        name="auto-new", offer=offer, gpu_count=2, host="10.0.0.9", driver="ssh", actor=operator
    )
    assert (node.state, node.commissioned_at) == ("maintenance", None)
    assert node.state_reason.startswith("New node: accept its host key")
    assert capacity.units_free(offer=offer) == 0
    with pytest.raises(Conflict) as refused:
        services.node_state_set(node=node, state="available", reason="go", actor=operator)
    assert "first inspection" in refused.value.message

    # The node offers its key; accepted, but not yet inspected through it: still not sold.
    Node.objects.filter(pk=node.pk).update(host_key_offered=HOST_KEY)
    node_health.node_host_key_accept(node=node, offered=HOST_KEY, actor=operator)
    node.refresh_from_db()
    assert (node.state, capacity.units_free(offer=offer)) == ("maintenance", 0)
    with pytest.raises(Conflict):
        services.node_state_set(node=node, state="available", reason="go", actor=operator)

    # A failed first inspection keeps it out, with the reason.
    services.node_health_record(
        node=node,
        health=NodeHealth(ok=False, detail="no route to host", data={"problem": "unreachable"}),
    )
    node.refresh_from_db()
    assert (node.state, node.commissioned_at) == ("maintenance", None)
    assert node.state_reason == "Unreachable: no route to host"

    # The first successful one puts it in service by itself, once.
    services.node_health_record(
        node=node, health=NodeHealth(ok=True, detail="2 GPUs", gpus_seen=2)
    )
    node.refresh_from_db()
    assert (node.state, node.state_reason) == ("available", "")
    assert node.commissioned_at is not None
    assert capacity.units_free(offer=offer) == 2
    assert AuditEvent.objects.filter(action="provisioning.node_commissioned").count() == 1

    # Later it is an ordinary node: out on a bad report, back by the operator's hand.
    services.node_health_record(
        node=node,
        health=NodeHealth(ok=False, detail="sshd down", data={"problem": "unreachable"}),
    )
    services.node_health_record(node=node, health=NodeHealth(ok=True, detail="ok", gpus_seen=2))
    node.refresh_from_db()
    assert node.state == "maintenance"
    services.node_state_set(node=node, state="available", reason="mended", actor=operator)
    assert AuditEvent.objects.filter(action="provisioning.node_commissioned").count() == 1


def test_a_healthy_report_without_an_accepted_key_never_puts_a_new_node_in_service():

    offer = make_offer(units_total=0)
    node = services.node_create(
        name="auto-unpinned", offer=offer, gpu_count=1, host="10.0.0.8", driver="ssh"
    )
    services.node_health_record(node=node, health=NodeHealth(ok=True, detail="?", gpus_seen=1))
    node.refresh_from_db()
    assert (node.state, node.commissioned_at) == ("maintenance", None)
    assert capacity.units_free(offer=offer) == 0
