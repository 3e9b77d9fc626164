"""Provisioning reads: the fleet, the desk's queues, the specs drivers receive, access."""

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Count, Max, Prefetch, Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernodeck.accounts.models import SshKey
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, NotFound
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import secrets
from kernodeck.provisioning.drivers.base import NodeAllocation, NodeRef, RentalSpec
from kernodeck.provisioning.models import (
    Allocation,
    Delivery,
    DriverCode,
    GpuSlot,
    Node,
    StepLease,
)

DESK_STATES = (
    RentalState.QUEUED,
    RentalState.PREPARING,
    RentalState.PROVISIONING_FAILED,
    RentalState.ACTIVE,
    RentalState.SUSPENDED,
    RentalState.ENDED,
)


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
    if live.exists() or not include_released:
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


def node_live_orders(node: Node) -> list[Order]:
    """The rentals holding live slots on the node (what must exist there), oldest first."""
    ids = (
        Allocation.objects.filter(slot__node=node, released_at__isnull=True)
        .values_list("order_id", flat=True)
        .distinct()
    )
    return list(Order.objects.filter(pk__in=list(ids)).order_by("pk"))


def nodes_to_reconcile() -> list[int]:
    """Automated nodes with an accepted host key, not retired."""
    return list(
        Node.objects.exclude(driver=DriverCode.MANUAL)
        .exclude(state="retired")
        .exclude(host_key="")
        .order_by("name")
        .values_list("pk", flat=True)
    )


def step_in_flight(order: Order):
    """The lease of the rental's step in flight (holder, since, until), or None."""
    return StepLease.objects.filter(order=order, until__gt=clock.now()).first()


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


def release_pending(order: Order) -> bool:
    """The rental ended, and a node has not confirmed its release yet."""
    return (
        order.rental_state == RentalState.ENDED
        and Allocation.objects.filter(order=order, released_at__isnull=True).exists()
    )


def releases_pending_for_desk():
    """[{order, node, requested_at, attempts, error}] of every unconfirmed release."""
    rows = (
        Allocation.objects.filter(released_at__isnull=True, release_requested_at__isnull=False)
        .select_related("order", "slot__node")
        .order_by("release_requested_at", "order_id", "slot__node__name")
    )
    seen, out = set(), []
    for row in rows:
        key = (row.order_id, row.slot.node_id)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            {
                "order": row.order,
                "node": row.slot.node,
                "requested_at": row.release_requested_at,
                "attempts": row.release_attempts,
                "error": row.release_error,
            }
        )
    return out


def rental_driver_code(spec: RentalSpec) -> str:
    """The driver of a rental's nodes; a manual node anywhere means a person does it."""
    codes = {allocation.node.driver for allocation in spec.allocation}
    if not codes or DriverCode.MANUAL in codes:
        return DriverCode.MANUAL
    return sorted(codes)[0]


def allocation_of(order: Order) -> list[dict]:
    """[{node, slots}] of the order's live allocation."""
    summary: dict[str, list[int]] = {}
    for row in _allocations(order, include_released=False).order_by(
        "slot__node__name", "slot__index"
    ):
        summary.setdefault(row.slot.node.name, []).append(row.slot.index)
    return [{"node": node, "slots": slots} for node, slots in summary.items()]


def rentals_for_desk(*, state: str = ""):
    """Rentals the desk works on, oldest waiting first; `state` narrows to one state."""
    rentals = Order.objects.filter(rental_state__in=DESK_STATES).select_related("owner")
    if state:
        rentals = rentals.filter(rental_state=state)
    else:
        rentals = rentals.filter(
            rental_state__in=[
                RentalState.QUEUED,
                RentalState.PREPARING,
                RentalState.PROVISIONING_FAILED,
            ]
        )
    return rentals.order_by("rental_state_changed_at", "settled_at", "pk")


def waiting_seconds(order: Order) -> int:
    since = order.rental_state_changed_at or order.settled_at or order.created_at
    return max(0, int((clock.now() - since).total_seconds()))


def rental_get(*, reference: str) -> Order:
    """A settled order by reference, for operators (NotFound otherwise)."""
    order = (
        Order.objects.filter(reference=str(reference or "").replace("\x00", "").upper()[:16])
        .exclude(rental_state=RentalState.NOT_STARTED)
        .select_related("owner", "offer")
        .first()
    )
    if order is None:
        raise NotFound(_("No rental with this reference."))
    return order


def ssh_key_fingerprints(order: Order) -> list[str]:
    return list(
        SshKey.objects.filter(user_id=order.owner_id)
        .order_by("created_at", "pk")
        .values_list("fingerprint", flat=True)
    )


def nodes_with_slots():
    """Every node, with its slots and each slot's live allocation (and that order)."""
    live = Allocation.objects.filter(released_at__isnull=True).select_related("order")
    return (
        Node.objects.select_related("offer")
        .order_by("offer__sort_order", "offer__slug", "name")
        .annotate(
            # A slot with no allocation at all joins as NULLs: it is free, not busy.
            slots_busy=Count(
                "slots",
                filter=Q(
                    slots__allocations__isnull=False,
                    slots__allocations__released_at__isnull=True,
                ),
                distinct=True,
            )
        )
        .prefetch_related(
            Prefetch(
                "slots",
                queryset=GpuSlot.objects.order_by("index").prefetch_related(
                    Prefetch("allocations", queryset=live, to_attr="live")
                ),
            )
        )
    )


@dataclass(frozen=True)
class NodeAccess:
    """One node of a rental in its access: where to log in there, and which GPUs it has."""

    host: str
    port: int
    user: str
    gpus: tuple[int, ...]
    ssh_command: str


@dataclass(frozen=True)
class AccessView:
    """Access as the owner (or an authorised operator) sees it, secret decrypted.

    `host`/`port`/`user`/`ssh_command` are the first node's (what single-node clients
    read); `nodes` lists every node of the rental, one entry each.
    """

    host: str
    port: int
    user: str
    url: str
    token: str
    ssh_command: str
    tunnel_command: str
    delivered_at: datetime
    nodes: tuple[NodeAccess, ...] = ()


def _ssh_command(user: str, host: str, port: int) -> str:
    return f"ssh {user}@{host}" if port == 22 else f"ssh -p {port} {user}@{host}"


def _access_nodes(deliveries) -> dict[int, tuple[NodeAccess, ...]]:
    """The nodes of each delivery's order (its live slots), in one query for all of them.

    A rental on one node keeps the delivery's own endpoint (an operator may have typed
    another host name for a manual node)."""
    by_order = {d.order_id: d for d in deliveries}
    rows = (
        Allocation.objects.filter(order_id__in=list(by_order), released_at__isnull=True)
        .order_by("order_id", "slot__node__name", "slot__index")
        .values_list(
            "order_id", "slot__node_id", "slot__node__host", "slot__node__port", "slot__index"
        )
    )
    grouped: dict[int, dict[int, tuple[str, int, list[int]]]] = {}
    for order_id, node_id, host, port, index in rows:
        grouped.setdefault(order_id, {}).setdefault(node_id, (host, port, []))[2].append(index)
    out = {}
    for order_id, delivery in by_order.items():
        nodes = list(grouped.get(order_id, {}).values())
        if len(nodes) <= 1:
            gpus = tuple(nodes[0][2]) if nodes else ()
            nodes = [(delivery.host, delivery.port, list(gpus))]
        out[order_id] = tuple(
            NodeAccess(
                host=host,
                port=port,
                user=delivery.user,
                gpus=tuple(gpus),
                ssh_command=_ssh_command(delivery.user, host, port),
            )
            for host, port, gpus in nodes
        )
    return out


def latest_delivery(order: Order) -> Delivery | None:
    return Delivery.objects.filter(order=order).order_by("-created_at", "-pk").first()


def access_view(delivery: Delivery, *, nodes=None) -> AccessView:
    if nodes is None:
        nodes = _access_nodes([delivery])[delivery.order_id]
    ssh = _ssh_command(delivery.user, delivery.host, delivery.port)
    tunnel = ""
    if delivery.url:
        local = _url_port(delivery.url)
        if local:
            port_flag = "" if delivery.port == 22 else f" -p {delivery.port}"
            tunnel = (
                f"ssh -N -L {local}:127.0.0.1:{local}{port_flag} {delivery.user}@{delivery.host}"
            )
    return AccessView(
        host=delivery.host,
        port=delivery.port,
        user=delivery.user,
        url=delivery.url,
        token=secrets.secret_decrypt(delivery.secret_ciphertext),
        ssh_command=ssh,
        tunnel_command=tunnel,
        delivered_at=delivery.created_at,
        nodes=tuple(nodes),
    )


def _url_port(url: str) -> int | None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def access_for_owner(*, order: Order) -> AccessView | None:
    """The owner's access while the rental is active; None otherwise (also when ended)."""
    if order.rental_state != RentalState.ACTIVE:
        return None
    delivery = latest_delivery(order)
    if delivery is None or delivery.revoked_at is not None:
        return None
    return access_view(delivery)


def access_for_owner_by_order(orders) -> dict[int, AccessView | None]:
    """`access_for_owner` of each order of a list, by order id: one query for the latest
    deliveries of the active ones (none when no order is active), not one per order."""
    active = [order.pk for order in orders if order.rental_state == RentalState.ACTIVE]
    latest = {}
    if active:
        deliveries = Delivery.objects.filter(order_id__in=active).order_by("-created_at", "-pk")
        for delivery in deliveries:
            latest.setdefault(delivery.order_id, delivery)
    access = {order.pk: None for order in orders}
    live = [delivery for delivery in latest.values() if delivery.revoked_at is None]
    nodes = _access_nodes(live) if live else {}
    for delivery in live:
        access[delivery.order_id] = access_view(delivery, nodes=nodes[delivery.order_id])
    return access


def node_get(*, name: str) -> Node:
    node = Node.objects.filter(name=str(name or "").replace("\x00", "")[:64]).first()
    if node is None:
        raise NotFound(_("No node with this name."))
    return node


def _ics_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def rental_calendar(*, order: Order) -> str:
    """An iCalendar file with the rental period and a reminder a day before the end.

    Conflict when the dates are not known yet (before access is delivered).
    """
    if not (order.starts_at and order.ends_at):
        raise Conflict(
            _(
                "The rental of %(reference)s has no dates yet: they are set when access is "
                "delivered. If access was delivered, ask support with the reference."
            )
            % {"reference": order.reference}
        )
    summary = _("GPU rental %(reference)s (%(gpus)d GPU, %(gpu)s)") % {
        "reference": order.reference,
        "gpus": order.gpus,
        "gpu": order.gpu_model,
    }
    reminder = _("Export your results, checkpoints and environment before the end.")
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//Kernodeck//Rental clock//EN",
        "CALSCALE:GREGORIAN",
        "BEGIN:VEVENT",
        f"UID:{order.reference.lower()}@kernodeck",
        f"DTSTAMP:{_ics_time(clock.now())}",
        f"DTSTART:{_ics_time(order.starts_at)}",
        f"DTEND:{_ics_time(order.ends_at)}",
        f"SUMMARY:{_ics_escape(summary)}",
        f"DESCRIPTION:{_ics_escape(reminder)}",
        "BEGIN:VALARM",
        "ACTION:DISPLAY",
        f"DESCRIPTION:{_ics_escape(reminder)}",
        "TRIGGER;RELATED=END:-PT24H",
        "END:VALARM",
        "END:VEVENT",
        "END:VCALENDAR",
    ]
    return "\r\n".join(lines) + "\r\n"


def _ics_escape(text: str) -> str:
    return (
        str(text)
        .replace("\\", "\\\\")
        .replace(";", "\\;")
        .replace(",", "\\,")
        .replace("\n", "\\n")
    )


@dataclass(frozen=True)
class Stage:
    key: str
    label: str
    status: str  # done | current | todo | problem
    at: datetime | None = None


@dataclass(frozen=True)
class RentalOverview:
    """What the order file shows about the rental: stages, dates, access, what is missing."""

    stages: list[Stage]
    access: AccessView | None
    needs_ssh_key: bool
    seconds_left: int | None
    reason: str


def _stages(order: Order) -> list[Stage]:
    state = order.rental_state
    settled = order.payment_state == "settled"
    delivered = order.starts_at is not None
    preparing_status = "todo"
    if state in {RentalState.QUEUED, RentalState.PREPARING}:
        preparing_status = "current"
    elif state == RentalState.PROVISIONING_FAILED:
        preparing_status = "problem"
    elif delivered:
        preparing_status = "done"
    access_status = "todo"
    if state == RentalState.ACTIVE:
        access_status = "current"
    elif state == RentalState.SUSPENDED:
        access_status = "problem"
    elif delivered:
        access_status = "done"
    return [
        Stage(
            "payment",
            _("Payment"),
            "done" if settled else ("todo" if order.payment_state == "cancelled" else "current"),
            order.settled_at,
        ),
        Stage("preparation", _("Preparation"), preparing_status),
        Stage("access", _("Access"), access_status, order.starts_at),
        Stage(
            "end",
            _("End"),
            ("current" if release_pending(order) else "done")
            if state == RentalState.ENDED
            else "todo",
            order.ends_at,
        ),
    ]


def rental_overview(*, order: Order) -> RentalOverview:
    """The rental block of the owner's order file."""
    seconds_left = None
    if order.ends_at and order.rental_state in {RentalState.ACTIVE, RentalState.SUSPENDED}:
        seconds_left = max(0, int((order.ends_at - clock.now()).total_seconds()))
    settled = order.payment_state == "settled"
    return RentalOverview(
        stages=_stages(order),
        access=access_for_owner(order=order),
        needs_ssh_key=settled
        and order.rental_state != RentalState.ENDED
        and not SshKey.objects.filter(user_id=order.owner_id).exists(),
        seconds_left=seconds_left,
        reason=rental_overview_reason(order=order),
    )


def rental_overview_reason(*, order: Order) -> str:
    """The reason a customer sees: only for a failure, a suspension, or an end that its
    machine has not confirmed yet."""
    if order.rental_state == RentalState.ENDED and release_pending(order):
        return str(END_BEING_APPLIED)
    return order.rental_reason if order.rental_state in CUSTOMER_REASON_STATES else ""


END_BEING_APPLIED = gettext_lazy(
    "The rental is over and your access has been withdrawn; the end is being applied on "
    "the machine."
)


# States whose reason the customer sees (a failure or a suspension says why).
CUSTOMER_REASON_STATES = {RentalState.PROVISIONING_FAILED, RentalState.SUSPENDED}


def delivery_defaults(order: Order) -> dict:
    """The deliver form's starting values: the first allocated node's SSH endpoint and the
    per-order login a driver would create."""
    first = (
        Allocation.objects.filter(order=order, released_at__isnull=True)
        .select_related("slot__node")
        .order_by("slot__node__name")
        .first()
    )
    spec_user = "kd-" + order.reference.lower().replace("kd-", "").replace("-", "")
    if first is None:
        return {"user": spec_user}
    node = first.slot.node
    return {"host": node.host, "port": str(node.port), "user": spec_user}
