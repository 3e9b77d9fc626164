"""What the metrics scrape reads: the shop's state now, by status, queue, node and network.

Each function answers in a fixed number of queries, so a scrape costs the same on an empty
shop and on a busy one. The dashboard reuses some of these (nodes, watchers, the review
queue) for its "needs attention" panel, in `dashboard`.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, DurationField, ExpressionWrapper, F, Min, Q, Sum

from kernodeck.core import clock
from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from kernodeck.orders.models import Order, PaymentState, RentalState
from kernodeck.payments.chains.adapters import NETWORKS, configured_networks
from kernodeck.payments.models import (
    OPEN_STATUSES,
    REVIEW_INTENT_CASES,
    REVIEW_TRANSFER_CASES,
    ChainState,
    PaymentIntent,
    Transfer,
)
from kernodeck.payments.selectors import HEALTHY_WITHIN
from kernodeck.provisioning.models import Allocation, GpuSlot, Node
from kernodeck.support.models import Status as TicketStatus
from kernodeck.support.models import Ticket

# Time from settlement to access: 1 minute to 2 days.
ACCESS_BUCKETS = (60, 300, 900, 1800, 3600, 2 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 48 * 3600)
# A rental still running this long after its end is a release the clock did not make.
RELEASE_GRACE = timedelta(minutes=10)
LIVE_STATES = (RentalState.ACTIVE, RentalState.SUSPENDED)


def intents_by_method_status() -> list[tuple[str, str, int]]:
    rows = PaymentIntent.objects.values_list("method_id", "status").order_by()
    return list(rows.annotate(n=Count("pk")))


def orders_settled_count() -> int:
    return Order.objects.filter(settled_at__isnull=False).count()


@dataclass(frozen=True)
class ReviewQueue:
    intents: int
    transfers: int
    oldest_at: datetime | None


def review_queue() -> ReviewQueue:
    """Open review cases (payments, then unallocated transfers) and when the oldest began."""
    intents = PaymentIntent.objects.filter(REVIEW_INTENT_CASES).aggregate(
        n=Count("pk"), oldest=Min("created_at")
    )
    transfers = Transfer.objects.filter(REVIEW_TRANSFER_CASES).aggregate(
        n=Count("pk"), oldest=Min("first_seen_at")
    )
    moments = [m for m in (intents["oldest"], transfers["oldest"]) if m is not None]
    return ReviewQueue(intents["n"], transfers["n"], min(moments) if moments else None)


def rentals_by_state() -> dict[str, int]:
    counts = dict.fromkeys(RentalState.values, 0)
    rows = (
        Order.objects.filter(payment_state=PaymentState.SETTLED)
        .values_list("rental_state")
        .order_by()
        .annotate(n=Count("pk"))
    )
    counts.update(dict(rows))
    return counts


def releases_overdue(*, now=None) -> dict[str, int]:
    """Rentals past their end still running (`past_end`), and ended rentals whose slots
    are still held (`slots_held`): releases the clock or a node has not made."""
    now = now or clock.now()
    past_end = Order.objects.filter(
        rental_state__in=LIVE_STATES, ends_at__lt=now - RELEASE_GRACE
    ).count()
    slots_held = (
        Allocation.objects.filter(released_at__isnull=True, order__rental_state=RentalState.ENDED)
        .values("order_id")
        .distinct()
        .count()
    )
    return {"past_end": past_end, "slots_held": slots_held}


def _access_delay():
    return ExpressionWrapper(F("starts_at") - F("settled_at"), output_field=DurationField())


def access_delay_histogram() -> tuple[list[int], int, float]:
    """Every rental delivered so far: cumulative counts per ACCESS_BUCKETS bound, the
    count and the sum of seconds from settlement to access (one query)."""
    delivered = Order.objects.filter(starts_at__isnull=False, settled_at__isnull=False).annotate(
        delay=_access_delay()
    )
    aggregates = {
        f"le_{bound}": Count("pk", filter=Q(delay__lte=timedelta(seconds=bound)))
        for bound in ACCESS_BUCKETS
    }
    row = delivered.aggregate(n=Count("pk"), total=Sum("delay"), **aggregates)
    total = row["total"]
    if isinstance(total, timedelta):
        total = total.total_seconds()
    elif total is not None:  # SQLite sums durations as microseconds
        total = int(total) / 1_000_000
    return [row[f"le_{bound}"] for bound in ACCESS_BUCKETS], row["n"], float(total or 0)


@dataclass(frozen=True)
class NodeRow:
    name: str
    offer: str
    state: str
    gpus: int
    busy: int
    live_rentals: int
    problem: str


def nodes_overview() -> list[NodeRow]:
    """Every node with its GPUs busy and its live rentals (two queries)."""
    live = (
        Allocation.objects.filter(released_at__isnull=True)
        .values_list("slot__node_id")
        .order_by()
        .annotate(busy=Count("pk"), rentals=Count("order_id", distinct=True))
    )
    by_node = {node_id: (busy, rentals) for node_id, busy, rentals in live}
    rows = []
    for pk, name, offer, state, gpus, health in Node.objects.values_list(
        "pk", "name", "offer__slug", "state", "gpu_count", "health"
    ).order_by("offer__sort_order", "offer__slug", "name"):
        busy, rentals = by_node.get(pk, (0, 0))
        problem = str((health or {}).get("problem", "")) if isinstance(health, dict) else ""
        rows.append(NodeRow(name, offer, state, gpus, busy, rentals, problem))
    return rows


def gpu_slots_total() -> list[tuple[str, str, int]]:
    """(offer slug, node state, slots) for the whole fleet."""
    rows = GpuSlot.objects.values_list("node__offer__slug", "node__state").order_by()
    return list(rows.annotate(n=Count("pk")))


def tickets_by_status() -> dict[str, int]:
    counts = dict.fromkeys(TicketStatus.values, 0)
    counts.update(dict(Ticket.objects.values_list("status").order_by().annotate(n=Count("pk"))))
    return counts


def outbox_by_status() -> dict[str, int]:
    counts = dict.fromkeys(OutboxStatus.values, 0)
    rows = OutboxMessage.objects.values_list("status").order_by().annotate(n=Count("pk"))
    counts.update(dict(rows))
    return counts


@dataclass(frozen=True)
class WatcherRow:
    network: str
    configured: bool
    healthy: bool
    last_success_at: datetime | None
    last_error_at: datetime | None
    last_error: str
    tip: int
    blocks_behind: int
    open_instructions: int
    late_instructions: int


def _blocks_behind(state: ChainState | None) -> int:
    """How far the scan cursor (or the last block scanned) trails the chain's tip."""
    if state is None or not state.tip:
        return 0
    scanned = None
    if state.scanned_blocks:
        scanned = max(int(height) for height, _hash in state.scanned_blocks)
    elif state.cursor is not None:
        scanned = state.cursor
    return max(0, state.tip - scanned) if scanned is not None else 0


def watchers(*, now=None) -> list[WatcherRow]:
    """Every network: health from its ChainState, and the instructions its watcher follows
    (open ones, and those past expiry kept for late payments): two queries."""
    now = now or clock.now()
    states = {state.network: state for state in ChainState.objects.all()}
    watched = (
        PaymentIntent.objects.filter(monitor_until__gt=now)
        .values_list("chain")
        .order_by()
        .annotate(
            open=Count("pk", filter=Q(status__in=sorted(OPEN_STATUSES), expires_at__gt=now)),
            late=Count("pk", filter=Q(expires_at__lte=now)),
        )
    )
    counts = {chain: (open_, late) for chain, open_, late in watched}
    configured = set(configured_networks())
    rows = []
    for network in NETWORKS:
        state = states.get(network)
        success = state.last_success_at if state else None
        error_at = state.last_error_at if state else None
        if network not in configured:
            healthy = True
        elif success is None:
            healthy = state is None or error_at is None
        else:
            healthy = success >= now - HEALTHY_WITHIN
        open_, late = counts.get(network, (0, 0))
        rows.append(
            WatcherRow(
                network=network,
                configured=network in configured,
                healthy=healthy,
                last_success_at=success,
                last_error_at=error_at,
                last_error=(state.last_error if state else "")[:200],
                tip=state.tip if state else 0,
                blocks_behind=_blocks_behind(state),
                open_instructions=open_,
                late_instructions=late,
            )
        )
    return rows


def outbox_oldest_pending() -> datetime | None:
    return OutboxMessage.objects.filter(status=OutboxStatus.PENDING).aggregate(
        m=Min("created_at")
    )["m"]
