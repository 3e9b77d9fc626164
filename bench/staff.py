#!/usr/bin/env python3
"""The staff list pages in-process at about 100 rows: p50, CPU per request, queries.

    python3 bench/staff.py [--requests 30] [--database kernodeck_bench_staff] [--redis-db 14]
                           [--only desk,review] [--profile 30] [--html DIR]

Seeds a scratch PostgreSQL database with tests/budgets/operations_data.py's `build(100)`
(100 rentals on 100 nodes, 100 tickets with their threads, 100 "I can't sign in" requests)
and tests/budgets/data.py's `build(500)` (the review queue's first page shows 50 payments
and 50 transfers; the outbox, the audit list and the balance statement show a full page),
then renders every staff list page as an operator (the balance statement as its customer)
through Django's test client, and prints per page the rows on it, the median and 90th
percentile wall time, the process CPU per request (`time.process_time`, which a loaded
machine disturbs far less than wall time) and the queries of one request, with the load
average at the start and the end. Those are the page rendered (KERNODECK_SIGNED_PAGE_SECONDS
is 0 for them); the last columns are the same requests answered by the copy kept while the
database is unchanged (core/signedpages.py): CPU per request, queries, and how many of the
requests a kept copy answered (a write anywhere on the PostgreSQL server in between, such as
another program's, makes a copy stale). `--profile N` prints the N functions with the most
cumulative time over the measured requests of each page (`--only` to choose pages);
`--html DIR` writes each page as rendered, to compare a page before and after a change.
"""

import argparse
import cProfile
import gc
import io
import os
import pstats
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import PYTHON, environment, free_port  # noqa: E402

# (key, what, path given the two datasets, who asks: "operator" or "customer")
PAGES = [
    ("desk", "/backoffice/rentals/ (the desk)", lambda o, d: "/backoffice/rentals/", "operator"),
    ("fleet", "/backoffice/fleet/", lambda o, d: "/backoffice/fleet/", "operator"),
    ("nodes", "/backoffice/nodes/ (SSH nodes)", lambda o, d: "/backoffice/nodes/", "operator"),
    (
        "node",
        "/backoffice/nodes/<node>/ (node page)",
        lambda o, d: f"/backoffice/nodes/{o.node.name}/",
        "operator",
    ),
    ("inbox", "/backoffice/support/ (inbox)", lambda o, d: "/backoffice/support/", "operator"),
    ("review", "/backoffice/review/ (review)", lambda o, d: "/backoffice/review/", "operator"),
    ("outbox", "/backoffice/outbox/", lambda o, d: "/backoffice/outbox/", "operator"),
    (
        "audit",
        "/backoffice/core/auditevent/ (audit)",
        lambda o, d: "/backoffice/core/auditevent/",
        "operator",
    ),
    ("balance", "/balance/ (balance statement)", lambda o, d: "/balance/", "customer"),
]

ROW = re.compile(rb"<tr[\s>]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--database", default="kernodeck_bench_staff")
    parser.add_argument("--redis-db", type=int, default=14)
    parser.add_argument("--only", default="", help="comma-separated page keys")
    parser.add_argument("--profile", type=int, default=0, help="print the top N functions")
    parser.add_argument("--reuse", action="store_true", help="keep the seeded database")
    parser.add_argument("--html", default="", help="write each page's HTML into this folder")
    options = parser.parse_args()
    env = environment(free_port(), database=options.database, redis_db=options.redis_db)
    if not options.reuse:
        psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"]
        subprocess.run([*psql, f"DROP DATABASE IF EXISTS {options.database}"], check=True)
        subprocess.run([*psql, f"CREATE DATABASE {options.database}"], check=True)
        subprocess.run(
            [str(PYTHON), "-m", "kernodeck", "migrate", "-v", "0"], env=env, cwd=ROOT, check=True
        )
    subprocess.run(
        ["redis-cli", "-n", str(options.redis_db), "FLUSHDB"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    os.environ.update(env)
    os.environ["KERNODECK_SIGNED_PAGE_SECONDS"] = "0"  # the rendered pages first
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections, transaction
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from tests.budgets import data as review_data
    from tests.budgets import operations_data

    only = {key for key in options.only.split(",") if key}
    started_load = os.getloadavg()
    with transaction.atomic():
        operations = operations_data.build(100)
        dataset = review_data.build(500)
    # What the seeding left alive is no server's: frozen (the Python objects of the data
    # set), so that the collector's full passes in the measured requests do not walk it.
    gc.collect()
    gc.freeze()
    clients = {who: Client(HTTP_HOST="127.0.0.1") for who in ("operator", "customer")}
    clients["operator"].force_login(dataset.operator)
    clients["customer"].force_login(dataset.customer)
    lines = [
        "| page | rows | p50 ms | p90 ms | CPU ms per request | queries "
        "| kept copy: CPU ms | queries | answered |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    profiles = []
    for key, what, path, who in PAGES:
        if only and key not in only:
            continue
        url, client = path(operations, dataset), clients[who]
        for _ in range(3):  # warm: first-use caches, template loading
            client.get(url)
        with CaptureQueriesContext(connections["default"]) as captured:
            page = client.get(url)
        assert page.status_code == 200, (url, page.status_code)
        queries = len(captured.captured_queries)  # now: the next requests reset the log
        if options.html:  # to compare a page before and after a change
            Path(options.html).mkdir(parents=True, exist_ok=True)
            (Path(options.html) / f"{key}.html").write_bytes(page.content)
        # Body rows: every <tr> less the header rows (<tr> holding <th> and no <td>).
        rows = sum(
            1 for chunk in ROW.split(page.content)[1:] if b"<td" in chunk.split(b"</tr>", 1)[0]
        )
        profiler = cProfile.Profile() if options.profile else None
        walls = []
        cpu = time.process_time()
        if profiler:
            profiler.enable()
        for _ in range(options.requests):
            began = time.perf_counter()
            client.get(url)
            walls.append(1000 * (time.perf_counter() - began))
        if profiler:
            profiler.disable()
        cpu = 1000 * (time.process_time() - cpu) / options.requests
        walls.sort()
        p90 = walls[max(0, int(0.9 * len(walls)) - 1)]
        kept_cpu, kept_queries, answered = _kept(settings, client, url, options.requests)
        lines.append(
            f"| {what} | {rows} | {statistics.median(walls):.1f} | {p90:.1f} | {cpu:.1f} | "
            f"{queries} | {kept_cpu:.2f} | {kept_queries} | {answered}/{options.requests} |"
        )
        print(lines[-1], flush=True)
        if profiler:
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("cumulative").print_stats(options.profile)
            stats.sort_stats("tottime").print_stats(options.profile)
            profiles.append(f"## {what}\n{out.getvalue()}")
    ended_load = os.getloadavg()
    print()
    print(
        f"in-process, PostgreSQL, {options.requests} requests a page; load average "
        f"{started_load[0]:.1f} (1 min), {started_load[1]:.1f} (5 min) at the start, "
        f"{ended_load[0]:.1f}, {ended_load[1]:.1f} at the end"
    )
    print("\n".join(lines))
    for profile in profiles:
        print(profile)
    return 0


def _kept(settings, client, url, requests: int) -> tuple[float, int, int]:
    """CPU ms per request, queries of one answer and how many of `requests` answers a kept
    copy gave, with the signed-page copies on (60 s: the clock bound plays no part here)."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    settings.KERNODECK_SIGNED_PAGE_SECONDS = 60
    try:
        client.get(url)  # rendered and kept
        with CaptureQueriesContext(connections["default"]) as captured:
            client.get(url)
        queries = len(captured.captured_queries)  # now: the next requests reset the log
        answered = 0
        cpu = time.process_time()
        for _ in range(requests):
            response = client.get(url)
            answered += getattr(response.wsgi_request, "signed_page_copy", False)
        cpu = 1000 * (time.process_time() - cpu) / requests
    finally:
        settings.KERNODECK_SIGNED_PAGE_SECONDS = 0
    return cpu, queries, answered


if __name__ == "__main__":
    sys.exit(main())
