"""Block scanning on Bitcoin: the watcher follows new blocks and new mempool transactions
instead of polling each address, survives reorgs, and settles what address polling settles."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernodeck.core import clock
from kernodeck.payments import watching
from kernodeck.payments.models import ChainState, IntentStatus, PaymentIntent, Transfer
from tests.loopback import LoopbackServer
from tests.payments.esplora_chain import EsploraChain
from tests.payments.test_watching import btc_intent

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = True
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server


@pytest.fixture
def chain(server):
    return EsploraChain(server, at=clock.now() - timedelta(minutes=10))


def paths_of_a_pass(server) -> list[str]:
    before = len(server.requests)
    report = watching.watch_network("bitcoin")
    assert "error" not in report, report
    return [request.path for request in server.requests[before:]]


def status(intent) -> str:
    return PaymentIntent.objects.get(pk=intent.pk).status


def test_the_first_pass_polls_each_address_then_only_new_blocks_are_read(
    configured, fresh_rates, server, chain
):
    intents = [btc_intent() for _ in range(3)]

    first = paths_of_a_pass(server)
    assert sum(path.startswith("/address/") for path in first) == 3
    assert ChainState.objects.get(network="bitcoin").scanned_blocks == [
        [chain.tip, chain.blocks[-1]["hash"]]
    ]

    idle = paths_of_a_pass(server)
    assert idle == ["/mempool/txids", "/blocks/tip/height", f"/block-height/{chain.tip}"]

    chain.mine(at=clock.now())
    new_block = paths_of_a_pass(server)
    assert not any(path.startswith("/address/") for path in new_block)
    assert f"/block/{chain.blocks[-1]['hash']}" in new_block
    assert [i.pk for i in intents]  # all still watched, none polled


def test_a_payment_is_seen_in_the_mempool_confirmed_in_blocks_and_settles(
    configured, fresh_rates, server, chain
):
    intent = btc_intent()
    watching.watch_network("bitcoin")
    chain.pay(intent.address, intent.amount_units)

    watching.watch_network("bitcoin")
    assert status(intent) == IntentStatus.DETECTED
    assert Transfer.objects.get().confirmations == 0

    chain.mine(at=clock.now())
    watching.watch_network("bitcoin")
    transfer = Transfer.objects.get()
    assert (transfer.confirmations, transfer.block_height) == (1, chain.tip)
    assert status(intent) == IntentStatus.DETECTED

    chain.mine(at=clock.now(), include=False)
    watching.watch_network("bitcoin")  # the block holds nothing of ours: confirmations follow
    assert Transfer.objects.get().confirmations == 2
    assert status(intent) == IntentStatus.ALLOCATED


def test_a_reorg_puts_the_payment_back_in_the_mempool_or_takes_it_away(
    configured, fresh_rates, server, chain
):
    kept, dropped = btc_intent(), btc_intent()
    watching.watch_network("bitcoin")
    chain.pay(kept.address, kept.amount_units)
    gone = chain.pay(dropped.address, dropped.amount_units)
    chain.mine(at=clock.now())
    watching.watch_network("bitcoin")
    assert Transfer.objects.filter(block_height=chain.tip).count() == 2

    chain.reorg(1)
    chain.drop(gone)  # double-spent in the replacing block
    chain.mine(at=clock.now(), count=2, include=False)
    watching.watch_network("bitcoin")

    back = Transfer.objects.get(address=kept.address)
    assert (back.block_height, back.confirmations, back.disappeared_at) == (None, 0, None)
    assert Transfer.objects.get(address=dropped.address).disappeared_at is not None
    assert (status(kept), status(dropped)) == (IntentStatus.DETECTED, IntentStatus.PENDING)

    chain.mine(at=clock.now())
    watching.watch_network("bitcoin")
    assert Transfer.objects.get(address=kept.address).block_height == chain.tip


def test_a_replaced_mempool_transaction_stops_counting(configured, fresh_rates, server, chain):
    intent = btc_intent()
    watching.watch_network("bitcoin")
    txid = chain.pay(intent.address, intent.amount_units)
    watching.watch_network("bitcoin")
    chain.drop(txid)

    watching.watch_network("bitcoin")

    assert Transfer.objects.get().disappeared_at is not None
    assert status(intent) == IntentStatus.PENDING


def test_a_pass_over_idle_intents_costs_the_same_for_3_or_30(
    configured, fresh_rates, server, chain
):
    intents = [btc_intent() for _ in range(3)]
    watching.watch_network("bitcoin")
    chain.mine(at=clock.now())
    with CaptureQueriesContext(connection) as few:
        few_paths = paths_of_a_pass(server)

    intents += [btc_intent() for _ in range(27)]
    watching.watch_network("bitcoin")  # the new intents are polled once
    chain.mine(at=clock.now())
    with CaptureQueriesContext(connection) as many:
        many_paths = paths_of_a_pass(server)

    # 12, and the mempool's memory read and written (MempoolMemory).
    assert len(many.captured_queries) == len(few.captured_queries) <= 14
    assert len(many_paths) == len(few_paths) == 5  # mempool, tip, cursor, new block (2)


def test_intents_created_since_the_last_pass_are_polled_once(
    configured, fresh_rates, server, chain
):
    btc_intent()
    watching.watch_network("bitcoin")
    watching.watch_network("bitcoin")
    clock.freeze(clock.now() + timedelta(seconds=5))
    newer = btc_intent()

    assert f"/address/{newer.address}/txs" in paths_of_a_pass(server)
    assert f"/address/{newer.address}/txs" not in paths_of_a_pass(server)


def test_an_api_without_block_endpoints_is_polled_address_by_address(
    configured, fresh_rates, server
):
    intent = btc_intent()
    server.route("GET", "/blocks/tip/height", body="800000", content_type="text/plain")
    server.route("GET", f"/address/{intent.address}/txs", json_body=[])

    report = watching.watch_network("bitcoin")

    assert report == {"network": "bitcoin", "mode": "addresses", "polled": 1, "transfers": 0}
    state = ChainState.objects.get(network="bitcoin")
    assert (state.last_error, state.scanned_blocks, state.tip) == ("", [], 800000)


def test_a_chain_far_ahead_is_caught_up_by_polling_each_address(
    configured, fresh_rates, server, chain
):
    intent = btc_intent()
    watching.watch_network("bitcoin")
    chain.pay(intent.address, intent.amount_units)
    chain.mine(at=clock.now(), count=10)

    paths = paths_of_a_pass(server)

    assert f"/address/{intent.address}/txs" in paths
    assert Transfer.objects.get().confirmations == 10
    assert ChainState.objects.get(network="bitcoin").scanned_blocks[-1][0] == chain.tip


def test_an_outage_is_read_block_by_block_where_polling_every_address_costs_more(
    configured, fresh_rates, server, chain
):
    intents = [btc_intent() for _ in range(25)]
    early, during = intents[0], intents[1]
    watching.watch_network("bitcoin")  # the first pass polls every address
    chain.pay(early.address, early.amount_units)
    watching.watch_network("bitcoin")  # seen in the mempool
    assert status(early) == IntentStatus.DETECTED
    chain.pay(during.address, during.amount_units)  # never seen in the mempool
    chain.mine(at=clock.now(), count=8)  # past the scan's 6 blocks: 16 requests and a page

    paths = paths_of_a_pass(server)

    assert not any(path.startswith("/address/") for path in paths)
    rows = Transfer.objects.values_list("intent_id", "confirmations", "disappeared_at")
    assert sorted(rows) == sorted([(early.pk, 8, None), (during.pk, 8, None)])  # one row each

    chain.reorg(8)  # the blocks gone, their transactions back in the mempool...
    chain.mine(at=clock.now(), count=9, include=False)  # ...under a longer chain
    paths = paths_of_a_pass(server)

    assert not any(path.startswith("/address/") for path in paths)
    rows = Transfer.objects.values_list("intent_id", "confirmations", "block_height")
    assert sorted(rows) == sorted([(early.pk, 0, None), (during.pk, 0, None)])
    assert not Transfer.objects.filter(disappeared_at__isnull=False).exists()


def test_a_mempool_flood_is_read_where_polling_every_address_costs_more(
    configured, fresh_rates, server, chain, monkeypatch
):
    from tests.payments.esplora_chain import STRANGER

    intents = [btc_intent() for _ in range(6)]
    watching.watch_network("bitcoin")
    build = watching.adapter_for

    def small_budget(network):
        adapter = build(network)
        adapter.mempool_budget = 3
        return adapter

    monkeypatch.setattr(watching, "adapter_for", small_budget)
    for _ in range(4):
        chain.pay(STRANGER, 1_000)
    chain.pay(intents[2].address, intents[2].amount_units)  # 5 new: over the budget of 3

    paths = paths_of_a_pass(server)

    assert not any(path.startswith("/address/") for path in paths)  # 5 reads, not 6 polls
    assert sum(path.startswith("/tx/") for path in paths) == 5
    assert status(intents[2]) == IntentStatus.DETECTED
    assert paths_of_a_pass(server) == [
        "/mempool/txids",
        "/blocks/tip/height",
        f"/block-height/{chain.tip}",
    ]  # each read once


def test_a_failed_block_scan_polls_every_address_and_keeps_its_cursor(
    configured, fresh_rates, server, chain
):
    from tests.loopback import Reply

    intent = btc_intent()
    watching.watch_network("bitcoin")
    cursor = ChainState.objects.get(network="bitcoin").scanned_blocks
    chain.pay(intent.address, intent.amount_units)
    chain.mine(at=clock.now())
    server.route("GET", f"/block/{chain.blocks[-1]['hash']}", Reply(status=400, body="Bad"))

    paths = paths_of_a_pass(server)

    assert f"/address/{intent.address}/txs" in paths
    assert Transfer.objects.get().block_height == chain.tip  # seen by polling the address
    state = ChainState.objects.get(network="bitcoin")
    assert (state.scanned_blocks, state.last_error) == (cursor, "")

    server.route("GET", f"/block/{chain.blocks[-1]['hash']}", handler=chain.answer)  # healed
    paths = paths_of_a_pass(server)  # the next pass resumes from the kept cursor

    assert not any(path.startswith("/address/") for path in paths)
    assert ChainState.objects.get(network="bitcoin").scanned_blocks[-1][0] == chain.tip
    assert status(intent) == IntentStatus.DETECTED


def test_cron_passes_read_each_mempool_transaction_once_whatever_the_cache(
    configured, fresh_rates, server, chain
):
    """`watch_chains --once` from cron: each run is a new process with, at best, a cache
    that was cleared or evicted in between; the mempool's memory is in the database."""
    from io import StringIO

    from django.core.cache import cache
    from django.core.management import call_command

    from kernodeck.payments.models import MempoolMemory

    def cron_run() -> list[str]:
        cache.clear()  # a new process, a cache that forgot
        before = len(server.requests)
        call_command("watch_chains", "--once", stdout=StringIO())
        return [r.path for r in server.requests[before:] if r.path.startswith("/tx/")]

    intent = btc_intent()
    cron_run()  # the first pass polls every address and remembers the mempool
    strangers = [chain.pay("bc1qsomeoneelse0000000000000000000000000", 10_000) for _ in range(3)]
    assert sorted(cron_run()) == sorted(f"/tx/{txid}" for txid in strangers)

    ours = chain.pay(intent.address, intent.amount_units)
    assert cron_run() == [f"/tx/{ours}"]  # only the new one
    assert cron_run() == []
    assert status(intent) == IntentStatus.DETECTED
    memory = MempoolMemory.objects.get(network="bitcoin")
    assert len(bytes(memory.seen)) == 4 * 8  # the four still in the mempool

    chain.mine(at=clock.now())
    cron_run()
    assert bytes(MempoolMemory.objects.get(network="bitcoin").seen) == b""  # mined: forgotten


def test_another_api_starts_with_an_empty_mempool_memory(configured, fresh_rates, server, chain):
    from kernodeck.payments.chains.adapters import adapter_for
    from kernodeck.payments.watching.blocks import mempool_memory

    btc_intent()
    watching.watch_network("bitcoin")
    chain.pay("bc1qsomeoneelse0000000000000000000000000", 10_000)
    watching.watch_network("bitcoin")
    seen, since = mempool_memory("bitcoin", adapter_for("bitcoin"))
    assert len(seen) == 1 and since is not None

    configured.KERNODECK_BITCOIN_ESPLORA_URL = server.url + "/elsewhere"
    seen, since = mempool_memory("bitcoin", adapter_for("bitcoin"))
    assert len(seen) == 0 and since is None
