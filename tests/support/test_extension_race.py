"""Paying one extension offer twice at the same moment, in real concurrent PostgreSQL
transactions: one charge, one move of the end date."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection, connections

from kernodeck.core.errors import Conflict
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import LedgerEntry
from kernodeck.orders.models import Order
from kernodeck.support import services
from kernodeck.support.models import Extension
from tests.support.helpers import active_rental, fund, in_days, make_agent

# Extensions move a running rental's end: they need the provisioning app (rental_extend).
pytest.importorskip("kernodeck.provisioning.services")

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip(
            "race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://… "
            "(SQLite serialises writers, so there is no race to test)"
        )


@pytest.mark.parametrize("racers", [2, 6])
def test_paying_an_offer_concurrently_charges_once(racers):
    order = active_rental(days=7)
    ends = order.ends_at
    ticket = services.ticket_create(
        owner=order.owner,
        kind="extension",
        order=order.reference,
        subject="More days",
        body="please",
        fields={"extra_days": "3", "deadline": in_days(1).date().isoformat()},
    )
    extension = services.extension_offer(
        extension=ticket.extensions.get(), days=3, valid_until=in_days(1), actor=make_agent()
    )
    fund(order.owner, "1000.00")
    start = threading.Barrier(racers)
    outcomes = []

    def race():
        try:
            start.wait()
            result = services.extension_pay_with_balance(
                extension=Extension.objects.get(pk=extension.pk), actor=order.owner
            )
            outcomes.append(result.status)
        except Conflict as exc:
            outcomes.append(f"refused: {exc.message}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert outcomes == ["applied"] * racers
    assert LedgerEntry.objects.filter(kind="extension_charge").count() == 1
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("900.00")
    assert Order.objects.get(pk=order.pk).ends_at == ends + timedelta(days=3)
