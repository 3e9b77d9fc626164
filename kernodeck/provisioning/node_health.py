"""What a node's health means for the fleet: maintenance, host-key pins, alerts, attempts.

Writers for automated (ssh) nodes, on top of `services.node_health_record`, which stores the
report. An unhealthy report (unreachable, a changed or not yet accepted host key, a GPU count
that no longer matches the slots) takes an available node out of allocation (`maintenance`,
with the reason); rentals running there are flagged in their `rental_reason`, never ended.
A changed host key also alerts the operators. Nothing here talks to a node: drivers run
before, outside any transaction.
"""

import logging

from django.conf import settings
from django.core.mail import mail_admins
from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.core.errors import Conflict
from kernodeck.core.models import AuditEvent
from kernodeck.core.services import audit_record
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import locks
from kernodeck.provisioning.drivers.base import DriverError, NodeHealth
from kernodeck.provisioning.models import DriverCode, Node, NodeState

logger = logging.getLogger(__name__)

HOST_KEY_PROBLEMS = {"host_key_changed", "host_key_not_accepted"}
# Facts of an inspect() report kept on the node for the desk.
HEALTH_FACTS = ("problem", "backend", "driver_version", "disk_free_bytes")


def _reason(health: NodeHealth) -> str:
    problem = (health.data or {}).get("problem", "")
    prefix = {
        "host_key_changed": _("Host key changed"),
        "host_key_not_accepted": _("Host key not accepted yet"),
        "gpu_mismatch": _("GPU count mismatch"),
        "unreachable": _("Unreachable"),
    }.get(problem, _("Health check failed"))
    return f"{prefix}: {health.detail}"[:300]


def _flag_running_rentals(node: Node, reason: str) -> int:
    """Say on each live rental of the node why it may be affected; nothing is stopped."""
    flagged = 0
    orders = Order.objects.filter(
        allocations__slot__node=node,
        allocations__released_at__isnull=True,
        rental_state__in=[RentalState.ACTIVE, RentalState.SUSPENDED],
    ).distinct()
    for order in orders:
        note = str(
            _("Node %(node)s is in maintenance: %(reason)s")
            % {
                "node": node.name,
                "reason": reason,
            }
        )[:300]
        if order.rental_reason != note:
            order.rental_reason = note
            order.save(update_fields=["rental_reason"])
            audit_record(
                action="order.rental_flagged",
                target=order,
                data={"node": node.name, "reason": reason},
            )
            flagged += 1
    return flagged


def _alert(node: Node, subject: str, message: str) -> None:
    logger.error("node %s: %s", node.name, message)
    transaction.on_commit(
        lambda: mail_admins(f"{node.name}: {subject}", message, fail_silently=True)
    )


def node_health_consequences(*, node: Node, health: NodeHealth) -> Node:
    """Apply an inspect() report of an automated node: pin bookkeeping, maintenance, alert.

    Healthy reports change nothing here (an operator returns a node to service). Returns
    early when the node is already in maintenance for the same reason.
    """
    data = health.data or {}
    problem = data.get("problem", "")
    with transaction.atomic():
        node = locks.lock_node(node.pk)
        offered = str(data.get("offered_key") or "")[:1000]
        if problem in HOST_KEY_PROBLEMS and node.host_key_offered != offered:
            node.host_key_offered = offered
            node.save(update_fields=["host_key_offered"])
        if health.ok or node.driver == DriverCode.MANUAL:
            return node
        reason = _reason(health)
        if problem == "host_key_changed" and node.state_reason != reason:
            audit_record(
                action="provisioning.node_host_key_changed",
                target=node,
                before={"host_key": node.host_key},
                after={"offered": offered},
            )
            _alert(node, "SSH host key changed", reason)
        if node.state in {NodeState.AVAILABLE, NodeState.DRAINING} or (
            node.state == NodeState.MAINTENANCE and node.state_reason != reason
        ):
            before = node.state
            node.state, node.state_reason = NodeState.MAINTENANCE, reason
            node.save(update_fields=["state", "state_reason"])
            audit_record(
                action="provisioning.node_state_changed",
                target=node,
                before={"state": before},
                after={"state": NodeState.MAINTENANCE},
                data={"reason": reason, "automatic": True},
            )
            _flag_running_rentals(node, reason)
    return node


def driver_error_record(*, error: DriverError, final: bool) -> None:
    """A rental step failed on a node: let that node's health follow, outside transactions.

    A host-key problem is the node's, at once. A network failure that survived the task
    queue's retries (`final`) triggers an inspection of the node now, instead of at the next
    periodic pass, so that a retry on new slots already avoids a node that is down. An
    agent's refusal belongs to the rental: the node is left alone.
    """
    from kernodeck.provisioning import selectors, services
    from kernodeck.provisioning.drivers import driver_for
    from kernodeck.provisioning.drivers.ssh import HostKeyChanged, HostKeyNotAccepted

    name = getattr(error, "node", "")
    node = Node.objects.filter(name=name).exclude(driver=DriverCode.MANUAL).first()
    if node is None:
        return
    if isinstance(error, HostKeyChanged | HostKeyNotAccepted):
        problem = (
            "host_key_changed" if isinstance(error, HostKeyChanged) else "host_key_not_accepted"
        )
        health = NodeHealth(
            ok=False, detail=error.message, data={"problem": problem, "offered_key": error.offered}
        )
    elif error.retryable and final:
        health = driver_for(node.driver).inspect(selectors.node_ref(node))
    else:
        return
    services.node_health_record(node=node, health=health)


def node_host_key_accept(*, node: Node, offered: str, actor) -> Node:
    """Pin the host key the node offers, after an operator compared its fingerprint.

    `offered` is the key the operator saw; if the node offered another one since, the
    acceptance is refused, so an operator never pins a key they did not see.
    """
    with transaction.atomic():
        node = locks.lock_node(node.pk)
        if not node.host_key_offered or node.host_key_offered != offered:
            raise Conflict(_("The node offers another host key now; look at it again."))
        before = node.host_key
        node.host_key, node.host_key_offered = node.host_key_offered, ""
        node.save(update_fields=["host_key", "host_key_offered"])
        audit_record(
            action="provisioning.node_host_key_accepted",
            target=node,
            actor=actor,
            before={"host_key": before},
            after={"host_key": node.host_key},
        )
    return node


def rental_failed_attempts(order: Order) -> int:
    """How many times this rental's provisioning failed (from its audit trail)."""
    return AuditEvent.objects.filter(
        action="order.rental_state_changed",
        target_type="orders.order",
        target_id=str(order.pk),
        after__rental_state=RentalState.PROVISIONING_FAILED,
    ).count()


def rental_refund_proposed(order: Order) -> bool:
    """After the configured number of failed attempts, the desk proposes the refund."""
    return (
        order.rental_state == RentalState.PROVISIONING_FAILED
        and rental_failed_attempts(order) >= settings.KERNODECK_PROVISIONING_MAX_ATTEMPTS
    )
