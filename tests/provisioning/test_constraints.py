"""Every constraint of provisioning that a write can hit, and what answers when it does.

constraint (provisioning_…)     kind      write path → answer
-------------------------------  --------  ---------------------------------------------------
Node.name unique                 race      fleet.node_create (desk fleet page, API): a name
                                           added at the same moment → Conflict 409; a name
                                           that exists → InvalidInput 422
node_gpu_count_range             value     node_create → InvalidInput 422
node_port_range                  value     node_create → InvalidInput 422
node_state_valid                 value     node_state_set → InvalidInput 422
node_driver_valid                value     node_create → InvalidInput 422
node_retention_at_most_a_year    value     node_ssh_settings_update → InvalidInput 422
slot_node_index                  internal  node_create numbers a new node's slots 0..n-1
allocation_one_live_rental_      race      rental_allocate: the offer's row lock serialises
  per_slot                                 allocators; a loser's IntegrityError is caught
                                           and the order waits (the next pass retries)
allocation_release_after_request internal  rental_release_confirm (idempotent)
delivery_port_range              value     rental_deliver → InvalidInput 422
alert_one_open_per_key           internal  alerts.alert_raise: a repeat (even at the same
                                           moment) returns the open alert
alert_kind_valid                 internal  alert kinds are AlertKind constants in the code
StepLease.order one-to-one       race      step_lease_take: the order's row lock serialises
                                           takers; exactly one gets the lease
steplease_until_after_since      internal  step_lease_take: until = now + max(1, seconds)
"""

import pytest
from django.db import IntegrityError

from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.orders.models import Order
from kernodeck.provisioning import alerts, node_health, services
from kernodeck.provisioning.models import (
    Alert,
    AlertKind,
    Allocation,
    Delivery,
    GpuSlot,
    Node,
    StepLease,
)
from kernodeck.settlement import orders as settlement_orders
from tests.constraint_races import needs_postgres, race, unexpected
from tests.factories import make_offer, make_operator, make_order, make_ssh_key, make_ssh_node


def _node(offer, name="n-1", **fields):
    values = {"name": name, "offer": offer, "gpu_count": 2, "host": "10.0.0.1"} | fields
    return services.node_create(**values)


def _allocated_order(offer, units=1):
    order = make_order(offer=offer, units=units)
    make_ssh_key(order.owner)
    settlement_orders.order_settle(order=order, cause={"test": 1})
    order.refresh_from_db()
    services.rental_allocate(order=order)  # on commit after a settlement; at once here
    assert Allocation.objects.filter(order=order).exists()
    return order


# -- races -------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_nodes_added_with_one_name_at_the_same_moment_make_one_node_and_409s():
    needs_postgres()
    offer = make_offer(units_total=0)
    racers = 5

    outcomes = race(lambda i: _node(offer, name="twin", host=f"10.0.0.{i + 1}"), racers)

    assert unexpected(outcomes) == []
    made = [o for o in outcomes if isinstance(o, Node)]
    refused = [o for o in outcomes if not isinstance(o, Node)]
    assert len(made) == 1
    for refusal in refused:
        # Either the check saw the winner (422) or the constraint did (409), with the reason.
        assert isinstance(refusal, (InvalidInput, Conflict)) and refusal.field == "name"
        assert "node with this name" in refusal.message
    assert Node.objects.filter(name="twin").count() == 1
    assert GpuSlot.objects.filter(node__name="twin").count() == 2


@pytest.mark.django_db
def test_the_constraint_on_a_node_name_is_a_conflict_not_an_integrity_error(monkeypatch):
    """The request that checked before the other's node was committed: the unique
    constraint refuses it, the service answers Conflict with the reason."""
    offer = make_offer(units_total=0)
    _node(offer, name="twin")
    real_filter = Node.objects.filter

    def blind_filter(*args, **kwargs):
        if kwargs == {"name": "twin"}:
            return real_filter(pk=-1)  # as if the winner were not committed yet
        return real_filter(*args, **kwargs)

    monkeypatch.setattr(Node.objects, "filter", blind_filter)
    with pytest.raises(Conflict) as refused:
        _node(offer, name="twin")
    assert refused.value.field == "name"
    assert "added at the same moment" in refused.value.message
    monkeypatch.undo()
    assert Node.objects.filter(name="twin").count() == 1


@pytest.mark.django_db
def test_a_taken_node_name_on_the_fleet_page_is_a_form_error(client):
    offer = make_offer(units_total=0, slug="h100")
    _node(offer, name="twin")
    client.force_login(make_operator())
    response = client.post(
        "/backoffice/fleet/",
        {
            "name": "twin",
            "offer": "h100",
            "gpu_count": 2,
            "host": "h",
            "port": 22,
            "driver": "manual",
        },
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert response.status_code == 422
    assert "A node with this name exists." in response.content.decode()
    assert Node.objects.filter(name="twin").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_allocators_racing_for_one_slot_never_raise_and_never_share_it():
    needs_postgres()
    offer = make_offer(units_total=0)
    _node(offer, name="four", gpu_count=4)
    orders = [make_order(offer=offer) for _ in range(4)]
    for order in orders:
        make_ssh_key(order.owner)
    # Settled, then the fleet shrinks to one free GPU: only one of them can be served.
    Order.objects.filter(pk__in=[o.pk for o in orders]).update(
        payment_state="settled", rental_state="queued"
    )
    Node.objects.filter(name="four").update(state="maintenance")
    _node(offer, name="one", gpu_count=1)

    outcomes = race(lambda i: services.rental_allocate(order=orders[i]), len(orders))

    assert unexpected(outcomes) == []
    assert Allocation.objects.filter(released_at__isnull=True).count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_step_lease_takers_at_the_same_moment_are_serialised_by_the_order_lock():
    needs_postgres()
    offer = make_offer(units_total=0)
    _node(offer)
    order = _allocated_order(offer)
    StepLease.objects.filter(order=order).delete()

    outcomes = race(
        lambda i: services.step_lease_take(
            order_id=order.pk, step="prepare", seconds=600, holder=f"w-{i}"
        ),
        5,
    )

    assert unexpected(outcomes) == []
    assert sorted(outcomes) == [False, False, False, False, True]
    assert StepLease.objects.filter(order=order).count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_alert_raised_by_workers_at_the_same_moment_is_opened_once():
    needs_postgres()
    outcomes = race(
        lambda i: alerts.alert_raise(
            kind=AlertKind.STEP_FAILED, key="node:x", message=f"m{i}", action="look"
        )[1],
        5,
    )
    assert unexpected(outcomes) == []
    assert outcomes.count(True) == 1
    assert Alert.objects.filter(key="node:x", resolved_at__isnull=True).count() == 1


# -- values the services refuse before the database --------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"gpu_count": 0}, "gpu_count"),  # provisioning_node_gpu_count_range
        ({"gpu_count": 65}, "gpu_count"),
        ({"port": 0}, "port"),  # provisioning_node_port_range
        ({"port": 65536}, "port"),
        ({"driver": "telnet"}, "driver"),  # provisioning_node_driver_valid
    ],
)
def test_node_values_the_constraints_forbid_are_refused_first(fields, field):
    offer = make_offer(units_total=0)
    with pytest.raises(InvalidInput) as refused:
        _node(offer, **fields)
    assert refused.value.field == field
    assert not Node.objects.exists()


@pytest.mark.django_db
def test_an_unknown_node_state_is_refused_first():
    node = _node(make_offer(units_total=0))
    with pytest.raises(InvalidInput):
        services.node_state_set(node=node, state="exploded", reason="r", actor=make_operator())
    node.refresh_from_db()
    assert node.state == "available"


@pytest.mark.django_db
@pytest.mark.parametrize("hours", ["8761", "-1", "a year"])
def test_a_retention_beyond_a_year_is_refused_first(hours):
    node = _node(make_offer(units_total=0), driver="ssh")
    with pytest.raises(InvalidInput) as refused:
        node_health.node_ssh_settings_update(
            node=node,
            retention_hours=hours,
            agent_dir="",
            torch_index_url="",
            inference_model="",
            recipes={},
            actor=make_operator(),
        )
    assert refused.value.field == "retention_hours"
    node.refresh_from_db()
    assert node.retention_hours == 0


@pytest.mark.django_db
@pytest.mark.parametrize("port", [0, 65536, "ssh"])
def test_a_delivery_port_out_of_range_is_refused_first(port):
    offer = make_offer(units_total=0)
    _node(offer)
    order = _allocated_order(offer)
    with pytest.raises(InvalidInput) as refused:
        services.rental_deliver(
            order=order, host="10.0.0.1", port=port, user="u", actor=make_operator()
        )
    assert refused.value.field == "port"
    assert not Delivery.objects.filter(order=order).exists()


# -- written by system code only: a repeat is idempotent ---------------------------------


@pytest.mark.django_db
def test_slots_are_numbered_once_per_node():
    node = _node(make_offer(units_total=0), gpu_count=4)
    assert list(node.slots.values_list("index", flat=True)) == [0, 1, 2, 3]
    with pytest.raises(IntegrityError):  # the constraint itself holds
        GpuSlot.objects.create(node=node, index=0)


@pytest.mark.django_db
def test_allocating_an_allocated_rental_again_changes_nothing():
    offer = make_offer(units_total=0)
    _node(offer)
    order = _allocated_order(offer)
    before = list(Allocation.objects.filter(order=order).values_list("slot_id", flat=True))
    assert before
    services.rental_allocate(order=order)
    services.rentals_allocate_waiting()
    assert list(Allocation.objects.filter(order=order).values_list("slot_id", flat=True)) == (
        before
    )


@pytest.mark.django_db
def test_a_release_confirmed_twice_frees_once_and_after_its_request():
    offer = make_offer(units_total=0)
    node = make_ssh_node(name="n-1", offer=offer, gpu_count=2, host="10.0.0.1")
    order = _allocated_order(offer)
    Allocation.objects.filter(order=order).update(release_requested_at=order.created_at)
    assert services.rental_release_confirm(order=order, node_id=node.pk) == 1
    assert services.rental_release_confirm(order=order, node_id=node.pk) == 0
    allocation = Allocation.objects.get(order=order)
    assert allocation.released_at >= allocation.release_requested_at


@pytest.mark.django_db
def test_an_alert_raised_twice_is_one_open_alert_of_a_known_kind():
    first, created = alerts.alert_raise(
        kind=AlertKind.STEP_FAILED, key="k", message="m", action="a"
    )
    again, created_again = alerts.alert_raise(
        kind=AlertKind.STEP_FAILED, key="k", message="m", action="a"
    )
    assert (created, created_again, again.pk) == (True, False, first.pk)
    assert Alert.objects.filter(key="k").count() == 1
    assert set(Alert.objects.values_list("kind", flat=True)) <= set(AlertKind.values)


@pytest.mark.django_db
def test_a_step_lease_taken_again_is_renewed_with_its_end_after_its_start():
    offer = make_offer(units_total=0)
    _node(offer)
    order = _allocated_order(offer)
    for _ in range(2):
        assert services.step_lease_take(order_id=order.pk, step="p", seconds=0, holder="w")
    lease = StepLease.objects.get(order=order)
    assert lease.until > lease.since
