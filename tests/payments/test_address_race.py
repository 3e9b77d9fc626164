"""Concurrent intents on PostgreSQL: every one gets its own derivation index."""

import threading

import pytest
from django.db import connection, connections

from kernodeck.payments import services
from kernodeck.payments.models import PaymentIntent
from tests.factories import make_offer, make_order

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")


def test_concurrent_intents_get_distinct_indexes(configured, fresh_rates):
    offer = make_offer(units_total=100)
    orders = [make_order(offer=offer) for _ in range(8)]
    start = threading.Barrier(len(orders))
    errors = []

    def create(order, method):
        try:
            start.wait()
            services.payment_intent_create_for_order(
                order=order, method_code=method, actor=order.owner
            )
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    methods = ["eth-ethereum", "usdt-ethereum", "usdc-ethereum", "eth-ethereum"] * 2
    threads = [
        threading.Thread(target=create, args=pair) for pair in zip(orders, methods, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    indexes = sorted(PaymentIntent.objects.values_list("derivation_index", flat=True))
    assert indexes == list(range(8))
    assert PaymentIntent.objects.values("address").distinct().count() == 8
