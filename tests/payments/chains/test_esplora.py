import copy
import logging
import threading
from datetime import UTC, datetime

import pytest

from kernodeck.payments.chains import esplora
from kernodeck.payments.chains.base import ChainError, ObservedTransfer, WatchTarget
from kernodeck.payments.chains.esplora import EsploraAdapter, watched_among
from tests.loopback import Reply, sample, sample_reply

OURS = "bc1qzct95jrrgx294txdqxr8vrpvpnsjcstaeg7c2j"  # vout[1] of the address-txs sample
OTHER = "bc1qx3uhwjzwr6xna9pavwh3atw2zvuanpz2mxl629"  # the payer of the address-txs sample
TIP = "/api/blocks/tip/height"


EPOCH = 1_700_000_000  # 2023-11-14: `at` in tx() counts seconds from here (a real block time)


def txs_path(address: str) -> str:
    return f"/api/address/{address}/txs"


def chain_path(address: str, last_seen: str) -> str:
    return f"/api/address/{address}/txs/chain/{last_seen}"


def txid(n: int) -> str:
    return f"{n:064x}"


def tx(
    txid: str, outputs: list[tuple[str | None, int]], height: int | None = None, at: int = 0
) -> dict:
    """A transaction in the shape of the address-txs sample, paying `outputs` (address, sats);
    address None makes an OP_RETURN output. `height` None means still in the mempool."""
    base = copy.deepcopy(sample("esplora/address-txs.json")["response"][0])
    template = base["vout"][1]
    vout = []
    for address, value in outputs:
        output = {**template, "value": value}
        if address is None:
            del output["scriptpubkey_address"]
            output.update(
                scriptpubkey="6a", scriptpubkey_asm="OP_RETURN", scriptpubkey_type="op_return"
            )
        else:
            output["scriptpubkey_address"] = address
        vout.append(output)
    status = {"confirmed": False}
    if height is not None:
        status = {**base["status"], "block_height": height, "block_time": EPOCH + at}
    return {**base, "txid": txid, "vout": vout, "status": status}


def adapter(loopback, sleeps, network="bitcoin", **kwargs) -> EsploraAdapter:
    return EsploraAdapter(network, f"{loopback.url}/api", sleep=sleeps.append, **kwargs)


def test_reads_the_recorded_address_history_and_tip(loopback, sleeps):
    [recorded] = sample("esplora/address-txs.json")["response"]
    loopback.route("GET", TIP, sample_reply("esplora/blocks-tip-height.json"))
    loopback.route("GET", txs_path(OURS), sample_reply("esplora/address-txs.json"))

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    # The tip (871209, text) is five blocks above the transaction's block (871204).
    assert result.tip == 871_209
    assert result.cursor is None
    assert result.transfers == [
        ObservedTransfer(
            network="bitcoin",
            txid=recorded["txid"],
            index=1,  # vout[0] pays a P2SH address, vout[2] is the payer's change
            address=OURS,
            asset="BTC",
            amount_base=73_400,
            confirmations=6,
            block_height=871_204,
            block_time=datetime(2024, 11, 19, 10, 2, 2, tzinfo=UTC),
            block_hash=recorded["status"]["block_hash"],  # for the watcher's reorg check
        )
    ]
    assert [r.path for r in loopback.requests] == [TIP, txs_path(OURS)]
    assert sleeps == []


def test_skips_op_return_and_reports_each_output_to_the_address(loopback, sleeps):
    confirmed = sample("esplora/tx-confirmed.json")["response"]
    watched = "bc1qrns85sfsrf6vh4lw4t7dhfk3grncyxde65v3cn"  # the spender, paid its change
    loopback.route("GET", TIP, body="868534", content_type="text/plain")
    loopback.route("GET", txs_path(watched), json_body=[confirmed])

    result = adapter(loopback, sleeps).scan([WatchTarget(watched)])

    [transfer] = result.transfers
    assert (transfer.txid, transfer.index, transfer.amount_base) == (confirmed["txid"], 2, 58_902)
    assert transfer.confirmations == 5
    assert transfer.block_height == 868_530
    assert transfer.block_time == datetime(2024, 11, 1, 12, 0, 19, tzinfo=UTC)


def test_two_outputs_to_the_same_address_are_two_transfers(loopback, sleeps):
    both = tx(txid(7), [(None, 0), (OURS, 1000), (OTHER, 5), (OURS, 2500)], height=100, at=1)
    loopback.route("GET", TIP, body="100")
    loopback.route("GET", txs_path(OURS), json_body=[both])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [(t.index, t.amount_base, t.confirmations) for t in result.transfers] == [
        (1, 1000, 1),
        (3, 2500, 1),
    ]


def test_mempool_transaction_has_no_confirmations_and_no_block(loopback, sleeps):
    unconfirmed = sample("esplora/tx-unconfirmed.json")["response"]
    watched = "151G4jbGGHoEt4qFYHyHwm9dcJfufzEXeo"  # a legacy address paying itself
    loopback.route("GET", TIP, body="871209")
    loopback.route("GET", txs_path(watched), json_body=[unconfirmed])

    result = adapter(loopback, sleeps).scan([WatchTarget(watched)])

    assert result.transfers == [
        ObservedTransfer(
            network="bitcoin",
            txid=unconfirmed["txid"],
            index=0,
            address=watched,
            asset="BTC",
            amount_base=87_870,
            confirmations=0,
        )
    ]


def test_pages_through_older_confirmed_transactions(loopback, sleeps):
    mempool = [tx(txid(n), [(OURS, n)]) for n in (1, 2)]
    first = [tx(txid(n), [(OURS, n)], height=1000 - n, at=n) for n in range(100, 125)]
    second = [tx(txid(n), [(OURS, n)], height=1000 - n, at=n) for n in range(125, 150)]
    last = [tx(txid(n), [(OURS, n)], height=1000 - n, at=n) for n in range(150, 153)]
    loopback.route("GET", TIP, body="1000")
    loopback.route("GET", txs_path(OURS), json_body=mempool + first)
    loopback.route("GET", chain_path(OURS, txid(124)), json_body=second)
    loopback.route("GET", chain_path(OURS, txid(149)), json_body=last)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [r.path for r in loopback.requests] == [
        TIP,
        txs_path(OURS),
        chain_path(OURS, txid(124)),
        chain_path(OURS, txid(149)),
    ]
    expected = [1, 2, *range(100, 153)]
    assert [t.amount_base for t in result.transfers] == expected
    assert [t.txid for t in result.transfers] == [txid(n) for n in expected]
    assert [t.confirmations for t in result.transfers[:3]] == [0, 0, 101]
    assert result.transfers[-1].confirmations == 153


def test_a_short_first_page_needs_no_paging(loopback, sleeps):
    loopback.route("GET", TIP, body="1000")
    page = [tx(txid(n), [(OURS, n)], height=900) for n in range(1, 25)]
    loopback.route("GET", txs_path(OURS), json_body=page)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert len(result.transfers) == 24
    assert len(loopback.requests) == 2


def test_stops_paging_at_the_cap_and_logs_it(loopback, sleeps, monkeypatch, caplog):
    monkeypatch.setattr(esplora, "MAX_CHAIN_PAGES", 2)

    # Every page holds 25: there always seems to be another one.
    pages = [[tx(txid(n), [(OURS, 1)], height=10) for n in range(s, s + 25)] for s in (0, 25, 50)]
    loopback.route("GET", TIP, body="10")
    loopback.route("GET", txs_path(OURS), json_body=pages[0])
    loopback.route("GET", chain_path(OURS, txid(24)), json_body=pages[1])
    loopback.route("GET", chain_path(OURS, txid(49)), json_body=pages[2])

    with caplog.at_level(logging.WARNING, logger="kernodeck.payments.chains.esplora"):
        result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert len(result.transfers) == 75
    assert len(loopback.requests) == 4
    assert "stopped paging" in caplog.text
    assert OURS in caplog.text


def test_deduplicates_outputs_seen_twice(loopback, sleeps):
    once = tx(txid(5), [(OURS, 700)], height=50)
    loopback.route("GET", TIP, body="50")
    # A block found between two page requests can show the same transaction on both.
    loopback.route("GET", txs_path(OURS), json_body=[once, once])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS), WatchTarget(OURS)])

    assert [(t.txid, t.index) for t in result.transfers] == [(txid(5), 0)]
    assert [r.path for r in loopback.requests] == [TIP, txs_path(OURS)]


def test_several_addresses_in_one_scan(loopback, sleeps):
    loopback.route("GET", TIP, body="50")
    loopback.route("GET", txs_path(OURS), json_body=[tx(txid(1), [(OURS, 10), (OTHER, 20)])])
    loopback.route("GET", txs_path(OTHER), json_body=[tx(txid(2), [(OTHER, 30)], height=49)])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS), WatchTarget(OTHER)])

    assert [
        (t.address, t.txid, t.index, t.amount_base, t.confirmations) for t in result.transfers
    ] == [
        (OURS, txid(1), 0, 10, 0),
        (OTHER, txid(2), 0, 30, 2),
    ]


def test_a_replaced_mempool_transaction_is_no_longer_reported(loopback, sleeps):
    original = tx(txid(0xA), [(OURS, 5000)])
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), json_body=[original])
    watcher = adapter(loopback, sleeps)

    first = watcher.scan([WatchTarget(OURS)])
    # Replaced by fee (RBF) with a version paying elsewhere: the address's history is empty.
    loopback.route("GET", txs_path(OURS), json_body=[])
    second = watcher.scan([WatchTarget(OURS)])

    assert [(t.txid, t.confirmations) for t in first.transfers] == [(txid(0xA), 0)]
    assert second.transfers == []


def test_confirmations_go_down_when_the_block_is_reorged_out(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), json_body=[tx(txid(3), [(OURS, 1)], height=798, at=5)])
    watcher = adapter(loopback, sleeps)

    before = watcher.scan([WatchTarget(OURS)])
    # Blocks 798-800 replaced by a competing chain; the tx made it into the new block 800.
    loopback.route("GET", txs_path(OURS), json_body=[tx(txid(3), [(OURS, 1)], height=800, at=9)])
    after = watcher.scan([WatchTarget(OURS)])

    assert [(t.confirmations, t.block_height) for t in before.transfers] == [(3, 798)]
    assert [(t.confirmations, t.block_height) for t in after.transfers] == [(1, 800)]
    assert after.transfers[0].block_time == datetime.fromtimestamp(EPOCH + 9, tz=UTC)


def test_a_block_newer_than_the_tip_counts_one_confirmation(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), json_body=[tx(txid(4), [(OURS, 1)], height=801)])

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers

    assert transfer.confirmations == 1


def test_litecoin_reports_ltc(loopback, sleeps):
    address = "ltc1qg82tl6ryn3mpycmrqn5fu6u5f4rz3x6rg5r6az"
    loopback.route("GET", TIP, body="2700000")
    loopback.route(
        "GET", txs_path(address), json_body=[tx(txid(9), [(address, 12345678)], 2699990)]
    )

    result = adapter(loopback, sleeps, network="litecoin").scan([WatchTarget(address)])

    [transfer] = result.transfers
    assert (transfer.network, transfer.asset, transfer.amount_base) == (
        "litecoin",
        "LTC",
        12345678,
    )
    assert transfer.confirmations == 11


def test_refuses_an_unknown_network():
    with pytest.raises(ValueError, match="dogecoin"):
        EsploraAdapter("dogecoin", "http://127.0.0.1:9")


def test_retries_after_429_waiting_as_asked(loopback, sleeps):
    loopback.route(
        "GET",
        TIP,
        Reply(status=429, body="Too Many Requests", headers={"Retry-After": "3"}),
        Reply(body="500"),
    )
    loopback.route("GET", txs_path(OURS), json_body=[])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert result.tip == 500
    assert sleeps == [3.0]
    assert [r.path for r in loopback.requests] == [TIP, TIP, txs_path(OURS)]


def test_server_error_three_times_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), status=500, body="Internal Server Error")

    with pytest.raises(ChainError, match=r"127\.0\.0\.1:\d+: HTTP 500.*after 3 attempts"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [r.path for r in loopback.requests] == [TIP] + [txs_path(OURS)] * 3
    assert sleeps == [0.5, 1.0]


def test_timeout_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="800", delay=2.0)

    with pytest.raises(ChainError, match=r"timed out after 0\.2 s"):
        adapter(loopback, sleeps, timeout=0.2).scan([WatchTarget(OURS)])

    assert len(loopback.requests) == 3


def test_malformed_json_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), body='[{"txid": "ab', content_type="application/json")

    with pytest.raises(ChainError, match="not valid JSON"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert len(loopback.requests) == 4


def test_a_body_of_the_wrong_shape_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), json_body={"error": "nope"})

    with pytest.raises(ChainError, match="not a list of transactions"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])


def test_a_tip_that_is_not_a_number_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="<html>maintenance</html>")

    with pytest.raises(ChainError, match="tip height is not a number"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])


def test_a_refused_address_fails_at_once_with_the_servers_words(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path("garbage"), sample_reply("esplora/error-invalid-address.json"))

    with pytest.raises(ChainError, match="HTTP 400: Invalid Bitcoin address"):
        adapter(loopback, sleeps).scan([WatchTarget("garbage")])

    # A 400 says the request is wrong: asking again would get the same answer.
    assert [r.path for r in loopback.requests] == [TIP, txs_path("garbage")]
    assert sleeps == []


def test_addresses_are_fetched_concurrently_up_to_the_limit(loopback, sleeps):
    addresses = [f"{OTHER[:-2]}{n:02d}" for n in range(12)]
    # Built here, not in the handler: the handler runs in the server's thread.
    histories = {a: [tx(txid(n), [(a, 1000 + n)])] for n, a in enumerate(addresses)}
    in_flight = InFlight(limit=4, total=len(addresses))

    def history(request):
        with in_flight:
            return 200, {}, histories[request.path.split("/")[3]]

    loopback.route("GET", TIP, body="100", content_type="text/plain")
    for address in addresses:
        loopback.route("GET", txs_path(address), handler=history)

    result = adapter(loopback, sleeps, concurrency=4).scan([WatchTarget(a) for a in addresses])

    # Four at once (the first are held until four are in flight), never more.
    assert in_flight.most == 4
    assert not in_flight.gave_up
    # Every address answered once, and the transfers come in the targets' order.
    assert sorted(r.path for r in loopback.requests[1:]) == sorted(map(txs_path, addresses))
    assert [(t.address, t.amount_base) for t in result.transfers] == [
        (a, 1000 + n) for n, a in enumerate(addresses)
    ]


class InFlight:
    """Counts a handler's requests in flight at once (`most`), without timing anything.

    The first requests are held until `limit` are in flight together (or all `total` have
    arrived); then the one that made it `limit` waits up to `grace` seconds for one more
    (which a scan that ignores its limit sends), and releases them all; later requests pass.
    `patience` is only a guard against a hang: a request held that long goes on (`gave_up`).
    """

    def __init__(self, limit: int, total: int, grace: float = 0.3, patience: float = 5.0):
        self.limit, self.total, self.grace, self.patience = limit, total, grace, patience
        self.running = self.arrived = self.most = 0
        self.released = self.gave_up = False
        self._changed = threading.Condition()

    def __enter__(self):
        with self._changed:
            self.running += 1
            self.arrived += 1
            self.most = max(self.most, self.running)
            self._changed.notify_all()
            if self.released:
                return self
            if self.running >= self.limit or self.arrived == self.total:
                self._changed.wait_for(
                    lambda: self.running > self.limit or self.arrived == self.total,
                    timeout=self.grace,
                )
            elif not self._changed.wait_for(lambda: self.released, timeout=self.patience):
                self.gave_up = True
            self.released = True
            self._changed.notify_all()
        return self

    def __exit__(self, *exc_info):
        with self._changed:
            self.running -= 1


def test_a_failing_address_fails_the_concurrent_scan(loopback, sleeps):
    addresses = [f"{OTHER[:-2]}{n:02d}" for n in range(6)]
    loopback.route("GET", TIP, body="100", content_type="text/plain")
    for address in addresses:
        loopback.route("GET", txs_path(address), json_body=[])
    loopback.route("GET", txs_path(addresses[3]), status=400, body="Invalid Bitcoin address")

    with pytest.raises(ChainError, match="Invalid Bitcoin address"):
        adapter(loopback, sleeps, concurrency=3).scan([WatchTarget(a) for a in addresses])


# -- block scanning ---------------------------------------------------------------------


def block_hash(n: int) -> str:
    return f"{n:064x}"


def serve_blocks(loopback, tip: int, *, mempool=(), txs_of=None):
    """Blocks up to `tip` whose hash is their height; block `h` holds txs_of(h)."""
    txs_of = txs_of or (lambda height: [])
    loopback.route("GET", "/api/mempool/txids", json_body=list(mempool))
    loopback.route("GET", TIP, body=str(tip), content_type="text/plain")
    for height in range(tip - 5, tip + 1):
        loopback.route("GET", f"/api/block-height/{height}", body=block_hash(height))
        txs = txs_of(height)
        info = {"id": block_hash(height), "height": height, "timestamp": EPOCH + height}
        loopback.route(
            "GET", f"/api/block/{block_hash(height)}", json_body={**info, "tx_count": len(txs)}
        )
        for start in range(0, len(txs), 25):
            loopback.route(
                "GET",
                f"/api/block/{block_hash(height)}/txs/{start}",
                json_body=txs[start : start + 25],
            )


def test_block_scan_reads_each_new_block_page_by_page(loopback, sleeps):
    strangers = [tx(txid(n), [(OTHER, 1000)]) for n in range(30)]
    ours = tx(txid(99), [(OTHER, 5), (OURS.upper(), 70_000)])
    serve_blocks(loopback, 102, txs_of=lambda h: [*strangers, ours] if h == 102 else [])

    scan = adapter(loopback, sleeps).scan_blocks(
        watched_among([WatchTarget(OURS)]), blocks=[[100, block_hash(100)]]
    )

    [transfer] = scan.transfers
    assert (transfer.txid, transfer.index, transfer.address) == (txid(99), 1, OURS)
    assert (transfer.block_height, transfer.confirmations) == (102, 1)
    assert (scan.blocks, scan.rescanned_from, scan.fallback) == (
        [[100, block_hash(100)], [101, block_hash(101)], [102, block_hash(102)]],
        101,
        "",
    )
    pages = [r.path for r in loopback.requests if "/txs/" in r.path]
    assert sorted(pages) == [
        f"/api/block/{block_hash(102)}/txs/0",
        f"/api/block/{block_hash(102)}/txs/25",
    ]


def test_block_scan_walks_back_to_the_fork_after_a_reorg(loopback, sleeps):
    serve_blocks(loopback, 103)
    stored = [[100, block_hash(100)], [101, "ee" * 32], [102, "ff" * 32]]  # 101, 102 replaced

    scan = adapter(loopback, sleeps).scan_blocks(watched_among([WatchTarget(OURS)]), blocks=stored)

    assert scan.rescanned_from == 101
    assert [height for height, _ in scan.blocks] == [100, 101, 102, 103]


@pytest.mark.parametrize(
    ("blocks", "mempool", "reason"),
    [
        ([], [], "no block scanned yet"),
        ([[100, "ee" * 32]], [], "a reorg deeper than we keep"),
        ([[100, block_hash(100)]], [txid(n) for n in range(5)], "5 new mempool txs"),
    ],
)
def test_block_scan_falls_back_when_it_cannot_follow(loopback, sleeps, blocks, mempool, reason):
    serve_blocks(loopback, 102, mempool=mempool)

    scan = adapter(loopback, sleeps, mempool_budget=4).scan_blocks(
        watched_among([WatchTarget(OURS)]), blocks=blocks
    )

    assert (scan.fallback, scan.blocks, scan.transfers) == (reason, [[102, block_hash(102)]], [])


class Costs:
    """A `polling_cost` that says `addresses` and counts how often it was asked."""

    def __init__(self, addresses: int):
        self.addresses, self.asked = addresses, 0

    def __call__(self) -> int:
        self.asked += 1
        return self.addresses


def test_an_outage_is_scanned_where_polling_every_address_costs_more(loopback, sleeps):
    strangers = [tx(txid(n), [(OTHER, 1000)]) for n in range(30)]
    ours = tx(txid(99), [(OTHER, 5), (OURS, 70_000)])
    serve_blocks(loopback, 103, txs_of=lambda h: [*strangers, ours] if h == 102 else [])
    costs = Costs(8)  # 3 new blocks: 2 requests each and 2 pages (102's 31 transactions)

    scan = adapter(loopback, sleeps, max_blocks=2).scan_blocks(
        watched_among([WatchTarget(OURS)]), blocks=[[100, block_hash(100)]], polling_cost=costs
    )

    assert (scan.fallback, costs.asked, scan.rescanned_from) == ("", 1, 101)
    [transfer] = scan.transfers
    assert (transfer.txid, transfer.block_height, transfer.confirmations) == (txid(99), 102, 2)
    assert [height for height, _ in scan.blocks] == [100, 101, 102, 103]


def test_an_outage_falls_back_where_polling_every_address_costs_less(loopback, sleeps):
    strangers = [tx(txid(n), [(OTHER, 1000)]) for n in range(30)]
    serve_blocks(loopback, 103, txs_of=lambda h: strangers if h == 102 else [])

    scan = adapter(loopback, sleeps, max_blocks=2).scan_blocks(
        watched_among([WatchTarget(OURS)]), blocks=[[100, block_hash(100)]], polling_cost=Costs(7)
    )

    assert scan.fallback == "3 new blocks, more requests than polling 7 addresses"
    assert (scan.blocks, scan.transfers) == ([[103, block_hash(103)]], [])
    assert not [r.path for r in loopback.requests if "/txs/" in r.path]  # no page read


def test_a_mempool_flood_is_read_whole_where_polling_costs_more_or_not_at_all(loopback, sleeps):
    flood = [tx(txid(n), [(OTHER, 1000)]) for n in range(5)]
    flood[3] = tx(txid(3), [(OURS, 42_000)])
    serve_blocks(loopback, 101, mempool=[t["txid"] for t in flood])
    for item in flood:
        loopback.route("GET", f"/api/tx/{item['txid']}", json_body=item)
    watched = watched_among([WatchTarget(OURS)])
    read = adapter(loopback, sleeps, mempool_budget=4)

    scan = read.scan_blocks(watched, blocks=[[101, block_hash(101)]], polling_cost=Costs(5))

    assert scan.fallback == ""
    assert [(t.txid, t.confirmations) for t in scan.transfers] == [(txid(3), 0)]
    assert scan.examined == {t["txid"] for t in flood}  # all read: none left for later

    costs = Costs(4)
    polled = read.scan_blocks(watched, blocks=[[101, block_hash(101)]], polling_cost=costs)
    assert (polled.fallback, polled.transfers, costs.asked) == (
        "5 new mempool txs, more requests than polling 4 addresses",
        [],
        1,
    )


def test_within_its_limits_a_block_scan_never_asks_the_polling_cost(loopback, sleeps):
    serve_blocks(loopback, 102)
    costs = Costs(0)

    scan = adapter(loopback, sleeps).scan_blocks(
        watched_among([WatchTarget(OURS)]), blocks=[[100, block_hash(100)]], polling_cost=costs
    )

    assert (scan.fallback, costs.asked) == ("", 0)


@pytest.mark.parametrize(
    ("path", "reply"),
    [
        ("/api/mempool/txids", Reply(json_body={"txids": []})),
        ("/api/mempool/txids", Reply(json_body=["<script>"])),
        ("/api/block-height/101", Reply(body="not a hash")),
        (f"/api/block/{block_hash(101)}", Reply(json_body={"id": block_hash(7), "tx_count": 0})),
        (
            f"/api/block/{block_hash(101)}",
            Reply(json_body={"id": block_hash(101), "tx_count": -1}),
        ),
    ],
)
def test_block_scan_refuses_nonsense_as_a_chain_error(loopback, sleeps, path, reply):
    serve_blocks(loopback, 101)
    loopback.route("GET", path, reply)

    with pytest.raises(ChainError):
        adapter(loopback, sleeps).scan_blocks(
            watched_among([WatchTarget(OURS)]), blocks=[[100, block_hash(100)]]
        )


def test_a_block_hash_that_is_no_hash_fails_the_scan(loopback, sleeps):
    [recorded] = sample("esplora/address-txs.json")["response"]
    bad = {**recorded, "status": {**recorded["status"], "block_hash": "<b>not a hash</b>"}}
    loopback.route("GET", TIP, sample_reply("esplora/blocks-tip-height.json"))
    loopback.route("GET", txs_path(OURS), json_body=[bad])

    with pytest.raises(ChainError, match="block hash is no hash"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])
