"""Two settlements competing for the last free slot, in real concurrent PostgreSQL
transactions: exactly one rental gets it, the other waits queued with the reason."""

import threading

import pytest
from django.db import connection, connections

from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import services
from kernodeck.provisioning.models import Allocation, Node
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip(
            "race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://… "
            "(SQLite serialises writers, so there is no race to test)"
        )


@pytest.mark.parametrize("racers", [2, 6])
def test_settlements_racing_for_the_last_slot_never_both_get_it(racers):
    offer = make_offer(units_total=racers)
    orders = [make_order(offer=offer) for _ in range(racers)]
    # The fleet shrinks to one free GPU after the orders were registered (a node went to
    # maintenance and a one-GPU node joined): only one of them can be served now.
    Node.objects.filter(offer=offer).update(state="maintenance")
    last = services.node_create(name=f"{offer.slug}-last", offer=offer, gpu_count=1, host="x")
    start = threading.Barrier(racers)
    errors = []

    def settle(order):
        try:
            start.wait()
            # Settling queues the rental; the allocation task runs right after commit.
            settlement_orders.order_settle(order=order, cause={"race": True})
        except Exception as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=settle, args=(o,)) for o in orders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    live = Allocation.objects.filter(released_at__isnull=True, slot__node=last)
    assert live.count() == 1
    assert Allocation.objects.count() == 1
    states = list(Order.objects.filter(offer=offer).values_list("rental_state", flat=True))
    assert states == [RentalState.QUEUED] * racers
    waiting = Order.objects.filter(offer=offer).exclude(pk=live.get().order_id)
    assert {o.rental_reason for o in waiting} == {
        "Waiting for free GPUs: needs 1 units, 0 free now."
    }


def test_concurrent_allocation_passes_never_give_a_slot_twice():
    offer = make_offer(units_total=4)
    orders = [make_order(offer=offer) for _ in range(4)]
    Node.objects.filter(offer=offer).update(state="maintenance")
    for order in orders:
        settlement_orders.order_settle(order=order, cause={"race": True})
    Node.objects.filter(offer=offer).update(state="available")
    start = threading.Barrier(4)
    errors = []

    def allocate(order):
        try:
            start.wait()
            services.rental_allocate(order=order)
        except Exception as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=allocate, args=(o,)) for o in orders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    slots = list(Allocation.objects.values_list("slot_id", flat=True))
    assert len(slots) == len(set(slots)) == 4
