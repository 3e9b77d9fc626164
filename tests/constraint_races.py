"""Run one call from several real concurrent database connections (PostgreSQL race tests
of the constraint-guarded writes, tests/<app>/test_constraints.py)."""

import threading

import pytest
from django.db import connection, connections

from kernodeck.core.errors import ServiceError


def needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")


def race(call, racers: int) -> list:
    """`call(i)` in `racers` threads released at once, each on its own connection; the
    outcome of racer i at index i: the returned value, the ServiceError refused with, or any
    other exception (which the caller asserts never happens: an IntegrityError escaping is
    the bug these tests look for)."""
    start = threading.Barrier(racers)
    outcomes: list = [None] * racers
    finished = []

    def run(i):
        try:
            start.wait()
            outcomes[i] = call(i)
        except Exception as exc:  # a ServiceError, or the bug: reported to the test
            outcomes[i] = exc
        finally:
            connections.close_all()
            finished.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(finished) == racers, "a racer did not finish"
    return outcomes


def unexpected(outcomes) -> list:
    """Outcomes that are neither a value nor a ServiceError: must be empty."""
    return [o for o in outcomes if isinstance(o, Exception) and not isinstance(o, ServiceError)]
