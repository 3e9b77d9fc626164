"""Two presses of "End the payment window now" at once move the expiry once, audited once."""

import threading

import pytest
from django.db import connection, connections

from kernodeck.core.models import AuditEvent
from kernodeck.demo.payments import demo_intent_expire_now
from kernodeck.payments.models import PaymentIntent
from tests.demo.test_panel import demo_intent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")


def test_concurrent_presses_end_the_window_once(settings):
    settings.KERNODECK_DEMO = True
    intent = demo_intent("btc-bitcoin")
    racers = 4
    start = threading.Barrier(racers)
    ends = []

    def race():
        try:
            start.wait()
            copy = PaymentIntent.objects.get(pk=intent.pk)
            ends.append(demo_intent_expire_now(intent=copy, actor=None).expires_at)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    intent.refresh_from_db()
    assert ends == [intent.expires_at] * racers
    assert AuditEvent.objects.filter(action="demo.payment_window_ended").count() == 1
