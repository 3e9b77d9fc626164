"""Access as its owner (or an authorised operator) sees it, the secret decrypted.

Apart because it is the only read that decrypts a secret (`secrets.secret_decrypt`): the
customer's order pages, the API and the staff reveal all go through `access_view`.
"""

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from kernodeck.core import clock
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import secrets
from kernodeck.provisioning.models import Allocation, Delivery


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
            # To the service's Unix socket on the node where it has one, else its port there.
            remote = delivery.remote_socket or f"127.0.0.1:{local}"
            port_flag = "" if delivery.port == 22 else f" -p {delivery.port}"
            tunnel = f"ssh -N -L {local}:{remote}{port_flag} {delivery.user}@{delivery.host}"
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
    try:
        parts = urlsplit(url)
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def period_over(order: Order) -> bool:
    """The rental's period has ended, even if its state has not caught up yet (the clock
    task ends it a moment later): access is no longer shown from that moment."""
    return order.ends_at is not None and order.ends_at <= clock.now()


def access_for_owner(*, order: Order) -> AccessView | None:
    """The owner's access while the rental is active and its period runs; None otherwise
    (also when ended, or once its end is past before the state says so)."""
    if order.rental_state != RentalState.ACTIVE or period_over(order):
        return None
    delivery = latest_delivery(order)
    if delivery is None or delivery.revoked_at is not None:
        return None
    return access_view(delivery)


def access_for_owner_by_order(orders) -> dict[int, AccessView | None]:
    """`access_for_owner` of each order of a list, by order id: one query for the latest
    deliveries of the active ones (none when no order is active), not one per order."""
    active = [
        order.pk
        for order in orders
        if order.rental_state == RentalState.ACTIVE and not period_over(order)
    ]
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
