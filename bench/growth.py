#!/usr/bin/env python3
"""Kernodeck's growth benchmark: customer and operator pages on an almost empty database
and again after it grew to 100 000 orders, 200 000 payment instructions and 1 000 000
transfers.

    python3 bench/growth.py [--orders 100000] [--intents 200000] [--transfers 1000000]
                            [--scale 1.0] [--requests 200] [--explain FILE]

Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) and ./.venv (run
`python3 dev.py test --version` once to create it); no Redis (the cache is local memory).
It recreates the scratch database `kernodeck_bench_growth`, migrates, and writes one
customer's data (60 orders, their instructions, transfers, top-ups and statement) and
60 + 60 open review cases. It copies that almost empty database to
`kernodeck_bench_growth_empty`, then writes the growth for 10 000 other customers into
the first with PostgreSQL COPY and runs VACUUM (ANALYZE). Then it measures My orders, the
order file, the review queue and the balance statement on both databases in turns (so the
load of a shared machine falls on both alike), in-process with Django's test client: no
HTTP server; what is timed is the middleware, the view, its queries and the template. The
pages show the same rows on both. It prints a markdown table: p50 and p95 of each page on each
database, the p95 ratio and the queries per request.

`--scale 0.1` writes a tenth of the growth for a quick run; `--explain FILE` writes
EXPLAIN ANALYZE of every query of the pages, on the grown database, to FILE. Every figure
is from this run on this machine.
"""

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
DATABASE = "kernodeck_bench_growth"
EMPTY_DATABASE = "kernodeck_bench_growth_empty"
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

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
    """Run the benchmark (in ./.venv's Python, on its own database); the markdown table.

    Progress goes to stderr; `argv` are the command-line options (e.g. ["--scale", "0.1"]).
    """
    parse(argv)  # a wrong option stops here, before any database is dropped
    if not PYTHON.exists():
        sys.exit("create the virtual environment first: python3 dev.py test --version")
    if shutil.which("psql") is None:
        sys.exit("psql is needed (Debian: apt-get install postgresql-client)")
    env = environment()
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"]
    env_psql = {**env, "PGOPTIONS": "-c client_min_messages=warning"}
    for name in (DATABASE, EMPTY_DATABASE):
        subprocess.run([*psql, f"DROP DATABASE IF EXISTS {name}"], env=env_psql, check=True)
    subprocess.run([*psql, f"CREATE DATABASE {DATABASE}"], env=env_psql, check=True)
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


def use_database(name: str) -> None:
    """Point Django's connection at another database; the next query reconnects."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = name


def measure(pages: list[dict], databases: list[str], requests: int) -> dict:
    """p50, p95 (ms) and the queries of each page on each database, {(database, page): …}.

    The databases take turns (A B B A …, 20 requests a page at a time) and the pages take
    turns within each (1, 2, 3, 4, 1, …), so that a change of load on the shared machine
    touches every figure alike instead of the database measured last.
    """
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    clients = {page["name"]: page["client"] for page in pages}
    results = {}
    for database in databases:
        use_database(database)
        for page in pages:  # warm: first-use caches are not the steady state
            for _ in range(5):
                clients[page["name"]].get(page["path"])
            with CaptureQueriesContext(connection) as captured:
                response = clients[page["name"]].get(page["path"])
            if response.status_code != 200:
                sys.exit(f"{page['path']} answered {response.status_code} on {database}")
            results[database, page["name"]] = {
                "queries": [q["sql"] for q in captured.captured_queries],
                "timings": [],
            }
    batch = 20
    rounds = max(1, math.ceil(requests / batch))
    for turn in range(rounds * len(databases)):
        order = databases if (turn // len(databases)) % 2 == 0 else databases[::-1]
        database = order[turn % len(databases)]
        use_database(database)
        for page in pages:  # untimed: reconnecting is not part of a page's time
            clients[page["name"]].get(page["path"])
        for _ in range(batch):
            for page in pages:
                started = time.perf_counter()
                clients[page["name"]].get(page["path"])
                elapsed = (time.perf_counter() - started) * 1000
                results[database, page["name"]]["timings"].append(elapsed)
                reset_queries()
    for figures in results.values():
        figures["p50"] = percentile(figures["timings"], 0.50)
        figures["p95"] = percentile(figures["timings"], 0.95)
    return results


def explain(pages: list[dict], results: dict[str, dict]) -> str:
    """EXPLAIN ANALYZE of every SELECT the pages make (the plans after growth)."""
    from django.db import connection

    lines = []
    with connection.cursor() as cursor:
        for page in pages:
            lines.append(f"## {page['name']} ({page['path']})\n")
            for sql in results[DATABASE, page["name"]]["queries"]:
                if not sql.lstrip().upper().startswith("SELECT"):
                    continue
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
                plan = "\n".join(row[0] for row in cursor.fetchall())
                lines.append(f"```sql\n{sql}\n```\n```\n{plan}\n```\n")
    return "\n".join(lines)


def run(options: argparse.Namespace) -> str:
    """Migrate, write the focus data, copy it, grow, VACUUM, measure both; the table."""
    import django

    django.setup()
    import psycopg
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

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
    for page in pages:  # signed in now, so that the session rows are in the copy too
        page["client"] = Client(HTTP_HOST="127.0.0.1")
        page["client"].force_login(page["user"])
    # The almost empty database, kept as it is now: measured in turns with the grown one.
    connection.close()
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {EMPTY_DATABASE} TEMPLATE {DATABASE}")

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
        # What autovacuum does after a bulk insert: statistics, and the visibility map
        # that lets a count over a small partial index skip the table (index-only scan).
        cursor.execute("VACUUM (ANALYZE)")
    grow_seconds = time.monotonic() - grow_started
    say(f"measuring the grown database ({options.requests} requests a page) …")
    results = measure(pages, [EMPTY_DATABASE, DATABASE], options.requests)
    # The measurement ends on whichever database took the last turn: count the grown one.
    use_database(DATABASE)
    if options.explain:
        Path(options.explain).write_text(explain(pages, results))

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
        f"growth written, vacuumed and analysed in {grow_seconds:.0f} s; "
        f"whole run {time.monotonic() - started:.0f} s",
        "",
        "| page | p50 empty | p95 empty | p50 grown | p95 grown | p95 ratio | queries |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for page in pages:
        before, after = results[EMPTY_DATABASE, page["name"]], results[DATABASE, page["name"]]
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
