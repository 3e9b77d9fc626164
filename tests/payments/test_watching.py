"""The watcher end to end: a loopback Esplora server, `watch_chains --once`, the books."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.orders.models import PaymentState
from kernodeck.payments import selectors, services, watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentIntent,
    Transfer,
    TransferKind,
)
from tests.factories import make_offer, make_order
from tests.loopback import LoopbackServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def esplora(settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = False  # address by address
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server


def btc_intent():
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "970.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )


def esplora_tx(txid, address, value, *, height=None, block_time=None):
    status = {"confirmed": False}
    if height is not None:
        status = {
            "confirmed": True,
            "block_height": height,
            "block_hash": "00" * 32,
            "block_time": int(block_time.timestamp()),
        }
    return {
        "txid": txid,
        "version": 2,
        "locktime": 0,
        "vin": [],
        "vout": [
            {
                "scriptpubkey": "0014aa",
                "scriptpubkey_type": "v0_p2wpkh",
                "scriptpubkey_address": "bc1qsomeoneelse0000000000000000000000000",
                "value": 5000,
            },
            {
                "scriptpubkey": "0014bb",
                "scriptpubkey_type": "v0_p2wpkh",
                "scriptpubkey_address": address,
                "value": value,
            },
        ],
        "size": 222,
        "weight": 561,
        "fee": 300,
        "status": status,
    }


def serve(server, intent, tip, txs):
    server.route("GET", "/blocks/tip/height", body=str(tip), content_type="text/plain")
    server.route("GET", f"/address/{intent.address}/txs", json_body=txs)


def watch_once():
    out = StringIO()
    call_command("watch_chains", "--once", stdout=out)
    return out.getvalue()


def test_payment_is_seen_confirmed_and_settles_the_order_once(configured, fresh_rates, esplora):
    intent = btc_intent()  # 970 USD at 97 000 USD/BTC = 0.01 BTC = 1 000 000 sat
    assert intent.amount_units == 1_000_000
    paid_at = clock.now() + timedelta(minutes=5)

    serve(esplora, intent, 800_000, [esplora_tx("aa" * 32, intent.address, 1_000_000)])
    clock.freeze(paid_at)
    report = watch_once()
    intent.refresh_from_db()
    assert "network=bitcoin" in report
    assert intent.status == IntentStatus.DETECTED
    assert selectors.intent_progress(intent) == {
        "seen": True,
        "confirmations": 0,
        "required": 2,
        "shown": 0,
    }

    block = {"height": 800_001, "block_time": paid_at + timedelta(minutes=3)}
    serve(esplora, intent, 800_001, [esplora_tx("aa" * 32, intent.address, 1_000_000, **block)])
    watch_once()
    intent.refresh_from_db()
    assert intent.status == IntentStatus.DETECTED
    assert selectors.intent_progress(intent)["confirmations"] == 1

    # The next block comes long after the expiry: timeliness still counts from the block.
    clock.freeze(intent.expires_at + timedelta(hours=2))
    serve(esplora, intent, 800_002, [esplora_tx("aa" * 32, intent.address, 1_000_000, **block)])
    watch_once()
    watch_once()  # a replay changes nothing

    intent.refresh_from_db()
    intent.order.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert intent.order.payment_state == PaymentState.SETTLED
    assert Transfer.objects.count() == 1
    assert AuditEvent.objects.filter(action="order.settled").count() == 1
    assert ChainState.objects.get(network="bitcoin").tip == 800_002


def test_a_crash_between_observing_and_applying_credits_exactly_once(
    configured, fresh_rates, esplora, monkeypatch
):
    intent = btc_intent()
    block = {"height": 100, "block_time": clock.now()}
    serve(esplora, intent, 101, [esplora_tx("bb" * 32, intent.address, 1_000_000, **block)])

    def crash(**kwargs):
        raise RuntimeError("worker killed")

    monkeypatch.setattr(watching, "payment_intent_reconcile", crash)
    with pytest.raises(RuntimeError):
        watching.watch_network("bitcoin")
    monkeypatch.undo()
    assert Transfer.objects.count() == 1  # observed and stored before the crash

    watching.watch_network("bitcoin")  # the restarted worker
    watching.watch_network("bitcoin")

    intent.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert Transfer.objects.count() == 1
    assert AuditEvent.objects.filter(action="order.settled").count() == 1


def test_a_replaced_transaction_stops_counting(configured, fresh_rates, esplora):
    intent = btc_intent()
    serve(esplora, intent, 10, [esplora_tx("cc" * 32, intent.address, 1_000_000)])
    watch_once()
    serve(esplora, intent, 11, [])
    watch_once()

    intent.refresh_from_db()
    transfer = Transfer.objects.get()
    assert transfer.disappeared_at is not None
    assert intent.status == IntentStatus.PENDING


def test_underpayment_after_expiry_goes_to_review(configured, fresh_rates, esplora):
    intent = btc_intent()
    block = {"height": 100, "block_time": clock.now()}
    serve(esplora, intent, 120, [esplora_tx("dd" * 32, intent.address, 500_000, **block)])

    clock.freeze(intent.expires_at + timedelta(minutes=1))
    watch_once()

    intent.refresh_from_db()
    assert intent.status == IntentStatus.UNDERPAID
    assert "500000 of 1000000" in intent.review_reason
    assert intent.order.payment_state == PaymentState.AWAITING_PAYMENT


def test_api_down_records_the_error_and_pauses_only_that_network(configured, fresh_rates, esplora):
    intent = btc_intent()
    esplora.route("GET", "/blocks/tip/height", status=503, body="down")

    watch_once()
    clock.freeze(clock.now() + timedelta(minutes=11))

    state = ChainState.objects.get(network="bitcoin")
    assert "503" in state.last_error
    overview = {item.method.code: item for item in selectors.methods_overview()}
    assert overview["btc-bitcoin"].available is False
    assert "cannot be watched right now" in overview["btc-bitcoin"].reason
    intent.refresh_from_db()


def observed(intent, **fields):
    base = {
        "network": intent.chain,
        "txid": "ee" * 32,
        "index": 0,
        "address": intent.address,
        "asset": intent.method.asset,
        "amount_base": intent.amount_units,
        "confirmations": 30,
    }
    return ObservedTransfer(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"asset": "TRX", "amount_base": 5_000_000}, TransferKind.WRONG_ASSET),
        ({"asset": "TOKEN", "token_contract": "TXfakeUSDT"}, TransferKind.SPOOFED),
        ({"failed": True}, TransferKind.FAILED),
        ({"amount_base": 10_000}, TransferKind.DUST),
        ({}, TransferKind.MATCHED),
    ],
)
def test_transfers_are_classified_and_only_matched_ones_count(
    configured, fresh_rates, fields, kind
):
    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )

    transfer = watching.transfer_record(observed(intent, **fields), intent=intent)
    watching.payment_intent_reconcile(intent_id=intent.pk)

    intent.refresh_from_db()
    assert transfer.kind == kind
    expected = IntentStatus.ALLOCATED if kind == TransferKind.MATCHED else IntentStatus.PENDING
    assert intent.status == expected


def test_the_same_transfer_recorded_twice_is_stored_once(configured, fresh_rates):
    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )

    watching.transfer_record(observed(intent, confirmations=1), intent=intent)
    watching.transfer_record(observed(intent, confirmations=25), intent=intent)

    transfer = Transfer.objects.get()
    assert transfer.confirmations == 25
    assert AuditEvent.objects.filter(action="payment.transfer_seen").count() == 1


def test_solana_transfer_without_reference_is_matched_by_its_unique_amount(
    configured, fresh_rates
):
    a, b = make_order(), make_order()
    first = services.payment_intent_create_for_order(
        order=a, method_code="sol-solana", actor=a.owner
    )
    second = services.payment_intent_create_for_order(
        order=b, method_code="sol-solana", actor=b.owner
    )
    intents = [first, second]

    by_amount = watching._intent_for(
        observed(second, network="solana", reference=None), {}, intents
    )
    by_reference = watching._intent_for(
        observed(first, network="solana", reference=first.solana_reference, amount_base=1),
        {},
        intents,
    )
    nobody = watching._intent_for(observed(first, network="solana", amount_base=42), {}, intents)

    assert (by_amount, by_reference, nobody) == (second, first, None)


def test_declaring_asks_for_an_early_pass(
    configured, fresh_rates, esplora, django_capture_on_commit_callbacks
):
    intent = btc_intent()
    serve(esplora, intent, 5, [])

    with django_capture_on_commit_callbacks(execute=True):
        services.payment_intent_declare(intent=intent, actor=intent.owner)

    paths = [request.path for request in esplora.requests]
    assert f"/address/{intent.address}/txs" in paths
    assert PaymentIntent.objects.get(pk=intent.pk).rescan_requested_at is None


def test_money_arriving_after_settlement_goes_to_review_not_to_the_order(configured, fresh_rates):
    from kernodeck.payments import review_selectors

    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    watching.transfer_record(observed(intent), intent=intent)
    watching.payment_intent_reconcile(intent_id=intent.pk)

    second = watching.transfer_record(observed(intent, txid="f1" * 32), intent=intent)
    first = watching.transfer_record(observed(intent, confirmations=99), intent=intent)
    watching.payment_intent_reconcile(intent_id=intent.pk)

    intent.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert (first.kind, second.kind) == (TransferKind.MATCHED, TransferKind.UNALLOCATED)
    assert list(review_selectors.review_transfers()) == [second]
    assert AuditEvent.objects.filter(action="order.settled").count() == 1


def test_health_is_checked_even_with_nothing_to_watch(configured, esplora):
    esplora.route("GET", "/blocks/tip/height", body="800123", content_type="text/plain")
    watching.watch_network("bitcoin")
    assert ChainState.objects.get(network="bitcoin").tip == 800123

    esplora.route("GET", "/blocks/tip/height", status=500, body="down")
    watching.watch_network("bitcoin")
    assert "500" in ChainState.objects.get(network="bitcoin").last_error
