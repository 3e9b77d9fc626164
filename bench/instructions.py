#!/usr/bin/env python3
"""Payment instructions in-process: CPU per request, statements, and where the time goes.

    python3 bench/instructions.py [--requests 400] [--profile 25] [--database kernodeck_bench_pay]
                                  [--redis-db 14] [--seed-file PATH]

Seeds a scratch PostgreSQL database as bench/run.py does (fresh orders of eight customers;
Bitcoin watched, as in production, its watcher healthy), then sends
`POST /api/v1/orders/{reference}/payments` (BTC) through Django's test client, one
request at a time, and prints the process CPU time per request (`time.process_time`, which a
busy machine disturbs far less than wall time), the wall time, the statements of one request,
the CPU of the PostgreSQL backend that served them (from /proc, when the server is local),
and with `--profile N` the N functions with the most cumulative CPU time (then the N with
the most time of their own). The server-side figure (req/s under gunicorn with 8 clients) is
the last row of bench/run.py.

`--seed-file PATH` keeps the seed's answer in PATH and, when PATH exists, uses that database
again without seeding it (only its orders still without instructions): alternating runs of
two versions of the code then share one database and one seed (seed it with enough orders:
`--seed-orders`).
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import environment, free_port, prepare_database, watcher_healthy  # noqa: E402


def measure(pay_orders, requests: int, profile: int) -> dict:
    import django

    django.setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    body = json.dumps({"method": "btc-bitcoin"})

    def send(reference, token):
        response = client.post(
            f"/api/v1/orders/{reference}/payments",
            data=body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        if response.status_code != 201:
            sys.exit(f"{reference} answered {response.status_code}: {response.content[:300]}")

    orders = iter(pay_orders)
    for _ in range(20):  # warm: tokens' last use, the counter, first-use caches
        send(*next(orders))
    with CaptureQueriesContext(connection) as captured:
        send(*next(orders))
    statements = [query["sql"] for query in captured.captured_queries]
    batch = [next(orders) for _ in range(requests)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    server = _process_cpu(backend)
    cpu, wall = time.process_time(), time.perf_counter()
    for reference, token in batch:
        send(reference, token)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    server = _process_cpu(backend) - server if server is not None else None
    report = ""
    if profile:
        # CPU time, not wall time: on a shared machine waiting says little.
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for _ in range(100):
            send(*next(orders))
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(profile)
        stats.sort_stats("tottime").print_stats(profile)
        report = out.getvalue()
    return {
        "cpu_ms": 1000 * cpu / requests,
        "server_cpu_ms": None if server is None else 1000 * server / requests,
        "wall_ms": 1000 * wall / requests,
        "statements": statements,
        "profile": report,
    }


def _process_cpu(pid: int) -> float | None:
    """The CPU seconds a local process (the PostgreSQL backend serving this connection)
    has used, or None where /proc cannot tell (a server on another machine)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _still_unpaid(pay_orders):
    import django

    django.setup()
    from kernodeck.payments.models import PaymentIntent

    paid = set(
        PaymentIntent.objects.filter(order__isnull=False).values_list(
            "order__reference", flat=True
        )
    )
    return [pair for pair in pay_orders if pair[0] not in paid]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--profile", type=int, default=0, help="print the top N functions")
    parser.add_argument("--database", default="kernodeck_bench_pay")
    parser.add_argument("--redis-db", type=int, default=14)
    parser.add_argument("--show-sql", action="store_true", help="print the statements")
    parser.add_argument("--seed-file", type=Path, help="keep (or reuse) the seed's answer")
    parser.add_argument("--seed-orders", type=int, default=0, help="orders to seed to pay")
    options = parser.parse_args()
    env = environment(free_port(), database=options.database, redis_db=options.redis_db)
    needed = options.requests + 200
    if options.seed_file and options.seed_file.exists():
        seed = json.loads(options.seed_file.read_text())
        os.environ.update(env)
        seed["pay_orders"] = _still_unpaid(seed["pay_orders"])
        if len(seed["pay_orders"]) < needed:
            left = len(seed["pay_orders"])
            sys.exit(f"{options.seed_file}: {left} orders left, {needed} needed")
    else:
        # One order of the bench customer: the seed's order file needs one.
        seed = prepare_database(env, 1, max(needed, options.seed_orders))
        if options.seed_file:
            options.seed_file.write_text(json.dumps(seed))
        os.environ.update(env)
    watcher_healthy(env)  # a reused seed's may have lapsed
    load = os.getloadavg()[0]
    figures = measure(seed["pay_orders"], options.requests, options.profile)
    print(
        f"payment instructions in-process, {options.requests} requests: "
        f"{figures['cpu_ms']:.2f} ms CPU and {figures['wall_ms']:.2f} ms wall per request, "
        f"{len(figures['statements'])} statements (load average {load:.1f} → "
        f"{os.getloadavg()[0]:.1f})"
    )
    if figures["server_cpu_ms"] is not None:
        print(f"PostgreSQL backend: {figures['server_cpu_ms']:.2f} ms CPU per request")
    if options.show_sql:
        for sql in figures["statements"]:
            print("  ", sql[:200])
    if figures["profile"]:
        print(figures["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
