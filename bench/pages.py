#!/usr/bin/env python3
"""The public pages in-process: CPU per request through Django's whole handler.

    python3 bench/pages.py [--requests 2000] [--database kernodeck_bench_pages] [--redis-db 14]
                           [--code DIR] [--page-cache-seconds N] [--reuse]

Seeds a scratch PostgreSQL database with the demo catalog (as bench/run.py does), then asks
every public page issue 27 names, and `/healthz` and the trivial view for scale, through
Django's test client as an anonymous visitor without cookies (as wrk asks), and prints per
page the process CPU per request (`time.process_time` over `--requests` requests, which a
loaded machine disturbs far less than wall time), the median wall time, the answer's size
and its queries. `--code DIR` runs another checkout's code (e.g. main, for a before/after
on the same database); `--page-cache-seconds 0` turns the page cache off
(KERNODECK_PAGE_CACHE_SECONDS).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--database", default="kernodeck_bench_pages")
    parser.add_argument("--redis-db", type=int, default=14)
    parser.add_argument("--code", default=str(ROOT), help="the checkout whose code runs")
    parser.add_argument("--page-cache-seconds", default="", help="KERNODECK_PAGE_CACHE_SECONDS")
    parser.add_argument("--reuse", action="store_true", help="keep the seeded database")
    options = parser.parse_args()
    code = Path(options.code).resolve()
    sys.path.insert(0, str(code))
    from bench.run import environment, free_port, prepare_database

    env = environment(free_port(), database=options.database, redis_db=options.redis_db)
    env["PYTHONPATH"] = str(code)
    if options.page_cache_seconds:
        env["KERNODECK_PAGE_CACHE_SECONDS"] = options.page_cache_seconds
    # What the seed printed (the offer's slug), for --reuse.
    state_file = Path(tempfile.gettempdir()) / f"{options.database}.json"
    if options.reuse and state_file.exists():
        seeded = json.loads(state_file.read_text())
    else:
        seeded = prepare_database(env, 1, 0)
        state_file.write_text(json.dumps(seeded))
    subprocess.run(
        ["redis-cli", "-n", str(options.redis_db), "FLUSHDB"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    os.environ.update(env)
    import django

    django.setup()
    from django.db import connections
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    pages = [
        ("GET /healthz (first middleware)", "/healthz"),
        ("trivial JSON view", "/bench/trivial"),
        ("GET / (home)", "/"),
        ("GET /gpus/ (catalog page)", "/gpus/"),
        ("GET /gpus/<offer>/ (configurator)", f"/gpus/{seeded['offer']}/"),
        ("GET /faq/", "/faq/"),
        ("GET /guides/", "/guides/"),
        ("GET /sizing/", "/sizing/"),
    ]
    client = Client(HTTP_HOST="127.0.0.1")
    started_load = os.getloadavg()
    lines = [
        "| page | CPU ms per request | p50 ms | bytes | queries |",
        "|---|---:|---:|---:|---:|",
    ]
    for what, url in pages:
        for _ in range(5):  # warm: first-use caches, template loading
            client.cookies.clear()
            client.get(url)
        client.cookies.clear()
        with CaptureQueriesContext(connections["default"]) as captured:
            page = client.get(url)
        assert page.status_code == 200, (url, page.status_code)
        queries = len(captured.captured_queries)
        walls = []
        cpu = time.process_time()
        for _ in range(options.requests):
            client.cookies.clear()
            began = time.perf_counter()
            client.get(url)
            walls.append(1000 * (time.perf_counter() - began))
        cpu = 1000 * (time.process_time() - cpu) / options.requests
        lines.append(
            f"| {what} | {cpu:.3f} | {statistics.median(walls):.3f} | {len(page.content)} | "
            f"{queries} |"
        )
        print(lines[-1], flush=True)
    ended_load = os.getloadavg()
    print()
    print(
        f"in-process, PostgreSQL + Redis, code {code}, {options.requests} requests a page, "
        f"KERNODECK_PAGE_CACHE_SECONDS={os.environ.get('KERNODECK_PAGE_CACHE_SECONDS', '60')}"
        f"; load average {started_load[0]:.1f} at the start, {ended_load[0]:.1f} at the end"
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
