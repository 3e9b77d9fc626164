"""GET /api/v1/orders: built without validating every order again, it answers what its
schema (PagedOrderOut) renders, with its payments and access, in a fixed number of queries."""

import json
from datetime import timedelta

import pytest
from ninja.responses import NinjaJSONEncoder

from kernodeck.core import clock
from kernodeck.orders.api import PagedOrderOut, order_detail_out
from kernodeck.orders.models import Order
from kernodeck.payments import services as payment_services
from kernodeck.provisioning import secrets
from kernodeck.provisioning.models import Delivery
from tests.factories import make_offer, make_order

pytestmark = pytest.mark.django_db


def _activate(order, *, token="tok-1", revoked=False, port=2201):
    """Mark the order settled and running, with a delivered access (revoked if asked)."""
    now = clock.now()
    Order.objects.filter(pk=order.pk).update(
        payment_state="settled",
        settled_at=now,
        rental_state="active",
        starts_at=now,
        ends_at=now + timedelta(days=7),
    )
    Delivery.objects.create(
        order=order,
        host="gpu7.example.org",
        port=port,
        user="kd-user",
        url="http://127.0.0.1:8888/lab" if token else "",
        secret_ciphertext=secrets.secret_encrypt(token) if token else "",
        created_at=now,
        revoked_at=now if revoked else None,
    )


@pytest.fixture
def demo(settings):
    """Demo wallets and rates: instructions can be created without keys or providers."""
    settings.KERNODECK_DEMO = True
    payment_services.payment_methods_ensure()


@pytest.fixture
def orders(api, demo):
    """A customer's orders in every shape the list shows: paid in crypto (several
    instructions, one abandoned), active with access (one with a newer delivery), active
    with its access revoked, failed with a reason, and plain."""
    offer = make_offer(units_total=10)
    made = [make_order(owner=api.user, offer=offer) for _ in range(6)]
    first = payment_services.payment_intent_create_for_order(
        order=made[0], method_code="btc-bitcoin", actor=api.user
    )
    payment_services.payment_intent_abandon(intent=first, actor=api.user)
    payment_services.payment_intent_create_for_order(
        order=made[0], method_code="usdt-tron", actor=api.user
    )
    payment_services.payment_intent_create_for_order(
        order=made[1], method_code="eth-ethereum", actor=api.user
    )
    _activate(made[2], token="")
    clock.freeze(clock.now() + timedelta(seconds=5))
    Delivery.objects.create(
        order=made[2],
        host="gpu8.example.org",
        port=22,
        user="kd-user",
        created_at=clock.now(),
    )
    _activate(made[3], revoked=True)
    Order.objects.filter(pk=made[4].pk).update(
        payment_state="settled", rental_state="provisioning_failed", rental_reason="No GPU."
    )
    return made


def _as_the_schema_renders(api, *, offset=0, limit=50):
    """The page as ninja renders it when it validates the orders against PagedOrderOut."""
    mine = Order.objects.filter(owner=api.user).order_by("-created_at", "-id")
    page = PagedOrderOut.model_validate(
        {
            "items": [order_detail_out(order) for order in mine[offset : offset + limit]],
            "count": mine.count(),
        }
    )
    return json.dumps(page.model_dump(), cls=NinjaJSONEncoder).encode()


@pytest.mark.parametrize(("offset", "limit"), [(0, 50), (1, 2), (0, 1), (9, 50)])
def test_the_list_is_what_its_schema_renders(api, orders, offset, limit):
    response = api.get(f"/api/v1/orders?offset={offset}&limit={limit}")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.content == _as_the_schema_renders(api, offset=offset, limit=limit)


def test_the_list_shows_payments_access_and_reasons(api, orders):
    items = {item["reference"]: item for item in api.get("/api/v1/orders").json()["items"]}

    paid, eth, active, revoked, failed, plain = (items[order.reference] for order in orders)
    assert [p["method"] for p in paid["payments"]] == ["usdt-tron", "btc-bitcoin"]
    assert paid["payments"][1]["abandoned_at"] is not None
    assert {p["order"] for p in paid["payments"] + eth["payments"]} == {
        orders[0].reference,
        orders[1].reference,
    }
    assert active["access"] == {
        "host": "gpu8.example.org",
        "port": 22,
        "user": "kd-user",
        "ssh_command": "ssh kd-user@gpu8.example.org",
        "nodes": [
            {
                "host": "gpu8.example.org",
                "port": 22,
                "user": "kd-user",
                "gpus": [],
                "ssh_command": "ssh kd-user@gpu8.example.org",
            }
        ],
        "url": None,
        "token": None,
        "tunnel_command": None,
    }
    assert revoked["access"] is None
    assert failed["rental_reason"] == "No GPU." and failed["access"] is None
    assert plain["payments"] == [] and plain["access"] is None


def test_active_orders_cost_one_query_for_all_their_access(api):
    offer = make_offer(units_total=10)

    def queries_for_the_list():
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        api.get("/api/v1/orders")  # the token's last use is written once a minute
        with CaptureQueriesContext(connection) as captured:
            assert api.get("/api/v1/orders").status_code == 200
        return len(captured.captured_queries)

    for n in range(2):
        _activate(make_order(owner=api.user, offer=offer), token=f"tok-{n}")
    two = queries_for_the_list()
    for n in range(2, 6):
        _activate(make_order(owner=api.user, offer=offer), token=f"tok-{n}")

    # token, count, page, the active orders' deliveries, their nodes (one query for all),
    # the page's instructions
    assert two == queries_for_the_list() == 6
