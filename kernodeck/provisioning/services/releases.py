"""Releases: a slot of an automated node is free only when its node says so.

At the end of a rental its slots on manual nodes are freed at once, those on automated
nodes are marked to be released and stay held until the node confirms (account locked,
processes gone). Unconfirmed releases are retried and, past a limit, raise an alert and
take the node out of allocation. Apart because this bookkeeping spans ends, refunds,
retries on new slots and the release sweep alike.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils.translation import gettext as _

from kernodeck.catalog import services as catalog_services
from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.core.services import audit_record
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import alerts, locks, notices
from kernodeck.provisioning.models import Alert, AlertKind, Allocation, DriverCode, Node, NodeState
from kernodeck.provisioning.services.moves import _lock_order
from kernodeck.provisioning.services.queueing import _enqueue_allocate_waiting


def _release_slots(order: Order) -> int:
    catalog_services.catalog_changed()
    return Allocation.objects.filter(order=order, released_at__isnull=True).update(
        released_at=clock.now()
    )


def _request_release(order: Order) -> tuple[int, int]:
    """At the end of a rental: free its slots on manual nodes now (an operator cleans them,
    the desk lists them); mark those on automated nodes as to be released, still held.
    Returns (slots freed, slots waiting for their node's confirmation)."""
    now = clock.now()
    live = Allocation.objects.filter(order=order, released_at__isnull=True)
    manual = live.filter(slot__node__driver=DriverCode.MANUAL)
    freed = Allocation.objects.filter(pk__in=list(manual.values_list("pk", flat=True))).update(
        released_at=now
    )
    Allocation.objects.filter(
        order=order, released_at__isnull=True, release_requested_at__isnull=True
    ).update(release_requested_at=now)
    pending = Allocation.objects.filter(order=order, released_at__isnull=True).count()
    if freed:
        catalog_services.catalog_changed()
    return freed, pending


RELEASE_OVERDUE_CAUSE = "release_overdue"


def _overdue_key(reference: str, node_name: str) -> str:
    return f"{RELEASE_OVERDUE_CAUSE}:{reference}:{node_name}"


def rental_release_confirm(*, order, node_id: int, detail: str = "") -> int:
    """The node confirmed the release (account locked, processes gone, devices returned):
    free the rental's slots there, in one transaction, audited. Once no node is left to
    confirm, the customer gets the "ended" e-mail (not after a refund: that one had its own).
    Idempotent: a second confirmation frees nothing. Returns the slots freed."""
    with transaction.atomic():
        order = _lock_order(order)
        node = locks.lock_node(node_id)
        pending = Allocation.objects.filter(
            order=order,
            slot__node_id=node_id,
            released_at__isnull=True,
            release_requested_at__isnull=False,
        )
        ids = list(pending.values_list("slot_id", flat=True))
        if not ids:
            return 0
        locks.lock_slots(ids)
        freed = Allocation.objects.filter(
            order=order, slot_id__in=ids, released_at__isnull=True
        ).update(released_at=clock.now(), release_error="")
        catalog_services.catalog_changed()
        audit_record(
            action="provisioning.release_confirmed",
            target=order,
            data={"node": node.name, "slots_released": freed, "detail": str(detail)[:300]},
        )
        alerts.alert_resolve(key=_overdue_key(order.reference, node.name))
        _node_back_after_overdue(node)
        done = not Allocation.objects.filter(order=order, released_at__isnull=True).exists()
        if done and not _was_refunded(order):
            notices.rental_notice(order=order, event="rental_ended")
        transaction.on_commit(_enqueue_allocate_waiting)
    return freed


def _was_refunded(order: Order) -> bool:
    return AuditEvent.objects.filter(
        action="order.rental_state_changed",
        target_type="orders.order",
        target_id=str(order.pk),
        after__rental_state=RentalState.ENDED,
        data__has_key="refund_entry",
    ).exists()


def _node_back_after_overdue(node: Node) -> None:
    """A node taken out for overdue releases comes back once none is left overdue."""
    if node.state != NodeState.MAINTENANCE:
        return
    if Alert.objects.filter(
        node=node, kind=AlertKind.RELEASE_OVERDUE, resolved_at__isnull=True
    ).exists():
        return
    last = (
        AuditEvent.objects.filter(
            action="provisioning.node_state_changed",
            target_type="provisioning.node",
            target_id=str(node.pk),
        )
        .order_by("-created_at", "-pk")
        .first()
    )
    if last is None or (last.data or {}).get("cause") != RELEASE_OVERDUE_CAUSE:
        return
    node.state, node.state_reason = NodeState.AVAILABLE, ""
    node.save(update_fields=["state", "state_reason"])
    catalog_services.catalog_changed()
    audit_record(
        action="provisioning.node_state_changed",
        target=node,
        before={"state": NodeState.MAINTENANCE},
        after={"state": NodeState.AVAILABLE},
        data={"reason": "every overdue release was confirmed", "automatic": True},
    )


def rental_release_failed(*, order, node_id: int, reason: str) -> None:
    """A release attempt did not reach or convince the node: count it, keep the slots held;
    the sweep (`rentals_release_pending`) tries again, for as long as it takes."""
    Allocation.objects.filter(
        order=getattr(order, "pk", order),
        slot__node_id=node_id,
        released_at__isnull=True,
        release_requested_at__isnull=False,
    ).update(release_attempts=F("release_attempts") + 1, release_error=str(reason)[:300])


def rentals_release_pending() -> list[int]:
    """Orders with a release still to be confirmed by a node, oldest request first."""
    rows = (
        Allocation.objects.filter(released_at__isnull=True, release_requested_at__isnull=False)
        .values_list("order_id", flat=True)
        .order_by("release_requested_at", "order_id")
    )
    return list(dict.fromkeys(rows))


def releases_overdue_alert() -> int:
    """Raise an alert for every release unconfirmed past KERNODECK_RELEASE_OVERDUE_MINUTES,
    and take its node out of allocation (maintenance) until it is confirmed. Returns the
    alerts raised now."""
    limit = clock.now() - timedelta(minutes=settings.KERNODECK_RELEASE_OVERDUE_MINUTES)
    overdue = (
        Allocation.objects.filter(
            released_at__isnull=True,
            release_requested_at__isnull=False,
            release_requested_at__lte=limit,
        )
        .values_list("order_id", "slot__node_id")
        .distinct()
    )
    raised = 0
    for order_id, node_id in sorted(set(overdue)):
        with transaction.atomic():
            order = _lock_order(order_id)
            node = locks.lock_node(node_id)
            _alert, created = alerts.alert_raise(
                kind=AlertKind.RELEASE_OVERDUE,
                key=_overdue_key(order.reference, node.name),
                node=node,
                order=order,
                message=_(
                    "The end of %(reference)s has not been confirmed by %(node)s: the "
                    "customer's account may still work there."
                )
                % {"reference": order.reference, "node": node.name},
                action=_(
                    "Bring the node back (network, sshd, host key), or lock the account "
                    "by hand; the release is retried every minute and this alert clears "
                    "itself once the node confirms. The node takes no new rental meanwhile."
                ),
            )
            raised += created
            if node.state in {NodeState.AVAILABLE, NodeState.DRAINING}:
                before = node.state
                node.state = NodeState.MAINTENANCE
                node.state_reason = str(
                    _("Release overdue: %(reference)s") % {"reference": order.reference}
                )[:300]
                node.save(update_fields=["state", "state_reason"])
                catalog_services.catalog_changed()
                audit_record(
                    action="provisioning.node_state_changed",
                    target=node,
                    before={"state": before},
                    after={"state": NodeState.MAINTENANCE},
                    data={
                        "reason": node.state_reason,
                        "automatic": True,
                        "cause": RELEASE_OVERDUE_CAUSE,
                    },
                )
    return raised
