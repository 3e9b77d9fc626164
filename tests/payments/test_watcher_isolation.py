"""One network's nonsense stays in that network: the others and the expiry still run.

Each class of bad value is fed, over a real loopback Esplora server, into the Bitcoin watcher
while Litecoin (another loopback server) settles its payment in the same pass and an unpaid
instruction on a third network expires. The Bitcoin network records the error, stores nothing,
and the worker keeps going.
"""

import logging
from datetime import UTC, datetime, timedelta
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
    settings.KERNODECK_WATCH_BLOCK_SCAN = False  # address by address
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server


@pytest.fixture
def litecoin(settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = False  # address by address
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


# -- a programming error in one network --------------------------------------------------


def test_an_unexpected_error_in_one_network_is_logged_recorded_and_contained(
    configured, fresh_rates, bitcoin, litecoin, monkeypatch, caplog
):
    btc = intent_for("btc-bitcoin")
    ltc = intent_for("ltc-litecoin")
    paid_at = int(clock.now().timestamp())
    for server, intent, txid in ((bitcoin, btc, "ab" * 32), (litecoin, ltc, "cd" * 32)):
        server.route("GET", "/blocks/tip/height", body="3000010", content_type="text/plain")
        server.route(
            "GET",
            f"/address/{intent.address}/txs",
            json_body=[
                tx(txid, intent.address, intent.amount_units, height=3000000, block_time=paid_at)
            ],
        )
    real = watching.payment_intent_reconcile

    def reconcile(*, intent_id):
        if intent_id == btc.pk:
            raise ZeroDivisionError("a bug in the bitcoin path")
        return real(intent_id=intent_id)

    monkeypatch.setattr(watching, "payment_intent_reconcile", reconcile)
    with caplog.at_level(logging.ERROR, logger="kernodeck.payments.watching"):
        reports = watching.watch_all()

    assert reports[0] == {
        "network": "bitcoin",
        "error": "internal error: ZeroDivisionError: a bug in the bitcoin path",
    }
    state = ChainState.objects.get(network="bitcoin")
    assert state.last_error == "internal error: ZeroDivisionError: a bug in the bitcoin path"
    assert state.last_success_at is None  # never healthy on a pass that did not apply
    failure = next(
        r for r in caplog.records if r.getMessage() == "bitcoin watcher failed unexpectedly"
    )
    assert failure.exc_info and failure.exc_info[0] is ZeroDivisionError
    assert PaymentIntent.objects.get(pk=btc.pk).status == IntentStatus.PENDING
    assert PaymentIntent.objects.get(pk=ltc.pk).status == IntentStatus.ALLOCATED


def test_an_expiry_that_fails_for_one_instruction_still_expires_the_others(
    configured, fresh_rates, monkeypatch, caplog
):
    first, second = intent_for("usdt-tron"), intent_for("usdt-tron")
    clock.freeze(second.expires_at + timedelta(minutes=1))
    real = watching.payment_intent_reconcile

    def reconcile(*, intent_id):
        if intent_id == first.pk:
            raise RuntimeError("a bug")
        return real(intent_id=intent_id)

    monkeypatch.setattr(watching, "payment_intent_reconcile", reconcile)
    with caplog.at_level(logging.ERROR, logger="kernodeck.payments.watching"):
        assert watching.payment_intents_expire() == 1

    assert PaymentIntent.objects.get(pk=first.pk).status == IntentStatus.PENDING
    assert PaymentIntent.objects.get(pk=second.pk).status == IntentStatus.EXPIRED
    assert any(r.exc_info and r.exc_info[0] is RuntimeError for r in caplog.records)


# -- absurd values already stored ----------------------------------------------------------


def stored_transfer(intent, **fields):
    values = {
        "network": intent.chain,
        "txid": "ef" * 32,
        "index": 0,
        "address": intent.address,
        "asset": intent.method.asset,
        "amount_base": 1,
        "confirmations": 1,
        "first_seen_at": clock.now(),
        "last_seen_at": clock.now(),
        "intent": intent,
        "kind": "unallocated",
        **fields,
    }
    return Transfer.objects.create(**values)


@pytest.mark.parametrize(
    "fields",
    [
        {"amount_base": 10**40},
        {"amount_base": 10**50},
        {"amount_base": -1},
    ],
    ids=repr,
)
def test_the_database_refuses_a_transfer_no_page_could_show(configured, fresh_rates, fields):
    from django.db import DataError, IntegrityError, transaction

    intent = intent_for("btc-bitcoin")
    # The CHECK (IntegrityError) or, on PostgreSQL, numeric(40, 0) itself (DataError).
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        stored_transfer(intent, **fields)
    assert not Transfer.objects.exists()


@pytest.mark.parametrize(
    "fields",
    [
        {"amount_base": 10**39 - 1},
        {"confirmations": 2**31 - 1, "index": 2**31 - 1, "block_height": 2**62},
        {"txid": "f" * 100, "address": "b" * 100, "token_contract": "c" * 64},
        {"block_time": datetime(9999, 12, 31, tzinfo=UTC)},
        {"block_time": datetime(1, 1, 2, tzinfo=UTC)},
    ],
    ids=repr,
)
def test_the_largest_values_the_database_takes_still_show_on_every_page(
    configured, fresh_rates, fields
):
    intent = intent_for("btc-bitcoin")
    transfer = stored_transfer(intent, **fields)
    customer, staff = Client(), Client()
    customer.force_login(intent.owner)
    staff.force_login(make_user(staff=True, is_superuser=True))

    assert customer.get(reverse("payments:detail", args=[intent.pk])).status_code == 200
    assert customer.get(reverse("payments:status", args=[intent.pk])).status_code == 200
    assert staff.get(reverse("backoffice:review_queue")).status_code == 200
    assert staff.get(reverse("backoffice:intent_case", args=[intent.pk])).status_code == 200
    assert staff.get(reverse("backoffice:transfer_case", args=[transfer.pk])).status_code == 200


def test_the_migration_caps_an_absurd_amount_stored_before_the_limit(configured, fresh_rates):
    import importlib

    from django.apps import apps
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("only SQLite could store such an amount (numeric(40,0) refuses it)")
    migration = importlib.import_module("kernodeck.payments.migrations.0004_transfer_amount_max")
    intent = intent_for("btc-bitcoin")
    transfer = stored_transfer(intent, kind="matched")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA ignore_check_constraints = ON")
        cursor.execute(
            "UPDATE payments_transfer SET amount_base = '1e50' WHERE id = %s", [transfer.pk]
        )
        cursor.execute("PRAGMA ignore_check_constraints = OFF")

    migration.cap_absurd_amounts(apps, None)

    transfer.refresh_from_db()
    assert 10**38 < transfer.amount_base <= 10**39  # SQLite keeps it as a float: 1e39
    assert transfer.kind == "unallocated"
    assert "impossible amount" in transfer.review_note
    client = Client()
    client.force_login(intent.owner)
    assert client.get(reverse("payments:detail", args=[intent.pk])).status_code == 200


@pytest.mark.django_db(transaction=True)  # each network's pass runs on a thread of its own
def test_the_long_running_watcher_survives_a_pass_that_fails(configured, monkeypatch, caplog):
    import threading

    from kernodeck.payments.management.commands import watch_chains

    configured.KERNODECK_BITCOIN_ESPLORA_URL = "http://127.0.0.1:9/api"  # never asked here
    passes = []

    def watch_network_isolated(network):
        passes.append(network)
        if len(passes) == 1:
            raise ConnectionError("database restarting")
        return {"network": network, "watched": 0, "transfers": 0}

    class Stop(Exception):
        pass

    def sleep(seconds):
        for thread in threading.enumerate():  # the passes this loop started have ended
            if thread.name.startswith("watch-"):
                thread.join(5)
        if len(passes) >= 2:
            raise Stop

    monkeypatch.setattr(watching, "watch_network_isolated", watch_network_isolated)
    monkeypatch.setattr(watch_chains.time, "sleep", sleep)
    out = StringIO()
    with pytest.raises(Stop), caplog.at_level(logging.ERROR):
        call_command("watch_chains", stdout=out)

    assert passes == ["bitcoin", "bitcoin"]
    # The networks it contacts are named once, before the first pass.
    assert out.getvalue().splitlines()[5:] == ["network=bitcoin watched=0 transfers=0"]
    assert any(r.exc_info and r.exc_info[0] is ConnectionError for r in caplog.records)
