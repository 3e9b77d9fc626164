"""A watcher pass costs a few statements whatever the number of idle intents, and writes
only the intents whose outcome changes."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.payments import watching
from kernodeck.payments.models import IntentStatus, PaymentIntent, Transfer
from tests.loopback import LoopbackServer
from tests.payments.test_watching import btc_intent, esplora_tx

pytestmark = pytest.mark.django_db


@pytest.fixture
def esplora(settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = False  # address by address
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        server.route("GET", "/blocks/tip/height", body="800000", content_type="text/plain")
        yield server


def serve_empty(server, intents):
    for intent in intents:
        server.route("GET", f"/address/{intent.address}/txs", json_body=[])


def statements_of_a_pass() -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        report = watching.watch_network("bitcoin")
    assert "error" not in report, report
    return [q["sql"] for q in queries.captured_queries]


def test_a_pass_over_idle_intents_costs_the_same_statements_for_3_or_30(
    configured, fresh_rates, esplora
):
    intents = [btc_intent() for _ in range(3)]
    serve_empty(esplora, intents)
    watching.watch_network("bitcoin")  # the first pass creates the chain's state row
    few = statements_of_a_pass()

    more = [btc_intent() for _ in range(27)]
    serve_empty(esplora, more)
    many = statements_of_a_pass()

    assert len(many) == len(few) <= 12
    # Nothing changed: no intent is locked or written.
    assert not any("FOR" in sql and "payments_paymentintent" in sql for sql in many)
    assert not any(sql.startswith("UPDATE") and "payments_paymentintent" in sql for sql in many)
    assert PaymentIntent.objects.filter(status=IntentStatus.PENDING).count() == 30


def test_only_the_intent_whose_payment_arrived_is_written(configured, fresh_rates, esplora):
    intents = [btc_intent() for _ in range(5)]
    serve_empty(esplora, intents)
    watching.watch_network("bitcoin")
    paid = intents[2]
    esplora.route(
        "GET",
        f"/address/{paid.address}/txs",
        json_body=[esplora_tx("ab" * 32, paid.address, paid.amount_units)],
    )

    watching.watch_network("bitcoin")

    statuses = dict(PaymentIntent.objects.values_list("pk", "status"))
    assert statuses.pop(paid.pk) == IntentStatus.DETECTED
    assert set(statuses.values()) == {IntentStatus.PENDING}
    reconciled = AuditEvent.objects.filter(action="payment.reconciled")
    assert [event.target_id for event in reconciled] == [str(paid.pk)]
    assert PaymentIntent.objects.filter(reconciled_at__isnull=False).count() == 1


def test_confirmations_rising_are_stored_in_bulk_and_settle(configured, fresh_rates, esplora):
    intents = [btc_intent() for _ in range(3)]
    serve_empty(esplora, intents)
    block = {"height": 800_000, "block_time": clock.now()}
    for intent in intents:
        txid = f"{intents.index(intent) + 1:02x}" * 32
        esplora.route(
            "GET",
            f"/address/{intent.address}/txs",
            json_body=[esplora_tx(txid, intent.address, intent.amount_units, **block)],
        )
    watching.watch_network("bitcoin")
    assert set(Transfer.objects.values_list("confirmations", flat=True)) == {1}
    assert set(PaymentIntent.objects.values_list("status", flat=True)) == {IntentStatus.DETECTED}

    esplora.route("GET", "/blocks/tip/height", body="800001", content_type="text/plain")
    with CaptureQueriesContext(connection) as queries:
        watching.watch_network("bitcoin")

    transfer_updates = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("UPDATE") and "payments_transfer" in q["sql"]
    ]
    assert len(transfer_updates) == 1  # three transfers, one confirmation count
    assert set(Transfer.objects.values_list("confirmations", flat=True)) == {2}
    assert set(PaymentIntent.objects.values_list("status", flat=True)) == {IntentStatus.ALLOCATED}
    assert AuditEvent.objects.filter(action="payment.transfer_seen").count() == 3


def test_expiry_is_applied_by_the_pass_without_a_payment(configured, fresh_rates, esplora):
    intents = [btc_intent() for _ in range(2)]
    serve_empty(esplora, intents)
    clock.freeze(intents[0].expires_at + timedelta(seconds=1))

    watching.watch_network("bitcoin")

    assert set(PaymentIntent.objects.values_list("status", flat=True)) == {IntentStatus.EXPIRED}


def address_requests(server, intent) -> int:
    return sum(r.path == f"/address/{intent.address}/txs" for r in server.requests)


def test_intents_only_in_their_late_window_are_polled_less_often(
    configured, fresh_rates, esplora, settings
):
    settings.KERNODECK_WATCH_LATE_INTERVAL = 300
    expired, open_ = btc_intent(), btc_intent()
    serve_empty(esplora, [expired, open_])
    clock.freeze(expired.expires_at + timedelta(seconds=1))
    PaymentIntent.objects.filter(pk=open_.pk).update(
        expires_at=expired.expires_at + timedelta(hours=1)
    )
    watching.watch_network("bitcoin")  # the first pass polls everything, and expires one
    assert PaymentIntent.objects.get(pk=expired.pk).status == IntentStatus.EXPIRED

    clock.freeze(clock.now() + timedelta(seconds=30))
    watching.watch_network("bitcoin")
    assert (address_requests(esplora, expired), address_requests(esplora, open_)) == (1, 2)

    clock.freeze(clock.now() + timedelta(seconds=300))
    watching.watch_network("bitcoin")
    assert (address_requests(esplora, expired), address_requests(esplora, open_)) == (2, 3)


def test_a_late_payment_is_still_caught_on_the_late_poll(configured, fresh_rates, esplora):
    intent = btc_intent()
    serve_empty(esplora, [intent])
    clock.freeze(intent.expires_at + timedelta(seconds=1))
    watching.watch_network("bitcoin")
    esplora.route(
        "GET",
        f"/address/{intent.address}/txs",
        json_body=[esplora_tx("cd" * 32, intent.address, intent.amount_units)],
    )
    clock.freeze(clock.now() + timedelta(seconds=30))
    watching.watch_network("bitcoin")
    assert PaymentIntent.objects.get(pk=intent.pk).status == IntentStatus.EXPIRED

    clock.freeze(clock.now() + timedelta(minutes=5))
    watching.watch_network("bitcoin")
    assert PaymentIntent.objects.get(pk=intent.pk).status == IntentStatus.LATE


def test_the_same_transfer_twice_in_one_answer_is_stored_and_counted_once(configured, fresh_rates):
    from kernodeck.payments.chains.base import ObservedTransfer

    intent = btc_intent()
    seen = ObservedTransfer(
        network="bitcoin",
        txid="cd" * 32,
        index=1,
        address=intent.address,
        asset="BTC",
        amount_base=intent.amount_units,
        confirmations=0,
    )

    touched = watching.transfers_store("bitcoin", [seen, seen], [intent])
    watching.intents_reconcile(
        "bitcoin", watching.intents_load("bitcoin", touched).values(), now=clock.now()
    )

    assert Transfer.objects.count() == 1
    assert AuditEvent.objects.filter(action="payment.transfer_seen").count() == 1
    intent.refresh_from_db()
    assert intent.status == IntentStatus.DETECTED
    assert int(intent.received_base) == intent.amount_units  # not twice: not overpaid
