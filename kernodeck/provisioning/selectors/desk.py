"""The operators' desk: its rental queues, the fleet with its slots, pending releases.

Reads for staff pages and the staff API only; nothing here is shown to a customer.
"""

import functools
from datetime import datetime
from typing import NamedTuple

from django.db import connection
from django.db.models import Count, Prefetch, Q
from django.utils.translation import gettext as _

from kernodeck.accounts.models import SshKey, User
from kernodeck.core import clock, rows
from kernodeck.core.errors import NotFound
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning.models import Alert, AlertKind, Allocation, GpuSlot, Node, StepLease
from kernodeck.provisioning.selectors.specs import allocations_of


def _slots_busy() -> Count:
    """A node's slots with a live allocation (a slot with no allocation at all joins as
    NULLs: it is free, not busy)."""
    return Count(
        "slots",
        filter=Q(
            slots__allocations__isnull=False,
            slots__allocations__released_at__isnull=True,
        ),
        distinct=True,
    )


DESK_STATES = (
    RentalState.QUEUED,
    RentalState.PREPARING,
    RentalState.PROVISIONING_FAILED,
    RentalState.ACTIVE,
    RentalState.SUSPENDED,
    RentalState.ENDED,
)


# The desk's rentals when no state is chosen: those to work on.
_WORK_ON = (RentalState.QUEUED, RentalState.PREPARING, RentalState.PROVISIONING_FAILED)


def step_in_flight(order: Order):
    """The lease of the rental's step in flight (holder, since, until), or None."""
    return StepLease.objects.filter(order=order, until__gt=clock.now()).first()


_RELEASE_ASKED = rows.Columns(
    Allocation,
    "a",
    ("order_id", "release_requested_at", "release_attempts", "release_error"),
    epoch_datetimes=True,
)


@functools.cache
def _releases_statement(vendor: str) -> str:
    quote = connection.ops.quote_name
    table = {model: quote(model._meta.db_table) for model in (Allocation, GpuSlot, Node, Order)}
    return (
        f"SELECT {_RELEASE_ASKED.sql()}, s.node_id, o.reference, n.name "  # noqa: S608
        f"FROM {table[Allocation]} a INNER JOIN {table[GpuSlot]} s ON s.id = a.slot_id "
        f"INNER JOIN {table[Node]} n ON n.id = s.node_id "
        f"INNER JOIN {table[Order]} o ON o.id = a.order_id "
        "WHERE a.released_at IS NULL AND a.release_requested_at IS NOT NULL "
        "ORDER BY a.release_requested_at, a.order_id, n.name"
    )


def releases_pending_for_desk():
    """[{reference, node, requested_at, attempts, error}] of every unconfirmed release, one
    per rental and node, the longest waiting first: the rental's reference and the node's
    name, the columns the desk shows (not three whole rows joined per allocation), by a
    fixed statement."""
    with rows.prepared_cursor() as cursor:
        cursor.execute(_releases_statement(connection.vendor))
        found = cursor.fetchall()
    convert = _RELEASE_ASKED.converter(connection)
    seen, out = set(), []
    for row in found:
        order_id, requested_at, attempts, error = convert(row[:4])
        node_id, reference, node = row[4:]
        if (order_id, node_id) in seen:
            continue
        seen.add((order_id, node_id))
        out.append(
            {
                "reference": reference,
                "node": node,
                "requested_at": requested_at,
                "attempts": attempts,
                "error": error,
            }
        )
    return out


_ALERT = rows.Columns(
    Alert, "al", ("id", "kind", "message", "action", "created_at"), epoch_datetimes=True
)
_ALERT_KINDS = dict(AlertKind.choices)


@functools.cache
def _alerts_statement(vendor: str) -> str:
    quote = connection.ops.quote_name
    table = {model: quote(model._meta.db_table) for model in (Alert, Node, Order)}
    return (
        f"SELECT {_ALERT.sql()}, n.name, o.reference FROM {table[Alert]} al "  # noqa: S608
        f"LEFT JOIN {table[Node]} n ON n.id = al.node_id "
        f"LEFT JOIN {table[Order]} o ON o.id = al.order_id "
        "WHERE al.acknowledged_at IS NULL AND al.resolved_at IS NULL "
        "ORDER BY al.created_at DESC, al.id DESC LIMIT %s"
    )


def alerts_for_desk(*, limit: int) -> list[dict]:
    """The first `limit` of `alerts.alerts_open()` (newest first) as the desk lists them:
    {pk, kind, kind_label, node (its name, or None), order (its reference, or None),
    created_at, message, action}, by a fixed statement, no model instance."""
    with rows.prepared_cursor() as cursor:
        cursor.execute(_alerts_statement(connection.vendor), [limit])
        found = cursor.fetchall()
    convert = _ALERT.converter(connection)
    out = []
    for row in found:
        pk, kind, message, action, created_at = convert(row[:5])
        out.append(
            {
                "pk": pk,
                "kind": kind,
                "kind_label": _ALERT_KINDS.get(kind, kind),
                "node": row[5],
                "order": row[6],
                "created_at": created_at,
                "message": message,
                "action": action,
            }
        )
    return out


def rentals_for_desk(*, state: str = ""):
    """Rentals the desk works on, oldest waiting first; `state` narrows to one state."""
    rentals = Order.objects.filter(rental_state__in=DESK_STATES).select_related("owner")
    if state:
        rentals = rentals.filter(rental_state=state)
    else:
        rentals = rentals.filter(rental_state__in=_WORK_ON)
    return rentals.order_by("rental_state_changed_at", "settled_at", "pk")


def waiting_seconds(order: Order) -> int:
    return _waited(order, clock.now())


def _waited(order, now) -> int:
    """The seconds the rental (an order or a `DeskRental`) has waited in its state."""
    since = order.rental_state_changed_at or order.settled_at or order.created_at
    return max(0, int((now - since).total_seconds()))


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
    return ssh_key_fingerprints_of([order.owner_id])[order.owner_id]


def ssh_key_fingerprints_of(owner_ids) -> dict[int, list[str]]:
    """{account id: its keys' fingerprints, oldest first} for these accounts, in one query."""
    keys: dict[int, list[str]] = {pk: [] for pk in owner_ids}
    rows = (
        SshKey.objects.filter(user_id__in=list(keys))
        .order_by("user_id", "created_at", "pk")
        .values_list("user_id", "fingerprint")
    )
    for user_id, fingerprint in rows:
        keys[user_id].append(fingerprint)
    return keys


def desk_rows(orders) -> list[dict]:
    """[{order, waiting, allocation, keys}] of these rentals: two queries, whatever their
    number (the allocations of all, the keys of their owners)."""
    orders = list(orders)
    allocation = allocations_of(order.pk for order in orders)
    keys = ssh_key_fingerprints_of({order.owner_id for order in orders})
    return [
        {
            "order": order,
            "waiting": waiting_seconds(order),
            "allocation": allocation[order.pk],
            "keys": keys[order.owner_id],
        }
        for order in orders
    ]


class DeskRental(NamedTuple):
    """A rental as the desk's page shows it and decides on (`rental_refunded` reads it as
    it reads an order): the columns of `rentals_for_desk`'s orders the page reads, and the
    owner's address, without a model instance."""

    id: int
    reference: str
    owner_id: int
    payment_state: str
    rental_state: str
    rental_reason: str
    rental_state_changed_at: datetime | None
    settled_at: datetime | None
    created_at: datetime
    starts_at: datetime | None
    ends_at: datetime | None
    gpu_model: str
    gpus: int
    preparation: str
    owner_email: str


_DESK_RENTAL = rows.Columns(Order, "o", DeskRental._fields[:-1], epoch_datetimes=True)


@functools.cache
def _desk_statements(vendor: str) -> tuple[str, str, str]:
    """The desk page's three statements (its rentals; the live allocations of a list of
    rentals; the keys of a list of accounts), written once: the lists are one parameter
    each. Names come from the models, never from input."""
    quote = connection.ops.quote_name
    table = {
        model: quote(model._meta.db_table)
        for model in (Order, User, Allocation, GpuSlot, Node, SshKey)
    }
    index = quote("index")
    rentals = (
        f"SELECT {_DESK_RENTAL.sql()}, u.email FROM {table[Order]} o "  # noqa: S608
        f"INNER JOIN {table[User]} u ON u.id = o.owner_id "
        "WHERE o.rental_state IN (%s, %s, %s) "
        "ORDER BY o.rental_state_changed_at, o.settled_at, o.id LIMIT %s"
    )
    allocations = (
        f"SELECT a.order_id, n.name, s.{index} FROM {table[Allocation]} a "  # noqa: S608
        f"INNER JOIN {table[GpuSlot]} s ON s.id = a.slot_id "
        f"INNER JOIN {table[Node]} n ON n.id = s.node_id "
        f"WHERE a.released_at IS NULL AND {rows.one_of('a.order_id', vendor)} "
        f"ORDER BY a.order_id, n.name, s.{index}"
    )
    keys = (
        f"SELECT k.user_id, k.fingerprint FROM {table[SshKey]} k "  # noqa: S608
        f"WHERE {rows.one_of('k.user_id', vendor)} ORDER BY k.user_id, k.created_at, k.id"
    )
    return rentals, allocations, keys


def desk_page_rows(*, state: str = "", limit: int = 300) -> list[dict]:
    """`desk_rows(rentals_for_desk(state=state)[:limit])` as the desk's page reads it, the
    rentals as `DeskRental` tuples: three fixed statements, whatever the number of rentals
    (the ORM spent more CPU building them, and making two model instances per rental,
    than PostgreSQL spent running them)."""
    states = [state] if state else [*_WORK_ON]
    states = [value for value in states if value in DESK_STATES]
    if not states:
        return []
    vendor = connection.vendor
    rentals_sql, allocations_sql, keys_sql = _desk_statements(vendor)
    with rows.prepared_cursor() as cursor:
        cursor.execute(rentals_sql, [*(states * 3)[:3], limit])
        found = cursor.fetchall()
        if not found:
            return []
        order_ids = [row[0] for row in found]
        owner_ids = sorted({row[2] for row in found})
        cursor.execute(allocations_sql, [rows.list_param(order_ids, vendor)])
        allocated = cursor.fetchall()
        cursor.execute(keys_sql, [rows.list_param(owner_ids, vendor)])
        fingerprints = cursor.fetchall()
    convert, make = _DESK_RENTAL.converter(connection), DeskRental._make
    rentals = [make([*convert(row[:-1]), row[-1]]) for row in found]
    summaries: dict[int, dict[str, list[int]]] = {rental.id: {} for rental in rentals}
    for order_id, node, index in allocated:
        summaries[order_id].setdefault(node, []).append(index)
    keys: dict[int, list[str]] = {rental.owner_id: [] for rental in rentals}
    for user_id, fingerprint in fingerprints:
        keys[user_id].append(fingerprint)
    now = clock.now()
    return [
        {
            "order": rental,
            "waiting": _waited(rental, now),
            "allocation": [
                {"node": node, "slots": slots} for node, slots in summaries[rental.id].items()
            ],
            "keys": keys[rental.owner_id],
        }
        for rental in rentals
    ]


def nodes_with_slots(*, order_fields: tuple[str, ...] = ()):
    """Every node, with its slots and each slot's live allocation (and that order).

    `order_fields`: read only these of each live rental (the fleet page shows three; a
    whole order is some 40 columns to load per row), not every column."""
    live = Allocation.objects.filter(released_at__isnull=True).select_related("order")
    if order_fields:
        live = live.only("pk", "slot_id", "order_id", *(f"order__{f}" for f in order_fields))
    return (
        Node.objects.select_related("offer")
        .order_by("offer__sort_order", "offer__slug", "name")
        .annotate(slots_busy=_slots_busy())
        .prefetch_related(
            Prefetch(
                "slots",
                queryset=GpuSlot.objects.order_by("index").prefetch_related(
                    Prefetch("allocations", queryset=live, to_attr="live")
                ),
            )
        )
    )


# What the fleet page shows of a node (its offer's `gpu_model` besides).
_FLEET_NODE = rows.Columns(
    Node,
    "n",
    (
        "id",
        "name",
        "state",
        "state_reason",
        "driver",
        "host",
        "port",
        "gpu_count",
        "health",
        "health_checked_at",
    ),
    epoch_datetimes=True,
)
# What it shows of a slot's live rental.
_FLEET_RENTAL = rows.Columns(
    Order, "o", ("reference", "rental_state", "ends_at"), epoch_datetimes=True
)


@functools.cache
def _fleet_statements(vendor: str) -> tuple[str, str]:
    """The fleet page's two statements: the nodes in `nodes_with_slots`' order, then every
    slot with its live rental (a slot holds at most one: the allocations' partial unique
    constraint). Names come from the models, never from input."""
    quote = connection.ops.quote_name
    offer = Node._meta.get_field("offer").related_model
    table = {model: quote(model._meta.db_table) for model in (Node, offer, GpuSlot, Allocation)}
    index = quote("index")
    nodes = (
        f"SELECT {_FLEET_NODE.sql()}, f.gpu_model FROM {table[Node]} n "  # noqa: S608
        f"INNER JOIN {table[offer]} f ON f.id = n.offer_id "
        "ORDER BY f.sort_order, f.slug, n.name"
    )
    slots = (
        f"SELECT s.id, s.node_id, s.{index}, s.uuid, {_FLEET_RENTAL.sql()} "  # noqa: S608
        f"FROM {table[GpuSlot]} s "
        f"LEFT JOIN {table[Allocation]} a ON a.slot_id = s.id AND a.released_at IS NULL "
        f"LEFT JOIN {quote(Order._meta.db_table)} o ON o.id = a.order_id "
        f"ORDER BY s.{index}, s.id"
    )
    return nodes, slots


def fleet_rows() -> list[dict]:
    """Every node as the fleet page shows it, in two fixed statements whatever their
    number: {pk, name, offer__gpu_model, state, state_reason, driver, host, port,
    gpu_count, health, health_checked_at, slots_busy, slots: [{index, uuid, live}]}, where
    `live` is the slot's live rental {reference, rental_state, ends_at} or None and
    `slots_busy` the number of slots with one.

    The same nodes, order, slots and live rentals as `nodes_with_slots`, read as rows:
    its two prefetches made some 600 model instances a page at 100 nodes, and the ORM
    spent more CPU building its statements than PostgreSQL running them."""
    nodes_sql, slots_sql = _fleet_statements(connection.vendor)
    with rows.prepared_cursor() as cursor:
        cursor.execute(nodes_sql)
        found = cursor.fetchall()
        if not found:
            return []
        cursor.execute(slots_sql)
        slots = cursor.fetchall()
    convert_node, names = _FLEET_NODE.converter(connection), _FLEET_NODE.names
    convert_rental = _FLEET_RENTAL.converter(connection)
    nodes = []
    by_node: dict[int, dict] = {}
    for row in found:
        node = dict(zip(names, convert_node(row[:-1]), strict=True))
        node["pk"] = node.pop("id")
        node["offer__gpu_model"] = row[-1]
        node["slots_busy"], node["slots"] = 0, []
        nodes.append(node)
        by_node[node["pk"]] = node
    for _slot_id, node_id, index, uuid, reference, *rental in slots:
        node = by_node[node_id]
        live = None
        if reference is not None:
            rental_state, ends_at = convert_rental((reference, *rental))[1:]
            live = {"reference": reference, "rental_state": rental_state, "ends_at": ends_at}
            node["slots_busy"] += 1
        node["slots"].append({"index": index, "uuid": uuid, "live": live})
    return nodes


def node_get(*, name: str) -> Node:
    node = Node.objects.filter(name=str(name or "").replace("\x00", "")[:64]).first()
    if node is None:
        raise NotFound(_("No node with this name."))
    return node


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
