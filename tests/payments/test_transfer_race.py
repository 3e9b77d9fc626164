"""The same transfer seen by two concurrent watcher passes on PostgreSQL is stored once."""

import threading

import pytest
from django.db import connection, connections

from kernodeck.core.models import AuditEvent
from kernodeck.orders.models import PaymentState
from kernodeck.payments import services, watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, Transfer
from tests.factories import make_order

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")


def test_two_passes_racing_on_one_transfer_store_it_once_and_settle_once(configured, fresh_rates):
    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    seen = ObservedTransfer(
        network="tron",
        txid="ab" * 32,
        index=0,
        address=intent.address,
        asset="USDT",
        amount_base=intent.amount_units,
        confirmations=25,
    )
    start = threading.Barrier(6)
    errors = []

    def observe_and_reconcile():
        try:
            start.wait()
            watching.transfer_record(seen, intent=intent)
            watching.payment_intent_reconcile(intent_id=intent.pk)
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=observe_and_reconcile) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert Transfer.objects.count() == 1
    assert AuditEvent.objects.filter(action="payment.transfer_seen").count() == 1
    assert AuditEvent.objects.filter(action="order.settled").count() == 1
    intent.refresh_from_db()
    order.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert order.payment_state == PaymentState.SETTLED
