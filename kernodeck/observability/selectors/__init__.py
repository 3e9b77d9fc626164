"""Reads over the shop's tables for the metrics scrape and the operators' dashboard.

Each function answers in a fixed number of queries (a GROUP BY, never a query per row), so
a scrape and the dashboard cost the same on an empty shop and on a busy one. Other apps'
models are read here rather than through new functions in their selectors, which other
work is rewriting; nothing here writes.

Two modules, re-exported here for the collector and the dashboards: `scrape` (the shop's
state now, what each scrape reads) and `dashboard` (the per-day series the dashboard plots,
and what needs a human now, which reuses the scrape's reads).
"""

from kernodeck.observability.selectors.dashboard import (
    BALANCE,
    STUCK_AFTER,
    STUCK_STATES,
    Attention,
    access_delays,
    allocations_during,
    attention,
    days_of,
    fleet_gpus_by_offer,
    orders_per_day,
    sales_per_day,
)
from kernodeck.observability.selectors.scrape import (
    ACCESS_BUCKETS,
    LIVE_STATES,
    RELEASE_GRACE,
    NodeRow,
    ReviewQueue,
    WatcherRow,
    access_delay_histogram,
    gpu_slots_total,
    intents_by_method_status,
    nodes_overview,
    orders_settled_count,
    outbox_by_status,
    outbox_oldest_pending,
    releases_overdue,
    rentals_by_state,
    review_queue,
    tickets_by_status,
    watchers,
)

__all__ = [
    "ACCESS_BUCKETS",
    "BALANCE",
    "LIVE_STATES",
    "RELEASE_GRACE",
    "STUCK_AFTER",
    "STUCK_STATES",
    "Attention",
    "NodeRow",
    "ReviewQueue",
    "WatcherRow",
    "access_delay_histogram",
    "access_delays",
    "allocations_during",
    "attention",
    "days_of",
    "fleet_gpus_by_offer",
    "gpu_slots_total",
    "intents_by_method_status",
    "nodes_overview",
    "orders_per_day",
    "orders_settled_count",
    "outbox_by_status",
    "outbox_oldest_pending",
    "releases_overdue",
    "rentals_by_state",
    "review_queue",
    "sales_per_day",
    "tickets_by_status",
    "watchers",
]
