"""One network's nonsense stays in that network: the others and the expiry still run.

Each class of bad value is fed, over a real loopback Esplora server, into the Bitcoin watcher
while Litecoin (another loopback server) settles its payment in the same pass and an unpaid
instruction on a third network expires. The Bitcoin network records the error, stores nothing,
and the worker keeps going.
"""

import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from kernodeck.core import clock
from kernodeck.orders.models import PaymentState
from kernodeck.payments import services, watching
from kernodeck.payments.models import ChainState, IntentStatus, PaymentIntent, Transfer
from tests.factories import make_offer, make_order, make_user
from tests.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def bitcoin(settings):
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server


@pytest.fixture
def litecoin(settings):
    with LoopbackServer() as server:
        settings.KERNODECK_LITECOIN_ESPLORA_URL = server.url
        yield server


def intent_for(method_code):
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "970.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code=method_code, actor=order.owner
    )


def tx(txid, address, value, *, height=None, block_time=None):
    status = {"confirmed": False}
    if height is not None:
        status = {"confirmed": True, "block_height": height, "block_time": block_time}
    return {
        "txid": txid,
        "vin": [],
        "vout": [{"scriptpubkey_address": address, "value": value}],
        "status": status,
    }


def nested(depth):
    return "[" * depth + "]" * depth


# name -> (tip body, /txs reply builder from the intent and a plausible block time)
BAD_ANSWERS = {
    "amount beyond the column": ("100", lambda i, t: [tx("ab" * 32, i.address, 10**50)]),
    "amount beyond any supply": (
        "100",
        lambda i, t: [tx("ab" * 32, i.address, 10**30, height=99, block_time=t)],
    ),
    "tip beyond any chain": ("9" * 30, lambda i, t: []),
    "negative height": (
        "100",
        lambda i, t: [tx("ab" * 32, i.address, i.amount_units, height=-5, block_time=t)],
    ),
    "block time after year 9999": (
        "100",
        lambda i, t: [tx("ab" * 32, i.address, i.amount_units, height=99, block_time=10**12)],
    ),
    "block time before the chain": (
        "100",
        lambda i, t: [tx("ab" * 32, i.address, i.amount_units, height=99, block_time=-86400)],
    ),
    "over-long txid": ("100", lambda i, t: [tx("a" * 300, i.address, i.amount_units)]),
    "NUL bytes in the txid": ("100", lambda i, t: [tx("\x00" * 64, i.address, i.amount_units)]),
    "txid that is not hex": ("100", lambda i, t: [tx("<script>" * 8, i.address, 1)]),
    "deeply nested JSON": ("100", lambda i, t: Reply(body=nested(100_000))),
    "nested JSON in a field": (
        "100",
        lambda i, t: [tx("ab" * 32, i.address, i.amount_units, height=99, block_time=[[[t]]])],
    ),
    "true for a number": ("100", lambda i, t: [tx("ab" * 32, i.address, True)]),
    "true for a height": (
        "100",
        lambda i, t: [tx("ab" * 32, i.address, i.amount_units, height=True, block_time=t)],
    ),
    "text for a number": ("100", lambda i, t: [tx("ab" * 32, i.address, "1000000")]),
    "fraction for a number": ("100", lambda i, t: [tx("ab" * 32, i.address, 1.5)]),
    "object for the list": ("100", lambda i, t: {"txid": "ab" * 32}),
}


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
def test_bad_answer_from_one_network_leaves_the_others_and_the_expiry_running(
    configured, fresh_rates, bitcoin, litecoin, case, caplog
):
    start = clock.now()
    btc = intent_for("btc-bitcoin")
    ltc = intent_for("ltc-litecoin")
    unpaid = intent_for("usdt-tron")  # Tron is not configured: only the expiry touches it
    paid_at = int((start + timedelta(minutes=5)).timestamp())
    tip, txs = BAD_ANSWERS[case]
    bitcoin.route("GET", "/blocks/tip/height", body=tip, content_type="text/plain")
    answer = txs(btc, paid_at)
    reply = answer if isinstance(answer, Reply) else Reply(json_body=answer)
    bitcoin.route("GET", f"/address/{btc.address}/txs", reply)
    litecoin.route("GET", "/blocks/tip/height", body="3000010", content_type="text/plain")
    litecoin.route(
        "GET",
        f"/address/{ltc.address}/txs",
        json_body=[
            tx("cd" * 32, ltc.address, ltc.amount_units, height=3000000, block_time=paid_at)
        ],
    )
    clock.freeze(unpaid.expires_at + timedelta(minutes=1))

    out = StringIO()
    with caplog.at_level(logging.WARNING, logger="kernodeck.payments.watching"):
        call_command("watch_chains", "--once", stdout=out)

    assert not Transfer.objects.filter(network="bitcoin").exists()
    assert ChainState.objects.get(network="bitcoin").last_error
    assert ChainState.objects.get(network="bitcoin").last_success_at is None
    assert "network=bitcoin error=" in out.getvalue()
    ltc.refresh_from_db()
    ltc.order.refresh_from_db()
    assert ltc.status == IntentStatus.ALLOCATED
    assert ltc.order.payment_state == PaymentState.SETTLED
    assert ChainState.objects.get(network="litecoin").tip == 3000010
    assert PaymentIntent.objects.get(pk=unpaid.pk).status == IntentStatus.EXPIRED
    assert any(record.getMessage().startswith("bitcoin watcher") for record in caplog.records)
    # The customer's payment page still answers.
    client = Client()
    client.force_login(btc.owner)
    assert client.get(reverse("payments:detail", args=[btc.pk])).status_code == 200
    assert make_user  # imported for the stored-value tests below
