"""Provisioning actions: the only code that writes nodes, slots, allocations, deliveries and
the rental state of orders."""

import re
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernodeck.accounts.models import SshKey
from kernodeck.catalog import services as catalog_services
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput, NotFound
from kernodeck.core.models import AuditEvent
from kernodeck.core.services import audit_record
from kernodeck.orders import locks as order_locks
from kernodeck.orders.models import RENTAL_TRANSITIONS, Order, RentalState
from kernodeck.provisioning import alerts, locks, node_health, notices, secrets, selectors
from kernodeck.provisioning.models import (
    MAX_NODE_GPUS,
    Alert,
    AlertKind,
    Allocation,
    Delivery,
    DriverCode,
    GpuSlot,
    Node,
    NodeState,
    StepLease,
)
from kernodeck.provisioning.node_health import node_health_record  # noqa: F401 (callers)

HOST_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.\-:]{0,251}[A-Za-z0-9])?")
USER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9._\-]{0,31}")
URL_RE = re.compile(r"https?://[^\s\x00]+")
REFUNDABLE_STATES = {RentalState.QUEUED, RentalState.PROVISIONING_FAILED}
PERIOD_OVER = gettext_lazy("The rental period is over.")

# -- the fleet ----------------------------------------------------------------------------


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
    """Add a node with one slot per GPU. Its free slots count in the catalog at once."""
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
    with transaction.atomic():
        if Node.objects.filter(name=name).exists():
            raise InvalidInput(_("A node with this name exists."), field="name")
        node = Node.objects.create(
            name=name,
            offer=offer,
            gpu_count=gpu_count,
            host=host,
            port=port,
            driver=driver,
            admin_user=admin_user,
            notes=notes,
            state=NodeState.AVAILABLE,
            created_at=clock.now(),
        )
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


# -- rental state moves -------------------------------------------------------------------


def _reason_required(reason) -> str:
    reason = str(reason or "").replace("\x00", "").strip()
    if not reason:
        raise InvalidInput(_("Give the reason."), field="reason")
    return reason[:300]


def _refuse(order: Order, to: str):
    raise Conflict(
        _("Rental %(reference)s is %(state)s; it cannot become %(to)s.")
        % {
            "reference": order.reference,
            "state": order.get_rental_state_display().lower(),
            "to": str(RentalState(to).label).lower(),
        }
    )


def _move(
    order: Order, *, to: str, actor, reason: str = "", fields=(), data=None, notice: str = ""
) -> Order:
    """Apply one move of RENTAL_TRANSITIONS to a locked order, audit it, notify on commit."""
    if to not in RENTAL_TRANSITIONS[order.rental_state]:
        _refuse(order, to)
    before = order.rental_state
    order.rental_state = to
    order.rental_state_changed_at = clock.now()
    order.rental_reason = reason
    order.save(update_fields=["rental_state", "rental_state_changed_at", "rental_reason", *fields])
    catalog_services.catalog_changed()  # a settled rental's units wait, or end, by state
    after = {"rental_state": to}
    for name in fields:
        value = getattr(order, name)
        after[name] = value.isoformat() if hasattr(value, "isoformat") else value
    audit_record(
        action="order.rental_state_changed",
        target=order,
        actor=actor,
        before={"rental_state": before},
        after=after,
        data={**({"reason": reason} if reason else {}), **(data or {})},
    )
    if notice:
        notices.rental_notice(order=order, event=notice)
    return order


def _lock_order(order) -> Order:
    return order_locks.lock_order(getattr(order, "pk", order))


def _live_allocations_of_slot():
    return Allocation.objects.filter(slot=OuterRef("pk"), released_at=None)


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


def _enqueue(task_name: str, *args):
    from kernodeck.provisioning import tasks

    transaction.on_commit(lambda: getattr(tasks, task_name)(*args))


def _enqueue_reconcile(order: Order) -> None:
    """After commit, reconcile each automated node the rental holds slots on."""
    node_ids = list(
        Allocation.objects.filter(order=order, released_at__isnull=True)
        .exclude(slot__node__driver=DriverCode.MANUAL)
        .values_list("slot__node_id", flat=True)
        .distinct()
    )
    for node_id in node_ids:
        _enqueue("node_reconcile_task", node_id)


def _enqueue_allocate_waiting():
    from kernodeck.provisioning import tasks

    tasks.rentals_allocate_waiting_task()


def rental_queue(*, order: Order, actor=None) -> Order:
    """A settled order enters the queue; a task allocates its slots after commit.

    Called by `orders.services.order_settle` inside its transaction, on the locked order.
    """
    if order.rental_state == RentalState.QUEUED:
        return order
    order = _move(
        order,
        to=RentalState.QUEUED,
        actor=actor,
        reason=str(_("Waiting for GPUs to be allocated.")),
    )
    _enqueue("rental_allocate_task", order.pk)
    return order


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
        free_by_node: dict[int, list[int]] = {}
        free_slots = (
            GpuSlot.objects.filter(node__offer_id=order.offer_id, node__state=NodeState.AVAILABLE)
            .exclude(Exists(_live_allocations_of_slot()))
            .order_by("node_id", "index")
            .values_list("node_id", "pk")
        )
        for node_id, slot_id in free_slots:
            free_by_node.setdefault(node_id, []).append(slot_id)
        # A retry on new slots avoids the ones that failed, while others are free.
        tried = set(order.allocations.values_list("slot_id", flat=True))
        fresh = {n: [s for s in slots if s not in tried] for n, slots in free_by_node.items()}
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


def rental_prepare(*, order, actor) -> Order:
    """Start preparing a queued order that holds its slots (also: retry on the same slots).

    The driver's prepare() runs after commit, from the task queue.
    """
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.PREPARING:
            return order
        if RentalState.PREPARING not in RENTAL_TRANSITIONS[order.rental_state]:
            _refuse(order, RentalState.PREPARING)
        if not order.allocations.filter(released_at__isnull=True).exists():
            raise Conflict(
                _("Rental %(reference)s holds no GPUs yet; it waits for free slots.")
                % {"reference": order.reference}
            )
        order = _move(
            order,
            to=RentalState.PREPARING,
            actor=actor,
            reason=str(_("Preparing the machine.")),
            notice="rental_preparing",
        )
        _enqueue("rental_prepare_task", order.pk)
    return order


def _clean_access(*, host, port, user, url) -> tuple[str, int, str, str]:
    host = str(host or "").strip()
    if not HOST_RE.fullmatch(host):
        raise InvalidInput(_("Give a host name or IP address."), field="host")
    try:
        port = int(str(port).strip()) if str(port).strip().isascii() else None
    except ValueError:
        port = None
    if port is None or not 1 <= port <= 65535:
        raise InvalidInput(_("The SSH port is a number from 1 to 65535."), field="port")
    user = str(user or "").strip()
    if not USER_RE.fullmatch(user):
        raise InvalidInput(
            _("The user name is 1 to 32 letters, digits, dots, dashes or underscores."),
            field="user",
        )
    url = str(url or "").strip()
    if url and (not URL_RE.fullmatch(url) or len(url) > 300):
        raise InvalidInput(_("The URL must start with http:// or https://."), field="url")
    return host, port, user, url


def rental_deliver(*, order, host, port, user, url: str = "", token: str = "", actor) -> Order:
    """Deliver access: record it (secret encrypted), start the clock, notify the customer.

    Refused while the customer has no SSH public key: access is key-based only.
    """
    host, port, user, url = _clean_access(host=host, port=port, user=user, url=url)
    token = str(token or "").replace("\x00", "").strip()
    if len(token) > 500:
        raise InvalidInput(_("The token is too long."), field="token")
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state != RentalState.PREPARING:  # access is delivered once
            _refuse(order, RentalState.ACTIVE)
        if not SshKey.objects.filter(user_id=order.owner_id).exists():
            raise Conflict(
                _(
                    "The customer of %(reference)s has no SSH public key yet: access cannot "
                    "be delivered until they add one."
                )
                % {"reference": order.reference}
            )
        now = clock.now()
        delivery = Delivery.objects.create(
            order=order,
            host=host,
            port=port,
            user=user,
            url=url,
            secret_ciphertext=secrets.secret_encrypt(token),
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            created_at=now,
        )
        order.starts_at = now
        order.ends_at = now + timedelta(days=order.days)
        order = _move(
            order,
            to=RentalState.ACTIVE,
            actor=actor,
            fields=("starts_at", "ends_at"),
            data={
                "delivery": delivery.pk,
                "host": host,
                "port": port,
                "user": user,
                "has_token": bool(token),
            },
            notice="rental_access_ready",
        )
    return order


def rental_fail(*, order, reason: str, actor, detail: str = "") -> Order:
    """Preparation failed (operator or driver): the slots stay held for a retry.

    `reason` is what the customer reads (order file, e-mail); `detail` is the operator's
    (a driver's words: node names, fingerprints, the agent's error), kept in the audit row
    for the desk and never shown to the customer.
    """
    from django.conf import settings

    reason = _reason_required(reason)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.PROVISIONING_FAILED:
            return order
        order = _move(
            order,
            to=RentalState.PROVISIONING_FAILED,
            actor=actor,
            reason=reason,
            data={"detail": str(detail)[:1000]} if detail else None,
            notice="rental_failed",
        )
        attempts = node_health.rental_failed_attempts(order)
        if attempts >= settings.KERNODECK_PROVISIONING_MAX_ATTEMPTS:
            alerts.alert_raise(
                kind=AlertKind.STEP_FAILED,
                key=f"step_failed:{order.reference}",
                order=order,
                message=_("Preparing %(reference)s failed %(count)d times.")
                % {"reference": order.reference, "count": attempts},
                action=_(
                    "Read its step log on the desk; refund it to the customer's balance "
                    "rather than retry again, or mend the node first."
                ),
            )
        return order


# What a customer reads when a driver step failed: what it means for them, nothing else.
MACHINE_FAILED = gettext_lazy(
    "The machine we prepared for you did not work out; we are preparing another one or "
    "will refund you to your balance."
)


def rental_retry(*, order, actor, new_slots: bool = False) -> Order:
    """Try a failed rental again: on the same slots (preparing) or on new ones (queued)."""
    if not new_slots:
        order_row = Order.objects.get(pk=getattr(order, "pk", order))
        if order_row.rental_state != RentalState.PROVISIONING_FAILED:
            _refuse(order_row, RentalState.PREPARING)
        return rental_prepare(order=order_row, actor=actor)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state != RentalState.PROVISIONING_FAILED:
            _refuse(order, RentalState.QUEUED)
        _release_slots(order)
        order = _move(
            order,
            to=RentalState.QUEUED,
            actor=actor,
            reason=str(_("Waiting for GPUs to be allocated.")),
            data={"new_slots": True},
        )
        _enqueue("rental_allocate_task", order.pk)
    return order


def rental_refund(*, order, reason: str, actor) -> Order:
    """Refund a rental that could not be served (queued or failed) to the customer's
    balance, once, and end it: its slots are freed."""
    from kernodeck.ledger import services as ledger_services

    reason = _reason_required(reason)
    order_row = Order.objects.get(pk=getattr(order, "pk", order))
    with transaction.atomic():
        # The account first, then the order: the lock order of paying with the balance.
        get_user_model().objects.select_for_update().get(pk=order_row.owner_id)
        order = _lock_order(order_row)
        if order.rental_state not in REFUNDABLE_STATES:
            raise Conflict(
                _(
                    "Rental %(reference)s is %(state)s: only a queued or failed rental is "
                    "refunded here."
                )
                % {
                    "reference": order.reference,
                    "state": order.get_rental_state_display().lower(),
                }
            )
        entry = ledger_services.balance_refund_order(order=order, actor=actor, reason=reason)
        released, pending = _request_release(order)
        Delivery.objects.filter(order=order, revoked_at__isnull=True).update(
            secret_ciphertext="", revoked_at=clock.now()
        )
        order = _move(
            order,
            to=RentalState.ENDED,
            actor=actor,
            reason=reason,
            data={
                "refund_entry": entry.pk,
                "slots_released": released,
                "release_pending": pending,
            },
            notice="rental_refunded",
        )
        if pending:
            _enqueue("rental_release_task", order.pk)
        if released:
            transaction.on_commit(_enqueue_allocate_waiting)
    return order


def rental_suspend(*, order, reason: str, actor) -> Order:
    """Suspend an active rental (abuse, a hardware fault). The clock keeps running."""
    reason = _reason_required(reason)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.SUSPENDED:
            return order
        order = _move(order, to=RentalState.SUSPENDED, actor=actor, reason=reason)
        _enqueue_reconcile(order)
        return order


def rental_resume(*, order, reason: str, actor) -> Order:
    """Give a suspended rental back to its customer, with the dates it had."""
    reason = _reason_required(reason)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.ACTIVE:
            return order
        if order.rental_state != RentalState.SUSPENDED:
            _refuse(order, RentalState.ACTIVE)
        order = _move(order, to=RentalState.ACTIVE, actor=actor, reason=reason)
        _enqueue_reconcile(order)
        return order


def rental_end(*, order, reason: str, actor) -> Order:
    """End a rental now: its access goes at once (secrets erased), its slots on automated
    nodes stay held until the node confirms the release (`rental_release_confirm`), those on
    manual nodes are freed now. The end task calls this at `ends_at`; operators with a
    reason. The "ended" e-mail goes once every node confirmed."""
    reason = _reason_required(reason)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.ENDED:
            return order
        if order.rental_state not in {RentalState.ACTIVE, RentalState.SUSPENDED}:
            _refuse(order, RentalState.ENDED)
        now = clock.now()
        released, pending = _request_release(order)
        revoked = Delivery.objects.filter(order=order, revoked_at__isnull=True).update(
            secret_ciphertext="", revoked_at=now
        )
        order = _move(
            order,
            to=RentalState.ENDED,
            actor=actor,
            reason=reason,
            data={
                "slots_released": released,
                "release_pending": pending,
                "deliveries_revoked": revoked,
            },
            notice="" if pending else "rental_ended",
        )
        if pending:
            _enqueue("rental_release_task", order.pk)
        if released:
            transaction.on_commit(_enqueue_allocate_waiting)
    return order


def rentals_end_due() -> list[str]:
    """End every rental whose `ends_at` has passed — also those missed while no worker ran.

    Returns the references ended. Each runs in its own transaction, so one failure does
    not hold up the others.
    """
    due = list(
        Order.objects.filter(
            rental_state__in=[RentalState.ACTIVE, RentalState.SUSPENDED],
            ends_at__lte=clock.now(),
        )
        .order_by("ends_at", "pk")
        .values_list("pk", flat=True)
    )
    ended = []
    for order_id in due:
        order = rental_end(order=order_id, reason=PERIOD_OVER, actor=None)
        ended.append(order.reference)
    return ended


def rental_extend(*, order, until, reason: str, actor) -> Order:
    """Move an active (or suspended) rental's end to `until` — support's confirmed extension.

    Audited; the driver's extend() runs after commit from the task queue.
    """
    reason = _reason_required(reason)
    if not isinstance(until, datetime) or timezone.is_naive(until):
        raise InvalidInput(_("Give the new end as a date and time with its zone."), field="until")
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state not in {RentalState.ACTIVE, RentalState.SUSPENDED}:
            raise Conflict(
                _("Rental %(reference)s is %(state)s: only a running rental is extended.")
                % {
                    "reference": order.reference,
                    "state": order.get_rental_state_display().lower(),
                }
            )
        if order.ends_at and until <= order.ends_at:
            if until == order.ends_at:
                return order
            raise InvalidInput(
                _("The new end must be later than the current one (%(end)s UTC).")
                % {"end": order.ends_at.strftime("%Y-%m-%d %H:%M")},
                field="until",
            )
        before = order.ends_at
        order.ends_at = until
        order.save(update_fields=["ends_at"])
        audit_record(
            action="order.rental_extended",
            target=order,
            actor=actor,
            before={"ends_at": before.isoformat() if before else None},
            after={"ends_at": until.isoformat()},
            data={"reason": reason},
        )
        _enqueue("rental_extend_task", order.pk)
    return order


def access_reveal_to_staff(*, order: Order, actor, ip: str | None = None):
    """An operator reads a rental's access details (with its secret): audited, each time.

    The caller checks `provisioning.view_access`; this records who looked, and when.
    """
    delivery = selectors.latest_delivery(order)
    if delivery is None:
        raise NotFound(
            _("No access has been delivered for %(reference)s.") % {"reference": order.reference}
        )
    audit_record(
        action="provisioning.access_viewed",
        target=delivery,
        actor=actor,
        data={"order": order.reference},
        ip_address=ip,
    )
    return selectors.access_view(delivery)


# -- releases: a slot is free only when its node says so ------------------------------------

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
    from django.conf import settings

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


# -- step leases: no step lost to a dead worker ---------------------------------------------


def step_holder() -> str:
    """Who runs a step: host, process and thread, for the desk."""
    import os
    import socket
    import threading

    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"[:200]


def step_lease_take(*, order_id: int, step: str, seconds: int, holder: str) -> bool:
    """Take (or renew) the lease on a rental's step; False while another live holder has it."""
    now = clock.now()
    with transaction.atomic():
        _lock_order(order_id)
        lease = StepLease.objects.select_for_update().filter(order_id=order_id).first()
        if lease is not None and lease.until > now and lease.holder != holder:
            return False
        until = now + timedelta(seconds=max(1, seconds))
        if lease is None:
            StepLease.objects.create(
                order_id=order_id, step=step, holder=holder, since=now, until=until
            )
        else:
            taken_over = lease.holder != holder
            lease.step, lease.holder, lease.since, lease.until = step, holder, now, until
            lease.save(update_fields=["step", "holder", "since", "until"])
            if taken_over:
                audit_record(
                    action="provisioning.step_lease_expired",
                    target_type="orders.order",
                    target_id=str(order_id),
                    data={"step": step, "holder": holder},
                )
    return True


def step_lease_drop(*, order_id: int, holder: str) -> None:
    StepLease.objects.filter(order_id=order_id, holder=holder).delete()


def rentals_with_lost_steps() -> list[int]:
    """Automated rentals in `preparing` whose step nobody holds: a lease that expired, or
    none at all for longer than a lease lasts (a worker that died before taking it)."""
    now = clock.now()
    stale = now - timedelta(seconds=step_lease_seconds(nodes=1))
    preparing = (
        Order.objects.filter(rental_state=RentalState.PREPARING)
        .filter(Exists(Allocation.objects.filter(order=OuterRef("pk"), released_at=None)))
        .exclude(
            Exists(
                Allocation.objects.filter(
                    order=OuterRef("pk"), released_at=None, slot__node__driver=DriverCode.MANUAL
                )
            )
        )
    )
    expired = preparing.filter(
        Exists(StepLease.objects.filter(order=OuterRef("pk"), until__lte=now))
    )
    never = preparing.exclude(Exists(StepLease.objects.filter(order=OuterRef("pk")))).filter(
        rental_state_changed_at__lte=stale
    )
    lost = set(expired.values_list("pk", flat=True)) | set(never.values_list("pk", flat=True))
    return sorted(lost)


def step_lease_seconds(*, nodes: int) -> int:
    """How long a prepare step may hold its lease: create, prepare and deliver per node."""
    from django.conf import settings

    per_node = (
        settings.KERNODECK_SSH_PREPARE_TIMEOUT * 2
        + settings.KERNODECK_SSH_COMMAND_TIMEOUT * 2
        + settings.KERNODECK_SSH_CONNECT_TIMEOUT * 3
    )
    return per_node * max(1, nodes) + 60
