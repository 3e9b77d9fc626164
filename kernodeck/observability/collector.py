"""The shop's state as Prometheus gauges, read from the database at each scrape.

A custom collector rather than gauges set by the code that changes things: the numbers are
right whichever process (web worker, task worker, a command) made the change, and a scrape
costs a fixed number of queries (`selectors`) however big the shop is.
"""

from django.conf import settings
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from kernodeck.core import clock
from kernodeck.observability import selectors


def _timestamp(moment) -> float:
    return moment.timestamp() if moment is not None else 0.0


def _task_queue_depth() -> int | None:
    """Tasks waiting in the huey queue (None when the queue cannot be read)."""
    from huey.contrib.djhuey import HUEY

    if settings.HUEY.get("immediate"):
        return 0
    try:
        return HUEY.pending_count()
    except Exception:
        return None


class ShopCollector:
    """Gauges (and a few counters and a histogram) derived from the tables."""

    def describe(self):
        # Nothing to declare up front: registering must not query the database.
        return []

    def collect(self):
        now = clock.now()
        yield from self._payments()
        yield from self._review(now)
        yield from self._rentals()
        yield from self._fleet()
        yield from self._watchers(now)
        yield from self._queues(now)

    def _payments(self):
        intents = GaugeMetricFamily(
            "kernodeck_payment_intents",
            "Payment instructions, by payment method and status.",
            labels=["method", "status"],
        )
        for method, status, n in selectors.intents_by_method_status():
            intents.add_metric([method, status], n)
        yield intents
        yield CounterMetricFamily(
            "kernodeck_orders_settled",
            "Orders settled so far (by a payment or from the balance).",
            value=selectors.orders_settled_count(),
        )

    def _review(self, now):
        queue = selectors.review_queue()
        cases = GaugeMetricFamily(
            "kernodeck_review_cases_open",
            "Review cases waiting for an operator: payments and unallocated transfers.",
            labels=["kind"],
        )
        cases.add_metric(["payment"], queue.intents)
        cases.add_metric(["transfer"], queue.transfers)
        yield cases
        age = (now - queue.oldest_at).total_seconds() if queue.oldest_at else 0
        yield GaugeMetricFamily(
            "kernodeck_review_oldest_case_age_seconds",
            "Age of the oldest open review case (0 when none is open).",
            value=max(0.0, age),
        )

    def _rentals(self):
        rentals = GaugeMetricFamily(
            "kernodeck_rentals", "Settled orders by rental state.", labels=["state"]
        )
        for state, n in selectors.rentals_by_state().items():
            rentals.add_metric([state], n)
        yield rentals
        overdue = GaugeMetricFamily(
            "kernodeck_releases_overdue",
            "Rentals past their end still running (past_end), or ended with slots held "
            "(slots_held).",
            labels=["reason"],
        )
        for reason, n in selectors.releases_overdue().items():
            overdue.add_metric([reason], n)
        yield overdue
        buckets, count, total = selectors.access_delay_histogram()
        histogram = HistogramMetricFamily(
            "kernodeck_settlement_to_access_seconds",
            "Time from an order's settlement to the delivery of its access.",
        )
        histogram.add_metric(
            [],
            [(str(float(b)), n) for b, n in zip(selectors.ACCESS_BUCKETS, buckets, strict=True)]
            + [("+Inf", count)],
            sum_value=total,
        )
        yield histogram

    def _fleet(self):
        nodes = selectors.nodes_overview()
        by_state = GaugeMetricFamily("kernodeck_nodes", "Nodes by state.", labels=["state"])
        counts = {}
        for row in nodes:
            counts[row.state] = counts.get(row.state, 0) + 1
        for state, n in sorted(counts.items()):
            by_state.add_metric([state], n)
        yield by_state
        gpus = GaugeMetricFamily(
            "kernodeck_gpus",
            "GPUs of the fleet, by offer, node state and whether a rental holds them.",
            labels=["offer", "node_state", "use"],
        )
        busy = {}
        for row in nodes:
            key = (row.offer, row.state)
            busy[key] = busy.get(key, 0) + row.busy
        for offer, state, total in selectors.gpu_slots_total():
            held = busy.get((offer, state), 0)
            gpus.add_metric([offer, state, "busy"], held)
            gpus.add_metric([offer, state, "free"], max(0, total - held))
        yield gpus
        live = GaugeMetricFamily(
            "kernodeck_node_live_rentals",
            "Live rentals on each node, with the node's state and health problem (if any).",
            labels=["node", "state", "problem"],
        )
        for row in nodes:
            live.add_metric([row.name, row.state, row.problem], row.live_rentals)
        yield live

    def _watchers(self, now):
        rows = selectors.watchers(now=now)
        families = {
            "up": GaugeMetricFamily(
                "kernodeck_watcher_healthy",
                "1 when the network's watcher had a good answer lately (or is not configured).",
                labels=["network"],
            ),
            "configured": GaugeMetricFamily(
                "kernodeck_watcher_configured",
                "1 when the network has an API URL, so its watcher runs.",
                labels=["network"],
            ),
            "success": GaugeMetricFamily(
                "kernodeck_watcher_last_success_timestamp_seconds",
                "When the watcher last completed a pass (Unix time; 0: never).",
                labels=["network"],
            ),
            "error": GaugeMetricFamily(
                "kernodeck_watcher_last_error_timestamp_seconds",
                "When the watcher last failed (Unix time; 0: never).",
                labels=["network"],
            ),
            "behind": GaugeMetricFamily(
                "kernodeck_watcher_blocks_behind",
                "Blocks between the chain's tip and what the watcher has scanned.",
                labels=["network"],
            ),
            "watched": GaugeMetricFamily(
                "kernodeck_watcher_instructions",
                "Payment instructions the watcher follows: open, or past expiry (late).",
                labels=["network", "state"],
            ),
        }
        for row in rows:
            labels = [row.network]
            families["up"].add_metric(labels, int(row.healthy))
            families["configured"].add_metric(labels, int(row.configured))
            families["success"].add_metric(labels, _timestamp(row.last_success_at))
            families["error"].add_metric(labels, _timestamp(row.last_error_at))
            families["behind"].add_metric(labels, row.blocks_behind)
            families["watched"].add_metric([row.network, "open"], row.open_instructions)
            families["watched"].add_metric([row.network, "late"], row.late_instructions)
        yield from families.values()

    def _queues(self, now):
        depth = _task_queue_depth()
        if depth is not None:
            yield GaugeMetricFamily(
                "kernodeck_task_queue_depth", "Tasks waiting in the queue.", value=depth
            )
        emails = GaugeMetricFamily(
            "kernodeck_emails", "Outgoing e-mails by status.", labels=["status"]
        )
        for status, n in selectors.outbox_by_status().items():
            emails.add_metric([status], n)
        yield emails
        oldest = selectors.outbox_oldest_pending()
        yield GaugeMetricFamily(
            "kernodeck_emails_oldest_pending_age_seconds",
            "Age of the oldest e-mail waiting to be sent (0 when none waits).",
            value=max(0.0, (now - oldest).total_seconds()) if oldest else 0,
        )
        tickets = GaugeMetricFamily(
            "kernodeck_tickets", "Support tickets by status.", labels=["status"]
        )
        for status, n in selectors.tickets_by_status().items():
            tickets.add_metric([status], n)
        yield tickets
