#!/usr/bin/env python3
"""The rental clock's minute ticks at 1 000 and 10 000 active rentals: time and statements.

    python3 bench/clock.py [--sizes 1000 10000] [--ticks 5] [--database kernodeck_bench_clock]
                           [--redis-db 15]

Seeds a scratch PostgreSQL database (dropped and made again) with active rentals whose ends
are spread evenly over the next seven days (so about 43 % end within 72 hours, and each of
those has a reminder due), then runs, per size:

- the first reminder tick, which stores every reminder due (as after a start or an outage);
- `--ticks` steady reminder ticks with nothing new due (median time, statements of one);
- `--ticks` ticks of the rental clock (`rentals_end_due`, then `rentals_allocate_waiting`)
  with nothing ending and nobody waiting;
- one reconcile sweep (`provisioning.driving.nodes_reconcile`) over the automated nodes
  holding the rentals, 8 a node, each node's report saying it is converged: the sweep's
  own work (statements, comparison) without the SSH round trip to each node, which a real
  sweep adds once a node, whatever its rentals.

Times are wall clock in this process against a local PostgreSQL, and on a shared machine
they move with the load: the load average is printed at the start and the end of each size.
The statement counts do not move.
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

UNUSABLE = "!"  # an unusable password hash: the bench's accounts never sign in


def _seed(count: int, *, first: int, offer, owners) -> None:
    from datetime import timedelta

    from kernodeck.core import clock
    from kernodeck.notifications.reminders import first_reminder_at
    from kernodeck.orders.models import Order, PaymentState, RentalState
    from tests.factories import order_row

    now = clock.now()
    week = timedelta(days=7).total_seconds()
    Order.objects.bulk_create(
        (
            order_row(
                offer=offer,
                reference=f"KD-C{i:08d}",
                owner=owners[i % len(owners)],
                days=30,
                price="400.00",
                created_at=now - timedelta(days=7),
                hold_until=now - timedelta(days=7),
                payment_state=PaymentState.SETTLED,
                settled_at=now - timedelta(days=7),
                rental_state=RentalState.ACTIVE,
                rental_state_changed_at=now - timedelta(days=7),
                starts_at=now - timedelta(days=7),
                # Spread over the next week, a fraction of a second apart.
                ends_at=(
                    ends := now + timedelta(seconds=60 + week * ((i * 7919) % count) / count)
                ),
                # As the start leaves it (provisioning.services.moves).
                next_reminder_at=first_reminder_at(
                    starts_at=now - timedelta(days=7), ends_at=ends
                ),
            )
            for i in range(first, first + count)
        ),
        batch_size=2000,
    )


RENTALS_PER_NODE = 8


class ConvergedDriver:
    """A driver whose nodes report exactly what the database says (no machine): a sweep
    with nothing to apply."""

    code = "ssh"
    reports: dict = {}

    def node_report(self, node):
        return {"rentals": self.reports.get(node.name, []), "gpus": []}


def _fleet(count: int, *, first: int, offer) -> None:
    """Nodes of 8 slots for rentals `first`..`first + count`, each rental on one slot."""
    from kernodeck.core import clock
    from kernodeck.orders.models import Order
    from kernodeck.provisioning.models import Allocation, GpuSlot, Node
    from tests.factories import TEST_HOST_KEY

    now = clock.now()
    nodes = Node.objects.bulk_create(
        Node(
            name=f"clock-{n:05d}",
            offer=offer,
            gpu_count=RENTALS_PER_NODE,
            host=f"10.{n // 250}.{n % 250}.1",
            driver="ssh",
            host_key=TEST_HOST_KEY,
            commissioned_at=now,
            created_at=now,
        )
        for n in range(first // RENTALS_PER_NODE, (first + count) // RENTALS_PER_NODE)
    )
    slots = GpuSlot.objects.bulk_create(
        GpuSlot(node=node, index=i) for node in nodes for i in range(RENTALS_PER_NODE)
    )
    orders = Order.objects.filter(reference__startswith="KD-C").order_by("reference")
    Allocation.objects.bulk_create(
        (
            Allocation(order_id=pk, slot=slot, unit=0, allocated_at=now)
            for pk, slot in zip(
                orders.values_list("pk", flat=True)[first : first + count], slots, strict=True
            )
        ),
        batch_size=2000,
    )


def _converged_reports() -> dict:
    from kernodeck.provisioning import driving, selectors
    from kernodeck.provisioning.models import Node

    return {
        node.name: [
            {
                "reference": spec.reference,
                "status": "active",
                "suspended": False,
                "keys_sha256": driving.keys_sha256(spec.ssh_public_keys),
                "until": spec.ends_at.isoformat(),
                "gpus": list(spec.allocation[0].slots),
            }
            for _order, spec in selectors.node_rental_specs(node)
        ]
        for node in Node.objects.filter(name__startswith="clock-")
    }


def _timed(function, ticks: int) -> tuple[float, int, object]:
    """(median ms, statements of the last tick, its result) over `ticks` calls."""
    from django.db import connection

    walls, result, counted = [], None, []

    def count(execute, sql, params, many, context):
        counted.append(1)
        return execute(sql, params, many, context)

    for _ in range(ticks):
        counted.clear()
        with connection.execute_wrapper(count):
            started = time.perf_counter()
            result = function()
            walls.append(1000 * (time.perf_counter() - started))
    return statistics.median(walls), len(counted), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--ticks", type=int, default=5)
    parser.add_argument("--database", default="kernodeck_bench_clock")
    parser.add_argument("--redis-db", type=int, default=15)
    options = parser.parse_args()
    env = environment(free_port(), database=options.database, redis_db=options.redis_db)
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"]
    subprocess.run([*psql, f"DROP DATABASE IF EXISTS {options.database}"], check=True)
    subprocess.run([*psql, f"CREATE DATABASE {options.database}"], check=True)
    subprocess.run(["redis-cli", "-n", str(options.redis_db), "FLUSHDB"], check=True)
    subprocess.run(
        [str(PYTHON), "-m", "kernodeck", "migrate", "-v", "0"], env=env, cwd=ROOT, check=True
    )
    os.environ.update(env)
    import django

    django.setup()
    from django.db import connection

    from kernodeck.accounts.models import User
    from kernodeck.notifications import reminders
    from kernodeck.notifications.models import OutboxMessage
    from kernodeck.provisioning import drivers, driving, services
    from tests.factories import make_offer

    offer = make_offer(units_total=0)
    owners = User.objects.bulk_create(
        User(email=f"clock{i}@example.org", password=UNUSABLE, preferred_language="en")
        for i in range(500)
    )

    def clock_tick():
        services.rentals_end_due()
        services.rentals_allocate_waiting()

    drivers._cache["ssh"] = ConvergedDriver()
    print(
        "| active rentals | first reminder tick (stores) | steady reminder tick | "
        "end and allocation tick | reconcile sweep (no SSH) | load average |"
    )
    print("|---:|---|---|---|---|---|")
    seeded = 0
    for size in sorted(options.sizes):
        _seed(size - seeded, first=seeded, offer=offer, owners=owners)
        _fleet(size - seeded, first=seeded, offer=offer)
        seeded = size
        ConvergedDriver.reports = _converged_reports()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as autovacuum would have, after a bulk insert
        load = os.getloadavg()[0]
        before = OutboxMessage.objects.count()
        first_ms, first_statements, stored = _timed(reminders.rental_reminders_send, 1)
        assert OutboxMessage.objects.count() - before == stored
        steady = _timed(reminders.rental_reminders_send, options.ticks)
        steady_ms, steady_statements, again = steady
        assert again == 0, again
        tick_ms, tick_statements, _ = _timed(clock_tick, options.ticks)
        sweep_ms, sweep_statements, applied = _timed(driving.nodes_reconcile, 1)
        assert applied == 0, applied
        print(
            f"| {size:,} | {first_ms / 1000:.1f} s, {stored:,} reminders, "
            f"{first_statements:,} statements | {steady_ms:.1f} ms, {steady_statements} "
            f"statement(s) | {tick_ms:.1f} ms, {tick_statements} statements | "
            f"{sweep_ms / 1000:.1f} s, {size // RENTALS_PER_NODE:,} nodes, "
            f"{sweep_statements:,} statements | {load:.1f} → {os.getloadavg()[0]:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
