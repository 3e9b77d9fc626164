"""The metrics move with the shop: a payment settles, a watcher pass fails, a rental is
delivered, a request is answered; a scrape costs the same queries on any size of shop."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernodeck.payments import services as payment_services
from kernodeck.payments import watching
from kernodeck.provisioning import services as provisioning_services
from tests.factories import make_offer, make_order, make_settled_order, make_ssh_key, make_user
from tests.ledger.helpers import pay_topup
from tests.loopback import LoopbackServer
from tests.observability.helpers import scrape, value

pytestmark = pytest.mark.django_db


def test_a_settled_payment_moves_payments_orders_and_rentals(
    client, metrics_token, configured, fresh_rates
):
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"}))
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    before = scrape(client)
    assert value(before, "kernodeck_payment_intents", method="usdt-tron", status="pending") == 1
    assert value(before, "kernodeck_orders_settled_total") == 0

    pay_topup(intent)

    after = scrape(client)
    assert value(after, "kernodeck_payment_intents", method="usdt-tron", status="pending") == 0
    assert value(after, "kernodeck_payment_intents", method="usdt-tron", status="allocated") == 1
    assert value(after, "kernodeck_orders_settled_total") == 1
    assert value(after, "kernodeck_rentals", state="queued") == 1


def test_a_failed_watcher_pass_is_counted_and_dated(client, metrics_token, settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = False
    with LoopbackServer() as bitcoin:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = bitcoin.url
        bitcoin.route("GET", "/blocks/tip/height", status=503, body="busy")
        before = scrape(client)

        report = watching.watch_network_isolated("bitcoin")

    assert "error" in report
    after = scrape(client)
    for name in ("kernodeck_watcher_passes_total", "kernodeck_watcher_errors_total"):
        assert value(after, name, network="bitcoin") == value(before, name, network="bitcoin") + 1
    count = "kernodeck_watcher_pass_duration_seconds_count"
    assert value(after, count, network="bitcoin") == value(before, count, network="bitcoin") + 1
    assert value(before, "kernodeck_watcher_last_error_timestamp_seconds", network="bitcoin") == 0
    assert value(after, "kernodeck_watcher_last_error_timestamp_seconds", network="bitcoin") > 0
    assert value(after, "kernodeck_watcher_configured", network="bitcoin") == 1


def test_a_delivered_rental_moves_the_access_histogram_and_the_fleet(client, metrics_token):
    operator = make_user(staff=True)
    offer = make_offer(units_total=8)
    rental = make_settled_order(offer=offer, units=2)
    make_ssh_key(rental.owner)
    provisioning_services.rental_allocate(order=rental)
    provisioning_services.rental_prepare(order=rental, actor=operator)
    before = scrape(client)
    assert value(before, "kernodeck_settlement_to_access_seconds_count") == 0
    fleet = {"offer": offer.slug, "node_state": "available"}
    assert value(before, "kernodeck_gpus", **fleet, use="busy") == 2

    provisioning_services.rental_deliver(
        order=rental, host="gpu-01.example.org", port=22, user="kd-rental", actor=operator
    )

    after = scrape(client)
    assert value(after, "kernodeck_settlement_to_access_seconds_count") == 1
    assert value(after, "kernodeck_settlement_to_access_seconds_bucket", le="+Inf") == 1
    assert value(after, "kernodeck_rentals", state="active") == 1
    assert value(after, "kernodeck_rentals", state="preparing") == 0
    assert value(after, "kernodeck_gpus", **fleet, use="free") == 6
    assert value(after, "kernodeck_nodes", state="available") == 1


def test_requests_are_counted_by_url_pattern_never_by_raw_path(client, metrics_token):
    route = "orders/<str:reference>/"
    before = scrape(client)
    client.get("/gpus/")
    client.get("/orders/KD-NOPE-NOPE/")  # redirected to sign in: a 302
    after = scrape(client)

    gpus = {"route": "gpus/", "method": "GET", "status": "200"}
    assert value(after, "kernodeck_http_requests_total", **gpus) == (
        value(before, "kernodeck_http_requests_total", **gpus) + 1
    )
    order = {"route": route, "method": "GET", "status": "302"}
    assert value(after, "kernodeck_http_requests_total", **order) == (
        value(before, "kernodeck_http_requests_total", **order) + 1
    )
    assert not [key for key in after if "KD-NOPE" in str(key)]
    latency = {"route": "gpus/", "method": "GET"}
    name = "kernodeck_http_request_duration_seconds_count"
    assert value(after, name, **latency) == value(before, name, **latency) + 1


def _scrape_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        scrape(client)
    return len(queries)


def test_a_scrape_costs_the_same_queries_on_an_empty_and_a_busy_shop(
    client, metrics_token, configured, fresh_rates
):
    empty = _scrape_queries(client)
    offer = make_offer(units_total=8, prices={3: "100.00", 7: "210.00", 30: "800.00"})
    for _ in range(3):
        order = make_order(offer=offer)
        intent = payment_services.payment_intent_create_for_order(
            order=order, method_code="usdt-tron", actor=order.owner
        )
        pay_topup(intent, txid=f"{intent.derivation_index:064x}")
        provisioning_services.rental_allocate(order=order)

    assert _scrape_queries(client) == empty
