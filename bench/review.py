#!/usr/bin/env python3
"""The payment review queue in-process at 100 rows: p50 and queries of one page.

    python3 bench/review.py [--requests 40] [--database kernodeck_bench_review] [--redis-db 14]

Seeds a scratch PostgreSQL database with tests/budgets/data.py's `build(500)` (167 payments
waiting for a decision and 50 unallocated transfers: the first page shows 50 of each, 100
rows), then renders `/backoffice/review/` as an operator through Django's test client and
prints the median and 90th percentile wall time, the process CPU per request and the queries
of one page. A figure from a shared machine: read it beside the load average it prints.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import PYTHON, environment, free_port  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--database", default="kernodeck_bench_review")
    parser.add_argument("--redis-db", type=int, default=14)
    options = parser.parse_args()
    env = environment(free_port(), database=options.database, redis_db=options.redis_db)
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"]
    subprocess.run([*psql, f"DROP DATABASE IF EXISTS {options.database}"], check=True)
    subprocess.run([*psql, f"CREATE DATABASE {options.database}"], check=True)
    subprocess.run(
        [str(PYTHON), "-m", "kernodeck", "migrate", "-v", "0"], env=env, cwd=ROOT, check=True
    )
    os.environ.update(env)
    import django

    django.setup()
    from django.db import connections
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from tests.budgets.data import build

    data = build(500)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(data.operator)
    load = os.getloadavg()[0]
    for _ in range(3):
        client.get("/backoffice/review/")
    with CaptureQueriesContext(connections["default"]) as captured:
        page = client.get("/backoffice/review/")
    assert page.status_code == 200, page.status_code
    queries = len(captured.captured_queries)  # now: the next requests reset the log
    rows = page.content.count(b"<tr>") - 3  # less the three tables' header rows
    walls = []
    cpu = time.process_time()
    for _ in range(options.requests):
        started = time.perf_counter()
        client.get("/backoffice/review/")
        walls.append(1000 * (time.perf_counter() - started))
    cpu = 1000 * (time.process_time() - cpu) / options.requests
    walls.sort()
    print(
        f"review queue in-process, {rows} rows (with the chain watchers' table), "
        f"{options.requests} requests: p50 {statistics.median(walls):.1f} ms, "
        f"p90 {walls[int(0.9 * len(walls)) - 1]:.1f} ms, {cpu:.1f} ms CPU per request, "
        f"{queries} queries (load average {load:.1f} → "
        f"{os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
