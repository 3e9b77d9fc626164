"""Automated (ssh) nodes: what health means for the fleet, host keys, settings, step logs.

Writers for automated (ssh) nodes, starting with `node_health_record`, which stores a
driver's report (also reached as `services.node_health_record`). An unhealthy report
(unreachable, a changed or not yet accepted host key, a GPU count that no longer matches the
slots) takes an available node out of allocation (`maintenance`, with the reason); rentals
running there are flagged in their `rental_reason`, never ended. A changed host key, and
maintenance with live rentals, are alerts (`provisioning.alerts`: e-mailed to ADMINS, on top
of the desk until acknowledged). Nothing here talks to a node: drivers run before, outside
any transaction.
"""

import logging
import re

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.catalog import services as catalog_services
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.core.services import audit_record
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import alerts, locks, selectors
from kernodeck.provisioning.drivers import driver_for
from kernodeck.provisioning.drivers.base import DriverError, NodeHealth
from kernodeck.provisioning.drivers.ssh import HostKeyChanged, HostKeyNotAccepted
from kernodeck.provisioning.models import AlertKind, DriverCode, Node, NodeState

logger = logging.getLogger(__name__)

PREPARATIONS = ("python", "pytorch", "notebook", "inference")

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
        "bad_answer": _("Malformed agent answer"),
        "node_fault": _("The node refused a step"),
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
            if order.rental_state == RentalState.ACTIVE:
                # A suspended rental's reason is the customer's to read: keep it theirs.
                order.rental_reason = note
                order.save(update_fields=["rental_reason"])
            audit_record(
                action="provisioning.rental_flagged",
                target=node,
                data={"order": order.reference, "reason": reason},
            )
            flagged += 1
    return flagged


def _commission(node: Node) -> Node:
    """The first successful inspection of an automated node with an accepted host key (a
    healthy report can only come through the pinned key): it earns its place in the
    catalog. A node still held in maintenance since it was added enters service; one an
    operator drained or retired meanwhile stays where it is. Waiting orders get the new
    slots at the next minute's allocation pass."""
    node.commissioned_at = clock.now()
    fields = ["commissioned_at"]
    before = node.state
    if node.state == NodeState.MAINTENANCE:
        node.state, node.state_reason = NodeState.AVAILABLE, ""
        fields += ["state", "state_reason"]
        catalog_services.catalog_changed()
    node.save(update_fields=fields)
    audit_record(
        action="provisioning.node_commissioned",
        target=node,
        before={"state": before},
        after={"state": node.state},
        data={"reason": str(_("First inspection succeeded with the accepted host key."))},
    )
    return node


def node_health_record(*, node: Node, health: NodeHealth) -> Node:
    """Store a driver's inspect() report on the node (no audit: it is a measurement), then
    apply what it means for an automated node (`node_health_consequences`)."""
    data = health.data or {}
    Node.objects.filter(pk=node.pk).update(
        health={
            "ok": health.ok,
            "detail": health.detail[:300],
            "gpus_seen": health.gpus_seen,
            **{k: data[k] for k in HEALTH_FACTS if data.get(k) is not None},
        },
        health_checked_at=clock.now(),
    )
    node.refresh_from_db()
    return node_health_consequences(node=node, health=health)


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
        if (
            health.ok
            and node.driver != DriverCode.MANUAL
            and node.host_key
            and node.commissioned_at is None
        ):
            return _commission(node)
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
            alerts.alert_raise(
                kind=AlertKind.HOST_KEY_CHANGED,
                key=f"host_key_changed:{node.name}",
                node=node,
                message=reason,
                action=str(
                    _(
                        "Nothing is sent to the node meanwhile. Check the machine through its "
                        "console or provider (reinstalled? replaced?); compare the offered "
                        "fingerprint with ssh-keygen -lf on the machine, then accept the new "
                        "key on the node's page."
                    )
                ),
            )
        if node.state in {NodeState.AVAILABLE, NodeState.DRAINING} or (
            node.state == NodeState.MAINTENANCE and node.state_reason != reason
        ):
            before = node.state
            node.state, node.state_reason = NodeState.MAINTENANCE, reason
            node.save(update_fields=["state", "state_reason"])
            catalog_services.catalog_changed()
            audit_record(
                action="provisioning.node_state_changed",
                target=node,
                before={"state": before},
                after={"state": NodeState.MAINTENANCE},
                data={"reason": reason, "automatic": True},
            )
            _flag_running_rentals(node, reason)
            live = (
                Order.objects.filter(
                    allocations__slot__node=node, allocations__released_at__isnull=True
                )
                .distinct()
                .count()
            )
            if live:
                alerts.alert_raise(
                    kind=AlertKind.NODE_MAINTENANCE_LIVE,
                    key=f"node_maintenance_live:{node.name}",
                    node=node,
                    message=str(
                        _("%(node)s went to maintenance with %(count)d live rentals: %(reason)s")
                        % {"node": node.name, "count": live, "reason": reason}
                    ),
                    action=str(
                        _(
                            "Mend the node and put it back in service, or end, refund or "
                            "retry its rentals on other slots from the desk."
                        )
                    ),
                )
    return node


def error_blames_node(error: DriverError) -> bool:
    """Whether a step's failure is its node's fault and takes the node out at once: a host
    key problem, or an agent refusal or answer that says the machine is broken."""
    return isinstance(error, HostKeyChanged | HostKeyNotAccepted) or bool(
        getattr(error, "blames_node", False)
    )


def driver_error_record(*, error: DriverError, final: bool) -> None:
    """A rental step failed on a node: let that node's health follow, outside transactions.

    A host-key problem is the node's, at once, and so is an agent refusal that blames the
    machine (`blames_node`: a GPU tool missing or failing, device files missing) or an
    answer that is nonsense. A network failure that survived the task
    queue's retries (`final`) triggers an inspection of the node now, instead of at the next
    periodic pass, so that a retry on new slots already avoids a node that is down. Any
    other refusal belongs to the rental: the node is left alone.
    """
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
    elif getattr(error, "blames_node", False):
        # The agent says the machine is broken (a GPU tool missing or printing garbage,
        # device files missing): out of the catalog now, not at the next inspection.
        health = NodeHealth(ok=False, detail=error.message, data={"problem": "node_fault"})
    elif error.retryable and final:
        health = driver_for(node.driver).inspect(selectors.node_ref(node))
    else:
        return
    node_health_record(node=node, health=health)


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
        alerts.alert_resolve(key=f"host_key_changed:{node.name}")
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


STEP_TARGET = "provisioning.rental_step"


def rental_step_record(*, order: Order, step: str, detail: str) -> None:
    """Keep a driver step's outcome (and the agent's log tail) for the desk. Written after
    the step, outside any lock; it records, it decides nothing. Its own target type keeps
    these operator details out of the customer's order timeline."""
    audit_record(
        action="provisioning.rental_step",
        target_type=STEP_TARGET,
        target_id=str(order.pk),
        data={"step": step, "detail": str(detail or "")[:4000]},
    )


def rental_steps(order: Order) -> list[AuditEvent]:
    """The driver steps of one rental, oldest first (the desk's step log)."""
    return list(
        AuditEvent.objects.filter(target_type=STEP_TARGET, target_id=str(order.pk)).order_by(
            "created_at", "pk"
        )
    )


AGENT_DIR_RE = re.compile(r"^/[A-Za-z0-9._/-]{1,199}$")
URL_RE = re.compile(r"^https?://[^\s\x00]{1,290}$")
MODEL_RE = re.compile(r"^[A-Za-z0-9._/:@-]{1,200}$")
RECIPE_MAX = 20_000


def node_ssh_settings_update(
    *,
    node: Node,
    retention_hours,
    agent_dir: str,
    torch_index_url: str = "",
    inference_model: str = "",
    recipes: dict | None = None,
    actor,
) -> Node:
    """Change how the ssh driver runs a node: retention, agent folder, wheels, recipes.

    Every value is checked here (the web form and the API share these messages); a refused
    change changes nothing.
    """
    try:
        hours = int(str(retention_hours).strip()) if str(retention_hours).strip().isascii() else -1
    except ValueError:
        hours = -1
    if not 0 <= hours <= 8760:
        raise InvalidInput(
            _("Retention is a whole number of hours from 0 to 8760."), field="retention_hours"
        )
    agent_dir = str(agent_dir or "").strip()
    if not AGENT_DIR_RE.fullmatch(agent_dir) or "/../" in agent_dir + "/":
        raise InvalidInput(
            _("The agent folder is an absolute path of letters, digits, dots and dashes."),
            field="agent_dir",
        )
    torch_index_url = str(torch_index_url or "").strip()
    if torch_index_url and not URL_RE.fullmatch(torch_index_url):
        raise InvalidInput(
            _("The wheel source must start with http:// or https://."), field="torch_index_url"
        )
    inference_model = str(inference_model or "").strip()
    if inference_model and not MODEL_RE.fullmatch(inference_model):
        raise InvalidInput(
            _("The model name has characters it cannot have."), field="inference_model"
        )
    cleaned = {}
    for code, script in (recipes or {}).items():
        script = str(script or "").replace("\r\n", "\n")
        if code not in PREPARATIONS:
            raise InvalidInput(_("Unknown preparation."), field="recipes")
        if "\x00" in script or len(script) > RECIPE_MAX:
            raise InvalidInput(
                _("A recipe is shell text of at most 20 000 characters."), field="recipes"
            )
        if script.strip():
            cleaned[code] = script
    after = {
        "retention_hours": hours,
        "agent_dir": agent_dir,
        "torch_index_url": torch_index_url,
        "inference_model": inference_model,
        "recipes": cleaned,
    }
    with transaction.atomic():
        node = locks.lock_node(node.pk)
        before = {name: getattr(node, name) for name in after}
        if before == after:
            return node
        for name, value in after.items():
            setattr(node, name, value)
        node.save(update_fields=list(after))
        audit_record(
            action="provisioning.node_ssh_settings_changed",
            target=node,
            actor=actor,
            before=before,
            after=after,
        )
    return node


def node_inspect(*, node_id: int) -> Node:
    """Inspect one node now (outside any transaction) and record what it means."""
    node = Node.objects.get(pk=node_id)
    health = driver_for(node.driver).inspect(selectors.node_ref(node))
    return node_health_record(node=node, health=health)


def node_step_log(node: Node, *, limit: int = 40) -> list[dict]:
    """The node's own events and the driver steps of rentals that ran on it, newest first:
    [{at, action, reference, step, detail, data}].

    The rentals that ran on the node are a subquery (every rental in the node's history
    was a Python list of ids sent back as `IN (...)`); the references are read for the
    steps shown only, and not at all when none is shown."""
    from django.db.models import CharField, Q
    from django.db.models.functions import Cast

    ran_here = (
        Order.objects.filter(allocations__slot__node=node)
        .annotate(key=Cast("pk", CharField()))
        .values("key")
    )
    events = list(
        AuditEvent.objects.filter(
            Q(target_type="provisioning.node", target_id=str(node.pk))
            | Q(target_type=STEP_TARGET, target_id__in=ran_here)
        ).order_by("-created_at", "-pk")[:limit]
    )
    shown = {int(event.target_id) for event in events if event.target_type == STEP_TARGET}
    references = (
        {
            str(pk): reference
            for pk, reference in Order.objects.filter(pk__in=shown).values_list("pk", "reference")
        }
        if shown
        else {}
    )
    return [
        {
            "at": event.created_at,
            "action": event.action,
            "reference": references.get(event.target_id, "")
            if event.target_type == STEP_TARGET
            else event.data.get("order", ""),
            "step": event.data.get("step", ""),
            "detail": event.data.get("detail") or event.data.get("reason") or "",
            "after": event.after,
        }
        for event in events
    ]
