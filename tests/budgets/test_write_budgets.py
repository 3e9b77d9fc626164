"""Statement budgets of the API writes that issue 15 measures: payment instructions for an
order, and a top-up with its instructions. Inside the test's transaction the services'
transactions are savepoints (SAVEPOINT and RELEASE stand for BEGIN and COMMIT)."""

import pytest
from django.db import connection

from kernodeck.core import clock
from kernodeck.payments.models import ChainState
from kernodeck.payments.services import payment_methods_ensure
from tests.factories import api_post, make_offer, make_order

pytestmark = pytest.mark.django_db

# token; SAVEPOINT; the account and the order by reference, locked, with the method, its
# fresh rate and its network's watcher state (one SELECT: no read before); its
# instructions (read after the lock: a statement of its own); the address counter (one
# UPDATE … RETURNING); the instructions and both audit events (one INSERT on PostgreSQL,
# two elsewhere); RELEASE. On PostgreSQL all but SAVEPOINT and RELEASE are prepared.
ORDER_INSTRUCTIONS = {"postgresql": 7}.get(connection.vendor, 8)
# token; method, rate and watcher state (one SELECT); SAVEPOINT; account (lock); open
# top-ups; the top-up; its audit event; the address counter; the instructions and their
# audit event (one INSERT on PostgreSQL); RELEASE; the answer's instructions (TopUpOut
# reads them)
TOPUP = {"postgresql": 11}.get(connection.vendor, 12)


@pytest.fixture
def warm(api, settings):
    """Demo wallets and rates, the address counter made and the token's last use written
    (once a minute): what every later request finds. Bitcoin is watched, as in production
    (its watcher healthy): new instructions ask for its health."""
    settings.KERNODECK_DEMO = True
    settings.KERNODECK_BITCOIN_ESPLORA_URL = "http://127.0.0.1:9/"
    ChainState.objects.create(network="bitcoin", last_success_at=clock.now())
    payment_methods_ensure()
    offer = make_offer(units_total=10)
    first = make_order(owner=api.user, offer=offer)
    response = api_post(api, f"/orders/{first.reference}/payments", {"method": "btc-bitcoin"})
    assert response.status_code == 201
    return offer


def test_payment_instructions_for_an_order(api, warm, django_assert_max_num_queries):
    order = make_order(owner=api.user, offer=warm)

    with django_assert_max_num_queries(ORDER_INSTRUCTIONS):
        response = api_post(api, f"/orders/{order.reference}/payments", {"method": "btc-bitcoin"})

    assert response.status_code == 201


def test_a_top_up_with_its_instructions(api, warm, django_assert_max_num_queries):
    with django_assert_max_num_queries(TOPUP):
        response = api_post(api, "/topups", {"amount_usd": "100", "method": "btc-bitcoin"})

    assert response.status_code == 201
