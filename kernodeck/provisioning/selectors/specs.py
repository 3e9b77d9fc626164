"""What drivers work from: the frozen `RentalSpec` and `NodeRef`, never a model instance.

Also what the driver steps and the reconciler read about the fleet: the rentals a node
must host, the nodes to reconcile, the nodes still to confirm a release, and a rental's
allocation summary (node names and slot indexes).
"""

from django.db.models import Max

from kernodeck.accounts.models import SshKey
from kernodeck.orders.models import Order
from kernodeck.provisioning.drivers.base import NodeAllocation, NodeRef, RentalSpec
from kernodeck.provisioning.models import Allocation, DriverCode, Node


def node_ref(node: Node) -> NodeRef:
    return NodeRef(
        name=node.name,
        host=node.host,
        port=node.port,
        admin_user=node.admin_user,
        driver=node.driver,
        gpu_count=node.gpu_count,
        host_key=node.host_key,
        options={
            "agent_dir": node.agent_dir,
            "retention_hours": node.retention_hours,
            "recipes": dict(node.recipes or {}),
            "torch_index_url": node.torch_index_url,
            "inference_model": node.inference_model,
        },
    )


def _allocations(order: Order, *, include_released: bool):
    rows = Allocation.objects.filter(order=order).select_related("slot__node")
    live = rows.filter(released_at__isnull=True)
    if not include_released or live.exists():
        return live
    # After the end: the slots it held last (released together at the end).
    last = rows.aggregate(last=Max("released_at"))["last"]
    return rows.filter(released_at=last)


def rental_spec(*, order: Order, include_released: bool = False, node_ids=None) -> RentalSpec:
    """The frozen view of a rental a driver works from (no model instance leaves here).

    `node_ids` narrows the allocation to those nodes (a release confirmed node by node).
    """
    by_node: dict[int, tuple[Node, list[int]]] = {}
    rows = _allocations(order, include_released=include_released)
    if node_ids is not None:
        rows = rows.filter(slot__node_id__in=list(node_ids))
    for row in rows.order_by("slot__node__name", "slot__index"):
        node = row.slot.node
        by_node.setdefault(node.pk, (node, []))[1].append(row.slot.index)
    keys = tuple(
        SshKey.objects.filter(user_id=order.owner_id)
        .order_by("created_at", "pk")
        .values_list("public_key", flat=True)
    )
    return _spec(order, keys=keys, by_node=by_node)


def node_rental_specs(node: Node) -> list[tuple[Order, RentalSpec]]:
    """The rentals holding live slots on the node, oldest first, each with its spec narrowed
    to this node (what `rental_spec(order=..., node_ids=[node.pk])` says), in three queries
    whatever their number: the reconcile's minute sweep reads a node's rentals as a set."""
    rows = (
        Allocation.objects.filter(slot__node=node, released_at__isnull=True)
        .select_related("order", "slot")
        .order_by("order_id", "slot__index")
    )
    orders: dict[int, Order] = {}
    slots: dict[int, list[int]] = {}
    for row in rows:
        orders.setdefault(row.order_id, row.order)
        slots.setdefault(row.order_id, []).append(row.slot.index)
    keys: dict[int, list[str]] = {}
    for user_id, public_key in (
        SshKey.objects.filter(user_id__in={order.owner_id for order in orders.values()})
        .order_by("created_at", "pk")
        .values_list("user_id", "public_key")
    ):
        keys.setdefault(user_id, []).append(public_key)
    return [
        (
            order,
            _spec(
                order,
                keys=tuple(keys.get(order.owner_id, ())),
                by_node={node.pk: (node, slots[pk])},
            ),
        )
        for pk, order in orders.items()
    ]


def _spec(order: Order, *, keys: tuple, by_node: dict[int, tuple[Node, list[int]]]) -> RentalSpec:
    return RentalSpec(
        reference=order.reference,
        offer=order.offer_slug,
        gpu_model=order.gpu_model,
        backend=order.backend,
        units=order.units,
        gpus=order.gpus,
        gpus_per_unit=order.gpus_per_unit,
        preparation=order.preparation,
        days=order.days,
        ssh_public_keys=keys,
        allocation=tuple(
            NodeAllocation(node=node_ref(node), slots=tuple(slots))
            for node, slots in by_node.values()
        ),
        starts_at=order.starts_at,
        ends_at=order.ends_at,
    )


def nodes_to_reconcile() -> list[int]:
    """Automated nodes with an accepted host key, not retired."""
    return list(
        Node.objects.exclude(driver=DriverCode.MANUAL)
        .exclude(state="retired")
        .exclude(host_key="")
        .order_by("name")
        .values_list("pk", flat=True)
    )


def release_pending_nodes(order) -> list[int]:
    """The nodes that still have to confirm this rental's release, by name."""
    rows = (
        Allocation.objects.filter(
            order=order, released_at__isnull=True, release_requested_at__isnull=False
        )
        .order_by("slot__node__name")
        .values_list("slot__node_id", flat=True)
    )
    return list(dict.fromkeys(rows))


def rental_driver_code(spec: RentalSpec) -> str:
    """The driver of a rental's nodes; a manual node anywhere means a person does it."""
    codes = {allocation.node.driver for allocation in spec.allocation}
    if not codes or DriverCode.MANUAL in codes:
        return DriverCode.MANUAL
    return sorted(codes)[0]


def allocation_of(order: Order) -> list[dict]:
    """[{node, slots}] of the order's live allocation."""
    return allocations_of([order.pk])[order.pk]


def allocations_of(order_ids) -> dict[int, list[dict]]:
    """{order id: [{node, slots}]} of these orders' live allocations, in one query."""
    order_ids = list(order_ids)
    summaries: dict[int, dict[str, list[int]]] = {pk: {} for pk in order_ids}
    rows = (
        Allocation.objects.filter(order_id__in=order_ids, released_at__isnull=True)
        .order_by("order_id", "slot__node__name", "slot__index")
        .values_list("order_id", "slot__node__name", "slot__index")
    )
    for order_id, node, index in rows:
        summaries[order_id].setdefault(node, []).append(index)
    return {
        pk: [{"node": node, "slots": slots} for node, slots in summary.items()]
        for pk, summary in summaries.items()
    }
