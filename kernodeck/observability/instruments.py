"""The metrics counted where things happen (requests, watcher passes, task failures).

They live in prometheus_client's default registry; under `kernodeck serve` each gunicorn
worker writes them to files in PROMETHEUS_MULTIPROC_DIR and a scrape sums the files. The
mode is chosen when prometheus_client is first imported, so nothing on Django's start-up
path imports this module: `recording` imports it at the first observation, in the worker.
"""

from prometheus_client import Counter, Histogram

# Web requests: 5 ms to 30 s (the gunicorn timeout).
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# A watcher pass: a few requests to a chain API, or a whole block scan.
WATCHER_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

http_requests = Counter(
    "kernodeck_http_requests",
    "HTTP requests answered, by URL pattern, method and status code.",
    ["route", "method", "status"],
)
http_request_duration = Histogram(
    "kernodeck_http_request_duration_seconds",
    "Time to answer an HTTP request, by URL pattern and method.",
    ["route", "method"],
    buckets=HTTP_BUCKETS,
)
watcher_passes = Counter(
    "kernodeck_watcher_passes",
    "Chain watcher passes run, by network.",
    ["network"],
)
watcher_errors = Counter(
    "kernodeck_watcher_errors",
    "Chain watcher passes that failed (the chain API or our code), by network.",
    ["network"],
)
watcher_pass_duration = Histogram(
    "kernodeck_watcher_pass_duration_seconds",
    "Time one watcher pass over one network took.",
    ["network"],
    buckets=WATCHER_BUCKETS,
)
task_failures = Counter(
    "kernodeck_task_failures",
    "Background tasks that raised, by task name.",
    ["task"],
)
