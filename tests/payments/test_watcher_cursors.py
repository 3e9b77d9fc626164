"""Address polling from cursors kept in the database (PollCursor): a pass over an idle
address asks only for its counters, a payment after the cursor is found, a transfer that
vanishes is still seen gone, and a pass that fails keeps every cursor where it was."""

from datetime import timedelta

import pytest

from kernodeck.core import clock
from kernodeck.payments import services, watching
from kernodeck.payments.models import IntentStatus, PaymentIntent, PollCursor, Transfer
from tests.factories import make_order
from tests.loopback import LoopbackServer
from tests.payments.chains.test_poll_cursors import SOLID_MS, PagedNode, TimedTronGrid
from tests.payments.esplora_chain import EsploraChain
from tests.payments.test_watcher_blocks import paths_of_a_pass
from tests.payments.test_watching import btc_intent

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = False  # address by address
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server


@pytest.fixture
def chain(server):
    return EsploraChain(server, at=clock.now() - timedelta(minutes=10))


def cursors() -> dict[str, str]:
    return dict(PollCursor.objects.filter(network="bitcoin").values_list("key", "position"))


def test_a_settled_address_costs_its_counters_and_a_payment_after_the_cursor_is_found(
    configured, fresh_rates, server, chain
):
    intent = btc_intent()
    counters, history = f"/address/{intent.address}", f"/address/{intent.address}/txs"
    assert paths_of_a_pass(server) == ["/blocks/tip/height", history]  # never paid
    assert cursors() == {}

    first = chain.pay(intent.address, intent.amount_units // 2)
    chain.mine(at=clock.now(), count=13)  # deeper than the reorg depth: settled
    assert paths_of_a_pass(server) == ["/blocks/tip/height", history, counters]
    stored = cursors()
    assert list(stored) == [intent.address]

    assert paths_of_a_pass(server) == ["/blocks/tip/height", counters]  # nothing moved
    assert cursors() == stored

    second = chain.pay(intent.address, intent.amount_units - intent.amount_units // 2)
    assert paths_of_a_pass(server) == ["/blocks/tip/height", counters, history]
    assert PaymentIntent.objects.get(pk=intent.pk).status == IntentStatus.DETECTED
    assert set(Transfer.objects.values_list("txid", flat=True)) == {first, second}
    assert cursors() != stored


def test_a_transfer_still_unconfirmed_is_read_again_and_seen_gone(
    configured, fresh_rates, server, chain
):
    intent = btc_intent()
    txid = chain.pay(intent.address, intent.amount_units)
    paths_of_a_pass(server)
    assert Transfer.objects.get(txid=txid).disappeared_at is None

    # Replaced by a transaction paying someone else: the address's counters go back to
    # what they were before the payment, but its unconfirmed transfer drops its cursor.
    chain.drop(txid)
    assert f"/address/{intent.address}/txs" in paths_of_a_pass(server)
    assert Transfer.objects.get(txid=txid).disappeared_at is not None


def test_a_pass_that_fails_while_applying_keeps_every_cursor(
    configured, fresh_rates, server, chain, monkeypatch
):
    intent = btc_intent()
    paths_of_a_pass(server)
    stored = cursors()
    chain.pay(intent.address, intent.amount_units)

    def reconcile(*, intent_id):
        raise ZeroDivisionError("a bug after observing")

    monkeypatch.setattr(watching, "payment_intent_reconcile", reconcile)
    with pytest.raises(ZeroDivisionError):
        watching.watch_network("bitcoin")
    assert cursors() == stored
    monkeypatch.undo()

    paths_of_a_pass(server)  # the next pass reads the history again and applies it
    assert PaymentIntent.objects.get(pk=intent.pk).status == IntentStatus.DETECTED


def test_solana_reads_the_recipient_until_its_cursor_and_matches_each_reference(
    configured, fresh_rates, settings
):
    first, second = (
        services.payment_intent_create_for_order(
            order=order, method_code="sol-solana", actor=order.owner
        )
        for order in (make_order(), make_order())
    )
    recipient = first.address
    node = PagedNode()
    node.pay(
        0, 1000, reference=first.solana_reference, lamports=first.amount_units, recipient=recipient
    )
    with LoopbackServer() as server:
        server.route("POST", "/", handler=node)
        settings.KERNODECK_SOLANA_RPC_URL = server.url
        watching.watch_network("solana")  # no cursor yet: the references too
        listed = sorted(key for key, _ in node.listed())
        assert listed == sorted([first.solana_reference, second.solana_reference, recipient])
        [cursor] = PollCursor.objects.filter(network="solana").values_list("key", "position")
        assert cursor == (recipient, node.signatures[recipient][0]["signature"])

        node.calls.clear()
        node.pay(
            1,
            1001,
            status="confirmed",
            reference=second.solana_reference,
            lamports=second.amount_units,
            recipient=recipient,
        )
        watching.watch_network("solana")

    assert [key for key, _ in node.listed()] == [recipient]  # one list, whatever the intents
    statuses = dict(PaymentIntent.objects.values_list("pk", "status"))
    assert statuses == {first.pk: IntentStatus.ALLOCATED, second.pk: IntentStatus.ALLOCATED}
    assert Transfer.objects.get(txid=node.signatures[recipient][0]["signature"]).reference == (
        second.solana_reference
    )


def test_tron_second_pass_asks_from_the_stored_cursor_and_finds_the_payment(
    configured, fresh_rates, settings
):
    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    with LoopbackServer() as server:
        grid = TimedTronGrid(server, address=intent.address)
        settings.KERNODECK_TRON_API_URL = server.url
        watching.watch_network("tron")
        [(key, position)] = PollCursor.objects.filter(network="tron").values_list(
            "key", "position"
        )
        assert key == intent.address

        before = len(server.requests)
        grid.pay_usdt(1, SOLID_MS + 1_000, amount=intent.amount_units)
        watching.watch_network("tron")
        lists = [r for r in server.requests[before:] if r.path.startswith("/v1/accounts/")]

    assert [r.query.get("min_timestamp") for r in lists] == [position, position]
    assert PaymentIntent.objects.get(pk=intent.pk).status != IntentStatus.PENDING
    assert Transfer.objects.get().txid == f"{1:064x}"
