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

from collections import defaultdict

from django.db.models import Count, Exists, OuterRef, Sum

from kernodeck.catalog.models import Offer
from kernodeck.core import clock
from kernodeck.orders.models import RELEASED_RENTAL_STATES, Order, PaymentState
from kernodeck.provisioning.models import Allocation, GpuSlot, NodeState


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


def _units_by_offer(queryset, offer_ids) -> dict[int, int]:
    rows = queryset.filter(offer_id__in=offer_ids).values("offer_id").annotate(n=Sum("units"))
    return {row["offer_id"]: row["n"] for row in rows}


def free_units_on_nodes(*, offer_ids, per_unit: dict[int, int] | None = None) -> dict[int, int]:
    """Whole units that fit in the free slots of available nodes, per offer id.

    `per_unit` (offer id -> GPUs per unit) saves a query when the caller has the offers.
    """
    if per_unit is None:
        per_unit = dict(Offer.objects.filter(pk__in=offer_ids).values_list("pk", "gpus_per_unit"))
    free = (
        GpuSlot.objects.filter(node__offer_id__in=offer_ids, node__state=NodeState.AVAILABLE)
        .exclude(Exists(Allocation.objects.filter(slot=OuterRef("pk"), released_at=None)))
        .values("node_id", "node__offer_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    units = defaultdict(int)
    for row in free:
        offer_id = row["node__offer_id"]
        units[offer_id] += row["n"] // per_unit[offer_id]
    return dict(units)


def units_available_by_offer(*, offer_ids=None, offers=None) -> dict[int, int]:
    """Units orderable right now, for each offer id (every id present, never negative).

    Give the loaded `offers` instead of their ids to save the query for their unit sizes.
    """
    per_unit = None
    if offers is not None:
        per_unit = {offer.pk: offer.gpus_per_unit for offer in offers}
        offer_ids = list(per_unit)
    offer_ids = list(offer_ids)
    free = free_units_on_nodes(offer_ids=offer_ids, per_unit=per_unit)
    waiting = _units_by_offer(orders_waiting_for_slots(), offer_ids)
    held = _units_by_offer(orders_on_hold(), offer_ids)
    return {
        offer_id: max(0, free.get(offer_id, 0) - waiting.get(offer_id, 0) - held.get(offer_id, 0))
        for offer_id in offer_ids
    }


def units_free(*, offer) -> int:
    """Units of this offer that an order (or a lapsed order's settlement) can take now."""
    if isinstance(offer, Offer):
        return units_available_by_offer(offers=[offer])[offer.pk]
    return units_available_by_offer(offer_ids=[offer])[offer]
