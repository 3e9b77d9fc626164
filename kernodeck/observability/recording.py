"""What other code calls to count something: one small function per event.

Importing this module does not import prometheus_client (see `instruments`), so the
payments watcher and the task hooks can import it at start-up without fixing the metrics
mode before `kernodeck serve` has chosen it.
"""

import logging

logger = logging.getLogger(__name__)


def _instruments():
    from kernodeck.observability import instruments

    return instruments


# The two children of each (route, method, status) seen, as prometheus_client's labels()
# returns them (the same objects every time; looking them up costs more than counting).
# Bounded: routes are URL patterns, methods and statuses few.
_http_children: dict[tuple[str, str, int], tuple] = {}


def http_request_observe(*, route: str, method: str, status: int, seconds: float) -> None:
    try:
        children = _http_children.get((route, method, status))
        if children is None:
            metrics = _instruments()
            children = (
                metrics.http_requests.labels(route=route, method=method, status=str(status)),
                metrics.http_request_duration.labels(route=route, method=method),
            )
            _http_children[(route, method, status)] = children
        children[0].inc()
        children[1].observe(seconds)
    except Exception:
        # A full disk under PROMETHEUS_MULTIPROC_DIR must not turn answers into errors.
        logger.exception("could not count a request to %s", route)


def watcher_pass_observe(*, network: str, seconds: float, failed: bool) -> None:
    """One watcher pass over `network` ended (counted even when it failed)."""
    try:
        metrics = _instruments()
        metrics.watcher_passes.labels(network=network).inc()
        metrics.watcher_pass_duration.labels(network=network).observe(seconds)
        if failed:
            metrics.watcher_errors.labels(network=network).inc()
    except Exception:
        # Counting must never be what stops a watcher.
        logger.exception("could not count the %s watcher pass", network)


def task_failure_observe(*, task: str) -> None:
    try:
        _instruments().task_failures.labels(task=task).inc()
    except Exception:
        logger.exception("could not count the failure of task %s", task)
