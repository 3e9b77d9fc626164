"""Fleet capacity: how many units of an offer can be ordered right now.

The one figure the configurator, the catalog, the API, order registration and every
settlement re-check use (`units_free`). It is derived from the fleet, not stored:

    whole units that fit in the free GPU slots of the offer's `available` nodes
  - units of settled orders still waiting for slots (queued, not yet allocated)
  - units held by unsettled orders within their hold window (`hold_until`)

A unit's GPUs sit on one node, so a node with 3 free slots offers one 2-GPU unit.
Allocated slots (live rentals) are not free; ended rentals released theirs. Callers that
act on the figure lock the offer row first (`orders.locks.lock_offer`).
"""

from django.db.models import (
    Count,
    Exists,
    ExpressionWrapper,
    IntegerField,
    OuterRef,
    Subquery,
    Sum,
)
from django.db.models.functions import Coalesce

from kernodeck.catalog.models import Offer
from kernodeck.core import clock
from kernodeck.orders.models import RELEASED_RENTAL_STATES, Order, PaymentState
from kernodeck.provisioning.models import Allocation, GpuSlot, Node, NodeState


def _live_allocation():
    return Allocation.objects.filter(order=OuterRef("pk"), released_at__isnull=True)


def orders_waiting_for_slots():
    """Settled orders whose rental is live but holds no slot yet (queued or failed)."""
    return (
        Order.objects.filter(payment_state=PaymentState.SETTLED)
        .exclude(rental_state__in=RELEASED_RENTAL_STATES)
        .exclude(Exists(_live_allocation()))
    )


def orders_on_hold():
    """Unsettled orders whose hold window has not lapsed."""
    return Order.objects.filter(
        payment_state=PaymentState.AWAITING_PAYMENT, hold_until__gt=clock.now()
    )


def _units_of_orders(queryset):
    """The units of `queryset`'s orders of the outer offer (0 when none), as a subquery."""
    total = (
        queryset.filter(offer_id=OuterRef("pk"))
        .order_by()
        .values("offer_id")
        .annotate(n=Sum("units"))
        .values("n")
    )
    return Coalesce(Subquery(total, output_field=IntegerField()), 0)


def _units_on_nodes():
    """Whole units that fit in the free slots of the outer offer's available nodes, node
    by node (a unit's GPUs sit on one node), as a subquery."""
    free_slots = (
        GpuSlot.objects.filter(node_id=OuterRef("pk"))
        .exclude(Exists(Allocation.objects.filter(slot=OuterRef("pk"), released_at=None)))
        .order_by()
        .values("node_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    units_per_node = Coalesce(Subquery(free_slots, output_field=IntegerField()), 0) / OuterRef(
        "gpus_per_unit"
    )
    total = (
        Node.objects.filter(offer_id=OuterRef("pk"), state=NodeState.AVAILABLE)
        .annotate(units=ExpressionWrapper(units_per_node, output_field=IntegerField()))
        .order_by()
        .values("offer_id")
        .annotate(n=Sum("units"))
        .values("n")
    )
    return Coalesce(Subquery(total, output_field=IntegerField()), 0)


def units_available_by_offer(*, offer_ids=None, offers=None) -> dict[int, int]:
    """Units orderable right now, for each offer id (every id present, never negative).

    One statement, so one snapshot: a settlement (held units become waiting ones) or an
    allocation (waiting units take free slots) committed while the figure is read moves
    units between its terms in one step and never shows them in two places or none. Read
    term by term, an allocation committed between the free slots and the waiting orders
    counted the same units free twice, and a lapsed order could be settled on them
    (tests/orders/test_capacity_snapshot.py). `offers`, the loaded offers, may be given
    instead of their ids.
    """
    if offers is not None:
        offer_ids = [offer.pk for offer in offers]
    offer_ids = list(offer_ids)
    rows = (
        Offer.objects.filter(pk__in=offer_ids)
        .annotate(
            free=_units_on_nodes(),
            waiting=_units_of_orders(orders_waiting_for_slots()),
            held=_units_of_orders(orders_on_hold()),
        )
        .values_list("pk", "free", "waiting", "held")
    )
    found = {pk: max(0, free - waiting - held) for pk, free, waiting, held in rows}
    return {offer_id: found.get(offer_id, 0) for offer_id in offer_ids}


def units_free(*, offer) -> int:
    """Units of this offer that an order (or a lapsed order's settlement) can take now."""
    if isinstance(offer, Offer):
        return units_available_by_offer(offers=[offer])[offer.pk]
    return units_available_by_offer(offer_ids=[offer])[offer]
