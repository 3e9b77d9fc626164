"""The fleet: adding nodes (one slot per GPU) and putting them in or out of service.

A node's health reports are recorded by `node_health.node_health_record` (what a report
means for an automated node lives there); this module holds the operator's own writes.
"""

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernodeck.catalog import services as catalog_services
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.services import audit_record
from kernodeck.provisioning import alerts, locks
from kernodeck.provisioning.models import MAX_NODE_GPUS, DriverCode, GpuSlot, Node, NodeState
from kernodeck.provisioning.services.moves import _reason_required
from kernodeck.provisioning.services.queueing import _enqueue_allocate_waiting

NEW_NODE_REASON = gettext_lazy(
    "New node: accept its host key; it enters service after its first successful inspection."
)
NOT_COMMISSIONED = gettext_lazy(
    "This node has not passed its first inspection with an accepted host key yet: accept "
    "its host key and inspect it; it enters service by itself once the inspection succeeds."
)


def node_create(
    *,
    name: str,
    offer,
    gpu_count: int,
    host: str,
    port: int = 22,
    driver: str = DriverCode.MANUAL,
    admin_user: str = "",
    notes: str = "",
    actor=None,
) -> Node:
    """Add a node with one slot per GPU.

    A manual node's free slots count in the catalog at once. An automated (ssh) node earns
    its place: it starts in maintenance and enters service by itself at its first
    successful inspection once an operator accepted its host key
    (`node_health.node_health_consequences`), so no order meets a node that cannot run it.
    """
    if not isinstance(gpu_count, int) or not 1 <= gpu_count <= MAX_NODE_GPUS:
        raise InvalidInput(
            _("A node has 1 to %(max)d GPUs.") % {"max": MAX_NODE_GPUS}, field="gpu_count"
        )
    if gpu_count % offer.gpus_per_unit:
        raise InvalidInput(
            _("A %(gpu)s unit has %(n)d GPUs on one node: give a multiple of %(n)d.")
            % {"gpu": offer.gpu_model, "n": offer.gpus_per_unit},
            field="gpu_count",
        )
    if not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidInput(_("The SSH port is a number from 1 to 65535."), field="port")
    if driver not in DriverCode.values:
        raise InvalidInput(_("Unknown driver."), field="driver")
    automated = driver != DriverCode.MANUAL
    with transaction.atomic():
        if Node.objects.filter(name=name).exists():
            raise InvalidInput(_("A node with this name exists."), field="name")
        try:
            # A savepoint: a node of this name added at the same moment by another
            # operator wins, and this one is refused with the reason, not a server error.
            with transaction.atomic():
                node = Node.objects.create(
                    name=name,
                    offer=offer,
                    gpu_count=gpu_count,
                    host=host,
                    port=port,
                    driver=driver,
                    admin_user=admin_user,
                    notes=notes,
                    state=NodeState.MAINTENANCE if automated else NodeState.AVAILABLE,
                    state_reason="" if not automated else str(NEW_NODE_REASON),
                    created_at=clock.now(),
                )
        except IntegrityError:
            raise Conflict(
                _("A node with this name was added at the same moment."), field="name"
            ) from None
        GpuSlot.objects.bulk_create(GpuSlot(node=node, index=i) for i in range(gpu_count))
        catalog_services.catalog_changed()
        audit_record(
            action="provisioning.node_created",
            target=node,
            actor=actor,
            after={"name": name, "offer": offer.slug, "gpus": gpu_count, "host": host},
        )
    return node


def fleet_create_for_offer(*, offer, units: int, prefix: str = "", host_domain: str = "invalid"):
    """Nodes of up to 8 GPUs holding `units` whole units of the offer (demo and tests)."""
    per_node = max(1, 8 // offer.gpus_per_unit) * offer.gpus_per_unit
    remaining = units * offer.gpus_per_unit
    nodes, number = [], 0
    while remaining > 0:
        number += 1
        gpus = min(per_node, remaining)
        remaining -= gpus
        name = f"{prefix or offer.slug}-{number:02d}"[:64]
        nodes.append(
            node_create(name=name, offer=offer, gpu_count=gpus, host=f"{name}.{host_domain}")
        )
    return nodes


def node_state_set(*, node: Node, state: str, reason: str, actor) -> Node:
    """Put a node in service or take it out (draining, maintenance, retired), with a reason.

    Rentals already on the node keep their slots; only new allocations look at the state.
    """
    if state not in NodeState.values:
        raise InvalidInput(_("Unknown node state."), field="state")
    reason = _reason_required(reason)
    with transaction.atomic():
        node = locks.lock_node(node.pk)
        if node.state == state:
            return node
        if (
            state == NodeState.AVAILABLE
            and node.driver != DriverCode.MANUAL
            and (node.commissioned_at is None or not node.host_key)
        ):
            raise Conflict(NOT_COMMISSIONED, field="state")
        before = node.state
        node.state, node.state_reason = state, reason
        node.save(update_fields=["state", "state_reason"])
        if state == NodeState.AVAILABLE:
            alerts.alert_resolve(key=f"node_maintenance_live:{node.name}")
        catalog_services.catalog_changed()
        audit_record(
            action="provisioning.node_state_changed",
            target=node,
            actor=actor,
            before={"state": before},
            after={"state": state},
            data={"reason": reason},
        )
    if state == NodeState.AVAILABLE:
        transaction.on_commit(_enqueue_allocate_waiting)
    return node
