"""Two workers enqueue the same e-mail at once, in real concurrent PostgreSQL transactions."""

import threading
import time

import pytest
from django.core import mail
from django.db import connection, connections, transaction

from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from kernodeck.notifications.services import email_enqueue
from tests.factories import make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip(
            "race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://… "
            "(SQLite serialises writers, so there is no race to test)"
        )


@pytest.mark.parametrize("racers", [2, 6])
def test_concurrent_enqueues_of_one_key_store_one_row_and_send_once(racers):
    account = make_user(preferred_language="en")
    start = threading.Barrier(racers)
    outcomes = []

    def race():
        try:
            with transaction.atomic():
                start.wait()
                message = email_enqueue(
                    account=account,
                    event="topup_credited",
                    context={"amount_usd": "100.00", "balance_usd": "100.00"},
                    dedupe_key="topup_credited:race",
                )
                # Keep the transaction open so the others' inserts meet the unique index
                # while this row is still uncommitted.
                time.sleep(0.2)
            outcomes.append(message.pk)
        except Exception as exc:  # any error here is the bug under test
            outcomes.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    row = OutboxMessage.objects.get(dedupe_key="topup_credited:race")
    assert outcomes == [row.pk] * racers
    assert OutboxMessage.objects.count() == 1
    assert row.status == OutboxStatus.SENT
    assert row.attempts == 1
    assert [m.subject for m in mail.outbox] == ["100.00 USD credited to your balance"]


def test_the_enqueue_that_loses_the_race_leaves_its_callers_transaction_usable():
    account = make_user()
    inserted = threading.Event()
    release = threading.Event()

    def first():
        try:
            with transaction.atomic():
                email_enqueue(
                    account=account,
                    event="topup_credited",
                    context={"amount_usd": "1.00", "balance_usd": "1.00"},
                    dedupe_key="k",
                )
                inserted.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=first)
    thread.start()
    inserted.wait(10)
    timer = threading.Timer(0.3, release.set)
    timer.start()
    with transaction.atomic():
        # Blocks on the uncommitted row, then loses: the caller's work goes on.
        message = email_enqueue(
            account=account,
            event="topup_credited",
            context={"amount_usd": "2.00", "balance_usd": "2.00"},
            dedupe_key="k",
        )
        other = make_user()
    thread.join(10)

    assert message.context == {"amount_usd": "1.00", "balance_usd": "1.00"}
    assert OutboxMessage.objects.count() == 1
    assert type(other).objects.filter(pk=other.pk).exists()
