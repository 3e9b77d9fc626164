"""Allocation and capacity: which free GPU slots a queued rental gets.

Each unit's GPUs on one node, the order on as few nodes as possible (`_plan`), under the
offer's row lock so two allocators never decide on the same capacity at once. Apart from
the state moves because it is the one place that reads the fleet's free capacity; an
allocation on automated nodes hands over to `rental_prepare` at once.
"""

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils.translation import gettext as _

from kernodeck.catalog import services as catalog_services
from kernodeck.core import clock
from kernodeck.core.services import audit_record
from kernodeck.orders import locks as order_locks
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import locks, node_health, selectors
from kernodeck.provisioning.models import Allocation, DriverCode, GpuSlot, Node, NodeState
from kernodeck.provisioning.services.moves import _lock_order, _move
from kernodeck.provisioning.services.preparation import rental_prepare
from kernodeck.provisioning.services.releases import _release_slots


def _live_allocations_of_slot():
    return Allocation.objects.filter(slot=OuterRef("pk"), released_at=None)


def _plan(free_by_node: dict, *, units: int, per_unit: int) -> list[tuple[int, int]] | None:
    """Choose (node_id, units) so the order lands on as few nodes as possible.

    Largest nodes first finds the fewest nodes; when one node suffices, the tightest fit
    is taken so big free blocks stay whole for big orders.
    """
    capacity = {node: len(slots) // per_unit for node, slots in free_by_node.items()}
    capacity = {node: n for node, n in capacity.items() if n > 0}
    if sum(capacity.values()) < units:
        return None
    fitting = [node for node, n in capacity.items() if n >= units]
    if fitting:
        best = min(fitting, key=lambda node: (capacity[node], node))
        return [(best, units)]
    plan, left = [], units
    for node in sorted(capacity, key=lambda node: (-capacity[node], node)):
        take = min(capacity[node], left)
        plan.append((node, take))
        left -= take
        if left == 0:
            break
    return plan


def _free_slots_by_node(offer_id: int) -> dict[int, list[int]]:
    """Free slots of the offer's available nodes: node id -> slot ids, by index."""
    free_by_node: dict[int, list[int]] = {}
    free_slots = (
        GpuSlot.objects.filter(node__offer_id=offer_id, node__state=NodeState.AVAILABLE)
        .exclude(Exists(_live_allocations_of_slot()))
        .order_by("node_id", "index")
        .values_list("node_id", "pk")
    )
    for node_id, slot_id in free_slots:
        free_by_node.setdefault(node_id, []).append(slot_id)
    return free_by_node


def _untried(order: Order, free_by_node: dict[int, list[int]]) -> dict[int, list[int]]:
    tried = set(order.allocations.values_list("slot_id", flat=True))
    return {n: [s for s in slots if s not in tried] for n, slots in free_by_node.items()}


def rental_retry_elsewhere(*, order) -> Order:
    """A step failed because its node is broken (the node went to maintenance at once):
    move the failed rental to slots on other nodes now, when they can hold it, instead of
    waiting for an operator's "retry".

    Only a `provisioning_failed` rental whose failures are still under
    `KERNODECK_PROVISIONING_MAX_ATTEMPTS` (past that it is the desk's: the `step_failed`
    alert), and only when untried free slots of available nodes fit it whole; otherwise it
    stays failed, holding its slots, on the desk. The old slots are freed as an operator's
    retry on new slots frees them (their node is out of service; the reconcile removes
    the account left there once it answers).
    """
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state != RentalState.PROVISIONING_FAILED:
            return order
        if (
            node_health.rental_failed_attempts(order)
            >= settings.KERNODECK_PROVISIONING_MAX_ATTEMPTS
        ):
            return order
        order_locks.lock_offer(order.offer_id)
        fresh = _untried(order, _free_slots_by_node(order.offer_id))
        if _plan(fresh, units=order.units, per_unit=order.gpus_per_unit) is None:
            return order
        _release_slots(order)
        order = _move(
            order,
            to=RentalState.QUEUED,
            actor=None,
            reason=str(_("Waiting for GPUs to be allocated.")),
            data={"new_slots": True, "automatic": True},
        )
        return rental_allocate(order=order)


def rental_allocate(*, order) -> Order:
    """Give a queued order its GPU slots: each unit's GPUs on one node, the order on as few
    nodes as possible. Without enough free slots it stays queued with the reason.

    Locks the order, then the offer row (every decision on the offer's capacity queues
    there), then the chosen slots; the partial unique index on live allocations refuses a
    slot given twice even if this logic erred.
    """
    with transaction.atomic():
        # Lock order: the order, then its offer (as settlement's re-check does).
        order = _lock_order(order)
        if order.rental_state != RentalState.QUEUED:
            return order
        order_locks.lock_offer(order.offer_id)
        if order.allocations.filter(released_at__isnull=True).exists():
            return order
        per_unit = order.gpus_per_unit
        free_by_node = _free_slots_by_node(order.offer_id)
        # A retry on new slots avoids the ones that failed, while others are free.
        fresh = _untried(order, free_by_node)
        plan = _plan(fresh, units=order.units, per_unit=per_unit)
        if plan is not None:
            free_by_node = fresh
        else:
            plan = _plan(free_by_node, units=order.units, per_unit=per_unit)
        if plan is None:
            free_units = sum(len(s) // per_unit for s in free_by_node.values())
            reason = str(
                _("Waiting for free GPUs: needs %(units)d units, %(free)d free now.")
                % {"units": order.units, "free": free_units}
            )
            if order.rental_reason != reason:
                order.rental_reason = reason
                order.save(update_fields=["rental_reason"])
            return order
        chosen = []
        unit = 0
        now = clock.now()
        for node_id, units in plan:
            slots = free_by_node[node_id][: units * per_unit]
            for i, slot_id in enumerate(slots):
                chosen.append(
                    Allocation(
                        order=order, slot_id=slot_id, unit=unit + i // per_unit, allocated_at=now
                    )
                )
            unit += units
        locks.lock_slots([a.slot_id for a in chosen])
        try:
            with transaction.atomic():
                Allocation.objects.bulk_create(chosen)
        except IntegrityError:
            # Another allocator took one of these slots first; the periodic pass retries.
            return order
        catalog_services.catalog_changed()
        order.rental_reason = str(_("GPUs allocated; preparation comes next."))
        order.save(update_fields=["rental_reason"])
        audit_record(
            action="order.rental_allocated",
            target=order,
            after={"allocation": selectors.allocation_of(order)},
        )
        automated = not Node.objects.filter(
            slots__allocations__order=order,
            slots__allocations__released_at__isnull=True,
            driver=DriverCode.MANUAL,
        ).exists()
        if automated:
            rental_prepare(order=order, actor=None)
    return order


def rentals_allocate_waiting() -> int:
    """Try every queued order without slots, oldest first; return how many got slots."""
    waiting = list(
        Order.objects.filter(rental_state=RentalState.QUEUED)
        .exclude(Exists(Allocation.objects.filter(order=OuterRef("pk"), released_at=None)))
        .order_by("settled_at", "pk")
        .values_list("pk", flat=True)
    )
    allocated = 0
    for order_id in waiting:
        order = rental_allocate(order=order_id)
        allocated += order.allocations.filter(released_at__isnull=True).exists()
    return allocated
