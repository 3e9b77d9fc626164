"""Tron and Solana: money counts before it is final, so money that vanishes before it is
final is un-counted through the watcher's one path (marked disappeared, the intent
recomputed; a `reversed` case when it was allocated). The chains' documented answers are
replayed on loopback servers (the adapters' own fakes and sample loaders)."""

from datetime import timedelta

import pytest

from kernodeck.core import clock
from kernodeck.orders.models import PaymentState
from kernodeck.payments import services, watching
from kernodeck.payments.chains import solana
from kernodeck.payments.chains.tron import to_hex_address
from kernodeck.payments.models import IntentException, IntentStatus, PaymentIntent, Transfer
from tests.factories import make_offer, make_order
from tests.payments.chains.test_solana import FakeNode, signature_entry, transaction
from tests.payments.chains.test_tron import USDT, FakeTronGrid, trc20_item, trx_item, tx_info

pytestmark = pytest.mark.django_db

HEIGHT = 77_120_458
PAYER = "GWFQp9mjJep2jhtZ7nvttEmkRYLRwEDxWGxurademQ46"
SYSTEM = "11111111111111111111111111111111"
SIGNATURE = "sigGone1" + "1" * 56


def intent_for(method_code: str):
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "970.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code=method_code, actor=order.owner
    )


def tron_grid(settings, loopback, *, tip: int, solidified: int) -> FakeTronGrid:
    settings.KERNODECK_WATCH_BLOCK_SCAN = False  # TronGrid's lists, address by address
    settings.KERNODECK_TRON_API_URL = loopback.url
    return FakeTronGrid(loopback, tip=tip, solidified=solidified)


def trx_paid(grid: FakeTronGrid, intent, *, present: bool = True) -> None:
    item = trx_item(
        "ab" * 32, to_hex=to_hex_address(intent.address), sun=intent.amount_units, height=HEIGHT
    )
    grid.history(intent.address, trx=[item] if present else [])


def test_tron_detected_trx_that_vanishes_before_solidified_is_uncounted_and_never_settles(
    configured, fresh_rates, settings, loopback
):
    intent = intent_for("trx-tron")
    grid = tron_grid(settings, loopback, tip=HEIGHT + 4, solidified=HEIGHT - 15)
    trx_paid(grid, intent)
    watching.watch_network("tron")
    intent.refresh_from_db()
    assert intent.status == IntentStatus.DETECTED

    # TronGrid no longer lists it (its block was not solidified: the fork was dropped),
    # while the chain moves on far past the confirmations it needed.
    grid = tron_grid(settings, loopback, tip=HEIGHT + 40, solidified=HEIGHT + 20)
    trx_paid(grid, intent, present=False)
    watching.watch_network("tron")
    watching.watch_network("tron")

    intent.refresh_from_db()
    intent.order.refresh_from_db()
    assert Transfer.objects.get().disappeared_at is not None
    assert (intent.status, int(intent.received_base)) == (IntentStatus.PENDING, 0)
    assert intent.order.payment_state == PaymentState.AWAITING_PAYMENT


def test_tron_trx_allocated_before_solidified_that_vanishes_is_a_reversed_case(
    configured, fresh_rates, settings, loopback
):
    intent = intent_for("trx-tron")
    # 19 confirmations reached, the solidified head still below its block.
    grid = tron_grid(settings, loopback, tip=HEIGHT + 19, solidified=HEIGHT - 1)
    trx_paid(grid, intent)
    watching.watch_network("tron")
    intent.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert Transfer.objects.get().final is False

    trx_paid(grid, intent, present=False)
    watching.watch_network("tron")

    intent.refresh_from_db()
    assert intent.exception == IntentException.REVERSED
    assert int(intent.reversed_base) == intent.amount_units


def test_tron_token_transfer_whose_info_the_node_lacks_for_a_pass_is_not_gone(
    configured, fresh_rates, settings, loopback
):
    intent = intent_for("usdt-tron")
    amount = intent.amount_units
    grid = tron_grid(settings, loopback, tip=HEIGHT + 3, solidified=HEIGHT - 15)
    grid.history(
        intent.address, trc20=[trc20_item("cd" * 32, to=intent.address, value=str(amount))]
    )
    grid.infos["cd" * 32] = tx_info("cd" * 32, HEIGHT, events=[(USDT, intent.address, amount)])
    watching.watch_network("tron")

    grid.infos.clear()  # another node behind the API, which has not seen it yet
    watching.watch_network("tron")
    assert Transfer.objects.get().disappeared_at is None

    grid.history(intent.address)  # then it is no longer listed at all
    watching.watch_network("tron")
    intent.refresh_from_db()
    assert Transfer.objects.get().disappeared_at is not None
    assert intent.status == IntentStatus.PENDING


def solana_node(settings, loopback, intent, *, slot: int, status: str, err=None, served=True):
    settings.KERNODECK_SOLANA_RPC_URL = loopback.url
    keys = [PAYER, intent.address, SYSTEM, intent.solana_reference]
    lamports = intent.amount_units
    paid = transaction(
        keys,
        [9_000_000_000, 1_000_000_000, 1, 0],
        [9_000_000_000 - lamports - 5000, 1_000_000_000 + lamports, 1, 0],
        1000,
    )
    entry = signature_entry(SIGNATURE, 1000, status=status, err=err)
    node = FakeNode(
        slot=slot,
        signatures={intent.solana_reference: [entry], intent.address: [entry]},
        transactions={SIGNATURE: paid if served else None},
    )
    loopback.route("POST", "/", handler=node)
    return node


def test_solana_confirmed_payment_that_vanishes_before_finalized_is_uncounted(
    configured, fresh_rates, settings, loopback
):
    intent = intent_for("sol-solana")
    solana_node(settings, loopback, intent, slot=1005, status="confirmed")
    watching.watch_network("solana")
    intent.refresh_from_db()
    assert intent.status == IntentStatus.DETECTED

    node = solana_node(settings, loopback, intent, slot=1005, status="confirmed", served=False)
    watching.watch_network("solana")  # listed, not served by this node yet: not gone
    assert Transfer.objects.get().disappeared_at is None

    node.signatures = {}  # its fork was dropped: the signature is gone
    node.slot = 1100
    watching.watch_network("solana")
    intent.refresh_from_db()
    intent.order.refresh_from_db()
    assert Transfer.objects.get().disappeared_at is not None
    assert (intent.status, int(intent.received_base)) == (IntentStatus.PENDING, 0)
    assert intent.order.payment_state == PaymentState.AWAITING_PAYMENT


def test_solana_payment_allocated_before_finalized_then_failed_is_a_reversed_case(
    configured, fresh_rates, settings, loopback
):
    intent = intent_for("sol-solana")
    # 32 confirmed slots, not finalized yet.
    solana_node(settings, loopback, intent, slot=1031, status="confirmed")
    watching.watch_network("solana")
    intent.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED

    # The signature now reads as failed (the version of it that landed did not pay us).
    solana_node(settings, loopback, intent, slot=1040, status="confirmed", err={"x": 1})
    watching.watch_network("solana")
    intent.refresh_from_db()
    assert intent.exception == IntentException.REVERSED
    assert Transfer.objects.get().disappeared_at is not None


def test_solana_payment_is_not_judged_gone_by_a_recipient_list_cut_before_its_cursor(
    configured, fresh_rates, settings, loopback
):
    settings.KERNODECK_WATCH_LATE_INTERVAL = 10**6  # the late poll is not due below
    settings.KERNODECK_RATE_MAX_AGE = 10**6  # the rates stay usable under the frozen clock
    paid = intent_for("sol-solana")
    node = solana_node(settings, loopback, paid, slot=1031, status="confirmed")
    watching.watch_network("solana")
    assert PaymentIntent.objects.get(pk=paid.pk).status == IntentStatus.ALLOCATED

    # Past its expiry it is polled only on the late interval; another payment is open, so
    # the pass reads the shared recipient, whose list is busier than the pages a pass reads
    # back to the recipient's cursor: the newest signatures no longer include it, and the
    # list was not read to its cursor, so nothing at the recipient is judged.
    clock.freeze(paid.expires_at + timedelta(minutes=1))
    watching.watch_network("solana")  # nothing to poll: the network's health only
    intent_for("sol-solana")
    node.signatures[paid.address] = [
        signature_entry(f"sigBusy{n:0>57}", 2000 + n, status="confirmed")
        for n in range(solana.SIGNATURES_LIMIT)
    ]
    watching.watch_network("solana")

    assert Transfer.objects.get().disappeared_at is None
    assert PaymentIntent.objects.get(pk=paid.pk).exception == ""
