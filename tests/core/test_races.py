"""Defect 6 (issue 9): a lost race (deadlock, serialisation failure) is retried, then
answered with a 409, never a 500."""

import threading

import pytest
from django.db import OperationalError, connection, connections, transaction

from kernodeck.core.races import RACE_ATTEMPTS, LostRace, retry_lost_races
from kernodeck.orders.models import Order
from tests.factories import make_order


class _PgError(Exception):
    def __init__(self, sqlstate):
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def _failing(sqlstate, times):
    calls = []

    @retry_lost_races
    def service():
        calls.append(1)
        if len(calls) <= times:
            raise OperationalError("raced") from _PgError(sqlstate)
        return "done"

    return service, calls


@pytest.mark.parametrize("sqlstate", ["40P01", "40001"])
def test_a_lost_race_is_run_again(sqlstate):
    service, calls = _failing(sqlstate, times=RACE_ATTEMPTS - 1)

    assert service() == "done"
    assert len(calls) == RACE_ATTEMPTS


def test_a_race_lost_every_time_is_a_409():
    service, calls = _failing("40P01", times=99)

    with pytest.raises(LostRace) as refused:
        service()

    assert refused.value.status == 409
    assert "happened at the same moment, so nothing was changed" in str(refused.value)
    assert len(calls) == RACE_ATTEMPTS


def test_other_database_errors_are_not_retried():
    service, calls = _failing("08006", times=99)  # connection failure

    with pytest.raises(OperationalError):
        service()
    assert len(calls) == 1


@pytest.mark.django_db
def test_inside_a_transaction_the_outer_caller_decides():
    service, calls = _failing("40P01", times=99)

    with pytest.raises(OperationalError), transaction.atomic():
        service()
    assert len(calls) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_real_deadlock_is_retried_and_both_succeed():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")
    first, second = make_order(), make_order()
    both_locked_one = threading.Barrier(2)
    attempts, results, escaped = [], [], []

    @retry_lost_races
    def lock_both(a, b):
        attempts.append(1)
        with transaction.atomic():
            Order.objects.select_for_update().get(pk=a.pk)
            if len(attempts) <= 2:  # only the first try of each meets the other
                both_locked_one.wait(timeout=10)
            Order.objects.select_for_update().get(pk=b.pk)
        return "ok"

    def run(a, b):
        try:
            results.append(lock_both(a, b))
        except Exception as exc:  # anything escaping fails the test below
            escaped.append(repr(exc))
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=run, args=(first, second)),
        threading.Thread(target=run, args=(second, first)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert escaped == []
    assert results == ["ok", "ok"]
    # PostgreSQL ended at least one of them and it ran again. On a busy machine the retry
    # can meet the other's first try once more, so the count is a range, not exactly 3.
    assert 3 <= len(attempts) <= 2 * RACE_ATTEMPTS
