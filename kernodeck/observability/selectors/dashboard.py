"""What the operators' dashboard plots, and what needs a human now.

Per-day series since a date (orders, sales by how they were paid, access delays, slots
held) and the attention panel, which is built on the scrape's reads (`scrape`): apart from
them because they answer a period, not the state of the moment.
"""

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db.models import CharField, Count, Min, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce, TruncDate

from kernodeck.core import clock
from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from kernodeck.observability.selectors.scrape import (
    ReviewQueue,
    nodes_overview,
    releases_overdue,
    review_queue,
    watchers,
)
from kernodeck.orders.models import Order, RentalState
from kernodeck.payments.models import IntentStatus, PaymentIntent, Resolution
from kernodeck.provisioning.models import Allocation, GpuSlot, NodeState
from kernodeck.support.models import Status as TicketStatus
from kernodeck.support.models import Ticket

# Queued, preparing or failed for longer than this: a rental an operator should look at.
STUCK_AFTER = timedelta(minutes=30)
STUCK_STATES = (RentalState.QUEUED, RentalState.PREPARING, RentalState.PROVISIONING_FAILED)
BALANCE = "balance"


def _seconds(delta: timedelta | None) -> float | None:
    return None if delta is None else max(0.0, delta.total_seconds())


def days_of(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


def _as_date(value) -> date:
    return value.date() if isinstance(value, datetime) else value


def orders_per_day(*, since: datetime) -> dict[date, tuple[int, int]]:
    """(orders registered, orders settled) per UTC day since `since` (two queries)."""
    created = (
        Order.objects.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values_list("day")
        .order_by()
        .annotate(n=Count("pk"))
    )
    settled = (
        Order.objects.filter(settled_at__gte=since)
        .annotate(day=TruncDate("settled_at"))
        .values_list("day")
        .order_by()
        .annotate(n=Count("pk"))
    )
    days: dict[date, list[int]] = {}
    for day, n in created:
        days.setdefault(_as_date(day), [0, 0])[0] = n
    for day, n in settled:
        days.setdefault(_as_date(day), [0, 0])[1] = n
    return {day: (a, b) for day, (a, b) in days.items()}


def sales_per_day(*, since: datetime) -> dict[date, dict[str, Decimal]]:
    """USD of orders settled per UTC day, by how they were paid: the payment method of the
    instructions that settled them, or `balance` (one query)."""
    paying = PaymentIntent.objects.filter(order_id=OuterRef("pk")).filter(
        Q(status=IntentStatus.ALLOCATED) | Q(resolution=Resolution.SETTLED)
    )
    rows = (
        Order.objects.filter(settled_at__gte=since)
        .annotate(
            day=TruncDate("settled_at"),
            via=Coalesce(
                Subquery(paying.values("method_id")[:1]),
                Value(BALANCE),
                output_field=CharField(),
            ),
        )
        .values_list("day", "via")
        .order_by()
        .annotate(total=Sum("total_usd"))
    )
    sales: dict[date, dict[str, Decimal]] = {}
    for day, via, total in rows:
        sales.setdefault(_as_date(day), {})[via] = Decimal(total).quantize(Decimal("0.01"))
    return sales


def access_delays(*, since: datetime) -> list[tuple[date, float]]:
    """(day of access, seconds from settlement to access) of every rental delivered since
    `since` (one query; the rows are the deliveries of the period)."""
    rows = (
        Order.objects.filter(starts_at__gte=since, settled_at__isnull=False)
        .values_list("starts_at", "settled_at")
        .order_by("starts_at")
    )
    return [(starts.date(), _seconds(starts - settled)) for starts, settled in rows]


def allocations_during(
    *, since: datetime, until: datetime
) -> list[tuple[str, datetime, datetime | None]]:
    """(offer slug, allocated at, released at) of every slot held at some point of the
    period (one query)."""
    rows = (
        Allocation.objects.filter(allocated_at__lt=until)
        .filter(Q(released_at__isnull=True) | Q(released_at__gt=since))
        .values_list("slot__node__offer__slug", "allocated_at", "released_at")
        .order_by()
    )
    return list(rows)


def fleet_gpus_by_offer() -> dict[str, int]:
    """GPUs of the fleet that can serve rentals (retired nodes left out), by offer."""
    rows = (
        GpuSlot.objects.exclude(node__state=NodeState.RETIRED)
        .values_list("node__offer__slug")
        .order_by()
        .annotate(n=Count("pk"))
    )
    return dict(rows)


@dataclass(frozen=True)
class Attention:
    review: ReviewQueue
    stuck_rentals: int
    oldest_stuck_at: datetime | None
    tickets_open: int
    oldest_ticket_at: datetime | None
    emails_failed: int
    releases_overdue: dict
    nodes_down_with_rentals: list[str]
    watchers_down: list[str]


def attention(*, now=None) -> Attention:
    """What needs a human now (a few queries)."""
    now = now or clock.now()
    stuck = Order.objects.filter(
        rental_state__in=STUCK_STATES, rental_state_changed_at__lt=now - STUCK_AFTER
    ).aggregate(n=Count("pk"), oldest=Min("rental_state_changed_at"))
    tickets = Ticket.objects.filter(status=TicketStatus.OPEN).aggregate(
        n=Count("pk"), oldest=Min("last_customer_at")
    )
    failed = OutboxMessage.objects.filter(status=OutboxStatus.FAILED).count()
    down = [
        row.name
        for row in nodes_overview()
        if row.live_rentals and (row.state == NodeState.MAINTENANCE or row.problem)
    ]
    return Attention(
        review=review_queue(),
        stuck_rentals=stuck["n"],
        oldest_stuck_at=stuck["oldest"],
        tickets_open=tickets["n"],
        oldest_ticket_at=tickets["oldest"],
        emails_failed=failed,
        releases_overdue=releases_overdue(now=now),
        nodes_down_with_rentals=down,
        watchers_down=[row.network for row in watchers(now=now) if not row.healthy],
    )
