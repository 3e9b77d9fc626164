#!/usr/bin/env python3
"""Kernodeck's growth benchmark: customer and operator pages on an almost empty database
and again after it grew to 100 000 orders, 200 000 payment instructions and 1 000 000
transfers.

    python3 bench/growth.py [--orders 100000] [--intents 200000] [--transfers 1000000]
                            [--scale 1.0] [--requests 200] [--explain FILE]

Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) and ./.venv (run
`python3 dev.py test --version` once to create it); no Redis (the cache is local memory).
It recreates the scratch database `kernodeck_bench_growth`, migrates, writes one customer's
data (60 orders, their instructions, transfers, top-ups and statement) and 60 + 60 open
review cases, then measures My orders, the order file, the review queue and the balance
statement in-process with Django's test client (no HTTP server, no network: what is
measured is the view, its queries and the template). Then it writes the growth for 10 000
other customers with PostgreSQL COPY, runs ANALYZE, and measures the same pages again,
showing the same rows. It prints a markdown table: p50 and p95 of each page before and
after, their ratio, and the queries per request. `--scale 0.1` writes a tenth of the growth
for a quick run; `--explain FILE` writes EXPLAIN ANALYZE of every query of the pages, after
growth, to FILE. Every figure is from this run on this machine.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
DATABASE = "kernodeck_bench_growth"

# The data the pages show: one customer's and the review queue's, the same before and after.
FOCUS = {
    "orders": 60,
    "order_intents": 90,
    "topups": 30,
    "topup_intents": 40,
    "transfers": 400,
    "open_intent_cases": 60,
    "open_transfer_cases": 60,
}


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNODECK_")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONPATH": str(ROOT),
            "KERNODECK_DEMO": "1",
            "KERNODECK_SECRET_KEY": "bench-growth-" + "k" * 60,
            "KERNODECK_HTTPS": "off",
            "KERNODECK_ALLOWED_HOSTS": "127.0.0.1",
            "KERNODECK_DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DATABASE}",
            "KERNODECK_THROTTLE": "off",
            "KERNODECK_VAR_DIR": tempfile.mkdtemp(prefix="kernodeck-growth-"),
            "KERNODECK_LOG_LEVEL": "WARNING",
        }
    )
    return env


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--intents", type=int, default=200_000)
    parser.add_argument("--transfers", type=int, default=1_000_000)
    parser.add_argument("--customers", type=int, default=10_000)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the four sizes")
    parser.add_argument("--requests", type=int, default=200, help="timed requests per page")
    parser.add_argument("--explain", default="", help="write EXPLAIN ANALYZE to this file")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def report(argv: list[str]) -> str:
    """Run the benchmark (in ./.venv's Python, on its own database); the markdown table."""
    if not PYTHON.exists():
        sys.exit("create the virtual environment first: python3 dev.py test --version")
    env = environment()
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"]
    subprocess.run([*psql, f"DROP DATABASE IF EXISTS {DATABASE}"], env=env, check=True)
    subprocess.run([*psql, f"CREATE DATABASE {DATABASE}"], env=env, check=True)
    out = subprocess.run(
        [str(PYTHON), str(Path(__file__).resolve()), "--inner", *argv],
        env=env,
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return out.stdout


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def measure(pages: list[dict], requests: int) -> dict[str, dict]:
    """p50, p95 (ms) and queries per request of each page, asked in turns (page 1, 2, 3, 4,
    1, 2, …) so that a change of load on the machine touches every page alike."""
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    clients = {}
    for page in pages:
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(page["user"])
        clients[page["name"]] = client
    timings = {page["name"]: [] for page in pages}
    results = {}
    for page in pages:  # warm: first-use caches and the connection are not the steady state
        for _ in range(5):
            clients[page["name"]].get(page["path"])
        with CaptureQueriesContext(connection) as captured:
            response = clients[page["name"]].get(page["path"])
        if response.status_code != 200:
            sys.exit(f"{page['path']} answered {response.status_code}")
        results[page["name"]] = {"queries": [q["sql"] for q in captured.captured_queries]}
    for _ in range(requests):
        for page in pages:
            client = clients[page["name"]]
            started = time.perf_counter()
            client.get(page["path"])
            timings[page["name"]].append((time.perf_counter() - started) * 1000)
            reset_queries()
    for name, values in timings.items():
        results[name]["p50"] = percentile(values, 0.50)
        results[name]["p95"] = percentile(values, 0.95)
    return results


def explain(pages: list[dict], results: dict[str, dict]) -> str:
    """EXPLAIN ANALYZE of every SELECT the pages make (the plans after growth)."""
    from django.db import connection

    lines = []
    with connection.cursor() as cursor:
        for page in pages:
            lines.append(f"## {page['name']} ({page['path']})\n")
            for sql in results[page["name"]]["queries"]:
                if not sql.lstrip().upper().startswith("SELECT"):
                    continue
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
                plan = "\n".join(row[0] for row in cursor.fetchall())
                lines.append(f"```sql\n{sql}\n```\n```\n{plan}\n```\n")
    return "\n".join(lines)


def run(options: argparse.Namespace) -> str:
    """Migrate, write the focus data, measure, grow, ANALYZE, measure; the table."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from bench import growth_data
    from kernodeck.accounts.models import User
    from kernodeck.catalog.models import Offer
    from kernodeck.core import clock
    from kernodeck.demo.services import demo_seed_catalog, demo_seed_payment_methods

    def say(text):
        print(text, file=sys.stderr, flush=True)

    started = time.monotonic()
    say(f"migrating {DATABASE} …")
    call_command("migrate", verbosity=0)
    demo_seed_catalog()
    demo_seed_payment_methods()
    now = clock.now()
    offer = Offer.objects.filter(is_active=True).order_by("pk").first()
    operator = User.objects.create_superuser(
        "operator@growth.kernodeck.test", None, first_name="O", last_name="P"
    )
    customer = User.objects.get(pk=growth_data.customers_create(1, now=now, start=0)[0])
    ids = {"intent": 0, "topup": 0}
    focus = growth_data.generate(
        customers=[customer.pk],
        sizes=growth_data.Sizes(**FOCUS, decided_share=0.0),
        now=now,
        span_days=60,
        offer=offer,
        operator_id=operator.pk,
        seed=1,
        ids=ids,
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    pages = [
        {"name": "My orders", "path": "/orders/", "user": customer},
        {
            "name": "Order file",
            "path": f"/orders/{focus['order_reference']}/",
            "user": customer,
        },
        {"name": "Review queue", "path": "/backoffice/review/", "user": operator},
        {"name": "Balance statement", "path": "/balance/", "user": customer},
    ]
    say(f"measuring the almost empty database ({options.requests} requests a page) …")
    empty = measure(pages, options.requests)

    scale = options.scale
    orders, intents = int(options.orders * scale), int(options.intents * scale)
    sizes = growth_data.Sizes(
        orders=orders,
        order_intents=intents * 4 // 5,
        topups=intents * 3 // 20,
        topup_intents=intents - intents * 4 // 5,
        transfers=int(options.transfers * scale),
        open_intent_cases=max(1, intents // 200),
        open_transfer_cases=max(1, int(options.transfers * scale) // 1000),
    )
    say(f"writing the growth ({sizes}) …")
    grow_started = time.monotonic()
    customers = growth_data.customers_create(
        max(1, int(options.customers * scale)), now=now, start=1
    )
    growth_data.generate(
        customers=customers,
        sizes=sizes,
        now=now,
        span_days=730,
        offer=offer,
        operator_id=operator.pk,
        seed=2,
        ids=ids,
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    grow_seconds = time.monotonic() - grow_started
    say(f"measuring the grown database ({options.requests} requests a page) …")
    grown = measure(pages, options.requests)
    if options.explain:
        Path(options.explain).write_text(explain(pages, grown))

    counts = {
        label: model.objects.count()
        for label, model in (
            ("orders", growth_data.Order),
            ("intents", growth_data.PaymentIntent),
            ("transfers", growth_data.Transfer),
            ("ledger entries", growth_data.LedgerEntry),
            ("audit events", growth_data.AuditEvent),
            ("accounts", User),
        )
    }
    lines = [
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end; "
        f"in-process test client, {options.requests} requests a page, PostgreSQL",
        "grown to: " + ", ".join(f"{n} {label}" for label, n in counts.items()),
        f"growth written and analysed in {grow_seconds:.0f} s; "
        f"whole run {time.monotonic() - started:.0f} s",
        "",
        "| page | p50 empty | p95 empty | p50 grown | p95 grown | p95 ratio | queries |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for page in pages:
        before, after = empty[page["name"]], grown[page["name"]]
        n_before, n_after = len(before["queries"]), len(after["queries"])
        queries = str(n_after) if n_before == n_after else f"{n_before} → {n_after}"
        lines.append(
            f"| {page['name']} | {before['p50']:.1f} ms | {before['p95']:.1f} ms | "
            f"{after['p50']:.1f} ms | {after['p95']:.1f} ms | "
            f"{after['p95'] / before['p95']:.2f} | {queries} |"
        )
    return "\n".join(lines)


def main() -> int:
    options = parse(sys.argv[1:])
    if options.inner:
        print(run(options))
        return 0
    print(report(sys.argv[1:]), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
