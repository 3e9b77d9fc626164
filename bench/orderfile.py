#!/usr/bin/env python3
"""The order file in-process, signed in, through the whole WSGI handler: CPU per request.

    python3 bench/orderfile.py [--requests 300] [--rounds 5] [--database kernodeck_bench_orderfile]
                               [--redis-db 14] [--profile 40] [--reuse]

Seeds a scratch PostgreSQL database as bench/run.py does (bench/seed.py: the bench customer's
first order, cancelled, is the page bench/run.py loads), then, in one process with
bench/settings.py, asks Django's WSGI handler for `GET /orders/<reference>/` with the
customer's session cookie (every middleware, the session and the user read from the
database) `--requests` times per round and prints each round's process CPU per request
(`time.process_time`: a loaded machine disturbs it far less than wall time), the median,
the queries of one request and the load average. For the floor under it, the same for
`/healthz` (the first middleware). `--profile N` prints the N functions with the most
cumulative CPU time instead; `--reuse` keeps the seeded database of an earlier run.
"""

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import PYTHON, environment, prepare_database  # noqa: E402


def measure(options) -> None:
    import django

    django.setup()
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    seed = json.loads(os.environ["BENCH_SEED"])
    _what, path, cookie = seed["pages"][0]
    handler = WSGIHandler()

    def ask(url):
        environ = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": url,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_COOKIE": cookie,
            "HTTP_ACCEPT_LANGUAGE": "en",
            "REMOTE_ADDR": "127.0.0.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.input": io.BytesIO(b""),
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
        }
        status = []
        b"".join(handler(environ, lambda s, headers, *exc: status.append(s)))
        assert status[0].startswith("200"), (url, status)

    print(f"load average at start: {os.getloadavg()}")
    for url in (path, "/healthz"):
        for _ in range(30):
            ask(url)
        if options.profile and url == path:
            import cProfile
            import pstats

            profile = cProfile.Profile(time.process_time)
            profile.runcall(lambda page=url: [ask(page) for _ in range(options.requests)])
            pstats.Stats(profile).sort_stats("cumulative").print_stats(options.profile)
            continue
        rounds = []
        for _ in range(options.rounds):
            start = time.process_time()
            for _ in range(options.requests):
                ask(url)
            rounds.append((time.process_time() - start) / options.requests * 1000)
        with CaptureQueriesContext(connection) as queries:
            ask(url)
        print(
            f"{url}: CPU ms per request {', '.join(f'{r:.2f}' for r in rounds)}; "
            f"median {statistics.median(rounds):.2f}; {len(queries)} queries"
        )
    print(f"load average at end: {os.getloadavg()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database", default="kernodeck_bench_orderfile")
    parser.add_argument("--redis-db", type=int, default=14)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.measure:
        measure(options)
        return 0
    env = environment(0, database=options.database, redis_db=options.redis_db)
    seed_file = Path(env["KERNODECK_VAR_DIR"]).parent / f"{options.database}.seed.json"
    if options.reuse and seed_file.exists():
        seed = json.loads(seed_file.read_text())
    else:
        seed = prepare_database(env, orders=10, pay_orders=0)
        seed_file.write_text(json.dumps(seed))
    env["BENCH_SEED"] = json.dumps(seed)
    args = [str(PYTHON), __file__, "--measure", *sys.argv[1:]]
    return subprocess.run(args, env=env, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
