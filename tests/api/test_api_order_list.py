"""GET /api/v1/orders: built without validating every order again, it answers what its
schema (PagedOrderOut) renders, with its payments and access, in a fixed number of queries."""

import json
from datetime import UTC, datetime, timedelta

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

    # token, the page with its count, the active orders' deliveries, their nodes (one
    # query for all), the page's instructions
    assert two == queries_for_the_list() == 5


def _queries_for(api, path="/api/v1/orders"):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    api.get(path)  # the token's last use is written once a minute
    with CaptureQueriesContext(connection) as captured:
        response = api.get(path)
    assert response.status_code == 200
    return len(captured.captured_queries), response.json()


def _end(order, *, started=True, release_pending=False, node=None, slot=0):
    """Mark the order settled and ended (refunded when it never started), with an
    allocation its node has not released yet if asked."""
    from kernodeck.provisioning.models import Allocation, GpuSlot

    now = clock.now()
    Order.objects.filter(pk=order.pk).update(
        payment_state="settled",
        settled_at=now,
        rental_state="ended",
        starts_at=now - timedelta(days=7) if started else None,
        ends_at=now if started else None,
        rental_reason="Refunded: no machine." if not started else "Ended on time.",
    )
    if release_pending:
        Allocation.objects.create(
            order=order,
            slot=GpuSlot.objects.get(node=node, index=slot),
            unit=0,
            allocated_at=now - timedelta(days=7),
        )


def test_ended_orders_cost_one_query_for_all_their_releases(api):
    from kernodeck.provisioning.selectors import END_BEING_APPLIED
    from tests.factories import make_ssh_node

    offer = make_offer(units_total=0)
    node = make_ssh_node(name="list-1", offer=offer, gpu_count=8, host="10.9.0.2")
    plain = make_order(owner=api.user, offer=offer)
    without_ended, _ = _queries_for(api)
    pending = make_order(owner=api.user, offer=offer)
    _end(pending, release_pending=True, node=node, slot=0)
    released = make_order(owner=api.user, offer=offer)
    _end(released)
    refunded = make_order(owner=api.user, offer=offer)
    _end(refunded, started=False)
    two, _ = _queries_for(api)
    for slot in range(1, 5):
        _end(make_order(owner=api.user, offer=offer), release_pending=True, node=node, slot=slot)
    six, page = _queries_for(api)

    # token, the page with its count, the instructions; ended orders: their releases
    assert (without_ended, two, six) == (3, 4, 4)
    reasons = {item["reference"]: item["rental_reason"] for item in page["items"]}
    assert reasons[pending.reference] == str(END_BEING_APPLIED)
    assert reasons[released.reference] == ""
    assert reasons[refunded.reference] == "Refunded: no machine."
    assert reasons[plain.reference] == ""
    assert page["count"] == 8
    # Each one as the order's own page says it.
    for order in (pending, released, refunded, plain):
        shown = api.get(f"/api/v1/orders/{order.reference}").json()
        assert shown["rental_reason"] == reasons[order.reference]


def test_a_page_past_the_end_still_counts_the_orders(api):
    offer = make_offer(units_total=10)
    for _ in range(3):
        make_order(owner=api.user, offer=offer)

    queries, page = _queries_for(api, "/api/v1/orders?offset=3&limit=2")

    assert page == {"items": [], "count": 3}
    assert queries == 2  # token, the count (no orders: no instructions to read)


def test_the_list_is_only_the_callers_orders_newest_first(api):
    offer = make_offer(units_total=10)
    mine = [make_order(owner=api.user, offer=offer) for _ in range(3)]
    make_order(offer=offer)  # someone else's
    # Two orders registered in the same instant are listed by id, newest first.
    Order.objects.filter(pk__in=[mine[1].pk, mine[2].pk]).update(created_at=mine[1].created_at)

    page = api.get("/api/v1/orders?limit=2").json()
    rest = api.get("/api/v1/orders?offset=2&limit=2").json()

    assert page["count"] == rest["count"] == 3
    assert [item["reference"] for item in page["items"] + rest["items"]] == [
        order.reference
        for order in Order.objects.filter(owner=api.user).order_by("-created_at", "-id")
    ]


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC),
        datetime(2026, 3, 1, 12, 0, 0, 999, tzinfo=UTC),
        datetime(2026, 3, 1, 12, 0, 0, 123999, tzinfo=UTC),
        datetime(2026, 3, 1, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
    ],
)
def test_moments_read_as_numbers_come_back_to_the_microsecond(api, moment):
    """On PostgreSQL the list reads its moments as microseconds since 1970 (core/rows.py):
    the same instants as the ORM's, written the same way, whatever their fraction."""
    from kernodeck.orders import selectors

    order = make_order(owner=api.user, offer=make_offer(units_total=10))
    Order.objects.filter(pk=order.pk).update(
        created_at=moment, hold_until=moment + timedelta(microseconds=1)
    )
    order.refresh_from_db()

    (row,), count = selectors.order_rows_page_for(owner=api.user, offset=0, limit=50)

    assert count == 1
    assert (row.created_at, row.hold_until) == (order.created_at, order.hold_until)
    assert row.created_at.utcoffset() == timedelta(0)
    assert api.get("/api/v1/orders").content == _as_the_schema_renders(api)


def test_the_rows_json_names_the_schemas_fields_in_its_order(api):
    """`order_row_json` writes OrderOut's fields in OrderOut's order, the fields
    `_order_fields` (the one order's answer) gives."""
    from kernodeck.orders.api import ORDER_ROW_JSON_FIELDS, OrderOut

    order = make_order(owner=api.user, offer=make_offer(units_total=10))

    assert tuple(OrderOut.model_fields) == ORDER_ROW_JSON_FIELDS
    assert tuple(order_detail_out(order)) == ORDER_ROW_JSON_FIELDS


@pytest.fixture
def every_shape(api, orders):
    """`orders`, and one order in each other state the list shows: awaiting payment,
    cancelled, queued, preparing, suspended (a reason to escape: quotes, a backslash, a
    line break, accents and a non-Latin letter), ended with its release pending (a
    translated reason) or confirmed, refunded; prices with cents, moments with and
    without a fraction of a second."""
    from decimal import Decimal

    from tests.factories import make_ssh_node

    offer = make_offer(units_total=0)
    node = make_ssh_node(name="shapes-1", offer=offer, gpu_count=8, host="10.9.0.3")
    made = {name: make_order(owner=api.user, offer=offer) for name in SHAPES}
    now = clock.now()
    Order.objects.filter(pk=made["cancelled"].pk).update(
        payment_state="cancelled", unit_price_usd=Decimal("73.33"), total_usd=Decimal("513.31")
    )
    Order.objects.filter(pk=made["queued"].pk).update(
        payment_state="settled", rental_state="queued", settled_at=now
    )
    Order.objects.filter(pk=made["preparing"].pk).update(
        payment_state="settled",
        rental_state="preparing",
        settled_at=now,
        starts_at=now.replace(microsecond=0),
        ends_at=now.replace(microsecond=999) + timedelta(days=7),
    )
    Order.objects.filter(pk=made["suspended"].pk).update(
        payment_state="settled",
        rental_state="suspended",
        settled_at=now,
        starts_at=now - timedelta(days=1),
        ends_at=now + timedelta(days=6),
        rental_reason='Suspended: "abuse" report\\ under review\nrevisión — ок',
        unit_price_usd=Decimal("0.10"),
        total_usd=Decimal("1234567.89"),
    )
    _end(made["ended, release pending"], release_pending=True, node=node, slot=0)
    _end(made["ended"])
    _end(made["refunded"], started=False)
    return {**dict(zip(ORDERS_FIXTURE, orders, strict=True)), **made}


SHAPES = (
    "awaiting payment",
    "cancelled",
    "queued",
    "preparing",
    "suspended",
    "ended, release pending",
    "ended",
    "refunded",
)
ORDERS_FIXTURE = ("paid", "eth", "active", "revoked", "failed", "plain")


@pytest.mark.parametrize("language", ["en", "es"])
def test_orders_in_every_state_are_written_as_their_schema_renders(api, every_shape, language):
    from django.utils import translation

    from kernodeck.orders.models import PaymentState, RentalState

    response = api.get("/api/v1/orders", HTTP_ACCEPT_LANGUAGE=language)
    with translation.override(language):
        expected = _as_the_schema_renders(api)

    assert response.content == expected
    items = json.loads(response.content)["items"]
    assert {item["rental_state"] for item in items} == set(RentalState.values)
    assert {item["payment_state"] for item in items} == set(PaymentState.values)
    assert any(item["payments"] for item in items) and any(item["access"] for item in items)
    pending = every_shape["ended, release pending"].reference
    reason = next(item["rental_reason"] for item in items if item["reference"] == pending)
    assert reason.startswith("El alquiler ha terminado" if language == "es" else "The rental is")
    # Escaped as json.dumps escapes (ASCII only): the suspended order's reason.
    assert b'\\"abuse\\" report\\\\ under review\\nrevisi\\u00f3n \\u2014 \\u043e\\u043a' in (
        response.content
    )
