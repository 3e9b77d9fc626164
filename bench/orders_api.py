#!/usr/bin/env python3
"""`GET /api/v1/orders` in-process: CPU per request, statements, and where the time goes.

    python3 bench/orders_api.py [--orders 100] [--requests 1000] [--profile 30]
                                [--database kernodeck_bench_orders] [--redis-db 14]
                                [--show-sql] [--no-seed]

Seeds a scratch PostgreSQL database as bench/run.py does (the bench customer's N orders),
then sends `GET /api/v1/orders` (the default page of 50) through Django's WSGI handler (the
one gunicorn calls, every middleware included), one request at a time, and prints the
process CPU time per request (`time.process_time`, which a busy machine disturbs far less
than wall time) and the wall time, next to the trivial view behind the same stack
(`/bench/trivial`) measured the same way, and the statements of one request. With
`--profile N`, the N functions with the most cumulative time over the measured requests
(then the N with the most time of their own). `--no-seed` measures an already seeded
database again (its token is kept in `<var>/orders_api_seed.json`), so the code before and
after a change can be measured in turns on the same rows.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import environment, free_port, prepare_database  # noqa: E402


def _environ(path: str, token: str | None) -> dict:
    query = ""
    if "?" in path:
        path, query = path.split("?", 1)
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    if token:
        environ["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return environ


def measure(token: str, requests: int, profile: int, path: str) -> dict:
    import django

    django.setup()
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    handler = WSGIHandler()
    statuses = []
    servers = []  # (path, CPU seconds of the PostgreSQL backend) per timed round

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    def send(target, auth):
        statuses.clear()
        body = b"".join(handler(_environ(target, auth), start_response))
        if not statuses[0].startswith("200"):
            sys.exit(f"{target} answered {statuses[0]}: {body[:300]}")
        return body

    def timed(target, auth, n):
        server = _backend_cpu(connection)
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(n):
            send(target, auth)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        after = _backend_cpu(connection)
        if server is not None and after is not None and after[0] == server[0]:
            servers.append((target, after[1] - server[1]))
        else:  # not measurable here, or a new connection (CONN_MAX_AGE) in the round
            servers.append((target, float("nan")))
        return 1000 * cpu / n, 1000 * wall / n

    for _ in range(50):  # warm: the token's last use, first-use caches
        send(path, token)
        send("/bench/trivial", None)
    with CaptureQueriesContext(connection) as captured:
        body = send(path, token)
    statements = [query["sql"] for query in captured.captured_queries]
    # In turns, so a change in the machine's load reaches both alike.
    rounds = 4
    list_cpu = list_wall = trivial_cpu = trivial_wall = 0.0
    for _ in range(rounds):
        cpu, wall = timed(path, token, requests // rounds)
        list_cpu, list_wall = list_cpu + cpu / rounds, list_wall + wall / rounds
        cpu, wall = timed("/bench/trivial", None, requests // rounds)
        trivial_cpu, trivial_wall = trivial_cpu + cpu / rounds, trivial_wall + wall / rounds
    report = ""
    if profile:
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for _ in range(200):
            send(path, token)
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(profile)
        stats.sort_stats("tottime").print_stats(profile)
        report = out.getvalue()
    per_round = requests // rounds
    return {
        "server_cpu_ms": 1000
        * sum(cpu for target, cpu in servers if target == path)
        / (per_round * rounds),
        "cpu_ms": list_cpu,
        "wall_ms": list_wall,
        "trivial_cpu_ms": trivial_cpu,
        "trivial_wall_ms": trivial_wall,
        "items": len(json.loads(body)["items"]),
        "bytes": len(body),
        "statements": statements,
        "profile": report,
    }


def _backend_cpu(connection) -> tuple[int, float] | None:
    """The connection's PostgreSQL backend and the CPU seconds (user and system) it has
    used, read from /proc where the server runs on this machine; None elsewhere. The process
    answering the statements is the other half of a request's cost on one machine."""
    if connection.vendor != "postgresql":
        return None
    if connection.connection is None:
        connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--profile", type=int, default=0, help="print the top N functions")
    parser.add_argument("--database", default="kernodeck_bench_orders")
    parser.add_argument("--redis-db", type=int, default=14)
    parser.add_argument("--path", default="/api/v1/orders")
    parser.add_argument("--show-sql", action="store_true", help="print the statements")
    parser.add_argument("--no-seed", action="store_true", help="reuse the seeded database")
    options = parser.parse_args()
    env = environment(free_port(), database=options.database, redis_db=options.redis_db)
    saved = Path(tempfile.gettempdir()) / f"orders_api_seed_{options.database}.json"
    if options.no_seed and saved.exists():
        seed = json.loads(saved.read_text())
    else:
        seed = prepare_database(env, options.orders, 0)
        saved.write_text(json.dumps({"token": seed["token"], "orders": seed["orders"]}))
    os.environ.update(env)
    load = os.getloadavg()[0]
    figures = measure(seed["token"], options.requests, options.profile, options.path)
    print(
        f"{options.path} in-process ({seed['orders']} orders, {figures['items']} on the page, "
        f"{figures['bytes']} bytes), {options.requests} requests: "
        f"{figures['cpu_ms']:.3f} ms CPU and {figures['wall_ms']:.3f} ms wall per request "
        f"(trivial view {figures['trivial_cpu_ms']:.3f} / {figures['trivial_wall_ms']:.3f}), "
        f"PostgreSQL backend {figures['server_cpu_ms']:.3f} ms CPU per request, "
        f"{len(figures['statements'])} statements (load average {load:.1f} → "
        f"{os.getloadavg()[0]:.1f})"
    )
    if options.show_sql:
        for sql in figures["statements"]:
            print("  ", sql[:300])
    if figures["profile"]:
        print(figures["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
