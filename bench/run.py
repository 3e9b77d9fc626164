#!/usr/bin/env python3
"""Kernodeck's benchmark: the production server under load, side by side with a trivial view.

    python3 bench/run.py [--duration 10] [--connections 16] [--orders 100] [--runs 3]
                         [--skip-watcher] [--skip-growth] [--growth-scale 1.0]
                         [--database kernodeck_bench] [--redis-db 14]

Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres), Redis on 127.0.0.1:6379 and
Debian's `wrk`; uses ./.venv (run `python3 dev.py test --version` once to create it). It
creates a scratch database `kernodeck_bench`, seeds it, starts `kernodeck serve`, loads each
endpoint with wrk over loopback and prints req/s, p50, p99, queries per request and the
ratio to the trivial JSON view measured in the same run (loaded again after every
endpoint, and each ratio taken against the two loads around it, because the load of a
shared machine drifts within a run), then memory per web process. Every row also gets its
ratio to two floors loaded before the first row and after the last: `/healthz` (answered by
the first middleware) and a raw WSGI hello-world (bench/hello.py, no Django) under gunicorn
with `kernodeck serve`'s settings; the load average at the start and the end is printed.
The signed-in rows are answered as production answers them: a web process sends its kept
copy of a page while the database is unchanged (core/signedpages.py), so those rows measure
that copy; `--signed-page-seconds 0` renders every request (bench/staff.py gives both costs
in-process). Quotes are loaded three times: one body again and again, every configuration
of the offer in turn (120 bodies: each priced through the whole stack once per web process
and catalog version, then answered from the process's copy; core/pagecache.py), and bodies
no process has kept (the same fields spaced in 900 ways), each priced through the whole
stack: that row has no target, it shows what a quote costs when no copy answers. The last
row creates payment instructions (`POST /api/v1/orders/{reference}/payments`,
BTC) with 8 clients, each request for a fresh order pre-created by the seed.
Then it runs the two other benchmarks and prints their tables: the chain watcher over
1 000, 10 000 and 20 000 open intents against a loopback Esplora (bench/watcher.py) and the
pages on a grown database (bench/growth.py: 100 000 orders, 200 000 intents, 1 000 000
transfers); each can be skipped or run alone. Every figure is from this run on this machine;
nothing is remembered between runs.
"""

import argparse
import atexit
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
DATABASE = "kernodeck_bench"
REDIS_DB = 14


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def environment(
    port: int, *, database: str = DATABASE, redis_db: int = REDIS_DB
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNODECK_")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "bench.settings",
            "PYTHONPATH": str(ROOT),
            "KERNODECK_DEMO": "1",
            "KERNODECK_SECRET_KEY": "bench-" + "k" * 60,
            "KERNODECK_HTTPS": "off",
            "KERNODECK_ALLOWED_HOSTS": "127.0.0.1",
            "KERNODECK_DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}",
            "KERNODECK_REDIS_URL": f"redis://127.0.0.1:6379/{redis_db}",
            "KERNODECK_THROTTLE": "off",
            "KERNODECK_VAR_DIR": tempfile.mkdtemp(prefix="kernodeck-bench-"),
            "KERNODECK_LOG_LEVEL": "WARNING",
            # A watched network, as production has (every network has a default API
            # there): new instructions then ask for its watcher's health. Only the watcher
            # calls this URL, and the bench does not run it; the seed records the state a
            # healthy watcher leaves (bench/seed.py, `watcher_healthy`).
            "KERNODECK_BITCOIN_ESPLORA_URL": WATCHED_URL,
        }
    )
    return env


# Nothing listens there: the web process never calls a chain API.
WATCHED_URL = "http://127.0.0.1:9/api"


def watcher_healthy(env) -> None:
    """Record a good answer of the watched network's watcher now (as its every pass
    does): its health lapses after ten minutes without one, and a run outlasts that."""
    database = env["KERNODECK_DATABASE_URL"].rsplit("/", 1)[1]
    statement = (
        "INSERT INTO payments_chainstate (network, tip, cursor, scanned_blocks, "
        "last_success_at, last_error) VALUES ('bitcoin', 0, NULL, '[]', now(), '') "
        "ON CONFLICT (network) DO UPDATE SET last_success_at = now()"
    )
    run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", database, "-qc", statement], env)


def run(args, env, **kwargs):
    return subprocess.run(args, env=env, cwd=ROOT, check=True, **kwargs)


def prepare_database(env, orders: int, pay_orders: int) -> dict:
    database = env["KERNODECK_DATABASE_URL"].rsplit("/", 1)[1]
    redis_db = env["KERNODECK_REDIS_URL"].rsplit("/", 1)[1]
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"]
    run([*psql, f"DROP DATABASE IF EXISTS {database}"], env)
    run([*psql, f"CREATE DATABASE {database}"], env)
    run(["redis-cli", "-n", redis_db, "FLUSHDB"], env, stdout=subprocess.DEVNULL)
    run([str(PYTHON), "-m", "kernodeck", "migrate", "-v", "0"], env)
    out = run(
        [str(PYTHON), "bench/seed.py", str(orders), str(pay_orders)],
        env,
        stdout=subprocess.PIPE,
        text=True,
    )
    # Statistics and visibility maps as autovacuum leaves them in production: on a server
    # with autovacuum off (as on this machine) every statement would be planned on empty
    # statistics (row estimates of 1, index scans that fetch every heap row) and the bench
    # would measure PostgreSQL's CPU on plans production does not run.
    run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", database, "-qc", "VACUUM ANALYZE"], env
    )
    watcher_healthy(env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def start_server(env, port: int, workers: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [
            str(PYTHON),
            "-m",
            "kernodeck",
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--no-access-log",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    sys.exit("the server did not become ready within 60 s")


def stop(process: subprocess.Popen) -> None:
    """Stop a server started here with its workers (its process group); once is enough."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    process.wait(timeout=30)


def start_hello(env, port: int, workers: int) -> subprocess.Popen:
    """bench/hello.py (raw WSGI) under gunicorn with `kernodeck serve`'s settings."""
    sys.path.insert(0, str(ROOT))
    from kernodeck.core.management.commands.serve import worker_recycling

    max_requests, jitter = worker_recycling(env)
    server = subprocess.Popen(
        [
            str(PYTHON),
            "-m",
            "gunicorn",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--threads",
            "4",
            "--worker-class",
            "gthread",
            "--keep-alive",
            "5",
            "--max-requests",
            str(max_requests),
            "--max-requests-jitter",
            str(jitter),
            "bench.hello:application",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    sys.exit("the hello-world server did not start within 30 s")


WRK_THREADS = 2


def wrk(url: str, *, duration: int, connections: int, script: str | None = None) -> dict:
    args = ["wrk", "--latency", "-t", str(WRK_THREADS), "-c", str(connections)]
    args += ["-d", f"{duration}s"]
    if script:
        args += ["-s", script]
    out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)

    def percentile(name):
        match = re.search(rf"^\s+{name}%\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
        value, unit = float(match.group(1)), match.group(2)
        return value * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    return {
        "rps": rps,
        "p50_ms": percentile("50"),
        "p99_ms": percentile("99"),
        "errors": int(non2xx.group(1)) if non2xx else 0,
    }


def lua_script(
    folder: Path, name: str, *, method="GET", body=None, token=None, cookie=None
) -> str:
    lines = [f'wrk.method = "{method}"']
    if cookie:
        lines.append(f'wrk.headers["Cookie"] = {json.dumps(cookie)}')
    if body is not None:
        lines.append(f"wrk.body = {json.dumps(json.dumps(body))}")
        lines.append('wrk.headers["Content-Type"] = "application/json"')
    if token:
        lines.append(f'wrk.headers["Authorization"] = "Bearer {token}"')
    path = folder / f"{name}.lua"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def bodies_script(folder: Path, name: str, bodies: list[str]) -> str:
    """A wrk script that POSTs these JSON bodies in turn, each thread from its own start."""
    listed = ",".join(json.dumps(body) for body in bodies)
    script = f"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {{{listed}}}
local started = 0
function setup(thread)
  thread:set("turn", started * {len(bodies) // WRK_THREADS})
  started = started + 1
end
function request()
  turn = turn % #bodies + 1
  return wrk.format(nil, nil, nil, bodies[turn])
end
"""
    path = folder / f"{name}.lua"
    path.write_text(script)
    return str(path)


def payments_script(
    folder: Path, *, orders: list[list[str]], methods: list[str], threads: int, name="payments"
) -> str:
    """A wrk script where each request asks for instructions for the next unused order, with
    its owner's token: thread t of n takes orders t, t + n, t + 2n, … (an order pays once).
    The orders take the payment methods in turn."""
    refs = ",".join(
        f"{{{json.dumps(ref)},{json.dumps(token)},"
        f"{json.dumps(json.dumps({'method': methods[i % len(methods)]}))}}}"
        for i, (ref, token) in enumerate(orders)
    )
    script = f"""
local refs = {{{refs}}}
local started = 0
function setup(thread)
  thread:set("offset", started)
  started = started + 1
end
local sent = 0
function request()
  local i = sent * {threads} + offset + 1
  sent = sent + 1
  local order = refs[i] or refs[#refs]
  return wrk.format("POST", "/api/v1/orders/" .. order[1] .. "/payments", {{
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. order[2],
  }}, order[3])
end
"""
    path = folder / f"{name}.lua"
    path.write_text(script)
    return str(path)


def count_queries(env, requests: list[dict]) -> list[int]:
    """Queries each request makes, counted in-process with Django's test client."""
    out = run(
        [str(PYTHON), "bench/queries.py"],
        env,
        input=json.dumps(requests),
        stdout=subprocess.PIPE,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory_per_process(server: subprocess.Popen) -> list[int]:
    """Resident memory (MiB) of the gunicorn master and each of its workers."""
    out = subprocess.run(
        ["ps", "-o", "rss=", "--ppid", str(server.pid)], capture_output=True, text=True
    ).stdout
    master = subprocess.run(
        ["ps", "-o", "rss=", "-p", str(server.pid)], capture_output=True, text=True
    ).stdout
    return [int(x) // 1024 for x in (master + out).split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per endpoint")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--orders", type=int, default=100, help="orders of the bench customer")
    parser.add_argument("--workers", type=int, default=None, help="web workers (default: serve's)")
    parser.add_argument("--skip-watcher", action="store_true", help="leave out bench/watcher.py")
    parser.add_argument("--skip-growth", action="store_true", help="leave out bench/growth.py")
    parser.add_argument(
        "--growth-scale", default="1.0", help="bench/growth.py's --scale (1.0: the full sizes)"
    )
    parser.add_argument(
        "--pay-clients", type=int, default=8, help="connections creating payment instructions"
    )
    parser.add_argument(
        "--pay-methods",
        default="btc-bitcoin",
        help="payment methods the instructions use in turn, comma-separated (default: "
        "btc-bitcoin, one chain: every request takes the same address counter)",
    )
    parser.add_argument(
        "--runs", type=int, default=1, help="load every row N times; then the medians and targets"
    )
    parser.add_argument("--database", default=DATABASE, help="scratch database (dropped first)")
    parser.add_argument("--redis-db", type=int, default=REDIS_DB, help="Redis database (flushed)")
    parser.add_argument(
        "--signed-page-seconds",
        default=None,
        help="KERNODECK_SIGNED_PAGE_SECONDS for the server (default: the setting's own, 5); "
        "0 renders every signed-in page (core/signedpages.py)",
    )
    options = parser.parse_args()
    for tool in ("wrk", "psql", "redis-cli"):
        if shutil.which(tool) is None:
            sys.exit(
                f"{tool} is needed (Debian: apt-get install wrk postgresql-client redis-tools)"
            )
    if not PYTHON.exists():
        sys.exit("create the virtual environment first: python3 dev.py test --version")
    if Path(sys.prefix).resolve() != PYTHON.parent.parent.resolve():
        # Started by another Python (the documented `python3 bench/run.py`): the floors
        # read kernodeck serve's settings in this process, so go on in ./.venv's.
        return subprocess.call([str(PYTHON), __file__, *sys.argv[1:]])

    port = free_port()
    env = environment(port, database=options.database, redis_db=options.redis_db)
    if options.signed_page_seconds is not None:
        env["KERNODECK_SIGNED_PAGE_SECONDS"] = str(int(options.signed_page_seconds))
    print(f"seeding {options.database} ({options.orders} orders) …", flush=True)
    # Enough fresh orders for instructions at 1 000/s, and two for counting queries.
    seed = prepare_database(env, options.orders, 1000 * options.duration * options.runs + 2)
    workers = options.workers or min(2 * (os.cpu_count() or 1) + 1, 12)
    server = start_server(env, port, workers)
    # A failure before the rows' try (the hello server, counting queries) must not leave
    # the servers running: stop() is idempotent and also runs at exit.
    atexit.register(stop, server)
    base = f"http://127.0.0.1:{port}"
    folder = Path(tempfile.mkdtemp(prefix="kernodeck-wrk-"))
    quote = {"offer": seed["offer"], "days": 7, "units": 2, "preparation": "pytorch"}
    # Every configuration of the offer (its durations, 1 to 10 units, its preparations), as
    # callers pricing different rentals send them: each is priced through the whole stack
    # once per web process and catalog version, then answered from that process's copy.
    quotes = [
        {"offer": seed["offer"], "days": days, "units": units, "preparation": preparation}
        for days in (3, 7, 30)
        for units in range(1, 11)
        for preparation in seed["preparations"]
    ]
    # The same fields followed by 0 to 899 spaces: more keys than a process keeps answers
    # (core/pagecache.py's ENTRIES), so no request finds a copy and each is priced through
    # the whole stack, then stored.
    unseen = [json.dumps(quote)[:-1] + " " * spaces + "}" for spaces in range(900)]
    cases = [
        ("trivial JSON view (baseline)", "/bench/trivial", None, {"path": "/bench/trivial"}),
        ("GET / (home)", "/", None, {"path": "/"}),
        ("GET /gpus/ (catalog page)", "/gpus/", None, {"path": "/gpus/"}),
        ("GET /api/v1/offers", "/api/v1/offers", None, {"path": "/api/v1/offers"}),
        (
            "GET /gpus/<offer>/ (configurator)",
            f"/gpus/{seed['offer']}/",
            None,
            {"path": f"/gpus/{seed['offer']}/"},
        ),
        ("GET /faq/", "/faq/", None, {"path": "/faq/"}),
        ("GET /guides/", "/guides/", None, {"path": "/guides/"}),
        ("GET /sizing/", "/sizing/", None, {"path": "/sizing/"}),
        (
            "POST /api/v1/quotes",
            "/api/v1/quotes",
            lua_script(folder, "quote", method="POST", body=quote),
            {"path": "/api/v1/quotes", "method": "post", "body": quote},
        ),
        (
            f"POST /api/v1/quotes, {len(quotes)} bodies in turn",
            "/api/v1/quotes",
            bodies_script(folder, "quotes", [json.dumps(body) for body in quotes]),
            {"path": "/api/v1/quotes", "method": "post", "body": quotes[-1]},
        ),
        (
            "quotes priced anew: no copy found",
            "/api/v1/quotes",
            bodies_script(folder, "unseen", unseen),
            {"path": "/api/v1/quotes", "method": "post", "body": quote},
        ),
        (
            f"GET /api/v1/orders, {seed['orders']} orders",
            "/api/v1/orders",
            lua_script(folder, "orders", token=seed["token"]),
            {"path": "/api/v1/orders", "token": seed["token"]},
        ),
    ]
    for i, (name, path, cookie) in enumerate(seed["pages"]):  # signed in: a session cookie
        script = lua_script(folder, f"page{i}", cookie=cookie)
        cases.append((name, path, script, {"path": path, "cookie": cookie}))
    # Two orders of one customer for counting queries (warm, then measured); wrk gets the rest.
    warm, counted = [
        order for order in seed["pay_orders"] if order[1] == seed["pay_orders"][0][1]
    ][:2]
    to_pay = [order for order in seed["pay_orders"] if order not in (warm, counted)]
    payments_path = f"/api/v1/orders/{counted[0]}/payments"
    share = len(to_pay) // options.runs  # each run pays orders of its own (an order pays once)
    paying = [
        payments_script(
            folder,
            orders=to_pay[k * share : (k + 1) * share],
            methods=options.pay_methods.split(","),
            threads=WRK_THREADS,
            name=f"payments{k}",
        )
        for k in range(options.runs)
    ]
    cases.append(
        (
            f"POST payment instructions, {options.pay_clients} clients"
            + ("" if options.pay_methods == "btc-bitcoin" else " (mixed)"),
            payments_path,
            paying[0],
            {
                "path": payments_path,
                "warm_path": f"/api/v1/orders/{warm[0]}/payments",
                "method": "post",
                "body": {"method": "btc-bitcoin"},
                "token": counted[1],
            },
        )
    )
    connections = {cases[-1][0]: options.pay_clients}
    hello_port = free_port()
    hello = start_hello(env, hello_port, workers)
    atexit.register(stop, hello)
    floors = {"/healthz": [], "hello": []}  # req/s, loaded before the first row and after the last

    def load_floors():
        floors["/healthz"].append(
            wrk(base + "/healthz", duration=options.duration, connections=options.connections)
        )
        floors["hello"].append(
            wrk(
                f"http://127.0.0.1:{hello_port}/",
                duration=options.duration,
                connections=options.connections,
            )
        )

    runs = []  # per run: (its rows, ratio to /healthz by row)
    try:
        queries = count_queries(env, [case[3] for case in cases])
        for run_number in range(1, options.runs + 1):
            load_start = os.getloadavg()
            if options.runs > 1:
                print(f"run {run_number} of {options.runs}", flush=True)
            for figures in floors.values():
                figures.clear()
            print("loading /healthz and the raw WSGI hello-world …", flush=True)
            load_floors()
            results = []
            # The trivial view is loaded again after every endpoint: on a shared machine the
            # load drifts within a run, so each ratio compares with the baselines around it.
            baselines = []  # the trivial view's req/s: its own row, then after each endpoint
            rows = enumerate(zip(cases, queries, strict=True))
            for i, ((name, path, script, _), n_queries) in rows:
                print(f"loading {name} …", flush=True)
                if name in connections:  # payment instructions
                    watcher_healthy(env)
                figures = wrk(
                    base + path,
                    duration=options.duration,
                    connections=connections.get(name, options.connections),
                    script=paying[run_number - 1] if name in connections else script,
                )
                results.append((name, figures, n_queries))
                if i > 0:
                    figures = wrk(
                        base + cases[0][1],
                        duration=options.duration,
                        connections=options.connections,
                    )
                baselines.append(figures["rps"])
            print("loading /healthz and the raw WSGI hello-world again …", flush=True)
            load_floors()
            memory = memory_per_process(server)
            runs.append(
                print_run(results, baselines, floors, load_start, options, env, memory, workers)
            )
    finally:
        for process in (server, hello):
            stop(process)
    if options.runs > 1:
        print_summary(runs)
    others(options)
    return 0


# Issue 27's targets: a row's ratio to /healthz in the same run (median over runs), or
# req/s where the target is a rate. Each row is matched by the start of its name.
TARGETS = [
    ("GET / (home)", "ratio", 0.50),
    ("GET /gpus/ (catalog", "ratio", 0.50),
    ("GET /api/v1/offers", "ratio", 0.50),
    ("POST /api/v1/quotes", "ratio", 0.50),
    ("GET /gpus/<offer>/", "ratio", 0.25),
    ("GET /faq/", "ratio", 0.25),
    ("GET /guides/", "ratio", 0.25),
    ("GET /sizing/", "ratio", 0.25),
    ("GET /orders/<reference>/", "ratio", 0.10),
    ("GET /api/v1/orders,", "ratio", 0.10),
    ("GET /backoffice/", "ratio", 0.05),
    ("GET /balance/", "ratio", 0.05),
    ("POST payment instructions", "req/s", 200),
]


def print_summary(runs: list[dict]) -> None:
    """Each row's median over the runs, against its target."""
    print()
    print(f"## Median of {len(runs)} runs, against the targets")
    print()
    print("| what | req/s (median) | /healthz ratio (median) | runs | target | holds? |")
    print("|---|---:|---:|---|---|---|")
    for name in runs[0]:
        if name.startswith(("GET /healthz", "raw WSGI", "trivial")):
            continue
        rps = statistics.median(run[name][0] for run in runs)
        ratio = statistics.median(run[name][1] for run in runs)
        each = ", ".join(f"{run[name][1]:.3f}" for run in runs)
        target = next((t for t in TARGETS if name.startswith(t[0])), None)
        if target is None:
            wanted, holds = "-", "-"
        elif target[1] == "ratio":
            wanted, holds = f"≥ {target[2]:.2f}", "yes" if ratio >= target[2] else "no"
        else:
            wanted, holds = f"≥ {target[2]}/s", "yes" if rps >= target[2] else "no"
        print(f"| {name} | {rps:.0f} | {ratio:.3f} | {each} | {wanted} | {holds} |")


def print_run(results, baselines, floors, load_start, options, env, memory, workers) -> dict:
    """Print one run's table; return each row's req/s and ratio to /healthz."""
    load_end = os.getloadavg()

    print()
    print(
        f"machine: {os.cpu_count()} cores; server: kernodeck serve, {workers} workers x 4 "
        f"threads; wrk: {WRK_THREADS} threads, {options.connections} connections "
        f"({options.pay_clients} for payment instructions), {options.duration} s"
    )
    floor = {name: sum(f["rps"] for f in runs) / len(runs) for name, runs in floors.items()}
    results += [
        (f"GET /healthz (first middleware), {label}", figures, 0)
        for label, figures in zip(("before", "after"), floors["/healthz"], strict=True)
    ]
    results += [
        (f"raw WSGI hello-world, same gunicorn, {label}", figures, 0)
        for label, figures in zip(("before", "after"), floors["hello"], strict=True)
    ]
    columns = ["what".ljust(44), "   req/s", " p50 ms", " p99 ms", "queries", "ratio"]
    columns += ["/healthz", "  hello", "non-2xx"]
    header = "| " + " | ".join(columns) + " |"
    print(header)
    print("|" + "|".join("-" * (len(part)) for part in header.split("|")[1:-1]) + "|")
    for i, (name, figures, n_queries) in enumerate(results):
        if i < len(baselines):
            around = (baselines[max(i - 1, 0)] + baselines[i]) / 2
            ratio = f"{figures['rps'] / around:>5.2f}"
        else:
            ratio = "    -"
        print(
            f"| {name:<44} | {figures['rps']:>8.0f} | {figures['p50_ms']:>7.1f} | "
            f"{figures['p99_ms']:>7.1f} | {n_queries:>7} | {ratio} | "
            f"{figures['rps'] / floor['/healthz']:>8.3f} | "
            f"{figures['rps'] / floor['hello']:>7.3f} | "
            f"{figures['errors']:>7} |"
        )
    print()
    print(
        "ratio: req/s over the mean of the trivial view's req/s just before and just after "
        f"the row (trivial view, in order: {', '.join(f'{rps:.0f}' for rps in baselines)}); "
        "/healthz and hello: req/s over the mean of that floor's loads before the first row "
        f"and after the last ({floor['/healthz']:.0f} and {floor['hello']:.0f} req/s)"
    )
    print(
        f"load average: {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end; "
        f"workers recycled after {env.get('KERNODECK_WEB_MAX_REQUESTS') or 'the default'} requests"
    )
    print(f"memory (RSS, MiB): master {memory[0]}, workers {', '.join(map(str, memory[1:]))}")
    return {name: (f["rps"], f["rps"] / floor["/healthz"]) for name, f, _ in results}


def others(options) -> None:
    """The watcher's and the growth benchmarks, each in its own scratch database."""
    sys.path.insert(0, str(ROOT))
    from bench import growth, watcher

    if not options.skip_watcher:
        print("\nrunning bench/watcher.py …", flush=True)
        print("\n## Watcher\n\n" + watcher.report([]), flush=True)
    if not options.skip_growth:
        print("\nrunning bench/growth.py …", flush=True)
        table = growth.report(["--scale", options.growth_scale])
        print("\n## Growth\n\n" + table, flush=True)


if __name__ == "__main__":
    sys.exit(main())
