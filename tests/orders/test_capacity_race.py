"""Two customers racing for the last unit, in real concurrent PostgreSQL transactions."""

import threading

import pytest
from django.db import connection, connections

from kernodeck.core.errors import Conflict
from kernodeck.orders import services
from kernodeck.orders.models import Order
from tests.factories import make_offer, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip(
            "race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://… "
            "(SQLite serialises writers, so there is no race to test)"
        )


@pytest.mark.parametrize("racers", [2, 8])
def test_exactly_one_customer_gets_the_last_unit(racers):
    offer = make_offer(units_total=1)
    customers = [make_user() for _ in range(racers)]
    start = threading.Barrier(racers)
    outcomes = []

    def race(customer):
        try:
            start.wait()
            services.order_register(
                owner=customer, offer=offer.slug, days=7, units=1, preparation="pytorch"
            )
            outcomes.append("won")
        except Conflict:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=race, args=(c,)) for c in customers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["refused"] * (racers - 1) + ["won"]
    assert Order.objects.filter(offer=offer).count() == 1
